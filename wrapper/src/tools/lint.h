// nvcc-forge lint: ADR-0013 item 2 and the arch-list howto's "how to tell in advance".
//
// Two scans over a source tree, both against the resolved arch list:
//  1. Arch-gated device code the list does not declare (C, C++, CUDA sources; comments and string
//     literals are not code, inline-asm templates are). The trap: code under
//     `#if __CUDA_ARCH__ >= 890` exists only in images compiled for 8.9 or newer. If an Ada device
//     loads the sm_86 cubin (the list has no 8.9), it runs the other branch - typically an empty
//     stub that host dispatch still selects - and fails with cudaErrorLaunchFailure or silently
//     wrong results on real hardware. Nothing fails at build time.
//  2. Build scripts that take the arch decision away from the request: they read or overwrite
//     TORCH_CUDA_ARCH_LIST themselves, or emit -gencode / arch=compute_ / CUDA_ARCHITECTURES of
//     their own (flash-attention's ladder, SageAttention's whitelist, pointnet2_ops' override),
//     and explicit targets (sm_90a, compute_120a, "100a") the list does not declare.
//
// "Declared" for an arch gate is decided device by device with arch/coverage.h's rules: for every
// real GPU the gate is meant for, the image that GPU loads from the list (its best cubin, else the
// PTX the driver JITs) must have been compiled with a __CUDA_ARCH__ that passes the gate. A GPU the
// list does not reach at all is coverage's business, not the lint's. So `>= 890` needs 8.9 in the
// list whenever an 8.x cubin or older PTX would otherwise serve Ada; `== 800` needs 8.0 itself.
//
// Rule ids (stable; used in JSON and in lint_ignore):
//   arch-gate            __CUDA_ARCH__ compared with a constant or a macro (`>=`, `>`, `<`, `<=`,
//                        `==`, `!=`, either operand order, parentheses), nv/target NV_PROVIDES_SM_X
//                        / NV_IS_EXACTLY_SM_X
//   fp8-type             FP8 types, intrinsics and PTX (e4m3, e5m2, __nv_fp8*, __nv_cvt_*fp8*):
//                        needs 8.9
//   arch-feature         __CUDA_ARCH_FEAT_SMxx_ALL, __CUDA_ARCH_HAS_FEATURE__(SMxx_ALL),
//                        NV_HAS_FEATURE_SM_xxa/f, CUTLASS_ARCH_MMA_SMxxA_ENABLED: needs xx a/f
//   arch-specific-macro  __CUDA_ARCH_SPECIFIC__ (needs an `a` target) and
//                        __CUDA_ARCH_FAMILY_SPECIFIC__ (needs an `a` or `f` target)
//   explicit-target      a build file names a target (sm_89, compute_90a, lto_100, "100a",
//                        "9.0a", CUDA_ARCHITECTURES 90a-real, "3.7+PTX;5.0") the list lacks;
//                        an `a` target needs that `a` entry, any other needs its SM in any
//                        form (sm_110f -> needs "11.0", as the gate folds suffixes)
//   build-arch-gate      a build file gates on HAS_SMxx (SageAttention builds _qattn_sm89 only
//   then) script-reads-arch-list   reads TORCH_CUDA_ARCH_LIST itself (then parses it its own way)
//   script-writes-arch-list  sets, overrides or clears TORCH_CUDA_ARCH_LIST
//   script-own-arch-knob     reads its own *CUDA_ARCH* variable (FLASH_ATTN_CUDA_ARCHS, ...)
//   script-emits-gencode     -gencode, --generate-code, arch=compute_, -arch=sm_, code=sm_ ...
//   script-sets-cuda-architectures  CMake CUDA_ARCHITECTURES with literal values
// The script-* rules do not depend on the list: a script that decides for itself is a finding
// under every list.
//
// `needs` is an arch token: "8.9", "9.0a", "10.0f"; "*a" / "*f" mean "any arch-specific / any
// family target" (a bare `#ifdef __CUDA_ARCH_SPECIFIC__`); "" for script-* rules.
//
// lint_ignore (packages/<pkg>/arch_override.yml `lint_ignore:`; Resolution::lint_ignore), one
// entry per string, each `GLOB` or `GLOB:RULE`:
//   GLOB   matches the path relative to SRC_DIR with '/' separators; `*` and `?` stay inside one
//          path component, `**` spans components ("third_party/**"); a GLOB without '/' matches
//          a file or directory name at any depth ("*.cuh", "third_party"), like .gitignore; a
//          GLOB with '/' and no wildcard also covers everything under that directory.
//   RULE   one rule id above, or `*`; omitted means every rule.
// Examples: "csrc/fp8/*.cu", "csrc/x.cu:fp8-type", "setup.py:script-emits-gencode",
// "third_party/**". An ignored finding is still reported, marked with the entry that silenced it,
// and does not fail the lint. An entry naming an unknown rule is an input error.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "core/result.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::tools {

