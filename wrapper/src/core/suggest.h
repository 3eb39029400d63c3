// "Did you mean": the nearest of a set of names to a mistyped one (a command, an option, a
// package), by edit distance. The one edit distance: the CLI's suggestions and policy/'s nearest
// package name both ask it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge {

// Levenshtein distance (insert, delete, substitute, and swapping two neighbours: one edit each).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is close enough to be a typo (at most a third of the
// longer name's letters differ, at least one allowed; a candidate that begins with `word`
// counts as one edit), else "". Ties go to the first candidate.
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

} // namespace forge
