// Colour for a person at a terminal, never for a file, a pipe or a CI log parser: only when the
// stream is a terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is not "dumb".
// The one rule and the one set of escape codes: verify's verdict words (cli/colour.h) and the
// wrapper's drop and refusal lines (frontend/log_call.h) ask here.
#pragma once

#include <string>
#include <string_view>

namespace forge {

inline constexpr std::string_view kColourGreen = "\x1b[32m";
inline constexpr std::string_view kColourRed = "\x1b[31m";
inline constexpr std::string_view kColourYellow = "\x1b[33m";
inline constexpr std::string_view kColourReset = "\x1b[0m";

bool colour_wanted(int fd);

// `word` in `colour` when `on`, else as it is.
std::string painted(std::string_view word, std::string_view colour, bool on);

} // namespace forge
