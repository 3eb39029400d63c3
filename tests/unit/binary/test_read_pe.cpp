// The PE/COFF reader: headers and section names of the hand-made fixtures (make_pe.py, around
// real nvcc fatbins), and the hostile corpus (bench/fuzz/make_pe_corpus.py) failing cleanly.
#include "binary/pe.h"
#include "support.h"

#include "../in_child.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/resource.h>

namespace forge::binary::test {
namespace {

const Where kWhere{"mem.dll", std::nullopt};

std::filesystem::path pe_corpus() {
    return std::filesystem::path(FORGE_TEST_SOURCE_DIR) / ".." / "bench" / "fuzz" / "corpus" / "pe";
}

std::vector<std::string> section_names(const Pe& pe) {
    std::vector<std::string> out;
    for (const auto& s : pe.sections)
        out.push_back(s.name);
    return out;
}

TEST(BinaryPeCorpus, SeedsReadAndHostileFilesFailWithAnOffset) {
    ASSERT_TRUE(std::filesystem::is_directory(pe_corpus())) << pe_corpus();
    int seeds = 0, hostile = 0;
    for (const auto& d : std::filesystem::directory_iterator(pe_corpus())) {
        const std::string name = d.path().filename().string();
        const auto bytes = slurp(d.path().string());
        for (bool inspect : {false, true}) {
            ReadOptions opts;
            opts.inspect_payloads = inspect;
            auto r = read_memory(bytes, opts);
            if (name.starts_with("pe-seed-")) {
                ASSERT_TRUE(r.ok()) << name << ": " << r.error().to_string();
                EXPECT_FALSE(r->empty()) << name << " lists no entry";
            } else {
                ASSERT_FALSE(r.ok()) << name << " read as " << r->size() << " entries";
                EXPECT_TRUE(r.error().offset) << name << ": " << r.error().to_string();
            }
        }
        (name.starts_with("pe-seed-") ? seeds : hostile)++;
    }
    EXPECT_GE(seeds, 5);
    EXPECT_GE(hostile, 15);
}

TEST(BinaryPe, HostileHeadersNameTheField) {
    const auto good = slurp((pe_corpus() / "pe-seed-amd64.dll").string());
    ASSERT_GT(good.size(), 0x200u);
    Bytes b{good.data(), good.size(), 0};
    auto pe = parse_pe(b, kWhere);
    ASSERT_TRUE(pe.ok()) << pe.error().to_string();
    EXPECT_EQ(pe->machine, kPeMachineAmd64);
    EXPECT_EQ(pe->optional_magic, kPeOptMagic64);

    auto lfanew = good;
    lfanew[pe::kDosLfanew + 3] = 0x7f; // e_lfanew far past the end
    auto r = parse_pe(Bytes{lfanew.data(), lfanew.size(), 0}, kWhere);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().offset, pe::kDosLfanew);

    auto truncated = good;
    truncated.resize(pe::kDosHeaderSize - 1);
    r = parse_pe(Bytes{truncated.data(), truncated.size(), 0}, kWhere);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().offset, 0u);
    EXPECT_NE(r.error().message.find("truncated DOS header"), std::string::npos);

    // Not an image: the object parser refuses a COFF header with an optional header.
    const std::uint64_t coff = b.u32(pe::kDosLfanew) + pe::kSignatureSize;
    auto as_obj = parse_coff_object(b.from(coff), kWhere);
    ASSERT_FALSE(as_obj.ok());
    EXPECT_EQ(as_obj.error().offset, coff + pe::kSizeOfOptionalHeader);
}

TEST(BinaryPe, ContentNotNameDecides) {
    const auto macho = std::vector<std::uint8_t>{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0};
    EXPECT_TRUE(has_macho_magic(Bytes{macho.data(), macho.size(), 0}));
    auto r = read_memory(macho);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("Mach-O"), std::string::npos);
    // A Java class file shares the universal-binary magic; its version word tells them apart.
    const auto java = std::vector<std::uint8_t>{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0x34};
    EXPECT_FALSE(has_macho_magic(Bytes{java.data(), java.size(), 0}));
    const auto fat = std::vector<std::uint8_t>{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2};
    EXPECT_TRUE(has_macho_magic(Bytes{fat.data(), fat.size(), 0}));
}

TEST(BinaryPeFixtures, MachinesFormsAndLongNames) {
    FORGE_NEED_FIXTURES(dir);
    const std::string pe_dir = dir + "/pe/";
    struct Want {
        std::string file;
        bool image;
        std::uint16_t machine;
        std::uint16_t optional_magic;
        std::vector<std::string> names;
    };
    const std::vector<Want> wants = {
        {"amd64.dll", true, kPeMachineAmd64, kPeOptMagic64, {".text", ".nv_fatb", ".nvFatBi"}},
        {"arm64.dll", true, kPeMachineArm64, kPeOptMagic64, {".nv_fatb"}},
        {"pe32.dll", true, kPeMachineI386, kPeOptMagic32, {".nv_fatb"}},
        {"longnames.dll", true, kPeMachineAmd64, kPeOptMagic64, {".nv_fatbin", ".nvFatBinSegment"}},
        {"rdc.obj", false, kPeMachineAmd64, 0, {".text$mn", "__nv_relfatbin", ".nvFatBinSegment"}},
        {"exec.obj", false, kPeMachineArm64, 0, {".nv_fatbin"}},
        {"big.obj", false, kPeMachineAmd64, 0, {"__nv_relfatbin"}},
    };
    for (const auto& w : wants) {
        const auto bytes = slurp(pe_dir + w.file);
        ASSERT_FALSE(bytes.empty()) << w.file;
        const Bytes b{bytes.data(), bytes.size(), 0};
        EXPECT_EQ(has_pe_magic(b), w.image) << w.file;
        EXPECT_EQ(looks_like_coff_object(b), !w.image) << w.file;
        auto pe = w.image ? parse_pe(b, kWhere) : parse_coff_object(b, kWhere);
        ASSERT_TRUE(pe.ok()) << w.file << ": " << pe.error().to_string();
        EXPECT_EQ(pe->machine, w.machine) << w.file;
        EXPECT_EQ(pe->optional_magic, w.optional_magic) << w.file;
        EXPECT_EQ(pe->bigobj, w.file == "big.obj");
        EXPECT_EQ(section_names(*pe), w.names) << w.file;
    }
    const auto pe32 = slurp(pe_dir + "pe32.dll");
    auto p = parse_pe(Bytes{pe32.data(), pe32.size(), 0}, kWhere);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->image_base, 0x10000000u);
}

