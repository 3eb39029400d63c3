// Fatbin containers outside the registered sections (docs/fatbin-format.md, "Fatbins outside the
// registered sections"): found in every allocated section with contents, reported as embedded,
// each byte searched once, never inside a registered section; a magic that is not the start of a
// whole, consistent container never makes an entry.
#include "binary/fatbin.h"
#include "support.h"

#include "../seed.h"

#include <random>

namespace forge::binary::test {
namespace {

std::vector<std::uint8_t> cat(std::vector<std::uint8_t> a, const std::vector<std::uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::uint64_t shoff_of(const std::vector<std::uint8_t>& elf) {
    std::uint64_t v = 0;
    std::memcpy(&v, &elf[40], 8); // e_shoff
    return v;
}

std::vector<Entry> of(const std::vector<Entry>& rows, Found found) {
    std::vector<Entry> out;
    for (const auto& e : rows)
        if (e.found == found) out.push_back(e);
    return out;
}

TEST(BinaryEmbedded, ContainersInDataSectionsAreListedApartFromTheRegisteredOnes) {
    const auto registered = fatbin_bytes({{.arch = 80}});
    const auto a = fatbin_bytes({{.arch = 87}, {.kind = 8, .arch = 50, .flags = 0x18011}});
    const auto b = fatbin_bytes({{.kind = 1, .arch = 70}});
    const auto elf = elf_with({{".nv_fatbin", 1, registered},
                               {".rodata", 1, cat(cat(std::vector<std::uint8_t>(24, 0x11), a), b)},
                               {".ldata", 1, cat(std::vector<std::uint8_t>(8, 0), b)}});
    auto r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(of(*r, Found::Registered).size(), 1u);
    const auto embedded = of(*r, Found::Embedded);
    ASSERT_EQ(embedded.size(), 4u);
    EXPECT_EQ(embedded[0].section, ".rodata");
    EXPECT_EQ(embedded[0].target.name(), "sm_87");
    EXPECT_EQ(embedded[1].target.name(), "lto_50");
    EXPECT_EQ(embedded[2].target.name(), "compute_70");
    EXPECT_EQ(embedded[2].fatbin_index, 1u); // the second container of .rodata
    EXPECT_EQ(embedded[3].section, ".ldata");
    EXPECT_EQ(embedded[3].fatbin_index, 0u);

    ReadOptions off;
    off.scan_embedded = false;
    r = read_memory(elf, off);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size(), 1u);
}

TEST(BinaryEmbedded, EachByteIsSearchedOnceAndNeverInsideARegisteredSection) {
    // Three headers name one .rodata; a fourth "section" covers the registered one.
    const auto registered = fatbin_bytes({{.arch = 90}});
    const auto data = fatbin_bytes({{.arch = 86}});
    auto elf = elf_with({{".nv_fatbin", 1, registered},
                         {".rodata", 1, data},
                         {".rodata.copy", 1, data},
                         {".data.wide", 1, data},
                         {".cover", 1, data}});
    // Point the copies at .rodata's bytes and .cover over .nv_fatbin and .rodata together.
    Buf b{elf};
    const std::uint64_t shoff = shoff_of(b.b);
    auto field = [&](int sec, int off) { return shoff + 64 * sec + off; };
    std::uint64_t rodata = 0, fatbin = 0;
    std::memcpy(&rodata, &b.b[field(2, 24)], 8);
    std::memcpy(&fatbin, &b.b[field(1, 24)], 8);
    b.put64(field(3, 24), rodata);
    b.put64(field(4, 24), rodata);
    b.put64(field(5, 24), fatbin);
    b.put64(field(5, 32), rodata + data.size() - fatbin);
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(of(*r, Found::Registered).size(), 1u);
    const auto embedded = of(*r, Found::Embedded);
    ASSERT_EQ(embedded.size(), 1u) << "one container, found once";
    EXPECT_EQ(embedded[0].target.name(), "sm_86");
}

TEST(BinaryEmbedded, CandidatesAreEightByteAlignedWhereTheSectionIsLoaded) {
    const auto fb = fatbin_bytes({{.arch = 75}});
    // At 4 mod 8 from an aligned section start: not where a compiler places an aligned array.
    auto elf = elf_with({{".rodata", 1, cat(std::vector<std::uint8_t>(4, 0), fb)}});
    auto r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->empty());
    // A linked file's section whose address is 4 mod 8: the same bytes are aligned there.
    Buf b{elf};
    const std::uint64_t shoff = shoff_of(b.b);
    b.put16(16, 3);                        // ET_DYN
    b.put64(shoff + 64 + 16, 0x10000 + 4); // sh_addr
    r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].found, Found::Embedded);
}

TEST(BinaryEmbedded, NonAllocatedSectionsAreNotSearched) {
    auto elf = elf_with({{".comment", 1, fatbin_bytes({{.arch = 75}})}});
    Buf b{elf};
    const std::uint64_t shoff = shoff_of(b.b);
    b.put64(shoff + 64 + 8, 0); // sh_flags without SHF_ALLOC
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->empty());
}

