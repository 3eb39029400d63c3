// One lint finding and the stable rule ids (lint/lint.h describes each rule).
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

namespace forge::lint {

struct LintFinding {
    std::string file;       // relative to the linted root, '/' separators
    int line = 0;           // 1-based
    std::string rule;       // rule id (see above)
    std::string pattern;    // the matched text, e.g. "__CUDA_ARCH__ >= ARCH_SM89"
    std::string needs;      // "8.9", "9.0a", "*a"; "" for script-* rules
    std::string why;        // what goes wrong, with the GPU and image that show it
    std::string ignored_by; // the lint_ignore entry that silenced it; "" if active
    // A target line of a script block (a -gencode ladder over several lines): the block's line
    // range and its one-line summary (what it emits, what the list wants that it lacks, what it
    // adds). The text report prints a block once; the JSON keeps every line. 0/"" outside one.
    int block_first = 0;
    int block_last = 0;
    std::string block_summary;

    [[nodiscard]] bool ignored() const { return !ignored_by.empty(); }
    auto operator<=>(const LintFinding&) const = default;
};

// Every rule id, in the order lint/lint.h lists them (JSON, lint_ignore and --help use these).
const std::vector<std::string_view>& lint_rule_ids();

} // namespace forge::lint
