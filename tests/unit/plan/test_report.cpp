// plan's verdict from the stand-in's records, the build's exit and the gate; its formats; the
// --gate glob over the tree.
#include "plan/report.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::plan;

namespace {

frontend::LogRecord record(const char* action, std::vector<std::string> missing,
                           std::vector<std::string> injected) {
    frontend::LogRecord r;
    r.sources = {"csrc/k.cu"};
    r.requested = {"sm_80"};
    r.missing = std::move(missing);
    r.injected = std::move(injected);
    r.action = action;
    r.mode = "inject";
    return r;
}

} // namespace

TEST(PlanJudge, RestoredDropsPassUnrestoredFail) {
    PlanReport r;
    r.calls = {record("injected", {"sm_90"}, {"sm_90"}), record("passthrough", {}, {})};
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Pass);
    EXPECT_EQ(r.tus.size(), 1u); // passthroughs are not TUs
    EXPECT_EQ(r.exit_code(), 0);

    r.calls.push_back(record("injected", {"sm_90", "sm_110"}, {"sm_90"}));
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Fail);
    EXPECT_NE(r.reason.find("csrc/k.cu (sm_110)"), std::string::npos) << r.reason;
    EXPECT_EQ(r.exit_code(), 1);

    r.calls = {record("refused", {"sm_90"}, {})}; // strict: nothing restored
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Fail);
}

TEST(PlanJudge, GateAndBuildDecide) {
    PlanReport r;
    r.calls = {record("compared", {}, {})};
    r.gated = true;
    r.gate = {
        {"verdict", "fail"}, {"reason", "sm_90 missing"}, {"extensions", nlohmann::json::array()}};
    r.gate_outcome = verify::Outcome::Fail;
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Fail);
    EXPECT_NE(r.reason.find("sm_90 missing"), std::string::npos);

    r.gate_outcome = verify::Outcome::Error;
    judge(r);
    EXPECT_EQ(r.exit_code(), 2);

    r.gate_outcome = verify::Outcome::Fail;
    r.build_exit = 3; // the build failing wins over everything
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Error);
    EXPECT_EQ(r.exit_code(), 2);
    EXPECT_NE(r.reason.find("exited 3"), std::string::npos) << r.reason;
}

TEST(PlanVerdict, ABuildThatNeverRanOrWasKilledSaysSo) {
    PlanReport r;
    r.build_exit = std::nullopt;
    r.build_error = "the build command could not start: 'x': not found on PATH";
    judge(r);
    EXPECT_EQ(r.verdict, verify::Outcome::Error);
    EXPECT_EQ(r.reason, r.build_error);
    auto j = to_json(r);
    EXPECT_TRUE(j["build_exit"].is_null()) << j.dump();

    PlanReport killed;
    killed.build_exit = 128 + SIGKILL;
    killed.build_signal = SIGKILL;
    judge(killed);
    EXPECT_EQ(killed.verdict, verify::Outcome::Error);
    EXPECT_NE(killed.reason.find("killed by SIGKILL"), std::string::npos) << killed.reason;
    EXPECT_EQ(to_json(killed)["build_exit"], 128 + SIGKILL);
    EXPECT_NE(to_github(killed).find("the build was killed by SIGKILL"), std::string::npos);
}

TEST(PlanFormat, TableOfFormatters) {
    ASSERT_NE(formatter("text"), nullptr);
    ASSERT_NE(formatter("json"), nullptr);
    ASSERT_NE(formatter("github"), nullptr);
    EXPECT_EQ(formatter("junit"), nullptr);
    EXPECT_EQ(format_names(), "text|json|github");
    PlanReport r;
    r.list = "--arch-list = 8.0";
    r.calls = {record("injected", {"sm_90"}, {"sm_90"})};
    judge(r);
    auto j = nlohmann::json::parse(formatter("json")(r));
    EXPECT_EQ(j["verdict"], "pass");
    EXPECT_EQ(j["calls"][0]["action"], "injected");
    EXPECT_TRUE(j["gate"].is_null());
    EXPECT_TRUE(j["extensions"].empty());
    const std::string text = formatter("text")(r);
    EXPECT_NE(text.find("injected  sm_90"), std::string::npos) << text;
}

TEST(PlanFormat, GithubAnnotatesUnrestoredTusInjectionsTheBuildAndTheGate) {
    PlanReport r;
    r.list = "--arch-list = 8.0 9.0";
    auto linked = record("injected", {"sm_90"}, {"sm_90"});
    linked.sources = {"a.cu", "b.cu"}; // several sources: annotated on no file
    r.calls = {record("injected", {"sm_90", "sm_110"}, {"sm_90"}), linked};
    r.gated = true;
    r.gate_outcome = verify::Outcome::Pass;
    r.gate = {{"verdict", "pass"}, {"extensions", nlohmann::json::array()}};
    r.gate_github = "::error file=ext.so,title=verify::from the gate\nnvcc-forge verify: PASS\n";
    judge(r);
    EXPECT_EQ(formatter("github")(r),
              "::error file=csrc/k.cu,title=plan%3A targets not built::csrc/k.cu misses sm_110 "
              "(mode inject does not restore them); requested sm_80\n"
              "::notice title=plan%3A targets injected::a.cu b.cu: injected sm_90 (requested "
              "sm_80)\n"
              "::error file=ext.so,title=verify::from the gate\n"
              "nvcc-forge verify: PASS\n"
              "nvcc-forge plan: fail (" +
                  r.reason + ")\n");
    EXPECT_EQ(r.verdict, verify::Outcome::Fail);

    r.build_exit = 2;
    judge(r);
    const std::string out = formatter("github")(r);
    EXPECT_NE(out.find("::error title=plan%3A build command::the build exited 2\n"),
              std::string::npos)
        << out;
}

TEST(PlanLog, ReadsRecordsAndNamesABadLine) {
    const fs::path dir = fs::temp_directory_path() / ("plan_log." + std::to_string(::getpid()));
    fs::create_directories(dir);
    EXPECT_TRUE(read_log(dir / "absent.jsonl")->empty());
    {
        std::ofstream f(dir / "calls.jsonl");
        f << record("compared", {}, {}).to_json() << "\n{oops\n";
    }
    auto bad = read_log(dir / "calls.jsonl");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().line, 2);
    fs::remove_all(dir);
}

TEST(PlanGlob, WalksOnlyUnderTheFixedPrefix) {
    const fs::path dir = fs::temp_directory_path() / ("plan_glob." + std::to_string(::getpid()));
    fs::create_directories(dir / "out" / "pkg");
    fs::create_directories(dir / "other");
    for (const char* f : {"out/pkg/_a.so", "out/pkg/_b.so", "out/pkg/x.py", "other/_c.so"})
        std::ofstream(dir / f) << "x";
    EXPECT_EQ(expand_gate_glob("out/pkg/*.so", dir),
              (std::vector<std::string>{(dir / "out/pkg/_a.so").string(),
                                        (dir / "out/pkg/_b.so").string()}));
    EXPECT_EQ(expand_gate_glob("**/_c.so", dir).size(), 1u);
    EXPECT_EQ(expand_gate_glob("out/pkg/x.py", dir).size(), 1u); // a plain path
    EXPECT_TRUE(expand_gate_glob("nowhere/*.so", dir).empty());
    EXPECT_EQ(expand_gate_glob((dir / "out/*/_a.so").string(), dir).size(), 1u);
    fs::remove_all(dir);
}
