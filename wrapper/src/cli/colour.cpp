#include "cli/colour.h"

#include <array>
#include <utility>

namespace forge::cli {

std::string coloured_verdicts(std::string_view text) {
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
            out.append(painted(bare, pass ? kColourGreen : kColourRed, true));
            line.remove_prefix(bare.size());
            break;
        }
        out.append(line);
    }
    return out;
}

} // namespace forge::cli
