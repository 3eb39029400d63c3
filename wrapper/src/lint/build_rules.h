// The build-script rules (explicit-target, build-arch-gate, script-*; lint/lint.h describes them):
// setup.py, CMake, shell and Makefiles that take the arch decision away from the request.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "lint/finding.h"

#include <string_view>
#include <vector>

namespace forge::lint {

// The scan of one build file. `path` is the relative path used in findings and decides the
// dialect: nothing for a path that is not a build file.
// `gpus`: the GPU table (policy/gpus.yml with its retired entries, policy::Retired::Include); a
// number in a build script is an arch only if it is one of its CCs.
// `separator` is the one TORCH_CUDA_ARCH_LIST is exported with (" ", ";" or ","; the package's
// wrapper.arch_list_separator): script-splits-arch-list judges the script's own split against it.
std::vector<LintFinding> lint_build_text(std::string_view path, std::string_view text,
                                         const arch::ArchList& list,
                                         const std::vector<arch::Gpu>& gpus,
                                         std::string_view separator = " ");
bool is_build_file(std::string_view path);

} // namespace forge::lint
