// Running a program (core/process.h): exit codes, captured output, signals handed back, no shell.
#include "core/process.h"

#include "../files.h"
#include "../joined.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace forge;

namespace {

ProcessSpec sh(const std::string& script, bool capture = false) {
    ProcessSpec s;
    s.path = "/bin/sh";
    s.argv = {"sh", "-c", script};
    s.env = environment_with("NVCC_FORGE_TEST", "1");
    s.output = capture ? ProcessSpec::Output::Capture : ProcessSpec::Output::Inherit;
    s.forward_signals = true;
    return s;
}

} // namespace

TEST(Child, ExitCodeAndCapture) {
    auto r = run_process(sh("printf out; printf err >&2; exit 7", true));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 7);
    EXPECT_EQ(r->signal, 0);
    EXPECT_EQ(r->out, "out");
    EXPECT_EQ(r->err, "err");
    EXPECT_FALSE(r->succeeded());
    EXPECT_EQ(r->status_code(), 7);
    EXPECT_EQ(r->forwarded_signal, 0);
    EXPECT_FALSE(r->too_long);
}

TEST(Child, EnvironmentWithReplacesOneVariable) {
    ::setenv("NVCC_FORGE_TEST", "0", 1);
    auto r = run_process(sh("printf %s \"$NVCC_FORGE_TEST\"", true));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->out, "1");
    auto env = environment_with("NVCC_FORGE_TEST", "2");
    EXPECT_EQ(std::count_if(env.begin(), env.end(),
                            [](auto& e) { return e.rfind("NVCC_FORGE_TEST=", 0) == 0; }),
              1);
}

TEST(Child, ArgumentsAreNotReinterpretedByAShell) {
    ProcessSpec s;
    s.path = "/bin/echo";
    s.argv = {"echo", "$HOME", "a b", ";", "`id`"};
    s.env = environment_with("X", "1");
    s.output = ProcessSpec::Output::Capture;
    auto r = run_process(s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->out, "$HOME a b ; `id`\n");
}

TEST(Child, MissingExecutableIsAnErrorNamingIt) {
    ProcessSpec s;
    s.path = "/nonexistent/nvcc";
    s.argv = {"nvcc"};
    auto r = run_process(s);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("/nonexistent/nvcc"), std::string::npos);
}

