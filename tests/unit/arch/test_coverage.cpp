// Which GPUs a list of targets reaches and how (arch/coverage.cpp): tiers, covers(), major gaps.
#include "arch/arch.h"
#include "arch/coverage.h"
#include "support.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <set>
#include <string_view>
#include <vector>

using namespace forge::arch;
using forge::arch::test::parse_ok;

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
