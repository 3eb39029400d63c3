#include "arch/arch.h"
#include "arch/coverage.h"

#include "arch/gencode.h"
#include <set>

#include <gtest/gtest.h>

using namespace forge::arch;

namespace {

ArchList parse_ok(std::string_view text) {
    auto r = ArchList::parse(text, "test");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : ArchList{};
}

std::string canon(std::string_view text) {
    return parse_ok(text).to_string();
}

} // namespace

TEST(ArchList, MixedSeparatorsDuplicatesAndSorting) {
    EXPECT_EQ(canon("9.0+PTX;8.0, 7.5 8.0;;"), "7.5 8.0 9.0+PTX");
    // policy rows use ';', overrides use ' ': both normalise to the same string
    EXPECT_EQ(canon("7.5;8.0;8.6;9.0+PTX;10.0;12.0+PTX"),
              canon("7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX"));
    EXPECT_EQ(canon("12.0+PTX 10.0 7.5"), "7.5 10.0 12.0+PTX"); // numeric, not lexicographic
}

TEST(ArchList, MergesPtxIntoSameSlot) {
    EXPECT_EQ(canon("9.0 9.0+PTX"), "9.0+PTX");
    EXPECT_EQ(canon("sm_90 compute_90"), "9.0+PTX");
    EXPECT_EQ(canon("90-real 90-virtual"), "9.0+PTX");
}

TEST(ArchList, SuffixesAreSeparateSlots) {
    EXPECT_EQ(canon("9.0a 9.0 10.0f 12.0a+PTX"), "9.0 9.0a 10.0f 12.0a+PTX");
}

TEST(ArchList, NvccAndCmakeSpellings) {
    EXPECT_EQ(canon("sm_90a"), "9.0a");
    EXPECT_EQ(canon("90"), "9.0+PTX");
    EXPECT_EQ(canon("90a"), "9.0a+PTX");
    EXPECT_EQ(canon("100f-real"), "10.0f");
    EXPECT_EQ(canon("compute_90"), "compute_90");
    EXPECT_EQ(canon("lto_90"), "lto_90");
}

TEST(ArchList, TorchNamedArches) {
    EXPECT_EQ(canon("Ampere"), "8.0 8.6+PTX");
    EXPECT_EQ(canon("Hopper Ampere+Tegra"), "8.7 9.0+PTX");
    EXPECT_EQ(canon("Blackwell"), "10.0 10.3 12.0 12.1+PTX");
}

TEST(ArchList, BadTokensNameTheTokenAndOrigin) {
    for (std::string_view bad : {"8.O", "sm_", "9.0b", "ampere", "9.0+ptx", "8.0a", "9.0f",
                                 "sm_80a", "compute_", "90-fake", "1.2.3", "x"}) {
        auto r = ArchList::parse(std::string("8.0 ") + std::string(bad), "policy.yml:3");
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().to_string().find(std::string(bad)), std::string::npos)
            << r.error().to_string();
        EXPECT_NE(r.error().to_string().find("policy.yml:3"), std::string::npos);
    }
}

