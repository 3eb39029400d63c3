// What the front end does with one nvcc call it has read, decided without running anything: the
// step between parse and run of the nvcc path (frontend/wrapper.h). Pure (no process, no output,
// no environment), so every mode, policy and call shape is unit-tested without a process
// (tests/unit/frontend/test_decide.cpp).
#pragma once

#include "frontend/compare.h"
#include "frontend/compile_log.h"
#include "frontend/config.h"
#include "nvcc/cmdline.h"

#include <string>
#include <vector>

namespace forge::frontend {

enum class PlanKind {
    Untouched, // runs as given: no device code, no policy, observe, nothing to add or clamp
    Rewritten, // inject: targets added and/or requested ones nvcc cannot emit clamped
    Refused,   // strict: the call misses policy targets and does not run (exit 1)
};

// Who answers a call that was read: nvcc, as the plan's kind says, or plan's stand-in
// (standin.h), which answers as nvcc would have been run and builds a stub instead. A call that is
// not read always goes to nvcc, byte for byte (CMake's configure probes under a plan too).
enum class Runner {
    Nvcc,
    StandIn,
};

// One drop line's parts (compile_log.h DropReport).
struct Drops {
    std::vector<arch::Target> dropped;  // policy targets the output lacks
    std::vector<arch::Target> injected; // missing targets the rewrite adds
    std::vector<std::string> clamped;   // requested images nvcc cannot emit, as the log names them
    std::string why;                    // why the lacking ones were not added
    [[nodiscard]] bool empty() const {
        return dropped.empty() && injected.empty() && clamped.empty();
    }
};

struct Plan {
    PlanKind kind = PlanKind::Untouched;
    Runner runner = Runner::Nvcc;  // chosen here, once: the run step only follows it
    std::vector<std::string> argv; // nvcc's arguments to run: the call's own unless Rewritten
    // False for a call with no device code (or a plan's configure probe): byte for byte nvcc's,
    // nothing said, no targets logged.
    bool read = false;
    bool compared = false; // compared with a policy: the log names missing and extra
    TuClass tu_class;
    Comparison cmp;
    nvcc::Rewrite rewrite; // Rewritten: what changed; its notes are said whatever the kind
    // The drop lines of the call run as given (observe, strict, a fallback, a rewrite that did
    // not run) and of the rewritten call that built: which one is said depends on what ran.
    Drops as_given;
    Drops rewritten;
    // Refused: the strict line's tail (why inject would not help an arch-specific TU), or "".
    std::string refusal_rule;
    const char* action = kActionPassthrough; // the log's action before the run
};

struct DecideInput {
    const nvcc::Invocation& inv;
    const EffectivePolicy* policy; // nullptr: no policy configured
    const toolkit::ToolkitCaps& caps;
    Mode mode;
    bool stand_in = false; // under a plan (standin.h): the stand-in runs what is read; CMake's
                           // configure probes stay untouched
};

Plan decide(const DecideInput& in);

} // namespace forge::frontend
