// One nvcc call through the front end: parse it, compare it with the policy, run it (observed,
// rewritten or refused), log it, and hand back exactly what the real nvcc did.
//
// Decisions worth knowing:
// - Nothing configured (no NVCC_FORGE_ARCH_LIST / NVCC_FORGE_PACKAGE) and no NVCC_FORGE_LOG: a
//   plain execve of the real nvcc, nothing parsed. No-device calls (--version, -E, -M, CMake's
//   compiler id, host-only) and -ptx/-cubin calls are never rewritten; with a log they run as a
//   child so the call can be logged (action passthrough), else they are exec'd.
// - inject: the rewritten call runs with stdout/stderr captured. Success: its output is replayed.
//   Failure: the original call runs with inherited stdio (its diagnostics come first and are the
//   real ones: it is its exit status that is returned), then nvcc-forge says whose failure it
//   was. The injection's (the original builds, or fails otherwise): action injection-failed, and
//   the rewritten call's diagnostics indented under "  | ". The call's own (it fails as given the
//   same way and the rewritten call's diagnostics name no injected target: an unwritable -o, a
//   broken source): action call-failed (failure_is_the_calls_own). Behind a launcher (ccache,
//   sccache) nvcc alone first runs the rewritten call: when it builds, the failure was the
//   launcher's (a read-only CCACHE_DIR) and the call ends with the launcher's exit, action
//   launcher-failed: the call as given could be a cache hit with fewer targets than the policy.
//   A signal ends everything at once: one that killed nvcc is re-raised; one that reached the
//   wrapper (SIGTERM, SIGINT, SIGHUP, SIGQUIT, passed on to nvcc) ends the call with nvcc's
//   status (real nvcc exits 255 on SIGTERM), never with a second compile.
// - A source on stdin (`-`, /dev/stdin) in a call that may run twice: stdin is read once into an
//   in-memory file and both calls read that, so the fallback compiles the bytes the caller gave.
// - nvcc is exec'd by the path as found (argv[0] as the caller spelled it, never the resolved
//   one): nvcc's toolkit root, -E/-M/--dryrun output and depfiles follow argv[0].
// - Near ARG_MAX (E2BIG for our marker or the injected targets), the caller's own argv and
//   environment run instead: the build gets what calling nvcc directly gives.
// - strict refuses (exit 1, before compiling) a call that misses policy targets — except an
//   arch-specific TU that the package did not opt in to injection: such TUs miss targets by
//   design (FA3 sm_90a kernels), so their drops are logged as in observe mode.
// - The stderr drop line names TUs by file name; the JSON log keeps paths as written. It is said
//   once the call has run (frontend/log_call.h), coloured only when stderr is a terminal that
//   wants it (core/colour.h): the JSON log never is.
#pragma once

#include "core/process.h"
#include "frontend/config.h"
#include "frontend/standin.h"
#include "toolkit/locate.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace forge::frontend {

struct Call {
    toolkit::Located nvcc;              // the real nvcc: exec'd as found, checked as resolved
    std::vector<std::string> launchers; // run first, e.g. {"/usr/bin/ccache"} (resolved argv[0])
    std::vector<std::string> launcher_args; // the launchers' argv as given (launchers[0] replaced)
    std::vector<std::string> args;          // nvcc's arguments (argv[1..])
    FrontendEnv env;
    int depth = 0;      // this wrapper's depth (toolkit::read_depth_marker of env.depth)
    std::string marker; // toolkit::kDepthEnv's value for everything this call starts
    std::string cwd;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    // NVCC_FORGE_ARCH_LIST or NVCC_FORGE_PACKAGE set, the build's bound settings included: asked
    // once, by the entry (layout.policy_configured_asked_once), and passed down from there.
    bool policy_configured = false;
    // Set when started from a plan's shadow root: the call is answered by the stand-in
    // (standin.h) after the usual parse, compare and rewrite.
    std::optional<PlanConfig> plan;
    // The compiler cache running this nvcc ("ccache", "sccache") when the policy comes from the
    // environment, which the cache does not hash: a compile says so, once per build.
    std::string cache_parent;
    // The build driver ("ninja", "make") running this launcher when its policy comes from the
    // environment, which the driver's dependencies do not include: a changed list rebuilds
    // nothing, and a compile says so, once per build.
    std::string env_policy_driver;
};

// Runs the call and returns the exit code to return; a child killed by a signal re-raises it
// (the function then does not return). Errors of the wrapper itself (a bad NVCC_FORGE_MODE) print
// one message and return 2 without running anything.
int run_call(const Call& call);

// After the rewritten call (`rewritten`, captured) failed and the caller's own call
// (`original`) ran: the failure is the call's own, not the injected targets' (an unwritable -o,
// a source that does not compile for any target), when the caller's call fails the same way
// (not by a signal, the same exit status) and the rewritten call's diagnostics name none of the
// injected targets. A call that builds as given, or fails otherwise, is an injection failure.
bool failure_is_the_calls_own(const ProcessOutcome& rewritten, const ProcessOutcome& original,
                              const std::vector<arch::Target>& injected);

// Runs the real nvcc untouched (exec, no parsing): the path taken when the wrapper has nothing
// to do, or is already inside another wrapper (depth > 0).
int exec_untouched(const Call& call);

} // namespace forge::frontend
