// Signal forwarding and exit by the same signal: while the child runs, a SIGTERM sent to us (as a
// build's Ctrl-C or a job's kill reaches the wrapper) is passed on to the child; the child starts
// with the signals unblocked and at their default action even though we block them around the
// start (so that none arrives before we know the child's pid); we learn that the child died of
// SIGTERM, not that it exited 15; then we end by SIGTERM ourselves. run.sh checks that last part
// (this program's own wait status) and the child's blocked-signal mask it reports.
#include "check.h"

#include <array>
#include <csignal>
#include <thread>

namespace {

constexpr std::array kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// A second thread plays the build tool: once the child is up, it sends SIGTERM to this process.
// It blocks the signals itself, so the kernel hands them to the main thread, the one that waits.
void terminate_us_when_ready(const char* ready) {
    std::thread([ready] {
        sigset_t set;
        sigemptyset(&set);
        for (int s : kForwarded)
            sigaddset(&set, s);
        ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
        for (int i = 0; i < 1000 && ::access(ready, F_OK) != 0; ++i)
            ::usleep(10 * 1000);
        ::kill(::getpid(), SIGTERM);
    }).detach();
}

// Ours in every build: ends this process by the child's signal, as core/process.h's propagate().
[[noreturn]] void die_by(int sig) {
    std::fflush(stdout);
    ::signal(sig, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    ::sigprocmask(SIG_UNBLOCK, &just, nullptr);
    ::raise(sig);
    std::_Exit(128 + sig);
}

#if defined(BENCH_BOOST_V1) || defined(BENCH_BOOST_V2)
// What the libraries leave to us: the handler that passes a signal on, and the mask dance around
// the start (block, start, install handlers, unblock; the child restores the mask before exec).
volatile sig_atomic_t g_pid = 0;
volatile sig_atomic_t g_forwarded = 0;
extern "C" void forward(int sig) {
    if (g_pid > 0) {
        g_forwarded = sig;
        ::kill(g_pid, sig);
    }
}
sigset_t block_forwarded() {
    sigset_t set, previous;
    sigemptyset(&set);
    for (int s : kForwarded)
        sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, &previous);
    return previous;
}
void in_child_restore(const sigset_t& previous) { // between fork and exec
    for (int s : kForwarded)
        ::signal(s, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
}
void install_forwarding(pid_t pid, const sigset_t& previous) {
    g_pid = pid;
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int s : kForwarded)
        ::sigaction(s, &sa, nullptr);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
}
#endif

#if defined(BENCH_BOOST_V2)
struct RestoreMaskInChild {
    sigset_t previous;
    bp2::error_code on_exec_setup(bp2::posix::default_launcher&, const bp2::filesystem::path&,
                                  const char* const*) {
        in_child_restore(previous);
        return {};
    }
};
#endif

} // namespace

int main() {
    const std::string child = bench::child_path();
    const char* ready = "signals.ready";
    ::unlink(ready);
    const std::string out = bench::report_file("signals");
    const std::vector<std::string> args = {"pause", ready};
    terminate_us_when_ready(ready);
    int child_sig = 0, forwarded = 0;
    std::string how;
#if defined(BENCH_BOOST_V1)
    const sigset_t previous = block_forwarded();
    bp::child c(
        bp::exe = child, bp::args = args,
        bp::extend::on_exec_setup = [&](auto&) { in_child_restore(previous); });
    install_forwarding(c.id(), previous);
    c.wait();
    forwarded = g_forwarded;
    // exit_code() folds a death by signal N into N (detail/posix/is_running.hpp,
    // eval_exit_status): the raw status is needed to tell SIGTERM from `exit 15`.
    bp::child exits15(bp::exe = child, bp::args = std::vector<std::string>{"exit", "15"});
    exits15.wait();
    if (WIFSIGNALED(c.native_exit_code())) child_sig = WTERMSIG(c.native_exit_code());
    how = "own handler + kill(child.id()), blocked mask restored by an on_exec_setup extension; "
          "exit_code() is " +
          std::to_string(c.exit_code()) + " for the SIGTERM death and " +
          std::to_string(exits15.exit_code()) +
          " for `exit 15`: native_exit_code() tells them apart";
#elif defined(BENCH_BOOST_V2)
    const sigset_t previous = block_forwarded();
    boost::asio::io_context ctx;
    bp2::process p(ctx, child, args, RestoreMaskInChild{previous});
    install_forwarding(p.id(), previous);
    const int code = p.wait();
    forwarded = g_forwarded;
    bp2::process exits15(ctx, child, std::vector<std::string>{"exit", "15"});
    const int code15 = exits15.wait();
    if (WIFSIGNALED(p.native_exit_code())) child_sig = WTERMSIG(p.native_exit_code());
    how =
        "own handler + kill(process.id()), blocked mask restored by an on_exec_setup initializer; "
        "wait() returns " +
        std::to_string(code) + " for the SIGTERM death and " + std::to_string(code15) +
        " for `exit 15`: native_exit_code() tells them apart";
#else
    forge::ProcessSpec s;
    s.path = child;
    s.argv = {child, "pause", ready};
    s.forward_signals = true;
    auto r = forge::run_process(s);
    if (!r) return bench::verdict("signal forwarding", "no", "did not start");
    child_sig = r->signal;
    forwarded = r->forwarded_signal;
    how = "ProcessSpec::forward_signals; ProcessOutcome::signal and ::forwarded_signal";
#endif
    const std::string mask = bench::read_file(out);
    const bool unblocked = mask == "0000000000000000\n";
    const bool ok = child_sig == SIGTERM && forwarded == SIGTERM && unblocked;
#if defined(BENCH_BOOST_V1) || defined(BENCH_BOOST_V2)
    const char* answer = ok ? "by-hand" : "no";
#else
    const char* answer = ok ? "yes" : "no";
#endif
    bench::verdict("signal forwarding", answer,
                   how + (unblocked ? "" : "; the child started with signals blocked: " + mask) +
                       (child_sig == SIGTERM ? "" : "; the child did not die of SIGTERM"));
    die_by(child_sig != 0 ? child_sig : SIGABRT);
}