TEST(Child, SignalDeathIsReportedAndReRaised) {
    auto r = run_process(sh("kill -SEGV $$"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->signal, SIGSEGV);
    EXPECT_EQ(r->status_code(), 128 + SIGSEGV);
    // propagate() must end the process by the same signal.
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::signal(SIGSEGV, SIG_IGN); // even a caller that ignored it sees the signal's death
        propagate(*r);
        ::_exit(99);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(WTERMSIG(st), SIGSEGV);
}

TEST(Child, TermReachingTheWrapperIsForwardedToTheChild) {
    // A child process of the test plays the wrapper: it runs `sleep` via run_child and is sent
    // SIGTERM; the sleep must die of SIGTERM and the wrapper must die of it too.
    pid_t wrapper = ::fork();
    ASSERT_GE(wrapper, 0);
    if (wrapper == 0) {
        auto r = run_process(sh("exec sleep 30"));
        if (!r.ok()) ::_exit(90);
        if (r->signal != SIGTERM) ::_exit(91);
        propagate(*r);
        ::_exit(92);
    }
    ::usleep(300 * 1000);
    ::kill(wrapper, SIGTERM);
    int st = 0;
    ::waitpid(wrapper, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
}

TEST(Child, ExitCodePropagates) {
    ProcessOutcome o;
    o.exit_code = 3;
    EXPECT_EQ(propagate(o), 3);
}

TEST(Process, MergedOutputKeepsTheOrderOfBothStreams) {
    ProcessSpec s;
    s.path = "/bin/sh";
    s.argv = {"sh", "-c", "printf a; printf b >&2; printf c"};
    s.output = ProcessSpec::Output::Merged;
    auto r = run_process(s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->out, "abc");
    EXPECT_EQ(r->err, "");
}

TEST(Process, WorkingDirectoryAndRemovedVariables) {
    ::setenv("NVCC_FORGE_TEST_GONE", "here", 1);
    ProcessSpec s;
    s.path = "/bin/sh";
    s.argv = {"sh", "-c", "pwd; printf %s \"${NVCC_FORGE_TEST_GONE-unset}\""};
    s.env = environment_without({"NVCC_FORGE_TEST_GONE"});
    s.working_dir = "/";
    s.output = ProcessSpec::Output::StdoutOnly;
    auto r = run_process(s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->out, "/\nunset");
    ::unsetenv("NVCC_FORGE_TEST_GONE");
}

TEST(Process, RunCaptureDropsStderrAndFailsOnAnExitOtherThanZero) {
    auto ok = run_capture({"/bin/sh", "-c", "printf out; printf err >&2"});
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(*ok, "out");
    auto bad = run_capture({"/bin/sh", "-c", "exit 3"});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().file, "/bin/sh");
    EXPECT_FALSE(run_capture({}).ok());
}

namespace {

// Runs `body` in a forked child (it plays the wrapper) and returns its exit status.
template <class F> int in_child(F body) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string ready_file(const std::string& name) {
    return forge::test::joined({FORGE_TEST_BINARY_DIR, "/", name, ".", std::to_string(::getpid())});
}

void wait_for_file(const std::string& path) {
    for (int i = 0; i < 3000 && ::access(path.c_str(), F_OK) != 0; ++i)
        ::usleep(10 * 1000);
}

} // namespace

TEST(Child, ASignalThatReachedUsIsReportedEvenWhenTheChildExitsNormally) {
    // Real nvcc exits 255 on SIGTERM (it does not die of it): the caller must still learn that it
    // was told to stop, or it would read a normal failure and compile again.
    const std::string ready = ready_file("trap_ready");
    std::filesystem::remove(ready);
    pid_t wrapper = ::fork();
    ASSERT_GE(wrapper, 0);
    if (wrapper == 0) {
        auto r =
            run_process(sh("trap 'kill $!; exit 255' TERM; sleep 30 & : > '" + ready + "'; wait"));
        if (!r.ok()) ::_exit(90);
        if (r->signal != 0 || r->exit_code != 255) ::_exit(91);
        ::_exit(r->forwarded_signal == SIGTERM ? 0 : 92);
    }
    wait_for_file(ready);
    ::kill(wrapper, SIGTERM);
    int st = 0;
    ::waitpid(wrapper, &st, 0);
    std::filesystem::remove(ready);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Process, StdinCopyFeedsEveryRunTheSameBytes) {
    EXPECT_EQ(in_child([] {
                  int fds[2];
                  if (::pipe(fds) != 0) return 90;
                  const std::string text = "__global__ void k() {}\n";
                  if (!write_all(fds[1], text)) return 91;
                  ::close(fds[1]);
                  ::dup2(fds[0], STDIN_FILENO);
                  ::close(fds[0]);
                  auto copy = StdinCopy::take();
                  if (!copy) return 92;
                  ProcessSpec s;
                  s.path = "/bin/cat";
                  s.argv = {"cat", "-"};
                  s.output = ProcessSpec::Output::Capture;
                  s.stdin_fd = copy->fd();
                  auto a = run_process(s);
                  auto b = run_process(s);
                  if (!a || !b) return 93;
                  return a->out == text && b->out == text ? 0 : 94;
              }),
              0);
}

TEST(Process, TooLongForTheKernelRunsTheCallersOwnCallInstead) {
    // One argument longer than the kernel takes (MAX_ARG_STRLEN, 128 KiB): E2BIG on any system.
    ProcessSpec s;
    s.path = "/bin/sh";
    s.argv = {"sh", "-c", "exit 3", std::string(200 * 1024, 'x')};
    s.output = ProcessSpec::Output::Capture;
    auto refused = run_process(s);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(std::strerror(E2BIG)), std::string::npos);

    s.argv_if_too_long = std::vector<std::string>{"sh", "-c", "printf %s \"$FORGE_ORIG\""};
    s.env_if_too_long = [] { return std::vector<std::string>{"FORGE_ORIG=caller's"}; };
    auto r = run_process(s);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->too_long);
    EXPECT_EQ(r->out, "caller's");

    // exec: the same fallback, in place of this process.
    EXPECT_EQ(in_child([&] {
                  ProcessSpec e = s;
                  e.argv_if_too_long = std::vector<std::string>{"sh", "-c", "exit 7"};
                  exec_process(e);
                  return 90;
              }),
              7);
    // A call that fits never takes the fallback.
    s.argv = {"sh", "-c", "printf fits"};
    r = run_process(s);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->too_long);
    EXPECT_EQ(r->out, "fits");
}

namespace {

// Reads a number a script wrote into `path` (0 when it is not there).
long read_number(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return 0;
    long n = 0;
    if (std::fscanf(f, "%ld", &n) != 1) n = 0;
    std::fclose(f);
    return n;
}

bool process_group_gone(long pgid) {
    return pgid > 0 && ::kill(static_cast<pid_t>(-pgid), 0) != 0 && errno == ESRCH;
}

// plan's build: its own process group, signals forwarded to all of it.
ProcessSpec group_sh(const std::string& script, std::chrono::milliseconds grace) {
    ProcessSpec s = sh(script);
    s.own_process_group = true;
    s.group_grace = grace;
    return s;
}

// Forks a stand-in for plan that runs `script` as a group and reports through its exit: 0 when
// the outcome is as `ok` says, else 9x. The test signals the stand-in once `ready` exists.
pid_t start_group_runner(const std::string& script, std::chrono::milliseconds grace,
                         bool (*ok)(const ProcessOutcome&)) {
    const pid_t runner = ::fork();
    if (runner != 0) return runner;
    auto r = run_process(group_sh(script, grace));
    if (!r.ok()) ::_exit(90);
    if (!ok(*r)) ::_exit(91);
    ProcessOutcome as_told;
    as_told.signal = r->forwarded_signal;
    propagate(as_told); // ends the stand-in by the signal it was told to stop with, as plan does
    ::_exit(92);
}

} // namespace

