// The comparison of the policy with the call's targets (frontend/compare.cpp): suffix folding,
// LTO, extras, what the toolkit can emit.
#include "frontend/compare.h"
#include "gpus_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using namespace forge;
using namespace forge::frontend;

namespace {

arch::Target T(const char* name) {
    return *arch::parse_target(name);
}

std::vector<arch::Target> policy_of(const char* list) {
    return arch::ArchList::parse(list)->targets();
}

const std::vector<arch::Gpu>& gpus() {
    return forge::test::shipped_gpus();
}

Comparison compare_targets(const std::vector<arch::Target>& policy,
                           const std::set<arch::Target>& requested) {
    return frontend::compare_targets(policy, requested, gpus());
}

} // namespace

TEST(Compare, FlashAttentionLadderMissesThorAndPtx) {
    auto c = compare_targets(policy_of("8.0 9.0+PTX 10.0 11.0 12.0+PTX"),
                             {T("sm_80"), T("sm_90"), T("sm_100"), T("sm_120")});
    EXPECT_EQ(target_names(c.missing),
              (std::vector<std::string>{"sm_110", "compute_90", "compute_120"}));
    EXPECT_TRUE(c.extra.empty());
}

// The gate asks arch::covers() of each wanted target (verify/gate.cpp's sass and PTX checks); the
// compare must answer as it does, so the test asks it too, with the table the gate judges with.
TEST(Compare, SuffixedRequestSatisfiesPlainPolicyAsArchCoversSays) {
    const std::set<arch::Target> requested{T("sm_90a"), T("sm_100f"), T("compute_90a")};
    const auto policy = policy_of("9.0 10.0");
    auto c = compare_targets(policy, requested);
    EXPECT_TRUE(c.missing.empty());
    EXPECT_EQ(target_names(c.extra), (std::vector<std::string>{"compute_90a"}));
    std::vector<arch::Target> named(policy.begin(), policy.end());
    named.insert(named.end(), requested.begin(), requested.end());
    const auto judged = arch::judged_gpus(gpus(), named);
    for (const auto& t : policy)
        EXPECT_TRUE(arch::covers(requested, t, judged, arch::TegraSet(gpus()))) << t.name();
}

// Issue 35, case 2: an sm_100a cubin runs on 10.0 only, so it does not cover a policy's sm_100
// (B300, 10.3, would be lost): the gate fails such a binary, and the compare misses sm_100 too.
TEST(Compare, AnASuffixCoversAPlainTargetOnlyWhereTheGateSaysSo) {
    auto c = compare_targets(policy_of("8.0 10.0"), {T("sm_80"), T("sm_100a")});
    EXPECT_EQ(target_names(c.missing), (std::vector<std::string>{"sm_100"}));
    EXPECT_TRUE(c.extra.empty()); // a suffixed sm_100a is of the list's SM: named, not extra
    EXPECT_TRUE(compare_targets(policy_of("8.0 10.0"), {T("sm_80"), T("sm_100a"), T("sm_103a")})
                    .missing.empty());
    EXPECT_EQ(target_names(compare_targets(policy_of("12.0"), {T("sm_120a")}).missing),
              (std::vector<std::string>{"sm_120"}));
    // A wanted family cubin (the package's form) is covered only by itself.
    EXPECT_EQ(target_names(compare_targets(policy_of("10.0f"), {T("sm_100")}).missing),
              (std::vector<std::string>{"sm_100f"}));
}

// A shim's copy that finds no GPU table: every minor may exist, so only an `f` cubin covers a
// plain target and the wrapper adds the plain one rather than leave a gap the gate may see.
TEST(Compare, WithoutAGpuTableOnlyAFamilyCubinCoversAPlainTarget) {
    auto c = frontend::compare_targets(policy_of("9.0 10.0"), {T("sm_90a"), T("sm_100f")}, {});
    EXPECT_EQ(target_names(c.missing), (std::vector<std::string>{"sm_90"}));
    EXPECT_TRUE(c.extra.empty());
}

TEST(Compare, LtoImageStandsForItsSass) {
    auto c = compare_targets(policy_of("8.0+PTX"), {T("lto_80"), T("compute_80")});
    EXPECT_TRUE(c.missing.empty());
    EXPECT_TRUE(c.extra.empty());
}

TEST(Compare, ExtrasAreReportedNotRemoved) {
    auto c = compare_targets(policy_of("9.0"), {T("sm_75"), T("compute_75"), T("sm_90")});
    EXPECT_TRUE(c.missing.empty());
    EXPECT_EQ(target_names(c.extra), (std::vector<std::string>{"sm_75", "compute_75"}));
}

TEST(Compare, SplitEmittable) {
    auto s = split_emittable({T("sm_37"), T("sm_90")}, {T("sm_90"), T("compute_90")});
    EXPECT_EQ(target_names(s.in), (std::vector<std::string>{"sm_90"}));
    EXPECT_EQ(target_names(s.out), (std::vector<std::string>{"sm_37"}));
    EXPECT_EQ(join_names({T("sm_110"), T("compute_120")}), "sm_110, compute_120");
}
