// Text helpers the source rules and the build-script rules share: character classes, line
// lookups, the CCs a rule may name, and the Finder that records one finding per line and rule.
// Internal to the lint module (no header outside lint/ includes it).
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "lint/chars.h"
#include "lint/finding.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace forge::lint::scan {

std::string lower(std::string_view s);
std::string trim(std::string_view s);
// Collapses runs of blanks (a pattern spanning a line continuation reads as one line).
std::string squeeze(std::string_view s, std::size_t max_len = 120);

// Offsets of line starts, for offset -> line lookups on large files.
class LineIndex {
  public:
    explicit LineIndex(std::string_view text) {
        starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') starts_.push_back(i + 1);
    }
    [[nodiscard]] int line(std::size_t offset) const {
        auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
        return static_cast<int>(it - starts_.begin());
    }
    [[nodiscard]] std::size_t start(int line) const {
        return starts_[static_cast<std::size_t>(line - 1)];
    }

  private:
    std::vector<std::size_t> starts_;
};

std::string_view line_text(std::string_view text, const LineIndex& idx, int line);
// A C integer literal (decimal or 0x, u/l suffixes); nullopt for anything else.
std::optional<long> parse_integer(std::string_view s);
// `prefix` + 2 or 3 digits + `tail` (NV_PROVIDES_SM_89, HAS_SM90): the SM number, or nullopt.
std::optional<int> sm_in(std::string_view ident, std::string_view prefix, std::string_view tail);

std::string_view file_name(std::string_view path);
std::string extension(std::string_view path); // lower case, with the dot: ".cu"; "" if none

// The CC an __CUDA_ARCH__ value names, rounded up: 890 -> "8.9", 1001 -> "10.1".
std::string arch_cc(long value);
// The lowest CC of a real part in `gpus` whose __CUDA_ARCH__ is >= value, else arch_cc. A real
// part is one the table names products for under that CC as its current name: 8.8 (no product)
// and 10.1 (Thor, whose products 11.0 lists again) are skipped, so 1001 -> "10.3".
std::string lowest_known_cc(long value, const std::vector<arch::Gpu>& gpus);
// A CC of `gpus` (retired ones included), so a "90a" or HAS_SM89 naming it is an arch, not a
// stray number.
bool is_known_cc(int sm, const std::vector<arch::Gpu>& gpus);

struct Finder {
    std::string_view path;
    std::string_view text;
    const LineIndex& lines;
    std::vector<LintFinding>& out;
    const std::vector<arch::Gpu>& gpus;
    std::set<std::tuple<int, std::string, std::string>> seen; // (line, rule, needs)

    void add(std::size_t offset, std::string rule, std::string pattern, std::string needs,
             std::string why) {
        int line = lines.line(offset);
        if (!seen.emplace(line, rule, needs).second) return;
        out.push_back({std::string(path),
                       line,
                       std::move(rule),
                       std::move(pattern),
                       std::move(needs),
                       std::move(why),
                       {},
                       0,
                       0,
                       {}});
    }
};

inline bool has_entry(const arch::ArchList& list, auto pred) {
    return std::any_of(list.entries().begin(), list.entries().end(), pred);
}

} // namespace forge::lint::scan