TEST(ProcessGroup, ASignalReachesEveryProcessOfTheGroupAndNoneOutlivesTheRun) {
    // A sleep in the background and one in the foreground, as a build's parallel jobs: with the
    // signal passed only to the direct child, both sleeps were orphaned and kept running. (SIGTERM:
    // a shell's background job ignores SIGINT.)
    const std::string ready = ready_file("group_ready");
    const std::string bg = ready_file("group_bg");
    std::filesystem::remove(ready);
    std::filesystem::remove(bg);
    const pid_t runner = start_group_runner(
        "sleep 1000 & echo $! > '" + bg + "'; echo $$ > '" + ready + "'; sleep 1000; echo",
        std::chrono::seconds(60), [](const ProcessOutcome& o) {
            return o.forwarded_signal == SIGTERM && !o.group_killed && o.signal == SIGTERM;
        });
    ASSERT_GT(runner, 0);
    wait_for_file(ready);
    const long pgid = read_number(ready);
    const long sleeper = read_number(bg);
    ASSERT_GT(pgid, 0);
    ASSERT_GT(sleeper, 0);
    EXPECT_EQ(::getpgid(static_cast<pid_t>(pgid)), pgid) << "the build leads its own group";
    ::kill(runner, SIGTERM);
    int st = 0;
    ::waitpid(runner, &st, 0);
    std::filesystem::remove(ready);
    std::filesystem::remove(bg);
    ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
    EXPECT_TRUE(process_group_gone(pgid)) << "a process of the group outlived the run";
    EXPECT_NE(::kill(static_cast<pid_t>(sleeper), 0), 0) << "the background sleep outlived it";
}

TEST(ProcessGroup, AGroupThatIgnoresTheSignalIsKilledAfterTheGrace) {
    const std::string ready = ready_file("group_deaf");
    std::filesystem::remove(ready);
    // The ignored SIGTERM is inherited by the sleep: nothing ends it but SIGKILL.
    const pid_t runner = start_group_runner(
        "trap '' TERM; echo $$ > '" + ready + "'; sleep 1000; echo", std::chrono::milliseconds(200),
        [](const ProcessOutcome& o) {
            return o.forwarded_signal == SIGTERM && o.group_killed && o.signal == SIGKILL;
        });
    ASSERT_GT(runner, 0);
    wait_for_file(ready);
    const long pgid = read_number(ready);
    ASSERT_GT(pgid, 0);
    ::kill(runner, SIGTERM);
    int st = 0;
    ::waitpid(runner, &st, 0);
    std::filesystem::remove(ready);
    ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
    EXPECT_TRUE(process_group_gone(pgid));
}

TEST(ProcessGroup, ASignalHeldBeforeTheStartIsForwardedAtOnce) {
    // plan holds the signals while it makes its shadow root: one that came meanwhile must stop
    // the build as soon as it starts, not be lost nor kill plan before it can clean up. SIGHUP at
    // its default first: an ignored one stays ignored in the build (as with a plain exec), and a
    // test run under nohup inherits it ignored (the build then outlived the 60 s grace).
    EXPECT_EQ(in_child([] {
                  struct sigaction at_default {};
                  at_default.sa_handler = SIG_DFL;
                  ::sigaction(SIGHUP, &at_default, nullptr);
                  const SignalsHeld held;
                  ::raise(SIGHUP);
                  auto r = run_process(group_sh("sleep 1000", std::chrono::seconds(60)));
                  if (!r) return 90;
                  return r->forwarded_signal == SIGHUP && r->signal == SIGHUP ? 0 : 91;
              }),
              0);
}

TEST(ProcessGroup, ANormalEndReturnsTheExitAndStdoutCanGoToStderr) {
    const std::string out = ready_file("group_out");
    const std::string err = ready_file("group_err");
    EXPECT_EQ(in_child([&] {
                  std::FILE* o = std::fopen(out.c_str(), "w");
                  std::FILE* e = std::fopen(err.c_str(), "w");
                  if (o == nullptr || e == nullptr) return 90;
                  ::dup2(::fileno(o), STDOUT_FILENO);
                  ::dup2(::fileno(e), STDERR_FILENO);
                  ProcessSpec s =
                      group_sh("echo out; echo err >&2; exit 3", std::chrono::seconds(1));
                  s.output = ProcessSpec::Output::StdoutToStderr;
                  auto r = run_process(s);
                  if (!r) return 91;
                  return r->exit_code == 3 && r->forwarded_signal == 0 && !r->group_killed ? 0 : 92;
              }),
              0);
    const std::string os = forge::test::slurp(out);
    const std::string es = forge::test::slurp(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    EXPECT_EQ(os, "");
    EXPECT_EQ(es, "out\nerr\n");
    EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
}
