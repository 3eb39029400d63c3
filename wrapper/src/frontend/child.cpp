#include "frontend/child.h"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace forge::frontend {

namespace {

constexpr std::array kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t g_child_pid = 0;

extern "C" void forward_signal(int sig) {
    pid_t pid = g_child_pid;
    if (pid > 0) ::kill(pid, sig);
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const auto& s : v)
        out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

std::string read_fd(int fd) {
    std::string out;
    if (::lseek(fd, 0, SEEK_SET) < 0) return out;
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

std::vector<std::string> environment_with(const std::string& name, const std::string& value) {
    std::vector<std::string> env;
    const std::string prefix = name + "=";
    for (char** e = environ; e != nullptr && *e != nullptr; ++e)
        if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
    env.push_back(prefix + value);
    return env;
}

bool write_all(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

Result<ChildOutcome> run_child(const ChildSpec& spec) {
    Fd out_fd, err_fd;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (spec.capture) {
        out_fd.fd = ::memfd_create("nvcc-forge-stdout", MFD_CLOEXEC);
        err_fd.fd = ::memfd_create("nvcc-forge-stderr", MFD_CLOEXEC);
        if (out_fd.fd < 0 || err_fd.fd < 0) {
            posix_spawn_file_actions_destroy(&actions);
            return make_error(
                fmt::format("cannot create a capture file: {}", std::strerror(errno)));
        }
        posix_spawn_file_actions_adddup2(&actions, out_fd.fd, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, err_fd.fd, STDERR_FILENO);
    }

    // Block the forwarded signals across the spawn so none slips in before the child's pid is
    // known; the child starts with our original mask and default handlers for them.
    sigset_t forwarded, previous;
    sigemptyset(&forwarded);
    for (int s : kForwarded)
        sigaddset(&forwarded, s);
    ::sigprocmask(SIG_BLOCK, &forwarded, &previous);

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &previous);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : kForwarded) {
        struct sigaction current {};
        ::sigaction(s, nullptr, &current);
        // A signal the caller ignores (nohup) stays ignored in the child, as with a plain exec.
        if (current.sa_handler != SIG_IGN) sigaddset(&defaults, s);
    }
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    auto argv = c_strings(spec.argv);
    auto envp = c_strings(spec.env);
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, spec.path.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        Error e{fmt::format("cannot run {}: {}", spec.path, std::strerror(rc)), spec.path};
        return e;
    }

    std::array<struct sigaction, kForwarded.size()> saved{};
    g_child_pid = pid;
    for (size_t i = 0; i < kForwarded.size(); ++i) {
        struct sigaction sa {};
        ::sigaction(kForwarded[i], nullptr, &saved[i]);
        if (saved[i].sa_handler == SIG_IGN) continue;
        sa.sa_handler = forward_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        ::sigaction(kForwarded[i], &sa, nullptr);
    }
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            status = 0;
            break;
        }
    }
    ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
    g_child_pid = 0;
    for (size_t i = 0; i < kForwarded.size(); ++i)
        ::sigaction(kForwarded[i], &saved[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);

    ChildOutcome outcome;
    if (WIFSIGNALED(status))
        outcome.signal = WTERMSIG(status);
    else if (WIFEXITED(status))
        outcome.exit_code = WEXITSTATUS(status);
    if (spec.capture) {
        outcome.out = read_fd(out_fd.fd);
        outcome.err = read_fd(err_fd.fd);
    }
    return outcome;
}

Error exec_child(const ChildSpec& spec) {
    auto argv = c_strings(spec.argv);
    auto envp = c_strings(spec.env);
    ::execve(spec.path.c_str(), argv.data(), envp.data());
    return Error{fmt::format("cannot run {}: {}", spec.path, std::strerror(errno)), spec.path};
}

int propagate(const ChildOutcome& outcome) {
    if (outcome.signal == 0) return outcome.exit_code;
    std::fflush(stdout);
    std::fflush(stderr);
    // The child already dumped core if it was going to; a second core from the wrapper would only
    // overwrite it.
    struct rlimit no_core {
        0, 0
    };
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(outcome.signal, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, outcome.signal);
    ::sigprocmask(SIG_UNBLOCK, &just, nullptr);
    ::raise(outcome.signal);
    return 128 + outcome.signal; // a signal that does not terminate (cannot happen for a kill)
}

} // namespace forge::frontend
