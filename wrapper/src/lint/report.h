// Rendering a lint report: text for people, JSON for CI (a list of findings).
#pragma once

#include "ci/finding.h"
#include "lint/lint.h"

#include <nlohmann/json.hpp>
#include <string>

namespace forge::lint {

// One line per finding:
//   csrc/q.cu:12: arch-gate: __CUDA_ARCH__ >= 890 (needs 8.9; list has 8.0 8.6 9.0+PTX) — why
//   setup.py:40: script-emits-gencode: cc_flag.append("-gencode") — why
// An ignored finding ends in "— ignored (lint_ignore: ENTRY)" instead of the why. A summary line
// follows; skipped files and unused lint_ignore entries are listed after it.
// `list_source` (Resolution::source, e.g. "arch_policy[12.8]") is named in the summary.
std::string lint_to_text(const LintReport& report, const arch::ArchList& list,
                         std::string_view list_source = {});

// A script block (target lines of a -gencode ladder) is one line instead, with its line range:
//   setup.py:15-28: script-emits-gencode: a target block of lines 15-28: emits ...; the list
//   wants ... that it lacks; it adds ... beyond the list — why
// and counts as one finding in the summary.
//
// [{"file", "line", "rule", "needs" (null for script rules), "pattern", "why", "ignored",
//   "ignored_by" (null when active), "block" (null, or {"first", "last", "summary"} for a line of
//   a script block)}, ...]
nlohmann::json lint_to_json(const LintReport& report);

// `--format github` (docs/ci-output.md): an error per active finding and a notice per ignored one
// (a script block once, its line range as line/endLine), file = `root` (the SRC_DIR as given, or
// the one file) joined with the finding's path; a warning per skipped file and per unused
// lint_ignore entry.
std::vector<ci::Finding> lint_findings(const LintReport& report, const std::string& root,
                                       const arch::ArchList& list);
// The summary line of lint_to_text ("lint: 2 findings, 1 ignored, 9 files scanned (list: ...)").
std::string lint_summary_line(const LintReport& report, const arch::ArchList& list,
                              std::string_view list_source = {});

} // namespace forge::lint
