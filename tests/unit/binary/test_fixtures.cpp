// The readers against real nvcc output: every entry must match the -gencode list asked for.
#include "support.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace forge::binary::test {
namespace {

// "fatbin:name:compression[:stub]" per entry, sorted (entry order inside a fatbin is not stable).
std::vector<std::string> summary(const std::vector<Entry>& entries, bool with_section = false) {
    std::vector<std::string> out;
    for (const auto& e : entries)
        out.push_back(fmt::format("{}{}{}:{}:{}{}", with_section ? e.section : "",
                                  with_section ? ":" : "", e.fatbin_index, e.target.name(),
                                  compression_string(e.compression), e.stub ? ":stub" : ""));
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<Entry> must_read(const std::string& path, const ReadOptions& opts = {}) {
    auto r = read_entries(path, opts);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : std::vector<Entry>{};
}

ReadOptions inspect() {
    ReadOptions o;
    o.inspect_payloads = true;
    return o;
}

TEST(BinaryFixtures, MultiTuSharedObjectHasStubAndOneFatbinPerTu) {
    FORGE_NEED_FIXTURES(dir);
    auto entries = must_read(dir + "/multi.so");
    // fatbin 0: nvlink's device-link stub (one kernel-less cubin per link arch); 1, 2: the TUs.
    EXPECT_EQ(summary(entries),
              sorted({"0:sm_80:none:stub", "0:sm_90a:none:stub", "0:sm_100f:none:stub",
                      "1:sm_80:none", "1:sm_90a:none", "1:sm_100f:none", "1:compute_120:zstd",
                      "2:sm_80:none", "2:sm_90a:none", "2:sm_100f:none", "2:compute_120:zstd"}));
    std::map<std::uint32_t, std::set<int>> kernels; // per fatbin, from uncompressed headers
    for (const auto& e : entries) {
        EXPECT_EQ(e.section, ".nv_fatbin");
        EXPECT_FALSE(e.member);
        if (e.target.kind == arch::Kind::Sass) {
            ASSERT_TRUE(e.kernels);
            kernels[e.fatbin_index].insert(*e.kernels);
        } else {
            EXPECT_FALSE(e.kernels);
        }
        EXPECT_FALSE(e.toolkit) << "toolkit needs --toolkit";
    }
    EXPECT_EQ(kernels[0], std::set<int>{0});
    std::set<int> tu_kernels{*kernels[1].begin(), *kernels[2].begin()};
    EXPECT_EQ(tu_kernels, (std::set<int>{1, 2})); // k1.cu has two kernels, k2.cu one
    // Offsets are consistent: each entry lies inside its fatbin.
    for (const auto& e : entries) {
        EXPECT_GT(e.entry_offset, e.fatbin_offset);
        EXPECT_LT(e.entry_offset, e.fatbin_offset + e.fatbin_size);
    }
}

struct ModeCase {
    const char* file;
    const char* elf;
    const char* ptx;
};

class CompressModes : public ::testing::TestWithParam<ModeCase> {};

TEST_P(CompressModes, CompressionPerKindMatchesNvcc) {
    FORGE_NEED_FIXTURES(dir);
    const auto& c = GetParam();
    auto entries = must_read(dir + "/" + c.file);
    const std::string elf = c.elf, ptx = c.ptx;
    EXPECT_EQ(summary(entries),
              sorted({"0:sm_80:" + elf, "0:compute_80:" + ptx, "0:sm_120:" + elf}));
    for (const auto& e : entries) {
        if (e.compression == Compression::None) {
            EXPECT_EQ(e.uncompressed_size, 0u);
        } else {
            EXPECT_GT(e.uncompressed_size, 0u);
        }
    }
    // Decompressing (sizes checked) gives kernels and the toolkit of every cubin.
    const std::string release = nvcc_release();
    for (const auto& e : must_read(dir + "/" + c.file, inspect())) {
        if (e.target.kind != arch::Kind::Sass) {
            EXPECT_FALSE(e.toolkit);
            continue;
        }
        EXPECT_EQ(e.kernels, 2) << e.target.name();
        EXPECT_EQ(e.toolkit, release) << e.target.name();
        EXPECT_FALSE(e.stub);
    }
}

INSTANTIATE_TEST_SUITE_P(Binary, CompressModes,
                         ::testing::Values(ModeCase{"cm_none.o", "none", "none"},
                                           ModeCase{"cm_nocompress.o", "none", "none"},
                                           ModeCase{"cm_default.o", "none", "zstd"},
                                           ModeCase{"cm_balance.o", "none", "zstd"},
                                           ModeCase{"cm_speed.o", "none", "lz4"},
                                           ModeCase{"cm_size.o", "zstd", "zstd"},
                                           ModeCase{"cm_all.o", "zstd", "zstd"},
                                           ModeCase{"cm_all_speed.o", "lz4", "lz4"}),
                         [](const auto& info) {
                             std::string n = info.param.file;
                             return n.substr(0, n.find('.'));
                         });

TEST(BinaryFixtures, RelocatableObjectWithLtoIr) {
    FORGE_NEED_FIXTURES(dir);
    auto entries = must_read(dir + "/lto.o", inspect());
    EXPECT_EQ(summary(entries, true),
              sorted({"__nv_relfatbin:0:sm_90a:zstd", "__nv_relfatbin:0:compute_90a:zstd",
                      "__nv_relfatbin:0:lto_80:zstd"}));
    for (const auto& e : entries) {
        if (e.target.kind == arch::Kind::Lto) {
            EXPECT_FALSE(e.kernels) << "LTO-IR is never decompressed";
            EXPECT_FALSE(e.toolkit);
        }
        if (e.target.kind == arch::Kind::Sass) EXPECT_EQ(e.kernels, 2);
    }
}

TEST(BinaryFixtures, RdcLinkHasExecutableAndRelocatableFatbins) {
    FORGE_NEED_FIXTURES(dir);
    auto entries = must_read(dir + "/rdc.so", inspect());
    EXPECT_EQ(summary(entries, true),
              sorted({".nv_fatbin:0:sm_80:none", "__nv_relfatbin:0:sm_80:zstd",
                      "__nv_relfatbin:0:compute_80:zstd", "__nv_relfatbin:1:sm_80:zstd",
                      "__nv_relfatbin:1:compute_80:zstd"}));
    for (const auto& e : entries)
        if (e.section == ".nv_fatbin") EXPECT_EQ(e.kernels, 3) << "nvlink output holds all kernels";
}

TEST(BinaryFixtures, DeviceLinkObjectIsNotAStub) {
    FORGE_NEED_FIXTURES(dir);
    // `nvcc -dlink` output has a version-2 wrapper too, but its fatbin holds the linked kernels.
    auto headers = must_read(dir + "/dlink.o");
    EXPECT_EQ(summary(headers), sorted({"0:sm_80:zstd"}));
    auto inspected = must_read(dir + "/dlink.o", inspect());
    ASSERT_EQ(inspected.size(), 1u);
    EXPECT_EQ(inspected[0].kernels, 3);
    EXPECT_FALSE(inspected[0].stub);
}

TEST(BinaryFixtures, NoKernelsMeansStubs) {
    FORGE_NEED_FIXTURES(dir);
    auto entries = must_read(dir + "/nokernels.so");
    EXPECT_EQ(summary(entries), sorted({"0:sm_80:none:stub", "1:sm_80:none:stub"}));
    for (const auto& e : must_read(dir + "/nokernels.so", inspect()))
        EXPECT_EQ(e.kernels, 0);
}

TEST(BinaryFixtures, CompressedDeviceLinkStubFoundThroughWrapperAndConfirmedByInspection) {
    FORGE_NEED_FIXTURES(dir);
    // Headers only: the ZSTD cubins cannot be looked into; the version-2 wrapper names the stub.
    auto headers = must_read(dir + "/size.so");
    EXPECT_EQ(summary(headers), sorted({"0:sm_80:zstd:stub", "0:sm_100f:zstd:stub", "1:sm_80:zstd",
                                        "1:sm_100f:zstd"}));
    for (const auto& e : headers)
        EXPECT_FALSE(e.kernels);
    auto inspected = must_read(dir + "/size.so", inspect());
    EXPECT_EQ(summary(inspected), summary(headers));
    for (const auto& e : inspected)
        EXPECT_EQ(e.kernels, e.fatbin_index == 0 ? 0 : 2);
}

TEST(BinaryFixtures, ArchShorthandGivesThreeEntries) {
    FORGE_NEED_FIXTURES(dir);
    EXPECT_EQ(summary(must_read(dir + "/arch90a.o")),
              sorted({"0:compute_90:zstd", "0:sm_90a:none", "0:compute_90a:zstd"}));
}

TEST(BinaryFixtures, StandaloneFatbinAndCubins) {
    FORGE_NEED_FIXTURES(dir);
    EXPECT_EQ(summary(must_read(dir + "/k2.fatbin"), true),
              sorted({"fatbin:0:sm_75:none", "fatbin:0:compute_75:zstd"}));
    // A bare cubin records `a` in .nv.compat, and nothing about `f`.
    auto a = must_read(dir + "/k2_90a.cubin", inspect());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].section, "cubin");
    EXPECT_EQ(a[0].target.name(), "sm_90a");
    EXPECT_EQ(a[0].kernels, 1);
    EXPECT_EQ(a[0].toolkit, nvcc_release());
    // `f` survives only in the tkinfo options ("-arch sm_100f").
    auto family = must_read(dir + "/k2_100f.cubin");
    ASSERT_EQ(family.size(), 1u);
    EXPECT_EQ(family[0].target.name(), "sm_100f");
    EXPECT_FALSE(family[0].toolkit) << "toolkit needs --toolkit";
    auto plain = must_read(dir + "/k2_120.cubin");
    ASSERT_EQ(plain.size(), 1u);
    EXPECT_EQ(plain[0].target.name(), "sm_120");
    EXPECT_FALSE(plain[0].stub);
}

