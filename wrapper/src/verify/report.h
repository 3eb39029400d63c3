// Rendering gate results: the data block (expected/sass/ptx/source) as JSON, and a CI-log table.
#pragma once

#include "verify/gate.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace forge::verify {

nlohmann::json to_json(const ExtensionReport& r);
// {"verdict": "pass"|"fail", "extensions": [...]}
nlohmann::json to_json(const std::vector<ExtensionReport>& reports);
std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source);

} // namespace forge::verify
