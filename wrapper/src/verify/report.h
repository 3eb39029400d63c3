// Rendering gate results: the data block (expected/sass/ptx/source) as JSON, and a CI-log table.
#pragma once

#include "ci/finding.h"
#include "ci/junit.h"
#include "verify/extensions.h"
#include "verify/gate.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace forge::verify {

// What the run was judged against beyond the list itself: the verdict over all reports and the
// tokens the resolution dropped against the policy row ("7.5 (arch_policy[13.0]; reason)").
struct RunContext {
    Verdict verdict;
    std::vector<std::string> narrowed;
    const ExtensionsReport* expected = nullptr; // the `extensions` check, when the run had one
    // Inputs that could not be read (the file as given, the error's text): the run exits 2.
    std::vector<std::pair<std::string, std::string>> unreadable;
};

nlohmann::json to_json(const ExtensionReport& r);
// {"verdict": "pass"|"fail", "reason": "...", "narrowed": [...], "extensions": [...]}, plus
// extensions_json(*run.expected) when the run checked expected extensions.
nlohmann::json to_json(const std::vector<ExtensionReport>& reports, const RunContext& run);
std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source,
                    const RunContext& run);
// "verdict: pass (2 extensions)" / "verdict: FAIL (1 extension): why", the last line of to_text.
std::string verdict_line(const std::vector<ExtensionReport>& reports, const RunContext& run);

// `--format github` (docs/ci-output.md): an error per failed check of each module (file = the
// file as given), a warning per check that passed only through waivers, a notice per narrowed
// token, an error per unreadable input and per expected extension that is absent or without
// device code, and an error with the verdict's reason when the run fails without any of those
// (nothing verified).
std::vector<ci::Finding> to_findings(const std::vector<ExtensionReport>& reports,
                                     const RunContext& run);
// `--junit FILE`: one case per check of each module (classname "FILE [MEMBER]"), a skipped case
// per host-only library, an error case per unreadable input, one case per expected extension and
// a last case "verify"/"verdict" that fails exactly when the run does.
std::vector<ci::TestCase> to_test_cases(const std::vector<ExtensionReport>& reports,
                                        const RunContext& run);

} // namespace forge::verify