TEST(BinaryPeFixtures, MsvcLibMembersByLongName) {
    FORGE_NEED_FIXTURES(dir);
    auto exts = read_extensions(dir + "/pe/kernels.lib");
    ASSERT_TRUE(exts.ok()) << exts.error().to_string();
    ASSERT_EQ(exts->size(), 1u); // one archive, one extension, as for a Linux .a
    std::set<std::string> members;
    for (const auto& e : exts->front().entries)
        members.insert(e.member.value_or("-"));
    EXPECT_EQ(members,
              (std::set<std::string>{"out/x64/release/rdc_with_a_long_name.obj", "exec.obj"}));
}

// ASan reserves terabytes of shadow address space: an address-space limit would stop it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// tests/fixtures/binary/pe_hostile (make_pe_hostile.py): a file per header field that lies, and
// the byte offset of the field its error must name.
struct HostileCase {
    std::string file;
    std::uint64_t offset = 0;
    std::string phrase;
};

std::vector<HostileCase> hostile_cases() {
    std::ifstream in(joined({FORGE_TEST_SOURCE_DIR, "/fixtures/binary/pe_hostile/expected.tsv"}));
    std::vector<HostileCase> out;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        HostileCase c;
        std::string offset;
        std::getline(fields, c.file, '\t');
        std::getline(fields, offset, '\t');
        std::getline(fields, c.phrase);
        c.offset = std::stoull(offset);
        out.push_back(c);
    }
    return out;
}

// One case in a child process under a time limit (and, without ASan, whose shadow memory needs
// the address space, a 1 GiB memory limit): the file as it is and as the member of an archive
// must be an error naming the field. "" when it is; else what happened.
std::string replay(const HostileCase& c, const std::vector<std::uint8_t>& bytes) {
    const auto child = forge::test::in_child(
        [&] {
            if (!kAddressSanitizer) {
                const rlimit mem{rlim_t{1} << 30, rlim_t{1} << 30};
                ::setrlimit(RLIMIT_AS, &mem);
            }
            std::string why;
            // As a file, then as an archive member (the error's offset is then the archive's).
            std::string head = "!<arch>\nk.dll/          0           0     0     644     ";
            const std::string size = std::to_string(bytes.size());
            head += size + std::string(10 - size.size(), ' ') + "`\n";
            std::vector<std::uint8_t> ar(head.begin(), head.end());
            ar.insert(ar.end(), bytes.begin(), bytes.end());
            const std::vector<std::pair<const std::vector<std::uint8_t>*, std::uint64_t>> inputs = {
                {&bytes, 0}, {&ar, head.size()}};
            for (const auto& [data, shift] : inputs) {
                for (bool inspect : {false, true}) {
                    ReadOptions opts;
                    opts.inspect_payloads = inspect;
                    opts.max_member_bytes = 16u << 20;
                    auto r = read_memory(*data, opts);
                    if (r.ok()) {
                        why += fmt::format("read as {} entries; ", r->size());
                    } else if (r.error().offset != c.offset + shift ||
                               r.error().message.find(c.phrase) == std::string::npos) {
                        why +=
                            fmt::format("error at {} (wanted {} naming '{}'): {}; ",
                                        r.error().offset ? std::to_string(*r.error().offset) : "-",
                                        c.offset + shift, c.phrase, r.error().to_string());
                    }
                }
            }
            return why;
        },
        30);
    if (child.timed_out()) return "ran past 30 s";
    if (!child.exited_ok())
        return fmt::format("child ended with status {}: {}", child.status, child.out);
    return child.out;
}

TEST(BinaryPeHostile, EveryCaseIsAnErrorNamingItsField) {
    const auto cases = hostile_cases();
    ASSERT_GE(cases.size(), 20u);
    const std::string dir = joined({FORGE_TEST_SOURCE_DIR, "/fixtures/binary/pe_hostile/"});
    // The image every case was made from reads, with its device code.
    auto good = read_memory(slurp(dir + "good.dll"));
    ASSERT_TRUE(good.ok()) << good.error().to_string();
    EXPECT_EQ(good->size(), 2u);
    for (const auto& c : cases) {
        const auto bytes = slurp(dir + c.file);
        ASSERT_FALSE(bytes.empty()) << c.file;
        EXPECT_EQ(replay(c, bytes), "") << c.file;
    }
}

} // namespace
} // namespace forge::binary::test
