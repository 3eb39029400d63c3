// The JSON log record and its summary, the stderr drop line, appending to the log
// (frontend/compile_log.cpp).
#include "../temp_dir.h"
#include "frontend/compile_log.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::temp_dir;

} // namespace

TEST(LogRecord, KeysExactlyAsDocumentedAndRoundTrip) {
    LogRecord r;
    r.cwd = "/b";
    r.sources = {"flash_fwd.cu"};
    r.output = "flash_fwd.o";
    r.policy = {"sm_80", "sm_110"};
    r.requested = {"sm_80"};
    r.missing = {"sm_110"};
    r.injected = {"sm_110"};
    r.arch_specific = true;
    r.arch_rule = "a-only";
    r.mode = "inject";
    r.action = kActionInjected;
    r.exit_code = 3;
    r.duration_ms = 17;
    auto line = r.to_json();
    EXPECT_EQ(line.find('\n'), std::string::npos);
    auto j = nlohmann::json::parse(line);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it)
        keys.push_back(it.key());
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> expected = {"action",   "arch_rule",   "arch_specific", "clamped",
                                         "cwd",      "duration_ms", "exit_code",     "extra",
                                         "injected", "missing",     "mode",          "output",
                                         "policy",   "requested",   "sources"};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(keys, expected);
    auto back = LogRecord::from_json(line);
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(back->to_json(), line);
}

// arch_rule: null for a call that was not compared, and a log written before the key existed
// still reads (as "").
TEST(LogRecord, ArchRuleNullAndAbsent) {
    LogRecord r;
    auto j = nlohmann::json::parse(r.to_json());
    EXPECT_TRUE(j["arch_rule"].is_null());
    j.erase("arch_rule");
    auto old = LogRecord::from_json(j.dump());
    ASSERT_TRUE(old.ok()) << old.error().to_string();
    EXPECT_EQ(old->arch_rule, "");
    j["arch_rule"] = 3;
    EXPECT_FALSE(LogRecord::from_json(j.dump()).ok());
}

TEST(LogRecord, RejectsMissingKeyAndWrongType) {
    EXPECT_FALSE(LogRecord::from_json(R"({"cwd":"/"})").ok());
    LogRecord r;
    auto j = nlohmann::json::parse(r.to_json());
    j["missing"] = "sm_90";
    auto bad = LogRecord::from_json(j.dump());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("missing"), std::string::npos);
}

TEST(LogRecord, InvalidUtf8InAPathDoesNotThrow) {
    LogRecord r;
    r.sources = {std::string("bad\xff.cu"), "good.cu"};
    std::string line;
    ASSERT_NO_THROW(line = r.to_json());
    // One line of valid JSON; the bad byte becomes U+FFFD, the rest of the record is kept.
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(j["sources"], (nlohmann::json{"bad\xef\xbf\xbd.cu", "good.cu"})) << line;
    EXPECT_TRUE(j.contains("exit_code")) << line;
}

TEST(DropLine, Format) {
    EXPECT_EQ(drop_line("flash_fwd.cu", "sm_110, compute_120", "8.0 9.0+PTX", "8.0 9.0"),
              "nvcc-forge: flash_fwd.cu: dropped sm_110, compute_120 (policy 8.0 9.0+PTX; "
              "requested 8.0 9.0); the gate will report sass: missing sm_110, ptx: missing PTX "
              "compute_120 unless another object of the binary carries them\n");
}

TEST(DropLine, InjectedDroppedAndClamped) {
    DropReport r{{"sm_110"}, {"compute_120"}, {}, "8.0 11.0 12.0+PTX", "8.0 12.0", "why"};
    EXPECT_EQ(drop_lines("k.cu", r, false),
              "nvcc-forge: k.cu: dropped sm_110 -> injected; dropped compute_120 (policy 8.0 11.0 "
              "12.0+PTX; requested 8.0 12.0); why; the gate will report ptx: missing PTX "
              "compute_120 unless another object of the binary carries it\n");
    // A real drop is printed even when quiet.
    EXPECT_EQ(drop_lines("k.cu", r, true), drop_lines("k.cu", r, false));
    r.dropped.clear();
    EXPECT_EQ(drop_lines("k.cu", r, false),
              "nvcc-forge: k.cu: dropped sm_110 -> injected (policy 8.0 11.0 12.0+PTX; requested "
              "8.0 12.0)\n");
    EXPECT_EQ(drop_lines("k.cu", r, true), "");
    r.clamped = {"sm_50", "compute_50"};
    r.requested.clear();
    EXPECT_EQ(drop_lines("k.cu", r, true),
              "nvcc-forge: k.cu: clamped sm_50, compute_50 -> removed (policy 8.0 11.0 12.0+PTX; "
              "requested nvcc default); nvcc cannot emit them\n");
    EXPECT_EQ(drop_lines("k.cu", DropReport{}, false), "");
}

