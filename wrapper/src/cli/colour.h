// verify's verdict words in colour; whether to colour at all is core/colour.h's colour_wanted.
#pragma once

#include "core/colour.h"

#include <string>
#include <string_view>

namespace forge::cli {

// `text` with the verdict word that starts a line coloured: "PASS"/"verdict: pass" green,
// "FAIL"/"verdict: FAIL" red. Nothing else changes.
std::string coloured_verdicts(std::string_view text);

} // namespace forge::cli
