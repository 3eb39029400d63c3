// Which toolkit builds which SM: version specs, policy/sm_toolkit.yml and the plan (bundle/pin.h).
#include "bundle/pin.h"
#include "toolkit/probe.h"

#include "../fake_toolkit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using forge::test::fake_toolkit;
using forge::test::sass;
using namespace forge::bundle;
using forge::toolkit::parse_version_text;
using forge::toolkit::Toolkit;

namespace {

SmToolkitPolicy policy_of(const std::string& yaml) {
    auto p = parse_sm_toolkit(yaml, "sm_toolkit.yml");
    EXPECT_TRUE(p.ok()) << p.error().to_string();
    return p.value();
}

} // namespace

TEST(VersionSpecTest, AVersionTooLargeForAnIntIsAnErrorNotACrash) {
    // std::stoi threw std::out_of_range on these (issue 40).
    for (const char* text : {">=99999999999.0", "==12.99999999999"}) {
        auto spec = parse_version_spec(text);
        ASSERT_FALSE(spec.ok()) << text;
        EXPECT_EQ(spec.error().key, text);
    }
    EXPECT_FALSE(parse_version_text("99999999999.0").ok());
}

TEST(VersionSpecTest, ExactAndAtLeast) {
    auto exact = parse_version_spec("==12.8");
    ASSERT_TRUE(exact.ok());
    EXPECT_TRUE(exact->matches(parse_version_text("12.8.93").value()));
    EXPECT_TRUE(exact->matches(parse_version_text("12.8.61").value()));
    EXPECT_FALSE(exact->matches(parse_version_text("12.9.86").value()));
    EXPECT_FALSE(exact->matches(parse_version_text("13.0.88").value()));
    auto min = parse_version_spec(">=13.0");
    ASSERT_TRUE(min.ok());
    EXPECT_TRUE(min->matches(parse_version_text("13.0.48").value()));
    EXPECT_TRUE(min->matches(parse_version_text("13.1.115").value()));
    EXPECT_FALSE(min->matches(parse_version_text("12.9.86").value()));
    EXPECT_EQ(min->to_string(), ">=13.0");
}

TEST(VersionSpecTest, RejectsOtherOperatorsAndShapes) {
    for (const char* bad :
         {"12.8", "~=12.8", ">13.0", "<=12.8", ">=13", "==12.8.93", "== twelve", ""})
        EXPECT_FALSE(parse_version_spec(bad).ok()) << bad;
}

TEST(SmToolkitPolicyTest, ParsesMapWithLines) {
    auto p = parse_sm_toolkit("# comment\n90: \"==12.8\"\nsm_110: \">=13.0\"\n", "f.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ(p->specs.at(90).to_string(), "==12.8");
    EXPECT_EQ(p->specs.at(110).to_string(), ">=13.0");
    EXPECT_EQ(p->lines.at(90), 2);
    EXPECT_EQ(p->lines.at(110), 3);
}

TEST(SmToolkitPolicyTest, BadSpecErrorNamesFileAndLine) {
    auto p = parse_sm_toolkit("90: \"==12.8\"\n100: \"==12.8\"\n120: \"12.8\"\n", "pol.yml");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().file, "pol.yml");
    EXPECT_EQ(p.error().line, 3);
    EXPECT_NE(p.error().to_string().find("pol.yml:3"), std::string::npos) << p.error().to_string();
}

TEST(SmToolkitPolicyTest, UnquotedAtLeastIsAYamlErrorWithLine) {
    // `>` starts a YAML block scalar: the spec must be quoted, and the error must say where.
    auto p = parse_sm_toolkit("90: \"==12.8\"\n110: >=13.0\n", "pol.yml");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().line, 2) << p.error().to_string();
    EXPECT_NE(p.error().message.find("quote specs"), std::string::npos) << p.error().message;
}

TEST(SmToolkitPolicyTest, DuplicateAndNonNumericKeysAreErrors) {
    auto dup = parse_sm_toolkit("90: \"==12.8\"\n90: \">=13.0\"\n", "pol.yml");
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().line, 2);
    auto word = parse_sm_toolkit("hopper: \"==12.8\"\n", "pol.yml");
    ASSERT_FALSE(word.ok());
    EXPECT_EQ(word.error().key, "hopper");
    EXPECT_FALSE(parse_sm_toolkit("", "pol.yml").ok());
    EXPECT_FALSE(parse_sm_toolkit("- 90\n", "pol.yml").ok());
}

