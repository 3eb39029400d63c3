// The build-script rules (explicit-target, build-arch-gate, script-*; lint/lint.h describes them):
// setup.py, CMake, shell and Makefiles that take the arch decision away from the request.
#pragma once

#include "arch/arch.h"
#include "lint/finding.h"

#include <string_view>
#include <vector>

namespace forge::lint {

// The scan of one build file. `path` is the relative path used in findings and decides the
// dialect: nothing for a path that is not a build file.
// `separator` is the one TORCH_CUDA_ARCH_LIST is exported with (" ", ";" or ","; the package's
// wrapper.arch_list_separator): script-splits-arch-list judges the script's own split against it.
std::vector<LintFinding> lint_build_text(std::string_view path, std::string_view text,
                                         const arch::ArchList& list,
                                         std::string_view separator = " ");
bool is_build_file(std::string_view path);

} // namespace forge::lint
