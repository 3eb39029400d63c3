// The compile log: one JSON object per nvcc call in NVCC_FORGE_LOG, and one stderr line per
// translation unit that loses a policy target. Appends never tear: the whole line goes out in one
// write(2) on an O_APPEND descriptor, under flock(2) when it is longer than PIPE_BUF.
#pragma once

#include "ci/finding.h"
#include "core/result.h"

#include <map>
#include <string>
#include <vector>

namespace forge::frontend {

// Actions, as written in the log.
inline constexpr const char* kActionPassthrough = "passthrough";
inline constexpr const char* kActionCompared = "compared";
inline constexpr const char* kActionInjected = "injected";
inline constexpr const char* kActionInjectionFailed = "injection-failed";
// Injected, failed, and the caller's own call failed the same way: the call's failure, not the
// injection's (frontend/wrapper.h, failure_is_the_calls_own).
inline constexpr const char* kActionCallFailed = "call-failed";
// Injected behind a launcher (ccache, sccache), failed, and nvcc alone built the same call: the
// launcher's failure, which the call ends with (frontend/wrapper.h).
inline constexpr const char* kActionLauncherFailed = "launcher-failed";
inline constexpr const char* kActionRefused = "refused";

struct LogRecord {
    std::string cwd;
    std::vector<std::string> sources;
    std::string output;
    std::vector<std::string> policy; // nvcc target names
    std::vector<std::string> requested;
    std::vector<std::string> missing;
    std::vector<std::string> extra;
    std::vector<std::string> injected;
    std::vector<std::string> clamped;
    bool arch_specific = false;
    // The rule that decided arch_specific (frontend/config.h arch_rule_string); "" (null in
    // JSON) for a call that was not compared. Read as "" from logs written before it existed.
    std::string arch_rule;
    std::string mode;
    std::string action;
    int exit_code = 0;
    long long duration_ms = 0;

    // One line, no trailing newline; keys exactly as documented, in this order.
    [[nodiscard]] std::string to_json() const;
    static Result<LogRecord> from_json(const std::string& line);
};

// Appends `line` + '\n' to `path` (created 0644 if absent).
Status append_log_line(const std::string& path, const std::string& line);

// "nvcc-forge: flash_fwd.cu: dropped sm_110, compute_120 (policy 8.0 9.0+PTX; requested 8.0 9.0)"
std::string drop_line(const std::string& tu, const std::string& dropped, const std::string& policy,
                      const std::string& requested, const std::string& why = "");

// What one call did with the policy targets it missed and the targets nvcc cannot emit, for the
// build log a person reads (the JSON log has the same facts).
struct DropReport {
    std::vector<std::string> injected; // missed by the call, put back by the wrapper
    std::vector<std::string> dropped;  // missed and absent from the output
    std::vector<std::string> clamped;  // requested, but removed: nvcc cannot emit them
    std::string policy;
    std::string requested; // "" = nvcc default
    std::string why;       // why `dropped` stayed dropped ("" = not known)
    // Which rule classed the TU as generic or arch-specific (frontend/config.h arch_rule_text),
    // "" when there is nothing to say (plain targets only).
    std::string rule;
};

// The stderr lines for one TU, "" when there is nothing to say:
//   nvcc-forge: k.cu: dropped sm_110 -> injected; dropped compute_120 (policy ...; requested ...);
//     the gate will report ptx: missing PTX compute_120 unless another object of the binary ...
//   nvcc-forge: h.cu: dropped sm_80 (policy ...; requested ...); arch-specific TU: every target
//     is `a`; nothing injected; the gate will report sass: missing sm_80 unless ...
//   nvcc-forge: k.cu: clamped sm_50 -> removed (policy ...; requested ...); nvcc cannot emit it
// `quiet` (NVCC_FORGE_QUIET=1) leaves out a drop line whose drops were all injected back: the
// output lacks nothing, so only a build log that wants every detail needs it. Clamps and real
// drops are always printed. `colour` (a terminal, core/colour.h) paints the words "dropped" and
// "clamped" yellow, "injected" green.
std::string drop_lines(const std::string& tu, const DropReport& report, bool quiet,
                       bool colour = false);

// What a record says was left out of the output: missing minus injected, except when the
// injection fell back (then everything missing) — and nothing for a passthrough.
std::vector<std::string> dropped_targets(const LogRecord& r);
// The TU name used in logs: the sources, else the output, else "(link)".
std::string tu_name(const LogRecord& r);

struct DropSummary {
    long records = 0;
    long tus = 0; // distinct TU names (a TU compiled twice, e.g. -E then -c, counts once)
    long records_with_drops = 0;
    std::map<std::string, std::vector<std::string>> tus_by_target; // ordered by target
    // Targets the build asked nvcc for without, but the wrapper injected back: not a hole in the
    // output, still evidence of a build script that ignores the request.
    long records_restored = 0;
    std::map<std::string, std::vector<std::string>> restored_by_target;
    // Targets a call requested beyond the policy: the gate's `extra` check fails the binary.
    long records_with_extra = 0;
    std::map<std::string, std::vector<std::string>> extra_by_target;
    std::map<std::string, long> actions;
};

// Reads a log file. Errors name the file and the 1-based line of the first malformed record.
Result<DropSummary> summarize_log(const std::string& path);
std::string summary_text(const DropSummary& s);
std::string summary_json(const DropSummary& s);
// "12 calls, 2 with drops": the first line of summary_text.
std::string summary_headline(const DropSummary& s);
// One line for a person who never saw the build's stderr (pip hides it), no newline:
// "3 nvcc calls, 3 TUs; injected sm_90 (2 TUs); missing none". `verify` ends with it.
std::string summary_line(const DropSummary& s);
// `--format github` (docs/ci-output.md), one finding per TU and kind, TUs in name order: the
// targets it dropped (a warning; an error when `drops_fail`, i.e. --fail-on-drop), the extra
// targets it requested (a warning), the targets the wrapper injected back (a notice). The file is
// the TU relative to the current directory when it is one path under it.
std::vector<ci::Finding> summary_findings(const DropSummary& s, bool drops_fail);

} // namespace forge::frontend