// The rule that classed the TU follows the context, on injected and dropped lines alike.
TEST(DropLine, SaysTheRule) {
    DropReport r{{},
                 {"sm_80"},
                 {},
                 "8.0 9.0",
                 "9.0a",
                 "nothing injected",
                 "arch-specific TU: every target is `a`"};
    EXPECT_EQ(drop_lines("h.cu", r, false),
              "nvcc-forge: h.cu: dropped sm_80 (policy 8.0 9.0; requested 9.0a); arch-specific "
              "TU: every target is `a`; nothing injected; the gate will report sass: missing sm_80 "
              "unless another object of the binary carries it\n");
    DropReport g{{"sm_86", "compute_90"},
                 {},
                 {},
                 "8.0 8.6 9.0+PTX",
                 "8.0 9.0 10.0f",
                 "",
                 "generic TU: plain sm_80 beside sm_100f"};
    EXPECT_EQ(drop_lines("f.cu", g, false),
              "nvcc-forge: f.cu: dropped sm_86, compute_90 -> injected (policy 8.0 8.6 9.0+PTX; "
              "requested 8.0 9.0 10.0f); generic TU: plain sm_80 beside sm_100f\n");
    EXPECT_EQ(drop_lines("f.cu", g, true), "");
}

TEST(Dropped, DependsOnAction) {
    LogRecord r;
    r.missing = {"sm_110", "compute_120"};
    r.injected = {"sm_110"};
    r.action = kActionInjected;
    EXPECT_EQ(dropped_targets(r), (std::vector<std::string>{"compute_120"}));
    r.action = kActionInjectionFailed;
    EXPECT_EQ(dropped_targets(r), r.missing);
    r.action = kActionCompared;
    EXPECT_EQ(dropped_targets(r), r.missing);
    r.action = kActionPassthrough;
    EXPECT_TRUE(dropped_targets(r).empty());
}

TEST(Summarize, GroupsTusByTargetAndNamesMalformedLine) {
    auto dir = temp_dir("summ");
    auto log = (dir / "log.jsonl").string();
    LogRecord a;
    a.cwd = "/b";
    a.sources = {"a.cu"};
    a.missing = {"sm_110", "compute_120"};
    a.action = kActionCompared;
    LogRecord b = a;
    b.sources = {"b.cu"};
    b.missing = {"sm_110"};
    LogRecord c = a;
    c.sources = {"c.cu"};
    c.injected = a.missing;
    c.action = kActionInjected;
    c.extra = {"sm_50"};
    for (const auto& r : {a, b, c})
        ASSERT_TRUE(append_log_line(log, r.to_json()).ok());
    auto s = summarize_log(log);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    EXPECT_EQ(s->records, 3);
    EXPECT_EQ(s->records_with_drops, 2);
    EXPECT_EQ(s->tus_by_target.at("sm_110"), (std::vector<std::string>{"/b/a.cu", "/b/b.cu"}));
    EXPECT_EQ(s->tus_by_target.at("compute_120"), (std::vector<std::string>{"/b/a.cu"}));
    auto text = summary_text(*s);
    EXPECT_LT(text.find("sm_110"), text.find("compute_120")); // SASS before PTX
    auto j = nlohmann::json::parse(summary_json(*s));
    EXPECT_EQ(j["drops"]["sm_110"].size(), 2u);
    // c.cu asked for less too; the wrapper put it back: reported apart from the holes.
    EXPECT_EQ(s->records_restored, 1);
    EXPECT_EQ(s->restored_by_target.at("sm_110"), (std::vector<std::string>{"/b/c.cu"}));
    EXPECT_NE(text.find("injected back"), std::string::npos);
    EXPECT_EQ(j["restored"]["compute_120"].size(), 1u);
    // c.cu also asked for sm_50, which the policy lacks: listed per target for the gate's extra.
    EXPECT_EQ(s->records_with_extra, 1);
    EXPECT_EQ(s->extra_by_target.at("sm_50"), (std::vector<std::string>{"/b/c.cu"}));
    EXPECT_NE(text.find("sm_50: requested beyond the policy by 1 TU\n  /b/c.cu\n"),
              std::string::npos);
    EXPECT_EQ(j["extra"]["sm_50"], nlohmann::json::array({"/b/c.cu"}));
    // verify's last line: the TUs, each target once with its TU count, SASS before PTX.
    EXPECT_EQ(s->tus, 3);
    EXPECT_EQ(summary_line(*s), "3 nvcc calls, 3 TUs; injected sm_110 (1 TU), compute_120 (1 TU); "
                                "missing sm_110 (2 TUs), compute_120 (1 TU); beyond the policy "
                                "sm_50 (1 TU)");

    { std::ofstream(log, std::ios::app) << "{\"cwd\": torn\n"; }
    auto bad = summarize_log(log);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().line, 4);
    EXPECT_EQ(bad.error().file, log);
    EXPECT_FALSE(summarize_log((dir / "absent").string()).ok());
}

