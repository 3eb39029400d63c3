// `nvcc-forge plan`'s verdict (verify::Outcome, verify/judge.h) and report: the stand-in's compile
// log (frontend/compile_log.h, the wrapper's own records), the gate's result over the files the
// build made, and the build's exit. Each output format is one function in one table (`formatter`),
// so a new one is one entry.
#pragma once

#include "core/result.h"
#include "frontend/compile_log.h"
#include "verify/judge.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::plan {

// A TU's line of the report: what the call asked for and what became of the policy's targets.
struct TuRow {
    std::string tu; // tu_name() of the record, as the log names it
    std::vector<std::string> requested, missing, extra, injected;
    std::vector<std::string> dropped; // missing and left out: the mode does not restore them
    std::string action;
    std::string arch_rule; // the rule that classed the TU (frontend/config.h arch_rule_string)
};

// A package's own arch knob (policy/arch_knob.h) as the build saw it.
struct KnobSetting {
    std::string variable;
    std::string value;
    bool from_caller = false; // the caller's environment set it: plan left it alone
};

struct PlanReport {
    std::string list; // "SOURCE = LIST": what the calls and the gate were judged against
    std::vector<KnobSetting> knobs;
    std::string mode; // the stand-in's mode, from the records ("" without any record)
    std::vector<frontend::LogRecord> calls;
    std::vector<TuRow> tus;            // the calls that were compared (passthroughs left out)
    std::optional<int> build_exit = 0; // CMD's exit status (128 + N for a signal); none: never ran
    int build_signal = 0;              // the signal that ended CMD (0: it exited)
    std::string build_error;           // CMD could not be started
    bool gated = false;                // --gate given
    std::vector<std::string> gate_files;
    nlohmann::json gate = nullptr; // verify's JSON
    std::string gate_text;         // verify's table
    std::string gate_github;       // verify's workflow commands (and its verdict line)
    verify::Outcome gate_outcome = verify::Outcome::Pass; // the gate's own (Judgement::outcome)

    // The gate's outcome with the build's exit and the TUs' shortfalls added (judge below).
    verify::Outcome verdict = verify::Outcome::Error;
    std::string reason;
    [[nodiscard]] int exit_code() const { return verify::outcome_exit_code(verdict); }
};

// Reads the stand-in's log (absent = no call was made). Errors name the file and line.
Result<std::vector<frontend::LogRecord>> read_log(const std::filesystem::path& path);

// Fills `tus`, `mode`, `verdict` and `reason` from the rest.
void judge(PlanReport& report);

std::string to_text(const PlanReport& report);
nlohmann::json to_json(const PlanReport& report);
// GitHub Actions workflow commands (docs/ci-output.md): an error per TU whose missing targets the
// mode does not restore, a notice per TU it injected into, an error when CMD failed, the gate's
// own commands, then the plan's verdict as a plain log line.
std::string to_github(const PlanReport& report);

using Formatter = std::string (*)(const PlanReport&);
// "text", "json", "github"; nullptr for another name.
Formatter formatter(std::string_view name);
std::string format_names(); // "text|json|github", for usage lines

// The files a --gate glob (core/glob.h's dialect) names, relative to `cwd` unless it is
// absolute, sorted. Only the directories under the glob's fixed leading components are walked.
std::vector<std::string> expand_gate_glob(const std::string& glob,
                                          const std::filesystem::path& cwd);

} // namespace forge::plan
