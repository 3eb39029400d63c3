#include "core/process.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <optional>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace forge {

namespace {

constexpr std::array kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_forwarded = 0; // the last signal passed on to the running child

extern "C" void forward_signal(int sig) {
    pid_t pid = g_child_pid;
    if (pid > 0) {
        g_forwarded = sig;
        ::kill(pid, sig);
    }
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
    if (fd < 0 || ::lseek(fd, 0, SEEK_SET) < 0) return out;
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
    Fd() = default;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

struct FileActions {
    posix_spawn_file_actions_t actions{};
    FileActions() { posix_spawn_file_actions_init(&actions); }
    FileActions(const FileActions&) = delete;
    FileActions& operator=(const FileActions&) = delete;
    ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return 0;
    }
    return status;
}

struct Spawned {
    int status = 0;            // waitpid's
    int forwarded = 0;         // a signal passed on to the child while it ran
    bool too_long = false;     // the too-long fallback ran
    bool group_killed = false; // own_process_group: SIGKILL after the grace
};

// posix_spawn; when the kernel refuses argv + environment as too long and the spec has a fallback
// (the caller's own call), that instead. glibc's posix_spawn reports the exec's errno.
int spawn_one(pid_t* pid, const ProcessSpec& spec, posix_spawn_file_actions_t* actions,
              const posix_spawnattr_t* attr, char** argv, char** envp, bool* too_long) {
    int rc = ::posix_spawn(pid, spec.path.c_str(), actions, attr, argv, envp);
    if (rc != E2BIG || !spec.env_if_too_long) return rc;
    const std::vector<std::string> env = spec.env_if_too_long();
    auto env_c = c_strings(env);
    std::vector<char*> argv_c;
    if (spec.argv_if_too_long) argv_c = c_strings(*spec.argv_if_too_long);
    rc = ::posix_spawn(pid, spec.path.c_str(), actions, attr,
                       spec.argv_if_too_long ? argv_c.data() : argv, env_c.data());
    if (rc == 0) *too_long = true;
    return rc;
}

Error spawn_error(const ProcessSpec& spec, int rc) {
    return Error{fmt::format("cannot run {}: {}", spec.path, std::strerror(rc)), spec.path};
}

// Spawns with the forwarded signals blocked across the spawn so none slips in before the child's
// pid is known; the child starts with our original mask and default handlers for them.
Result<Spawned> spawn_forwarding(const ProcessSpec& spec, posix_spawn_file_actions_t* actions,
                                 char** argv, char** envp) {
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

    pid_t pid = 0;
    Spawned spawned;
    int rc = spawn_one(&pid, spec, actions, &attr, argv, envp, &spawned.too_long);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        return spawn_error(spec, rc);
    }

    std::array<struct sigaction, kForwarded.size()> saved{};
    g_forwarded = 0;
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

