// Running the real nvcc: posix_spawn, never a shell. The child inherits stdin/stdout/stderr (or
// writes into capture files), SIGINT/SIGTERM/SIGHUP/SIGQUIT reaching the wrapper are forwarded to
// it, and its fate — exit status or the signal that killed it — is handed back unchanged.
#pragma once

#include "core/result.h"

#include <string>
#include <vector>

namespace forge::frontend {

struct ChildSpec {
    std::string path;              // executable, by path (no PATH search)
    std::vector<std::string> argv; // argv[0] included
    std::vector<std::string> env;  // "NAME=value"
    bool capture = false;          // stdout/stderr go to in-memory files instead of ours
};

struct ChildOutcome {
    int exit_code = 0; // valid when signal == 0
    int signal = 0;    // the signal that killed the child, 0 if it exited
    std::string out;   // captured stdout / stderr (capture only)
    std::string err;

    [[nodiscard]] bool succeeded() const { return signal == 0 && exit_code == 0; }
    // The shell's view: exit code, or 128 + signal.
    [[nodiscard]] int status_code() const { return signal != 0 ? 128 + signal : exit_code; }
};

// The current environment with `name` set to `value` (replacing an existing entry).
std::vector<std::string> environment_with(const std::string& name, const std::string& value);

// Spawns, forwards signals while waiting, and reaps. An error only when the child could not be
// started (the message names the file and errno).
Result<ChildOutcome> run_child(const ChildSpec& spec);

// Replaces this process with the child (execve). Returns only on failure.
Error exec_child(const ChildSpec& spec);

// Ends this process the way the child ended: the same exit code, or the same signal re-raised with
// its default disposition (no core file of our own). Returns the code to exit with if the signal
// did not end the process.
int propagate(const ChildOutcome& outcome);

// Writes all of `data` to `fd` (retrying short writes and EINTR).
bool write_all(int fd, const std::string& data);

} // namespace forge::frontend