TEST(BinaryFixtures, StaticLibrariesGnuAndBsd) {
    FORGE_NEED_FIXTURES(dir);
    std::map<std::string, std::vector<std::string>> by_member;
    for (const auto& e : must_read(dir + "/libstatic.a")) {
        ASSERT_TRUE(e.member);
        by_member[*e.member].push_back(e.target.name());
    }
    EXPECT_EQ(by_member.size(), 3u);
    EXPECT_EQ(sorted(by_member["cm_speed.o"]), sorted({"sm_80", "compute_80", "sm_120"}));
    EXPECT_EQ(sorted(by_member["nokernels.o"]), sorted({"sm_80", "compute_80"}));
    EXPECT_EQ(sorted(by_member["lto.o"]), sorted({"sm_90a", "compute_90a", "lto_80"}));

    std::set<std::string> bsd_members;
    for (const auto& e : must_read(dir + "/libbsd.a"))
        bsd_members.insert(e.member.value_or(""));
    EXPECT_EQ(bsd_members,
              (std::set<std::string>{"cm_speed_with_a_very_long_member_name.o", "nokernels.o"}));
}

TEST(BinaryFixtures, WheelMembersReadInMemory) {
    FORGE_NEED_FIXTURES(dir);
    const std::string whl = dir + "/pkg-1.0-cp312-cp312-linux_x86_64.whl";
    auto exts = read_extensions(whl);
    ASSERT_TRUE(exts.ok()) << exts.error().to_string();
    ASSERT_EQ(exts->size(), 2u); // the .so and the .a; .py and METADATA are not binaries
    EXPECT_EQ((*exts)[0].member, "pkg/_C.so");
    EXPECT_EQ((*exts)[1].member, "pkg/lib/libstatic.a");
    // The wheel's .so lists exactly like the file it was made from.
    auto direct = must_read(dir + "/multi.so");
    EXPECT_EQ(summary((*exts)[0].entries), summary(direct));
    std::set<std::string> members;
    for (const auto& e : (*exts)[1].entries)
        members.insert(*e.member);
    EXPECT_EQ(members, (std::set<std::string>{"pkg/lib/libstatic.a(cm_speed.o)",
                                              "pkg/lib/libstatic.a(nokernels.o)",
                                              "pkg/lib/libstatic.a(lto.o)"}));
}

