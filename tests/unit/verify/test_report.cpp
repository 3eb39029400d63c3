// The gate's report (verify/report.cpp): the JSON data block and the CI-log table, from reports
// built by verify_extension over synthetic entries.
#include "verify/gate.h"
#include "verify/report.h"

#include "support.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::verify;

namespace {

using forge::verify::test::entry;

RunContext run_of(const std::vector<ExtensionReport>& reports) {
    return {verdict(reports, {}), {}};
}

nlohmann::json run_json(const std::vector<ExtensionReport>& reports) {
    return to_json(reports, run_of(reports));
}

std::string run_text(const std::vector<ExtensionReport>& reports, const std::string& source) {
    return to_text(reports, source, run_of(reports));
}

ExtensionReport report(std::initializer_list<binary::Entry> entries, std::string_view list,
                       const Options& opts = {}, std::optional<std::string> member = {}) {
    binary::Extension x;
    x.file = "dist/pkg.whl";
    x.member = std::move(member);
    x.entries = entries;
    return verify_extension(x, *arch::ArchList::parse(list), opts);
}

ExtensionReport passing() {
    return report({entry("sm_80", 2), entry("sm_90"), entry("compute_90")}, "8.0 9.0+PTX", {},
                  "pkg/_C.so");
}

ExtensionReport failing() {
    Options o;
    o.waivers.push_back({*arch::parse_target("sm_86"), "--allow-missing"});
    return report({entry("sm_80"), entry("sm_100")}, "8.0 8.6 8.9 9.0", o, "pkg/_old.so");
}

} // namespace

TEST(VerifyReport, JsonDataBlockOfOneExtension) {
    const auto j = to_json(failing());
    EXPECT_EQ(j["file"], "dist/pkg.whl");
    EXPECT_EQ(j["member"], "pkg/_old.so");
    EXPECT_EQ(j["expected"], (nlohmann::json{"sm_80", "sm_86", "sm_89", "sm_90"}));
    EXPECT_EQ(j["sass"], (nlohmann::json{"sm_80", "sm_100"}));
    EXPECT_EQ(j["ptx"], nlohmann::json::array());
    EXPECT_EQ(j["missing_sass"], (nlohmann::json{"sm_89", "sm_90"}));
    EXPECT_EQ(j["missing_families"], (nlohmann::json{"sm_9x"}));
    EXPECT_EQ(j["extra"], (nlohmann::json{"sm_100"}));
    EXPECT_EQ(j["waived"], (nlohmann::json{"sm_86 (--allow-missing)"}));
    EXPECT_EQ(j["kernels"], (nlohmann::json{{"sm_100", 1}, {"sm_80", 1}}));
    EXPECT_EQ(j["device_code"], true);
    EXPECT_EQ(j["source"], "native");
    EXPECT_EQ(j["verdict"], "fail");
    ASSERT_EQ(j["checks"].size(), 4u);
    EXPECT_EQ(j["checks"][0]["check"], "family");
    EXPECT_EQ(j["checks"][0]["ok"], false);
    EXPECT_EQ(j["checks"][3]["check"], "extra");
    EXPECT_FALSE(j["checks"][3]["detail"].get<std::string>().empty());
    EXPECT_EQ(to_json(passing())["verdict"], "pass");
    EXPECT_TRUE(to_json(report({entry("sm_80")}, "8.0"))["member"].is_null());
}

TEST(VerifyReport, OverallVerdictNeedsEveryExtensionAndAtLeastOne) {
    EXPECT_EQ(run_json(std::vector<ExtensionReport>{passing(), passing()})["verdict"], "pass");
    EXPECT_EQ(run_json(std::vector<ExtensionReport>{passing(), failing()})["verdict"], "fail");
    EXPECT_EQ(run_json(std::vector<ExtensionReport>{failing(), passing()})["verdict"], "fail");
    // Nothing verified is not a pass.
    const auto none = run_json(std::vector<ExtensionReport>{});
    EXPECT_EQ(none["verdict"], "fail");
    EXPECT_EQ(none["extensions"], nlohmann::json::array());
    EXPECT_EQ(run_json(std::vector<ExtensionReport>{passing(), failing()})["extensions"].size(),
              2u);
}

