#include "core/colour.h"

#include "core/env.h"

#include <unistd.h>

namespace forge {

bool colour_wanted(int fd) {
    return ::isatty(fd) == 1 && getenv_str("NO_COLOR").empty() && getenv_str("TERM") != "dumb";
}

std::string painted(std::string_view word, std::string_view colour, bool on) {
    if (!on) return std::string(word);
    std::string out;
    out.reserve(colour.size() + word.size() + kColourReset.size());
    out.append(colour).append(word).append(kColourReset);
    return out;
}

} // namespace forge
