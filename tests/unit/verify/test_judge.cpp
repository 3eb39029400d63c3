#include "verify/judge.h"

#include "support.h"

#include <gtest/gtest.h>
#include <map>

using namespace forge;
using namespace forge::verify;

namespace {

using forge::verify::test::entry;

// A run's inputs as the reader would give them: each file's modules, or its error.
struct JudgeRun {
    std::map<std::string, Result<std::vector<binary::Extension>>> inputs;
    std::vector<std::string> files;
    std::vector<std::string> told; // what the command would print, in order

    void add(const std::string& file, std::vector<binary::Extension> modules) {
        files.push_back(file);
        inputs.emplace(file, std::move(modules));
    }
    void add_unreadable(const std::string& file, const std::string& why) {
        files.push_back(file);
        inputs.emplace(file, Error{why, file});
    }
    Judgement run(const JudgeSetup& setup) {
        return judge(
            files, setup, [this](const std::string& f) { return inputs.at(f); },
            [this](const Error& e) { told.push_back(e.to_string()); });
    }
};

binary::Extension judge_module_of(std::string member, std::vector<binary::Entry> entries) {
    binary::Extension x;
    x.file = "pkg.whl";
    x.member = std::move(member);
    x.entries = std::move(entries);
    return x;
}

JudgeSetup judge_setup(std::string_view list) {
    JudgeSetup s;
    s.list = *arch::ArchList::parse(list);
    return s;
}

const char* const kJudgeModule = "pkg/_C.cpython-312-x86_64-linux-gnu.so";

} // namespace

TEST(Judge, AllModulesPassing) {
    JudgeRun r;
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")})});
    const Judgement j = r.run(judge_setup("8.0"));
    EXPECT_TRUE(j.verdict.pass) << j.verdict.reason;
    ASSERT_EQ(j.reports.size(), 1u);
    EXPECT_TRUE(j.unreadable.empty());
    EXPECT_TRUE(r.told.empty());
}

// A library the package names with `device_code: false` is judged and accepted without device
// code; the same library unnamed is a vendored host library, listed and not judged.
TEST(Judge, ModuleNamedHostOnlyIsJudgedNotSetAside) {
    JudgeRun r;
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")}),
                      judge_module_of("pkg/libhelper.so", {})});
    JudgeSetup named = judge_setup("8.0");
    named.expected.push_back({"pkg/libhelper*.so", "host code only", false, "test"});
    const Judgement j = r.run(named);
    ASSERT_EQ(j.reports.size(), 2u);
    EXPECT_FALSE(j.reports[1].host_only);
    EXPECT_TRUE(j.reports[1].pass);
    EXPECT_TRUE(j.verdict.pass) << j.verdict.reason;

    const Judgement unnamed = r.run(judge_setup("8.0"));
    EXPECT_TRUE(unnamed.reports[1].host_only);
}

// plan's stub products: refused (told, listed as not judged) unless the run is plan's own gate.
TEST(Judge, PlanProductsRefusedOutsidePlan) {
    binary::Extension stub = judge_module_of(kJudgeModule, {entry("sm_80")});
    stub.plan_product = true;
    JudgeRun r;
    r.add("pkg.whl", {stub});
    const Judgement refused = r.run(judge_setup("8.0"));
    EXPECT_TRUE(refused.reports.empty());
    ASSERT_EQ(refused.unreadable.size(), 1u);
    EXPECT_EQ(refused.unreadable[0].first, "pkg.whl");
    ASSERT_EQ(r.told.size(), 1u);
    EXPECT_EQ(r.told[0], refused.unreadable[0].second);
    EXPECT_NE(r.told[0].find("pkg.whl:" + std::string(kJudgeModule)), std::string::npos);
    EXPECT_NE(r.told[0].find("built by `nvcc-forge plan`"), std::string::npos);
    EXPECT_FALSE(refused.verdict.pass); // nothing judged

    JudgeSetup plan = judge_setup("8.0");
    plan.plan_products = true;
    const Judgement judged = r.run(plan);
    EXPECT_EQ(judged.reports.size(), 1u);
    EXPECT_TRUE(judged.unreadable.empty());
    EXPECT_TRUE(judged.verdict.pass) << judged.verdict.reason;
}

TEST(Judge, AbsentExpectedExtensionFailsAPassingRun) {
    JudgeRun r;
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")})});
    JudgeSetup s = judge_setup("8.0");
    s.expected.push_back({"pkg/_C*.so", "", true, "--expect-extension"});
    s.expected.push_back({"pkg/_flash*.so", "", true, "--expect-extension"});
    const Judgement j = r.run(s);
    EXPECT_FALSE(j.verdict.pass);
    EXPECT_EQ(j.extensions.missing, std::vector<std::string>{"pkg/_flash*.so"});
    EXPECT_EQ(j.verdict.reason.rfind("expected extension(s) absent or without device code: ", 0),
              0u)
        << j.verdict.reason;
}

