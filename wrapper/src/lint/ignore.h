// lint_ignore (packages/<pkg>/arch_override.yml `verify.lint_ignore:`, Resolution::lint_ignore,
// --lint-ignore): one entry per string, each `GLOB` or `GLOB:RULE`:
//   GLOB   a path glob in the dialect of core/glob.h, matched against the path relative to SRC_DIR
//          with '/' separators: `*` and `?` stay inside one path component, `**` spans components
//          ("third_party/**"); a GLOB without '/' matches a file or directory name at any depth
//          ("*.cuh", "third_party"), like .gitignore; a GLOB with '/' and no wildcard also covers
//          everything under that directory.
//   RULE   one rule id (lint/lint.h), or `*`; omitted means every rule.
// Examples: "csrc/fp8/*.cu", "csrc/x.cu:fp8-type", "setup.py:script-emits-gencode",
// "third_party/**". An ignored finding is still reported, marked with the entry that silenced it,
// and does not fail the lint. An entry naming an unknown rule is an input error.
#pragma once

#include "core/glob.h"
#include "core/result.h"
#include "lint/finding.h"

#include <string>
#include <string_view>

namespace forge::lint {

// One lint_ignore entry, parsed.
struct LintIgnore {
    std::string entry; // as written
    std::string glob;  // "./" dropped, a trailing '/' made "/**", "" made "**"
    std::string rule;  // "" or "*" = every rule
};
// Errors name the entry (key) and `origin`.
Result<LintIgnore> parse_lint_ignore(std::string_view entry, std::string_view origin = {});
bool ignore_matches(const LintIgnore& ignore, const LintFinding& finding);

} // namespace forge::lint
