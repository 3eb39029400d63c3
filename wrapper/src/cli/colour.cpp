#include "cli/colour.h"

#include "core/env.h"

#include <array>
#include <unistd.h>
#include <utility>

namespace forge::cli {

bool colour_wanted(int fd) {
    return ::isatty(fd) == 1 && getenv_str("NO_COLOR").empty() && getenv_str("TERM") != "dumb";
}

std::string coloured_verdicts(std::string_view text) {
    constexpr std::string_view kGreen = "\x1b[32m", kRed = "\x1b[31m", kReset = "\x1b[0m";
    constexpr std::array<std::pair<std::string_view, bool>, 4> kWords{
        {{"PASS  ", true}, {"FAIL  ", false}, {"verdict: pass", true}, {"verdict: FAIL", false}}};
    std::string out;
    out.reserve(text.size() + 64);
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line =
            text.substr(0, end == std::string_view::npos ? text.size() : end + 1);
        text.remove_prefix(line.size());
        for (const auto& [word, pass] : kWords) {
            if (!line.starts_with(word)) continue;
            // The word itself, without the spaces that align the name after it.
            const std::string_view bare = word.substr(0, word.find_last_not_of(' ') + 1);
            out.append(pass ? kGreen : kRed).append(bare).append(kReset);
            line.remove_prefix(bare.size());
            break;
        }
        out.append(line);
    }
    return out;
}

} // namespace forge::cli