    spawned.status = wait_for(pid);
    ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
    g_child_pid = 0;
    spawned.forwarded = g_forwarded;
    for (size_t i = 0; i < kForwarded.size(); ++i)
        ::sigaction(kForwarded[i], &saved[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    return spawned;
}

using Clock = std::chrono::steady_clock;

// Some process of the group is left (EPERM: one that we may not signal, still there).
bool group_alive(pid_t pgid) {
    return ::kill(-pgid, 0) == 0 || errno == EPERM;
}

// Reaps every finished child: the leader (its status into `spawned`) and the group's orphans,
// which come to us as the subreaper.
bool reap_children(pid_t leader, Spawned& spawned) {
    bool leader_done = false;
    int status = 0;
    pid_t r = 0;
    while ((r = ::waitpid(-1, &status, WNOHANG)) > 0 || (r < 0 && errno == EINTR))
        if (r == leader) {
            spawned.status = status;
            leader_done = true;
        }
    return leader_done;
}

// Waits for the group's leader, taking the signals in `waited` synchronously (no handler, no
// race between a check and the wait): SIGCHLD wakes it to reap, a forwarded one goes to the whole
// group. After a forwarded signal the wait is for the whole group: `grace`, then SIGKILL.
Spawned wait_group(pid_t leader, std::chrono::milliseconds grace, const sigset_t& waited) {
    constexpr auto kAfterKill = std::chrono::seconds(5);
    Spawned spawned;
    bool leader_done = false;
    std::optional<Clock::time_point> deadline; // from the first forwarded signal
    while (true) {
        leader_done = reap_children(leader, spawned) || leader_done;
        // A normal end: what the build left running in the background is its own business.
        if (leader_done && (spawned.forwarded == 0 || !group_alive(leader))) break;
        const auto now = Clock::now();
        if (deadline && now >= *deadline) {
            if (spawned.group_killed) break; // unkillable (stuck in the kernel): given up
            ::kill(-leader, SIGKILL);
            spawned.group_killed = true;
            deadline = now + kAfterKill;
            continue;
        }
        siginfo_t info{};
        int sig = 0;
        if (deadline) {
            // The group's last process may be no child of ours (no SIGCHLD here): look again
            // every poll.
            constexpr auto kPoll = std::chrono::milliseconds(100);
            const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::min<Clock::duration>(*deadline - now, kPoll))
                                  .count();
            const timespec ts{static_cast<time_t>(left / 1000000000),
                              static_cast<long>(left % 1000000000)};
            sig = ::sigtimedwait(&waited, &info, &ts);
        } else {
            sig = ::sigwaitinfo(&waited, &info);
        }
        if (sig <= 0 || sig == SIGCHLD) continue;
        ::kill(-leader, sig);
        spawned.forwarded = sig;
        if (!deadline) deadline = Clock::now() + grace;
    }
    return spawned;
}

// own_process_group: the child leads a new process group; with forward_signals the signals we
// forward are taken by wait_group. The child starts with them unblocked and at their defaults
// (an ignored one stays ignored, as with a plain exec).
Result<Spawned> spawn_group(const ProcessSpec& spec, posix_spawn_file_actions_t* actions,
                            char** argv, char** envp) {
    sigset_t waited, previous;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    if (spec.forward_signals)
        for (int s : kForwarded)
            sigaddset(&waited, s);
    ::sigprocmask(SIG_BLOCK, &waited, &previous);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t child_mask = previous;
    sigset_t defaults;
    sigemptyset(&defaults);
    sigdelset(&child_mask, SIGCHLD);
    for (int s : kForwarded) {
        sigdelset(&child_mask, s);
        struct sigaction current {};
        ::sigaction(s, nullptr, &current);
        if (current.sa_handler != SIG_IGN) sigaddset(&defaults, s);
    }
    posix_spawnattr_setsigmask(&attr, &child_mask);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    pid_t pid = 0;
    bool too_long = false;
    const int rc = spawn_one(&pid, spec, actions, &attr, argv, envp, &too_long);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        return spawn_error(spec, rc);
    }
    // The child made its group before it exec'd, where posix_spawn waits for the exec (glibc's
    // clone with CLONE_VFORK). Where it is a plain fork (qemu-user runs it so), the parent can
    // get here first and a signal it forwards to the group at once would find no group: both
    // sides set it, as a shell does for its jobs (EACCES once the child has exec'd: harmless).
    ::setpgid(pid, pid);
    Spawned spawned = wait_group(pid, spec.group_grace, waited);
    spawned.too_long = too_long;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    return spawned;
}

Result<Spawned> spawn_plain(const ProcessSpec& spec, posix_spawn_file_actions_t* actions,
                            char** argv, char** envp) {
    pid_t pid = 0;
    Spawned spawned;
    int rc = spawn_one(&pid, spec, actions, nullptr, argv, envp, &spawned.too_long);
    if (rc != 0) return spawn_error(spec, rc);
    spawned.status = wait_for(pid);
    return spawned;
}

} // namespace

std::vector<std::string> environment_with(const std::string& name, const std::string& value) {
    std::vector<std::string> env;
    const std::string prefix = name + "=";
    for (char** e = environ; e != nullptr && *e != nullptr; ++e)
        if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
    env.push_back(prefix + value);
    return env;
}

std::vector<std::string> environment_without(const std::vector<std::string>& names) {
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view entry(*e);
        bool drop = false;
        for (const auto& n : names)
            drop = drop || (entry.size() > n.size() && entry.compare(0, n.size(), n) == 0 &&
                            entry[n.size()] == '=');
        if (!drop) env.emplace_back(entry);
    }
    return env;
}

namespace {

bool write_bytes(int fd, const char* data, size_t size) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = ::write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

} // namespace

bool write_all(int fd, std::string_view data) {
    return write_bytes(fd, data.data(), data.size());
}