TEST(SmToolkitPolicyTest, ShippedPolicyPinsEverySmTo128Except110) {
    auto p = load_sm_toolkit(std::string(FORGE_TEST_SOURCE_DIR) + "/../policy/sm_toolkit.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    for (int sm : {90, 100, 120})
        EXPECT_EQ(p->specs.at(sm).to_string(), "==12.8") << sm;
    EXPECT_EQ(p->specs.at(110).to_string(), ">=13.0");
    for (const auto& [sm, spec] : p->specs)
        if (sm != 110) EXPECT_EQ(spec.to_string(), "==12.8") << sm;
}

TEST(PlanToolkitsTest, SplitsSmsByPinnedToolkitOldestFirst) {
    std::vector<Toolkit> found{
        fake_toolkit("13.0.88", {75, 80, 90, 100, 110, 120}, "/cuda-13.0/bin/nvcc"),
        fake_toolkit("12.8.93", {75, 80, 90, 100, 101, 120}, "/cuda-12.8/bin/nvcc"),
        fake_toolkit("13.1.115", {75, 80, 90, 100, 110, 120}, "/cu131/bin/nvcc")};
    auto policy = policy_of("90: \"==12.8\"\n100: \"==12.8\"\n110: \">=13.0\"\n120: \"==12.8\"\n");
    auto plan = plan_toolkits({120, 90, 110, 100}, policy, found);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    ASSERT_EQ(plan->groups.size(), 2u);
    EXPECT_EQ(plan->groups[0].toolkit->version.full(), "12.8.93");
    EXPECT_EQ(plan->groups[0].sms, (std::vector<int>{90, 100, 120}));
    // >=13.0 takes the OLDEST release at or above: 13.0, not 13.1
    EXPECT_EQ(plan->groups[1].toolkit->version.full(), "13.0.88");
    EXPECT_EQ(plan->groups[1].sms, (std::vector<int>{110}));
}

TEST(PlanToolkitsTest, ExactPinPrefersOldestSuitablePatchOfThatRelease) {
    // Each SM is built "with the oldest suitable toolkit": 12.8.61 over 12.8.93.
    std::vector<Toolkit> found{fake_toolkit("12.8.61", {90}, "/a/bin/nvcc"),
                               fake_toolkit("12.8.93", {90}, "/b/bin/nvcc"),
                               fake_toolkit("12.9.86", {90}, "/c/bin/nvcc")};
    auto plan = plan_toolkits({90}, policy_of("90: \"==12.8\"\n"), found);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->groups.at(0).toolkit->nvcc, "/a/bin/nvcc");
}

TEST(PlanToolkitsTest, MissingToolkitListsEveryMissingSmAndWhatWasFound) {
    std::vector<Toolkit> found{
        fake_toolkit("13.0.88", {75, 90, 100, 110, 120}, "/usr/local/cuda-13.0/bin/nvcc")};
    auto policy = policy_of("90: \"==12.8\"\n100: \"==12.8\"\n110: \">=13.0\"\n120: \"==12.8\"\n");
    auto plan = plan_toolkits({90, 100, 110, 120}, policy, found);
    ASSERT_FALSE(plan.ok());
    const std::string msg = plan.error().to_string();
    EXPECT_EQ(plan.error().exit_code, kExitInput);
    for (const char* needle :
         {"sm_90", "sm_100", "sm_120", "==12.8", "13.0.88", "/usr/local/cuda-13.0/bin/nvcc"})
        EXPECT_NE(msg.find(needle), std::string::npos) << needle << " in:\n" << msg;
    EXPECT_EQ(msg.find("sm_110:"), std::string::npos) << "sm_110 is satisfiable:\n" << msg;
}

TEST(PlanToolkitsTest, SmWithoutSpecIsNamed) {
    std::vector<Toolkit> found{fake_toolkit("13.0.88", {103, 110}, "/x/bin/nvcc")};
    auto plan = plan_toolkits({110, 103}, policy_of("110: \">=13.0\"\n"), found);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().to_string().find("sm_103: no toolkit spec"), std::string::npos)
        << plan.error().to_string();
}

TEST(PlanToolkitsTest, MatchingReleaseThatCannotEmitTheSmIsNotUsed) {
    // 12.8 cannot emit sm_110 ("Unsupported gpu architecture 'compute_110'"): say so.
    std::vector<Toolkit> found{fake_toolkit("12.8.93", {90, 100, 120}, "/cu128/bin/nvcc")};
    auto plan = plan_toolkits({110}, policy_of("110: \">=12.0\"\n"), found);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().to_string().find("cannot emit sm_110"), std::string::npos)
        << plan.error().to_string();
}