// The one split of torch and CMake spellings: the lint reads a tail on either form, the list
// parser refuses the other form's tail with the form's own message.
TEST(ArchSpelling, SplitsEitherFormAndLeavesTheChecksToTheCaller) {
    using Tail = ArchSpelling::Tail;
    auto torch = split_arch_spelling("9.0a+PTX");
    ASSERT_TRUE(torch);
    EXPECT_EQ(torch->sm, 90);
    EXPECT_EQ(torch->suffix, Suffix::Specific);
    EXPECT_EQ(torch->tail, Tail::Ptx);
    EXPECT_TRUE(torch->dotted);
    auto cmake = split_arch_spelling("100f-virtual");
    ASSERT_TRUE(cmake);
    EXPECT_EQ(cmake->sm, 100);
    EXPECT_EQ(cmake->suffix, Suffix::Family);
    EXPECT_EQ(cmake->tail, Tail::Virtual);
    EXPECT_FALSE(cmake->dotted);
    auto crossed = split_arch_spelling("9.0-real");
    ASSERT_TRUE(crossed);
    EXPECT_EQ(crossed->tail, Tail::Real);
    EXPECT_TRUE(split_arch_spelling("8.0a")); // the suffix's CC range is the caller's check
    for (std::string_view no : {"", "9", "9.", ".0", "9.00", "0.5", "1.2.3", "sm_90", "Ampere",
                                "90-fake", "x+PTX", "1000"})
        EXPECT_FALSE(split_arch_spelling(no)) << no;
    for (auto [bad, why] : {std::pair{"9.0-real", "expected X.Y"}, {"90+PTX", "not an arch"}}) {
        auto r = ArchList::parse(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().to_string();
    }
}

TEST(ArchList, OutputFormats) {
    auto l = parse_ok("7.5;8.0;8.6;9.0+PTX;10.0;12.0+PTX");
    EXPECT_EQ(l.to_cmake(), "75-real;80-real;86-real;90;100-real;120");
    auto g = l.to_gencode();
    ASSERT_EQ(g.size(), 8u);
    EXPECT_EQ(g[0], "-gencode=arch=compute_75,code=sm_75");
    EXPECT_EQ(g[4], "-gencode=arch=compute_90,code=compute_90");
    EXPECT_EQ(parse_ok("9.0a+PTX").to_gencode()[0], "-gencode=arch=compute_90a,code=sm_90a");
    EXPECT_FALSE(parse_ok("compute_90").to_torch().ok());
    EXPECT_EQ(*parse_ok("8.0 9.0+PTX").to_torch(), "8.0 9.0+PTX");
    // canonical output round-trips
    auto mixed = parse_ok("compute_90 8.0 lto_100 10.0f+PTX");
    EXPECT_EQ(parse_ok(mixed.to_string()), mixed);
}

TEST(ArchList, EnsurePtxOnHighestBaseSkipsSuffixedTokens) {
    auto l = parse_ok("8.0 9.0 9.0a");
    EXPECT_EQ(l.ensure_ptx_on_highest_base(), 90);
    EXPECT_EQ(l.to_string(), "8.0 9.0+PTX 9.0a");
    EXPECT_EQ(l.ensure_ptx_on_highest_base(), -1); // idempotent
    auto only_a = parse_ok("10.0a 12.0a");
    EXPECT_EQ(only_a.ensure_ptx_on_highest_base(), -1);
}

TEST(Target, ParseAndName) {
    auto t = parse_target("sm_100f");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->sm, 100);
    EXPECT_EQ(t->suffix, Suffix::Family);
    EXPECT_EQ(t->name(), "sm_100f");
    EXPECT_EQ(t->folded().name(), "sm_100");
    EXPECT_FALSE(parse_target("sm_9x").ok());
    EXPECT_FALSE(parse_target("gfx90a").ok());
}

namespace {
Gpu gpu(int sm, bool tegra = false) {
    return Gpu{sm, {}, tegra, {}};
}
// arch/ takes the Tegra CCs as data (policy/gpus.yml in the tools); these are that file's.
const TegraSet kTegra({gpu(53, true), gpu(62, true), gpu(72, true), gpu(87, true), gpu(101, true)});
Tier tier_of(std::string_view list, int sm, bool tegra = false) {
    auto rows = coverage(parse_ok(list).targets(), {gpu(sm, tegra)}, kTegra);
    return rows.at(0).tier;
}
} // namespace

TEST(Coverage, IssueExampleList) {
    const char* l = "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX";
    EXPECT_EQ(tier_of(l, 89), Tier::Native);
    EXPECT_EQ(tier_of(l, 103), Tier::Native);
    EXPECT_EQ(tier_of(l, 121), Tier::Native);
    EXPECT_EQ(tier_of(l, 110), Tier::Jit);
    EXPECT_EQ(tier_of(l, 70), Tier::Dead);
    EXPECT_EQ(tier_of(l, 87, /*tegra=*/true), Tier::Dead); // sm_80 is not Orin's cubin
}

TEST(Coverage, SuffixRules) {
    EXPECT_EQ(tier_of("10.0a", 100), Tier::Native);
    EXPECT_EQ(tier_of("10.0a", 103), Tier::Dead); // a = one CC only
    EXPECT_EQ(tier_of("10.0f", 103), Tier::Native);
    EXPECT_EQ(tier_of("10.0f", 110), Tier::Dead);
    EXPECT_EQ(tier_of("compute_90a", 90), Tier::Jit);
    EXPECT_EQ(tier_of("compute_90a", 100), Tier::Dead);
    EXPECT_EQ(tier_of("compute_100f", 103), Tier::Jit);
    EXPECT_EQ(tier_of("compute_100f", 120), Tier::Dead);
    EXPECT_EQ(tier_of("compute_80", 120), Tier::Jit);
    EXPECT_EQ(tier_of("compute_120", 100), Tier::Dead); // PTX never JITs down
}

