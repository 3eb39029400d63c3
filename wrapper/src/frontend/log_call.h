// The last step of the nvcc path (frontend/wrapper.h: parse -> decide -> run -> log): what the
// runner reports of a call, and what is said and logged of it once it has run. Pure (no process,
// no output), so every plan and outcome is unit-tested without a process
// (tests/unit/frontend/test_log_call.cpp).
#pragma once

#include "core/process.h"
#include "frontend/decide.h"

#include <optional>
#include <string>
#include <vector>

namespace forge::frontend {

// Whose targets the caller got: the drop lines said at the end are that call's.
enum class Ran {
    Nothing,   // refused, stopped by a signal, not started, or both calls of a fallback failed
    AsGiven,   // the call as given (untouched, the fallback's second call, E2BIG, the stand-in's)
    Rewritten, // the rewritten call (inject, or the stand-in answering it)
};

// What a runner reports: which call's targets the caller got, whose failure it was, and how the
// call ends.
struct RunOutcome {
    Ran ran = Ran::Nothing;
    // The log's action when the run changed it: whose failure it was (kActionInjectionFailed,
    // kActionCallFailed, kActionLauncherFailed); nullptr: the plan's.
    const char* blame = nullptr;
    bool undone = false;     // nothing injected after all (E2BIG, no copy of stdin)
    bool logged = true;      // false: nvcc could not be started, and the call is not logged
    int status = kExitInput; // the status the log records (the shell's view)
    // What the call returns: this process's outcome (a signal is re-raised), else `status`.
    std::optional<ProcessOutcome> process;
};

// A process that ran: its status, propagated at the end.
RunOutcome ran_process(Ran ran, const ProcessOutcome& outcome);
// The call ends with `status` and no process to propagate (an error said, a refusal, a stub).
RunOutcome ended(Ran ran, int status, bool logged = true);

// The TUs of a call as stderr names them: file names (builds pass long absolute paths; the JSON
// log keeps the paths as written), else the output, else "(link)".
std::vector<std::string> tu_names(const nvcc::Invocation& inv);

// What the log step says and records of a call that decide() read.
struct CallEnd {
    std::string lines;  // stderr: the strict refusal, or the drop lines of what the caller got
    const char* action; // the log record's action
    bool undone;        // the record's injected and clamped are cleared: nothing was injected
};

struct CallFacts {
    const nvcc::Invocation& inv;
    const EffectivePolicy* policy; // nullptr: no policy, nothing to say
    bool quiet;                    // NVCC_FORGE_QUIET (compile_log.h drop_lines)
    // stderr is a terminal that wants colour (core/colour.h): "dropped"/"clamped" yellow,
    // "injected" green, a refusal's "missing" red. Never the JSON log's.
    bool colour = false;
};

CallEnd end_call(const Plan& plan, const RunOutcome& outcome, const CallFacts& facts);

} // namespace forge::frontend