TEST(VerifyReport, TextTableNamesEveryExtensionCheckAndWaiver) {
    const std::string text = run_text({passing(), failing()}, "--arch-list = 8.0 9.0+PTX");
    EXPECT_NE(text.find("PASS  dist/pkg.whl [pkg/_C.so]\n"), std::string::npos) << text;
    EXPECT_NE(text.find("FAIL  dist/pkg.whl [pkg/_old.so]\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  expected  sm_80 sm_90 compute_90   (from --arch-list = 8.0 9.0+PTX; "
                        "read by native)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  found     sm_80 sm_90 compute_90\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  found     sm_80 sm_100\n"), std::string::npos) << text;
    EXPECT_NE(
        text.find(
            "  2. sass         FAIL (waived: sm_86 — --allow-missing)  missing sm_89 sm_90\n"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("  4. extra        FAIL  "), std::string::npos) << text;
    EXPECT_NE(text.find("  1. family       ok    "), std::string::npos) << text;
    EXPECT_NE(text.find("  kernels   compute_90=1 sm_80=2 sm_90=1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  waived    sm_86 (--allow-missing)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("verdict: FAIL (2 extensions): 1 of 2 extension(s) fail\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(run_text({passing()}, "x").substr(run_text({passing()}, "x").rfind("verdict")),
              "verdict: pass (1 extension)\n");
    EXPECT_EQ(
        run_text({}, "x").rfind("verdict: FAIL (0 extensions): no extension module at all", 0), 0u);
    // Inputs not read are counted as such, never as "0 extensions" (issue 34).
    RunContext unread = run_of({});
    unread.verdict = {false, "why"};
    unread.unreadable = {{"bad.so", "bad.so: at byte 0x10: corrupt"}};
    EXPECT_EQ(verdict_line({}, unread), "verdict: FAIL (1 input(s) not read): why\n");
    unread.unreadable.clear();
    EXPECT_EQ(verdict_line({}, unread), "verdict: FAIL (0 extensions): why\n");
    unread.unreadable = {{"bad.so", "x"}};
    EXPECT_EQ(verdict_line({passing()}, unread),
              "verdict: FAIL (1 extension, 1 input(s) not read): why\n");
    // Nothing found, nothing expected: shown as "-".
    const std::string empty = run_text({report({}, "8.0")}, "x");
    EXPECT_NE(empty.find("  found     -\n"), std::string::npos) << empty;
}

// --format github and --junit (docs/ci-output.md): what each report becomes.
TEST(VerifyFindings, AnErrorPerFailedCheckAWarningPerWaivedPass) {
    Options o;
    o.waivers.push_back({*arch::parse_target("sm_86"), "--allow-missing"});
    const ExtensionReport waived_pass =
        report({entry("sm_80"), entry("sm_90")}, "8.0 8.6 9.0", o, "pkg/_w.so");
    const std::vector<ExtensionReport> reports{passing(), failing(), waived_pass};
    const auto findings = to_findings(reports, run_of(reports));
    std::vector<std::string> lines;
    for (const auto& f : findings)
        lines.push_back(ci::github_command(f));
    ASSERT_EQ(lines.size(), 4u) << ci::to_github(findings);
    EXPECT_EQ(lines[0].rfind("::error file=dist/pkg.whl,title=verify family::dist/pkg.whl "
                             "[pkg/_old.so]: ",
                             0),
              0u)
        << lines[0];
    EXPECT_EQ(lines[1], "::error file=dist/pkg.whl,title=verify sass::dist/pkg.whl [pkg/_old.so]: "
                        "missing sm_89 sm_90 (waived: sm_86 — --allow-missing)");
    EXPECT_EQ(lines[2].rfind("::error file=dist/pkg.whl,title=verify extra::", 0), 0u) << lines[2];
    EXPECT_EQ(lines[3], "::warning file=dist/pkg.whl,title=verify sass waived::dist/pkg.whl "
                        "[pkg/_w.so]: waived: sm_86 — --allow-missing");
}

TEST(VerifyFindings, NothingVerifiedIsAnErrorNeverSilence) {
    const std::vector<ExtensionReport> none;
    const auto findings = to_findings(none, run_of(none));
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(ci::github_command(findings[0]),
              "::error title=verify::verdict: FAIL (0 extensions): no extension module at all: "
              "nothing carries GPU code; a package without any is allowed only with "
              "--allow-pure-python or verify.allow_pure_python");
    EXPECT_TRUE(to_findings({passing()}, run_of({passing()})).empty());
}

TEST(VerifyFindings, UnreadableInputsAndNarrowedTokens) {
    RunContext run = run_of({passing()});
    run.unreadable.emplace_back("junk.so", "junk.so: not an ELF");
    run.narrowed.push_back("7.5 (dropped against arch_policy[13.0]: gone)");
    const std::string out = ci::to_github(to_findings({passing()}, run));
    EXPECT_EQ(out, "::notice title=verify narrowed::narrowed 7.5 (dropped against "
                   "arch_policy[13.0]: gone)\n"
                   "::error file=junk.so,title=verify unreadable::junk.so: not an ELF\n");
}

TEST(VerifyJunit, ACasePerCheckAndAVerdictCase) {
    const std::vector<ExtensionReport> reports{passing(), failing()};
    RunContext run = run_of(reports);
    run.unreadable.emplace_back("junk.so", "not an ELF");
    const auto cases = to_test_cases(reports, run);
    using Status = ci::TestCase::Status;
    ASSERT_EQ(cases.size(), 1u + passing().checks.size() + failing().checks.size() + 1u);
    EXPECT_EQ(cases.front().classname, "junk.so");
    EXPECT_EQ(cases.front().status, Status::Error);
    EXPECT_EQ(cases[1].classname, "dist/pkg.whl [pkg/_C.so]");
    EXPECT_EQ(cases[1].name, "family");
    EXPECT_EQ(cases[1].status, Status::Pass);
    const auto& sass = cases[1 + passing().checks.size() + 1];
    EXPECT_EQ(sass.classname, "dist/pkg.whl [pkg/_old.so]");
    EXPECT_EQ(sass.name, "sass");
    EXPECT_EQ(sass.status, Status::Failure);
    EXPECT_EQ(sass.message, "missing sm_89 sm_90");
    EXPECT_EQ(sass.detail, "waived: sm_86 — --allow-missing");
    EXPECT_EQ(cases.back().classname, "verify");
    EXPECT_EQ(cases.back().name, "verdict");
    EXPECT_EQ(cases.back().status, Status::Failure);
    EXPECT_EQ(cases.back().message,
              "verdict: FAIL (2 extensions, 1 input(s) not read): 1 of 2 extension(s) fail");
    // Nothing verified: the verdict case fails (an empty report is not a green one).
    const auto none = to_test_cases({}, run_of({}));
    ASSERT_EQ(none.size(), 1u);
    EXPECT_EQ(none[0].status, Status::Failure);
    EXPECT_EQ(to_test_cases({passing()}, run_of({passing()})).back().status, Status::Pass);
}
