// Rendering gate results: the data block (expected/sass/ptx/source) as JSON, and a CI-log table.
#pragma once

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
};

nlohmann::json to_json(const ExtensionReport& r);
// {"verdict": "pass"|"fail", "reason": "...", "narrowed": [...], "extensions": [...]}, plus
// extensions_json(*run.expected) when the run checked expected extensions.
nlohmann::json to_json(const std::vector<ExtensionReport>& reports, const RunContext& run);
std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source,
                    const RunContext& run);

} // namespace forge::verify