// 64 processes append lines of every size (short, around PIPE_BUF, far above it) at once; every
// line must come back whole.
TEST(AppendLog, SixtyFourWritersNeverTear) {
    auto dir = temp_dir("concurrent");
    auto log = (dir / "log.jsonl").string();
    constexpr int kProcs = 64, kLines = 9;
    std::vector<pid_t> pids;
    for (int p = 0; p < kProcs; ++p) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            for (int i = 0; i < kLines; ++i) {
                LogRecord r;
                r.cwd = std::to_string(p);
                r.output = std::to_string(i);
                // 0, ~4 KiB, ~20 KiB of sources: below, around and far above PIPE_BUF.
                size_t n = (i % 3 == 0) ? 0 : (i % 3 == 1) ? 200 : 1000;
                for (size_t k = 0; k < n; ++k)
                    r.sources.push_back("src_" + std::to_string(k) + ".cu");
                if (!append_log_line(log, r.to_json()).ok()) ::_exit(1);
            }
            ::_exit(0);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int st = 0;
        ::waitpid(pid, &st, 0);
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    std::ifstream in(log);
    std::string line;
    std::set<std::pair<std::string, std::string>> seen;
    while (std::getline(in, line)) {
        auto r = LogRecord::from_json(line);
        ASSERT_TRUE(r.ok()) << "torn line of " << line.size() << " bytes";
        size_t n = std::stoi(r->output) % 3 == 0 ? 0 : std::stoi(r->output) % 3 == 1 ? 200 : 1000;
        EXPECT_EQ(r->sources.size(), n);
        seen.insert({r->cwd, r->output});
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(kProcs * kLines));
}

TEST(CompileLog, AFifoIsRefusedWithoutWaitingForAReader) {
    // NVCC_FORGE_LOG naming a FIFO: opening it for writing used to wait for a reader forever,
    // after nvcc had finished. The call runs in a child with an alarm, so the old behaviour fails
    // the test instead of hanging it.
    auto dir = temp_dir("fifo");
    const std::string fifo = (dir / "log.fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);
        auto st = append_log_line(fifo, "{}");
        const bool refused =
            !st.ok() && st.error().message.find("not a regular file") != std::string::npos;
        const bool no_reader = !st.ok() && st.error().message.find("cannot open") == 0;
        ::_exit(refused || no_reader ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "the log write blocked on the FIFO (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0);
    // With a reader present the FIFO opens; it is still refused, nothing is written into it.
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    auto st = append_log_line(fifo, "{}");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("not a regular file"), std::string::npos)
        << st.error().to_string();
    char buf[8];
    EXPECT_LE(::read(reader, buf, sizeof buf), 0);
    ::close(reader);
    // The null device stays a way to switch the log off.
    EXPECT_TRUE(append_log_line("/dev/null", "{}").ok());
}

// Issue 36, 7: NVCC_FORGE_LOG through another user's symbolic link: root appended to a root-owned
// 0600 file, and created a dangling link's target.
TEST(CompileLog, NeverWritesThroughASymbolicLink) {
    auto dir = temp_dir("log_symlink");
    const auto target = dir / "root-only";
    { std::ofstream(target) << "x\n"; }
    ::chmod(target.c_str(), 0600);
    std::filesystem::create_symlink(target, dir / "log.jsonl");
    auto st = append_log_line((dir / "log.jsonl").string(), "{}");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("symbolic link"), std::string::npos)
        << st.error().to_string();
    EXPECT_EQ(std::filesystem::file_size(target), 2u);
    std::filesystem::create_symlink(dir / "made", dir / "dangling.jsonl");
    EXPECT_FALSE(append_log_line((dir / "dangling.jsonl").string(), "{}").ok());
    EXPECT_FALSE(std::filesystem::exists(dir / "made"));
    std::filesystem::remove_all(dir);
}
