// One nvcc call through the front end: parse it, compare it with the policy, run it (observed,
// rewritten or refused), log it, and hand back exactly what the real nvcc did.
#pragma once

#include "frontend/config.h"
#include "frontend/locate.h"

#include <chrono>
#include <string>
#include <vector>

namespace forge::frontend {

struct Call {
    Located nvcc;                       // the real nvcc (resolved)
    std::vector<std::string> launchers; // run first, e.g. {"/usr/bin/ccache"} (resolved argv[0])
    std::vector<std::string> launcher_args; // the launchers' argv as given (launchers[0] replaced)
    std::vector<std::string> args;          // nvcc's arguments (argv[1..])
    FrontendEnv env;
    std::string cwd;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Runs the call and returns the exit code to return; a child killed by a signal re-raises it
// (the function then does not return). Errors of the wrapper itself (a bad NVCC_FORGE_MODE) print
// one message and return 2 without running anything.
int run_call(const Call& call);

// Runs the real nvcc untouched (exec, no parsing): the path taken when the wrapper has nothing
// to do, or is already inside another wrapper (depth > 0).
int exec_untouched(const Call& call);

} // namespace forge::frontend
