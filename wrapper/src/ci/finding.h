// CI-native output (docs/ci-output.md): findings as GitHub Actions workflow commands, and test
// results as a JUnit XML report. Every command that reports to a CI (verify, lint, log summarize,
// plan) turns its own results into these generic records; the writers here know nothing of what
// a finding is about.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge::ci {

enum class Severity { Error, Warning, Notice };

struct Finding {
    Severity severity = Severity::Error;
    std::string file;  // relative to the workspace (see workspace_path); "" = not about a file
    int line = 0;      // 1-based; 0 = none
    int end_line = 0;  // last line of a range; 0 = one line
    std::string title; // short, e.g. "lint arch-gate"
    std::string message;
};

// "error" / "warning" / "notice": the workflow command's name.
std::string_view severity_name(Severity s);

// GitHub's escaping of a command's message (% \r \n) and of a property value (also : and ,),
// https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions
std::string escape_github_data(std::string_view s);
std::string escape_github_property(std::string_view s);

// One workflow command, without the newline:
//   ::error file=csrc/a.cu,line=12,endLine=14,title=lint arch-gate::message
// Properties that are empty (or 0) are left out; no property at all gives "::error::message".
std::string github_command(const Finding& f);
// One line per finding, in order.
std::string to_github(const std::vector<Finding>& findings);

// `path` as the annotation names it: GitHub matches `file=` against the repository's paths, and a
// job runs in the repository root. A path under `base` (the current directory when empty) is
// written relative to it, normalized ("./csrc/../csrc/a.cu" -> "csrc/a.cu"); any other path is
// returned normalized as it is. NVCC_FORGE_PATH_MAP moves a path first (a compile log written in
// a cibuildwheel container names /project/...; "/project=" makes it the workspace's).
std::string workspace_path(std::string_view path, std::string_view base = {});

} // namespace forge::ci
