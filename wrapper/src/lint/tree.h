// The tree walk: which files of SRC_DIR are scanned, the macro table across them, lint_ignore
// applied to every finding.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "core/result.h"
#include "lint/finding.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace forge::lint {

struct LintOptions {
    arch::ArchList list;
    std::vector<arch::Gpu> gpus;               // empty: bundled policy/gpus.yml, retired too
    std::vector<std::string> ignore;           // lint_ignore entries
    std::string arch_list_separator = " ";     // how TORCH_CUDA_ARCH_LIST is exported
    std::string ignore_origin = "lint_ignore"; // where they came from, for errors
    std::uintmax_t max_file_bytes = std::uintmax_t{8}
                                    << 20; // larger files are skipped (and reported)
};

struct LintReport {
    std::vector<LintFinding> findings;       // sorted by file, line, rule
    std::vector<std::string> skipped;        // "path: why" for too-large or unreadable files
    std::vector<std::string> unused_ignores; // lint_ignore entries that silenced nothing
    int files_scanned = 0;
    bool unreadable = false; // a file could not be read: the scan is incomplete

    [[nodiscard]] std::size_t active_count() const;
    [[nodiscard]] std::size_t ignored_count() const;
};

// Walks `root` (a directory, or a single file) in sorted order, skipping dot-directories, build
// output (build, _build, dist, cmake-build-*, __pycache__, node_modules, *.egg-info), symlinks,
// binary files (a NUL byte in the first 8 KiB) and files over max_file_bytes. Errors: a missing
// or unreadable root, a bad lint_ignore entry, no GPU table (exit 2).
Result<LintReport> lint_tree(const std::filesystem::path& root, const LintOptions& options);
// Several files and directories in one lint (what pre-commit passes): one report, macros
// collected across all of them, a file named twice read once. With more than one root a
// finding's path is the root as given joined with the path below it (relative to the working
// directory when the roots are), and lint_ignore globs match those paths.
Result<LintReport> lint_paths(const std::vector<std::filesystem::path>& roots,
                              const LintOptions& options);

} // namespace forge::lint
