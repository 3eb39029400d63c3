// Rendering gate results: the seed's data block as JSON, and a table a person reads in a CI log.
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
