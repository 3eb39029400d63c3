// Colour for a person at a terminal, never for a file, a pipe or a CI log parser: only when the
// stream is a terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is not "dumb".
#pragma once

#include <string>
#include <string_view>

namespace forge::cli {

bool colour_wanted(int fd);

// `text` with the verdict word that starts a line coloured: "PASS"/"verdict: pass" green,
// "FAIL"/"verdict: FAIL" red. Nothing else changes.
std::string coloured_verdicts(std::string_view text);

} // namespace forge::cli