Result<ProcessOutcome> run_process(const ProcessSpec& spec) {
    using Output = ProcessSpec::Output;
    Fd out_fd, err_fd;
    FileActions fa;
    auto* actions = &fa.actions;
    if (spec.output == Output::StdoutToStderr) {
        posix_spawn_file_actions_adddup2(actions, STDERR_FILENO, STDOUT_FILENO);
    } else if (spec.output != Output::Inherit) {
        out_fd.fd = ::memfd_create("nvcc-forge-stdout", MFD_CLOEXEC);
        if (spec.output == Output::Capture)
            err_fd.fd = ::memfd_create("nvcc-forge-stderr", MFD_CLOEXEC);
        if (out_fd.fd < 0 || (spec.output == Output::Capture && err_fd.fd < 0))
            return make_error(
                fmt::format("cannot create a capture file: {}", std::strerror(errno)));
        posix_spawn_file_actions_adddup2(actions, out_fd.fd, STDOUT_FILENO);
        if (spec.output == Output::Capture)
            posix_spawn_file_actions_adddup2(actions, err_fd.fd, STDERR_FILENO);
        else if (spec.output == Output::Merged)
            posix_spawn_file_actions_adddup2(actions, out_fd.fd, STDERR_FILENO);
        else
            posix_spawn_file_actions_addopen(actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    }
    if (spec.null_stdin) {
        posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    } else if (spec.stdin_fd >= 0) {
        // The child shares the file offset with us: each run starts at the first byte.
        if (::lseek(spec.stdin_fd, 0, SEEK_SET) < 0)
            return make_error(
                fmt::format("cannot rewind the copy of stdin: {}", std::strerror(errno)));
        posix_spawn_file_actions_adddup2(actions, spec.stdin_fd, STDIN_FILENO);
    }
    if (!spec.working_dir.empty())
        posix_spawn_file_actions_addchdir_np(actions, spec.working_dir.c_str());

    auto argv = c_strings(spec.argv);
    std::vector<char*> envp;
    if (spec.env) envp = c_strings(*spec.env);
    char** env = spec.env ? envp.data() : environ;
    auto spawned = spec.own_process_group ? spawn_group(spec, actions, argv.data(), env)
                   : spec.forward_signals ? spawn_forwarding(spec, actions, argv.data(), env)
                                          : spawn_plain(spec, actions, argv.data(), env);
    if (!spawned) return std::move(spawned).error();

    ProcessOutcome outcome;
    const int status = spawned->status;
    if (WIFSIGNALED(status))
        outcome.signal = WTERMSIG(status);
    else if (WIFEXITED(status))
        outcome.exit_code = WEXITSTATUS(status);
    outcome.forwarded_signal = spawned->forwarded;
    outcome.too_long = spawned->too_long;
    outcome.group_killed = spawned->group_killed;
    outcome.out = read_fd(out_fd.fd);
    outcome.err = read_fd(err_fd.fd);
    return outcome;
}

Result<std::string> run_capture(const std::vector<std::string>& argv) {
    if (argv.empty()) return Error{"nothing to run"};
    ProcessSpec spec;
    spec.path = argv[0];
    spec.argv = argv;
    spec.output = ProcessSpec::Output::StdoutOnly;
    spec.null_stdin = true;
    auto run = run_process(spec);
    if (!run) return std::move(run).error();
    if (!run->succeeded())
        return Error{fmt::format("'{} {}' failed (status {})", argv[0],
                                 argv.size() > 1 ? argv[1] : "",
                                 run->signal != 0 ? run->signal : run->exit_code << 8),
                     argv[0]};
    return std::move(run->out);
}

Error exec_process(const ProcessSpec& spec) {
    auto argv = c_strings(spec.argv);
    std::vector<char*> envp;
    if (spec.env) envp = c_strings(*spec.env);
    ::execve(spec.path.c_str(), argv.data(), spec.env ? envp.data() : environ);
    if (errno == E2BIG && spec.env_if_too_long) {
        const std::vector<std::string> env = spec.env_if_too_long();
        auto env_c = c_strings(env);
        if (spec.argv_if_too_long) argv = c_strings(*spec.argv_if_too_long);
        ::execve(spec.path.c_str(), argv.data(), env_c.data());
    }
    return Error{fmt::format("cannot run {}: {}", spec.path, std::strerror(errno)), spec.path};
}

Result<StdinCopy> StdinCopy::take() {
    const int fd = ::memfd_create("nvcc-forge-stdin", MFD_CLOEXEC);
    if (fd < 0)
        return make_error(fmt::format("cannot create a file for stdin: {}", std::strerror(errno)));
    StdinCopy copy(fd);
    char buf[65536];
    while (true) {
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return make_error(fmt::format("cannot read stdin: {}", std::strerror(errno)));
        if (n == 0) break;
        if (!write_bytes(fd, buf, static_cast<size_t>(n)))
            return make_error(fmt::format("cannot keep a copy of stdin: {}", std::strerror(errno)));
    }
    return copy;
}

StdinCopy::~StdinCopy() {
    if (fd_ >= 0) ::close(fd_);
}

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    if (const char* abbrev = ::sigabbrev_np(sig); abbrev != nullptr)
        return std::string("SIG") + abbrev;
#endif
    return fmt::format("signal {}", sig);
}

SignalsHeld::SignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int s : kForwarded)
        sigaddset(&held, s);
    ::sigprocmask(SIG_BLOCK, &held, &previous_);
}

SignalsHeld::~SignalsHeld() {
    ::sigprocmask(SIG_SETMASK, &previous_, nullptr);
}

int propagate(const ProcessOutcome& outcome) {
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

} // namespace forge