namespace {
// The one coverage question, on a table with Hopper, B200/B300, Thor and RTX 50/Spark.
bool covered(std::initializer_list<const char*> have, const char* want) {
    std::set<Target> h;
    for (const char* n : have)
        h.insert(*parse_target(n));
    const std::vector<Gpu> table{gpu(90), gpu(100), gpu(103), gpu(110), gpu(120), gpu(121)};
    return covers(h, *parse_target(want), table, kTegra);
}
} // namespace

TEST(Coverage, CoversFoldsSuffixesByCoverageNotByName) {
    EXPECT_TRUE(covered({"sm_90"}, "sm_90"));
    EXPECT_TRUE(covered({"sm_90a"}, "sm_90"));    // major 9 has one CC here
    EXPECT_FALSE(covered({"sm_100a"}, "sm_100")); // 10.3 would be lost
    EXPECT_TRUE(covered({"sm_100a", "sm_103a"}, "sm_100"));
    EXPECT_TRUE(covered({"sm_100f"}, "sm_100"));  // a family cubin covers the family
    EXPECT_FALSE(covered({"sm_120a"}, "sm_120")); // 12.1 would be lost
    EXPECT_FALSE(covered({"sm_100"}, "sm_100f")); // a wanted a/f target: only itself
    EXPECT_FALSE(covered({"sm_90"}, "sm_90a"));
    EXPECT_FALSE(covered({"compute_90a"}, "compute_90")); // PTX: only itself
    EXPECT_TRUE(covered({"compute_90"}, "compute_90"));
    EXPECT_FALSE(covered({"sm_103"}, "sm_100")); // a plain cubin of another SM never
    EXPECT_TRUE(asked_for(*parse_target("sm_100a"), {*parse_target("sm_100")}));
    EXPECT_FALSE(asked_for(*parse_target("sm_100"), {*parse_target("sm_100f")}));
    // A CC the table lacks is judged on a GPU of its own.
    EXPECT_EQ(judged_gpus({gpu(90)}, {*parse_target("sm_101a")}).size(), 2u);
}

TEST(Coverage, TegraNeedsItsOwnCubin) {
    EXPECT_EQ(tier_of("8.7", 87, true), Tier::Native);
    EXPECT_EQ(tier_of("8.0+PTX", 87, true), Tier::Jit);
    EXPECT_EQ(tier_of("8.7", 89), Tier::Dead); // an Orin cubin is not a desktop 8.x cubin
    auto rows = coverage(parse_ok("8.0 8.6").targets(), {gpu(87, true)});
    EXPECT_NE(rows[0].why.find("Tegra"), std::string::npos);
}

TEST(Coverage, SkipsRetiredParts) {
    // A Kepler entry of the table (gpus.yml's `retired:`) gets no row: no wheel can reach it.
    Gpu k80 = gpu(37);
    k80.retired = true;
    auto rows = coverage(parse_ok("8.0 9.0+PTX").targets(), {k80, gpu(80), gpu(90)});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].gpu.sm, 80);
    EXPECT_EQ(rows[1].gpu.sm, 90);
    k80.retired = false;
    EXPECT_EQ(coverage(parse_ok("8.0").targets(), {k80}).size(), 1u);
}

TEST(Coverage, TegraCubinsComeFromTheGivenSet) {
    const auto orin = parse_ok("8.7").targets();
    const Gpu ada = gpu(89);
    EXPECT_FALSE(sass_runs_on(orin.at(0), ada, kTegra));
    EXPECT_TRUE(sass_runs_on(orin.at(0), ada, TegraSet{})); // not a SoC cubin: a plain 8.x one
    // The set is read off the table: only the entries marked tegra count.
    const TegraSet from_table({gpu(87, true), gpu(89), gpu(72, true)});
    EXPECT_TRUE(from_table.contains(87));
    EXPECT_TRUE(from_table.contains(72));
    EXPECT_FALSE(from_table.contains(89));
    EXPECT_FALSE(TegraSet{}.contains(87));
    // coverage() without a set uses its own table's flags.
    EXPECT_EQ(coverage(orin, {gpu(87, true), gpu(89)}).at(1).tier, Tier::Dead);
    EXPECT_EQ(coverage(orin, {gpu(87, false), gpu(89)}).at(1).tier, Tier::Native);
}