// A failing module's reason comes first, the expected check's after it.
TEST(Judge, ReasonsJoinInOrder) {
    JudgeRun r;
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")})});
    JudgeSetup s = judge_setup("8.0 9.0");
    s.expected.push_back({"pkg/_flash*.so", "", true, "--expect-extension"});
    const Judgement j = r.run(s);
    EXPECT_FALSE(j.verdict.pass);
    EXPECT_EQ(j.verdict.reason.rfind("1 of 1 extension(s) fail; expected extension(s)", 0), 0u)
        << j.verdict.reason;
}

// Issue 34: when nothing read is judged, the verdict concludes nothing from the inputs that were
// not read: not "no extension module at all", not "pure-Python" (even when allowed), and it
// names the first one (file, member, byte offset).
TEST(Judge, NothingIsConcludedFromInputsNotRead) {
    JudgeRun r;
    Error bad{"fatbin size past the end", "rdc.so"};
    bad.offset = 0x8e9d0;
    r.files.push_back("rdc.so");
    r.inputs.emplace("rdc.so", bad);
    binary::Extension host;
    host.file = "libhost.so";
    r.add("libhost.so", {host});
    for (bool allow : {false, true}) {
        for (bool fails : {false, true}) {
            JudgeSetup s = judge_setup("8.0");
            s.opts.allow_pure_python = allow;
            s.unreadable_fails = fails;
            const Judgement j = r.run(s);
            EXPECT_FALSE(j.verdict.pass) << allow << fails;
            EXPECT_EQ(j.verdict.reason,
                      "1 input(s) not judged (first: rdc.so at byte 0x8e9d0): nothing is "
                      "concluded about the device code they hold");
        }
    }
}

// An input that could not be read: told and listed; the verdict is over what was read unless
// the run says unreadable inputs fail it (plan's gate). An expected module it may hold is
// "unreadable", not "missing".
TEST(Judge, UnreadableInputs) {
    JudgeRun r;
    r.add_unreadable("bad.whl", "not a zip");
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")})});
    JudgeSetup s = judge_setup("8.0");
    const Judgement lenient = r.run(s);
    EXPECT_TRUE(lenient.verdict.pass) << lenient.verdict.reason;
    ASSERT_EQ(lenient.unreadable.size(), 1u);
    EXPECT_EQ(lenient.unreadable[0],
              std::make_pair(std::string("bad.whl"), std::string("bad.whl: not a zip")));
    EXPECT_EQ(r.told, std::vector<std::string>{"bad.whl: not a zip"});

    s.unreadable_fails = true;
    const Judgement strict = r.run(s);
    EXPECT_FALSE(strict.verdict.pass);
    EXPECT_EQ(strict.verdict.reason, "1 input(s) could not be read (see the messages above)");

    s.unreadable_fails = false;
    s.expected.push_back({"pkg/_flash*.so", "", true, "--expect-extension"});
    const Judgement expected = r.run(s);
    ASSERT_EQ(expected.extensions.modules.size(), 1u);
    EXPECT_EQ(expected.extensions.modules[0].status, "unreadable");
}

// Nothing read at all (a path that does not exist): the verdict is about the inputs, never
// "nothing carries GPU code" with --allow-pure-python as its remedy.
TEST(Judge, NothingReadIsAboutTheInputs) {
    JudgeRun r;
    r.add_unreadable("/nonexistent.whl", "no such file");
    const Judgement j = r.run(judge_setup("8.0"));
    EXPECT_FALSE(j.verdict.pass);
    EXPECT_NE(j.verdict.reason.find("/nonexistent.whl"), std::string::npos) << j.verdict.reason;
    EXPECT_EQ(j.verdict.reason.find("allow-pure-python"), std::string::npos) << j.verdict.reason;
    EXPECT_EQ(j.verdict.reason.find("GPU code"), std::string::npos) << j.verdict.reason;
}

// The one verdict of a gating command: its word and exit code (verify's and plan's), and an
// input not judged an error even where what was read passes.
TEST(Judge, OutcomeIsTheOneVerdict) {
    EXPECT_EQ(outcome_word(Outcome::Pass), "pass");
    EXPECT_EQ(outcome_word(Outcome::Fail), "fail");
    EXPECT_EQ(outcome_word(Outcome::Error), "error");
    EXPECT_EQ(outcome_exit_code(Outcome::Pass), kExitOk);
    EXPECT_EQ(outcome_exit_code(Outcome::Fail), kExitPolicy);
    EXPECT_EQ(outcome_exit_code(Outcome::Error), kExitInput);

    JudgeRun r;
    r.add("pkg.whl", {judge_module_of(kJudgeModule, {entry("sm_80")})});
    EXPECT_EQ(r.run(judge_setup("8.0")).outcome(), Outcome::Pass);
    EXPECT_EQ(r.run(judge_setup("8.0 9.0")).outcome(), Outcome::Fail);
    r.add_unreadable("bad.whl", "not a zip");
    const Judgement lenient = r.run(judge_setup("8.0"));
    EXPECT_TRUE(lenient.verdict.pass);
    EXPECT_EQ(lenient.outcome(), Outcome::Error);
}