struct LintFinding {
    std::string file;       // relative to the linted root, '/' separators
    int line = 0;           // 1-based
    std::string rule;       // rule id (see above)
    std::string pattern;    // the matched text, e.g. "__CUDA_ARCH__ >= ARCH_SM89"
    std::string needs;      // "8.9", "9.0a", "*a"; "" for script-* rules
    std::string why;        // what goes wrong, with the GPU and image that show it
    std::string ignored_by; // the lint_ignore entry that silenced it; "" if active

    [[nodiscard]] bool ignored() const { return !ignored_by.empty(); }
    auto operator<=>(const LintFinding&) const = default;
};

const std::vector<std::string_view>& lint_rule_ids();

// One lint_ignore entry, parsed.
struct LintIgnore {
    std::string entry; // as written
    std::string glob;
    std::string rule; // "" or "*" = every rule
};
// Errors name the entry (key) and `origin`.
Result<LintIgnore> parse_lint_ignore(std::string_view entry, std::string_view origin = {});
bool glob_match(std::string_view glob, std::string_view path);
bool ignore_matches(const LintIgnore& ignore, const LintFinding& finding);

// Object-like macros with an integer value (`#define ARCH_SM89 890`, `(890)`, chains of names),
// collected over the whole tree so a gate in one file can use a constant from a header.
class MacroTable {
  public:
    // Adds every definition in `code` (already passed through blank_c_like).
    void collect(std::string_view code, std::string_view file);
    // The integer value of `name`, following aliases; nullopt if unknown or not an integer.
    [[nodiscard]] std::optional<long> value(std::string_view name) const;
    [[nodiscard]] std::string where(std::string_view name) const; // "csrc/arch.h:3" or ""

  private:
    struct Def {
        std::string body;  // the replacement text, trimmed
        std::string where; // file:line
    };
    std::map<std::string, Def, std::less<>> defs_; // first definition in walk order wins
};

// The device-by-device check behind arch-gate and fp8-type. `at_least`: the gate selects
// __CUDA_ARCH__ >= value; otherwise exactly == value.
struct GateCheck {
    bool declared = true;
    std::string needs;  // cc of the lowest GPU that loads an image failing the gate ("8.9")
    std::string detail; // "CC 8.9 loads sm_86 (__CUDA_ARCH__ 860 < 890); also CC 12.0 ..."
};
// `gpus`: the GPUs to reason about (policy/gpus.yml); empty = a built-in table of real CCs.
GateCheck check_gate(long arch_value, bool at_least, const arch::ArchList& list,
                     const std::vector<arch::Gpu>& gpus = {});

// The scans of one file's text. `path` is the relative path used in findings and decides the
// file kind; both return nothing for a path that is neither a C-family source nor a build file.
std::vector<LintFinding> lint_source_text(std::string_view path, std::string_view text,
                                          const arch::ArchList& list, const MacroTable& macros,
                                          const std::vector<arch::Gpu>& gpus = {});
std::vector<LintFinding> lint_build_text(std::string_view path, std::string_view text,
                                         const arch::ArchList& list);
bool is_c_source(std::string_view path);
bool is_build_file(std::string_view path);

struct LintOptions {
    arch::ArchList list;
    std::vector<arch::Gpu> gpus;               // empty: built-in table (see check_gate)
    std::vector<std::string> ignore;           // lint_ignore entries
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
// or unreadable root, a bad lint_ignore entry (exit 2).
Result<LintReport> lint_tree(const std::filesystem::path& root, const LintOptions& options);

} // namespace forge::tools
