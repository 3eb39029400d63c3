// The front end's calls into the nvcc probe and the policy resolver, kept in one place so the
// rest of the front end does not depend on their exact signatures.
#pragma once

#include "core/result.h"
#include "frontend/config.h"

#include <filesystem>
#include <string>
#include <utility>

namespace forge::frontend {

Result<toolkit::ToolkitCaps> probe_real_nvcc(const std::filesystem::path& nvcc);

// What the package's build compiles for env.package (+torch, platform) and CUDA `cuda`
// (Resolution::builds_as(): the resolved list in the package's target_forms, the list the gate
// expects), and the resolver's source.
Result<std::pair<arch::ArchList, std::string>>
resolve_package_list(const FrontendEnv& env, const std::string& cuda,
                     const std::filesystem::path& packages_dir,
                     const std::filesystem::path& policy_file, const toolkit::ToolkitCaps& caps,
                     const std::filesystem::path& nvcc);

} // namespace forge::frontend
