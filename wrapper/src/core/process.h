// Starting a program: posix_spawn, never a shell, so argv reaches it exactly as given (paths with
// spaces or shell characters are never reinterpreted). The one runner every module uses: the
// front end for the real nvcc (signals forwarded, its fate handed back), the toolkit probe and
// discovery, and cuobjdump.
#pragma once

#include "core/result.h"

#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge {

struct ProcessSpec {
    enum class Output {
        Inherit,    // our stdout/stderr
        Capture,    // stdout and stderr each into its own in-memory file (no pipe to deadlock on)
        Merged,     // both into one file, interleaved as a user would see them (into `out`)
        StdoutOnly, // stdout captured, stderr discarded
        // stdout onto our stderr, stderr ours: a program whose output must stay off our stdout
        // (plan's build, whose stdout is plan's report alone)
        StdoutToStderr,
    };
    std::string path;              // executable, by path (no PATH search)
    std::vector<std::string> argv; // argv[0] included
    // "NAME=value"; nullopt: this process's environment.
    std::optional<std::vector<std::string>> env;
    Output output = Output::Inherit;
    bool null_stdin = false; // stdin from /dev/null instead of ours
    // stdin from this file (a StdinCopy's), read from its start: a call run twice gets the same
    // bytes both times.
    int stdin_fd = -1;
    std::string working_dir; // "" = ours
    // SIGINT/SIGTERM/SIGHUP/SIGQUIT reaching us are passed on to the child while it runs: the
    // front end stands in for nvcc, so Ctrl-C must reach the compiler, not just the wrapper.
    bool forward_signals = false;
    // The child leads a process group of its own (plan's build: make, ninja, sh and every
    // compiler they start). With forward_signals, a signal reaching us goes to the whole group;
    // from the first one the group has `group_grace` to end, then it gets SIGKILL, and
    // run_process returns only once no process of the group is left (a process that cannot be
    // killed, stuck in the kernel, is given up on a few seconds after the SIGKILL). This process
    // becomes a child subreaper (prctl(2)), so the group's orphans are reaped here, not left as
    // zombies of an init that may never wait for them; while it waits it reaps every child of
    // this process (for a single-threaded caller with no other child: plan). A group member that
    // moves to a group of its own (ninja puts each command in one) is its parent's to stop.
    bool own_process_group = false;
    std::chrono::milliseconds group_grace{10000};
    // Near ARG_MAX the kernel refuses (E2BIG) an argv + environment that we made longer than the
    // caller's. When set, such a refusal starts `path` again with `argv_if_too_long` (nullopt: the
    // same argv) and this environment — the caller's own call, which fitted when it started us.
    std::function<std::vector<std::string>()> env_if_too_long;
    std::optional<std::vector<std::string>> argv_if_too_long;
};

struct ProcessOutcome {
    int exit_code = 0; // valid when signal == 0
    int signal = 0;    // the signal that killed the child, 0 if it exited
    std::string out;   // captured stdout (Merged: stdout and stderr)
    std::string err;   // captured stderr (Capture only)
    // A signal that reached us while the child ran and was passed on to it (forward_signals): the
    // caller was told to stop, whatever the child made of it (nvcc exits 255 on SIGTERM).
    int forwarded_signal = 0;
    bool too_long = false; // the spec's too-long fallback is what ran
    // own_process_group: the group outlived the grace after a forwarded signal and was killed.
    bool group_killed = false;

    [[nodiscard]] bool succeeded() const { return signal == 0 && exit_code == 0; }
    // The shell's view: exit code, or 128 + signal.
    [[nodiscard]] int status_code() const { return signal != 0 ? 128 + signal : exit_code; }
};

// The current environment with `name` set to `value` (replacing an existing entry).
std::vector<std::string> environment_with(const std::string& name, const std::string& value);
// The current environment without the named variables.
std::vector<std::string> environment_without(const std::vector<std::string>& names);

// Spawns, waits (forwarding signals when asked) and reaps. An error only when the child could not
// be started (the message names the file and errno); a non-zero exit is an outcome, the caller
// decides.
Result<ProcessOutcome> run_process(const ProcessSpec& spec);

// run_process with stdout captured and stderr discarded, stdin from /dev/null; an error when the
// program cannot start or does not exit 0. For asking a tool a question (`nvcc --version`).
Result<std::string> run_capture(const std::vector<std::string>& argv);

// Replaces this process with the program (execve), or with the too-long fallback when the kernel
// refuses the first as too long. Returns only on failure.
Error exec_process(const ProcessSpec& spec);

// Our stdin read to its end into an anonymous in-memory file, for a call that may have to run
// twice (the front end's injected call, then the original): each run reads it from the start.
class StdinCopy {
  public:
    static Result<StdinCopy> take();
    StdinCopy(StdinCopy&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    StdinCopy& operator=(StdinCopy&&) = delete;
    StdinCopy(const StdinCopy&) = delete;
    StdinCopy& operator=(const StdinCopy&) = delete;
    ~StdinCopy();
    [[nodiscard]] int fd() const { return fd_; }

  private:
    explicit StdinCopy(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// "SIGTERM" for SIGTERM; "signal N" for a number without a name.
std::string signal_name(int sig);

// Ends this process the way the child ended: the same exit code, or the same signal re-raised with
// its default disposition (no core file of our own). Returns the code to exit with if the signal
// did not end the process.
int propagate(const ProcessOutcome& outcome);

// The signals run_process forwards, held (blocked) from construction to destruction: one that
// arrives meanwhile waits. A run_process with own_process_group started meanwhile takes a waiting
// one at once and forwards it to its group; after the destructor a waiting one has its usual
// effect. For a command that must not die between creating files and starting the child that
// would clean them up (plan's shadow root).
class SignalsHeld {
  public:
    SignalsHeld();
    ~SignalsHeld();
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;

  private:
    sigset_t previous_{};
};

// Writes all of `data` to `fd` (retrying short writes and EINTR).
bool write_all(int fd, std::string_view data);

} // namespace forge
