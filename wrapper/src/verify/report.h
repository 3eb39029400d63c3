// Rendering gate results: the data block (expected/sass/ptx/source) as JSON, and a CI-log table.
#pragma once

#include "verify/extensions.h"
#include "verify/gate.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace forge::verify {

nlohmann::json to_json(const ExtensionReport& r);
// {"verdict": "pass"|"fail", "extensions": [...]}, plus extensions_json(*expected) when given.
nlohmann::json to_json(const std::vector<ExtensionReport>& reports,
                       const ExtensionsReport* expected = nullptr);
std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source,
                    const ExtensionsReport* expected = nullptr);

} // namespace forge::verify
