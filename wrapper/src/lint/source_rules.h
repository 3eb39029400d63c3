// The C, C++ and CUDA rules (arch-gate, fp8-type, arch-feature, arch-specific-macro; lint/lint.h
// describes them): gates on __CUDA_ARCH__ and arch-only macros that the list does not declare.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "lint/finding.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::lint {

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
// `gpus`: the GPUs to reason about, Tegra flags included (policy/gpus.yml via policy::load_gpus);
// retired ones are skipped (no supported nvcc builds an image for them). The lint also reads its
// known CCs off the same table (lint/scan.h).
GateCheck check_gate(long arch_value, bool at_least, const arch::ArchList& list,
                     const std::vector<arch::Gpu>& gpus);

// The scan of one C-family file against `gpus` (as for check_gate). `path` is the relative path
// used in findings and decides the file kind: nothing for a path that is not a C-family source.
std::vector<LintFinding> lint_source_text(std::string_view path, std::string_view text,
                                          const arch::ArchList& list, const MacroTable& macros,
                                          const std::vector<arch::Gpu>& gpus);
// The same scan over text already passed through blank_c_like (the tree walk blanks each file
// once, for the macro table and for the rules).
std::vector<LintFinding> lint_blanked_source(std::string_view path, std::string_view code,
                                             const arch::ArchList& list, const MacroTable& macros,
                                             const std::vector<arch::Gpu>& gpus);
bool is_c_source(std::string_view path);

} // namespace forge::lint
