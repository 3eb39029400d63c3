#include "core/suggest.h"

#include <algorithm>

namespace forge {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Optimal string alignment: three rows of the table.
    std::vector<std::size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
        std::swap(prev2, prev);
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = 0;
    for (const auto& c : candidates) {
        if (c.empty() || c == word) continue;
        const bool prefix = word.size() >= 3 && c.starts_with(word);
        const std::size_t d = prefix ? 1 : edit_distance(word, c);
        const std::size_t allowed = std::max<std::size_t>(1, std::max(word.size(), c.size()) / 3);
        if (d <= allowed && (best.empty() || d < best_distance)) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

} // namespace forge