TEST(BinaryFixtures, WheelLimitsAreEnforcedBeforeInflating) {
    FORGE_NEED_FIXTURES(dir);
    const std::string whl = dir + "/pkg-1.0-cp312-cp312-linux_x86_64.whl";
    ReadOptions small;
    small.max_member_bytes = 100 * 1024; // the .so inflates to ~1 MB
    auto r = read_entries(whl, small);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().key, "pkg/_C.so");
    EXPECT_NE(r.error().message.find("over the limit"), std::string::npos) << r.error().message;
    EXPECT_TRUE(r.error().offset);

    ReadOptions total;
    total.max_total_inflated = 1024 * 1024 + 4096; // the .so fits, the .so + .a do not
    r = read_entries(whl, total);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().key, "pkg/lib/libstatic.a");
    EXPECT_NE(r.error().message.find("total limit"), std::string::npos) << r.error().message;

    ReadOptions shallow;
    shallow.max_nesting = 1; // wheel -> .a -> .o is two levels
    r = read_entries(whl, shallow);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("nested"), std::string::npos) << r.error().message;
}

TEST(BinaryFixtures, EveryTruncationOfAnObjectIsAnErrorWithOffset) {
    FORGE_NEED_FIXTURES(dir);
    // The section table sits at the end of a .o, so every proper prefix must be rejected.
    for (const char* name : {"k2.fatbin", "cm_speed.o", "k2_90a.cubin"}) {
        const auto full = slurp(dir + "/" + name);
        ASSERT_FALSE(full.empty());
        for (std::size_t n = 0; n < full.size(); ++n) {
            std::vector<std::uint8_t> cut(full.begin(), full.begin() + n);
            auto r = read_memory(cut);
            ASSERT_FALSE(r.ok()) << name << " truncated to " << n << " bytes was accepted";
            ASSERT_TRUE(r.error().offset) << r.error().to_string();
            EXPECT_EQ(r.error().file, "mem.bin");
        }
    }
}

} // namespace
} // namespace forge::binary::test