// Random bytes sown with the magic, each followed by a header that is right in all but one field
// (the near misses a scan must reject), and by nothing at all: no entry may come of them. One
// whole container among them is found, at its offset.
TEST(BinaryEmbedded, AMagicInCodeOrNoiseNeverMakesAnEntry) {
    std::mt19937 rng(forge::test::test_seed(29));
    std::vector<std::uint8_t> noise(1u << 20);
    for (auto& c : noise)
        c = static_cast<std::uint8_t>(rng());
    const auto good = fatbin_bytes({{.arch = 89}, {.kind = 1, .arch = 89}});
    using Lie = void (*)(Buf&);
    const std::vector<Lie> lies = {
        [](Buf& f) { f.put16(4, 2); },                          // container version
        [](Buf& f) { f.put16(6, 0x18); },                       // container header size
        [](Buf& f) { f.put64(8, f.b.size()); },                 // fat_size past the end
        [](Buf& f) { f.put64(8, f.b.size() - 16 - 8); },        // fat_size short of the chain
        [](Buf& f) { f.put16(16 + 2, 0x0102); },                // entry version
        [](Buf& f) { f.put32(16 + 4, 0x30); },                  // entry header size
        [](Buf& f) { f.put16(16, 3); },                         // entry kind
        [](Buf& f) { f.put64(16 + 8, 0xFFFFFFFFFFFFFF00ull); }, // payload size
        [](Buf& f) { f.put32(16 + 0x1c, 5); },                  // arch
        [](Buf& f) { f.put64(16 + 0x28, 0x300011); },           // both a and f
        [](Buf& f) { f.put64(16 + 0x28, 0xA011); },             // both LZ4 and ZSTD
        [](Buf& f) { f.put32(16 + 0x10, 0x100000); },           // compressed > payload
        [](Buf& f) { f.b.resize(16 + 0x40 + 8); },              // noise where entries belong
    };
    std::size_t sown = 0;
    for (std::size_t at = 64; at + 4096 < noise.size(); at += 8 * (1 + rng() % 128)) {
        Buf f{good};
        const std::size_t which = rng() % (lies.size() + 1);
        if (which < lies.size()) {
            lies[which](f);
        } else {
            f.b.resize(4); // the magic alone, as `mov eax, 0xba55ed50` puts it in code
        }
        std::copy(f.b.begin(), f.b.end(), noise.begin() + static_cast<std::ptrdiff_t>(at));
        ++sown;
    }
    ASSERT_GT(sown, 1000u);
    auto elf = elf_with({{".text", 1, noise}, {".rodata", 1, noise}});
    auto r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->empty()) << r->size() << " entries from noise, the first at 0x" << std::hex
                            << (*r)[0].fatbin_offset;

    const std::size_t planted = 8 * 4099;
    std::copy(good.begin(), good.end(), noise.begin() + planted);
    elf = elf_with({{".text", 1, noise}});
    r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].fatbin_offset, 64 + planted);
    EXPECT_EQ((*r)[0].section, ".text");
}

TEST(BinaryEmbedded, TheSearchSplitAcrossWorkersFindsWhatOneWorkerFinds) {
    std::mt19937 rng(forge::test::test_seed(7));
    std::vector<std::uint8_t> big((std::size_t{9} << 20) + 12); // three 4 MiB tasks
    for (auto& c : big)
        c = static_cast<std::uint8_t>(rng() % 7 == 0 ? 0x50 : rng());
    std::vector<std::uint64_t> planted;
    for (std::size_t at = 4; at + 4 <= big.size(); at += 8 * (1 + rng() % 100000)) {
        const std::uint32_t magic = kFatbinMagic;
        std::memcpy(&big[at], &magic, 4);
        planted.push_back(at);
    }
    planted.push_back(big.size() - 8); // the last candidate (4 mod 8) with 4 bytes after it
    std::memcpy(&big[planted.back()], &kFatbinMagic, 4);
    const Bytes b{big.data(), big.size(), 0};
    for (unsigned threads : {1u, 3u, 16u}) {
        auto found = find_fatbin_magic({ScanRegion{b, 4}}, threads);
        ASSERT_EQ(found.size(), 1u);
        EXPECT_EQ(found[0], planted) << threads << " workers";
    }
}

TEST(BinaryEmbedded, ARegisteredSectionThatHoldsNoFatbinIsAnError) {
    for (const auto& [name, type, data] :
         std::vector<std::tuple<std::string, std::uint32_t, std::vector<std::uint8_t>>>{
             {".nv_fatbin", 1, std::vector<std::uint8_t>(64, 0)},
             {"__nv_relfatbin", 1, {}},
             {".nv_fatbin", 8, std::vector<std::uint8_t>(64, 0)}}) {
        auto elf = elf_with({{name, type, data}});
        auto r = read_memory(elf);
        ASSERT_FALSE(r.ok()) << name << " type " << type << ": " << r->size() << " entries";
        EXPECT_TRUE(mentions(r.error(), "holds no fatbin")) << r.error().to_string();
        const std::uint64_t shoff = shoff_of(elf);
        EXPECT_EQ(r.error().offset, shoff + 64) << "the section header";
    }
}

} // namespace
} // namespace forge::binary::test