TEST(Coverage, MajorGapNeedsSecondPtx) {
    const std::vector<Gpu> with_thor{gpu(80), gpu(90), gpu(100), gpu(110), gpu(120)};
    auto gaps = major_gaps(parse_ok("8.0 9.0+PTX 10.0 12.0+PTX").targets(), with_thor);
    ASSERT_EQ(gaps.size(), 1u);
    EXPECT_EQ(gaps[0].major, 11);
    EXPECT_TRUE(gaps[0].has_ptx_net);
    EXPECT_EQ(gaps[0].net, "compute_90");
    // The net is there, but not where the rule puts it: on 10.0, the highest arch below the gap.
    EXPECT_EQ(gaps[0].suggested_sm, 100);
    EXPECT_FALSE(gaps[0].ptx_placed);
    auto missing = major_gaps(parse_ok("8.0 9.0 10.0 12.0+PTX").targets(), with_thor);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_FALSE(missing[0].has_ptx_net);
    EXPECT_EQ(missing[0].suggested_sm, 100);
    auto placed = major_gaps(parse_ok("8.0 9.0+PTX 10.0+PTX 12.0+PTX").targets(), with_thor);
    ASSERT_EQ(placed.size(), 1u);
    EXPECT_TRUE(placed[0].ptx_placed);
    EXPECT_EQ(placed[0].net, "compute_100"); // the driver JITs the highest PTX below
}

TEST(Coverage, AGapIsAMajorWithGpusAndNoCubin) {
    // 8.0 10.0 12.0: majors 9 and 11 have no cubin. Where the cell has a major-11 GPU (Thor as
    // 11.0: aarch64 on CUDA 13.x) both are gaps, each with its own +PTX below it.
    const std::vector<Gpu> arm13{gpu(80), gpu(87, true), gpu(90), gpu(100), gpu(110), gpu(120)};
    auto both = major_gaps(parse_ok("8.0 10.0 12.0").targets(), arm13);
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0].major, 9);
    EXPECT_EQ(both[0].suggested_sm, 80);
    EXPECT_EQ(both[1].major, 11);
    EXPECT_EQ(both[1].suggested_sm, 100);
    // x86-64 has no major-11 part: nothing there needs a net, so major 11 is no gap.
    const std::vector<Gpu> x86{gpu(80), gpu(90), gpu(100), gpu(120)};
    auto one = major_gaps(parse_ok("8.0 10.0 12.0").targets(), x86);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].major, 9);
    // A retired part makes no gap either; an a-only major below gives no place for the PTX.
    Gpu retired = gpu(110);
    retired.retired = true;
    EXPECT_EQ(major_gaps(parse_ok("10.0 12.0").targets(), {retired, gpu(120)}).size(), 0u);
    auto a_only = major_gaps(parse_ok("9.0a 12.0").targets(), {gpu(100), gpu(120)});
    ASSERT_EQ(a_only.size(), 1u);
    EXPECT_EQ(a_only[0].suggested_sm, 0);
}

TEST(Coverage, TorchDeadIsItsOwnTier) {
    EXPECT_EQ(tier_string(Tier::TorchDead), "dead (torch)");
    EXPECT_EQ(tier_string(Tier::Dead), "dead");
}

TEST(Gencode, OneSpellingForEveryEmitter) {
    EXPECT_EQ(gencode_value(Target{Kind::Sass, 90}), "arch=compute_90,code=sm_90");
    EXPECT_EQ(gencode_value(Target{Kind::Sass, 90, Suffix::Specific}),
              "arch=compute_90a,code=sm_90a");
    EXPECT_EQ(gencode_value(Target{Kind::Lto, 100, Suffix::Family}),
              "arch=compute_100f,code=lto_100f");
    EXPECT_EQ(gencode_value(Target{Kind::Ptx, 120}, "[compute_120,lto_120]"),
              "arch=compute_120,code=[compute_120,lto_120]");
    // The arch list's -gencode flags are that value behind "-gencode=".
    for (const auto& flag : parse_ok("8.0 9.0+PTX").to_gencode())
        EXPECT_EQ(flag.rfind("-gencode=arch=compute_", 0), 0u) << flag;
}
