// The real nvcc on this machine, when --cuda is not given: its release and what it can emit.
// Kept inside the policy module (forge_policy must not depend on forge_nvcc); it runs nvcc
// directly (no shell) and reads `--version` and the "Allowed values" of `--help`.
#pragma once

#include "arch/arch.h"
#include "core/result.h"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace forge::policy {

struct ToolkitInfo {
    std::string nvcc;         // path of the nvcc that was run
    std::string cuda;         // "13.0"
    std::string full_version; // "13.0.88"
    std::set<arch::Target> emittable;
};

// NVCC_FORGE_REAL_NVCC, else an nvcc on PATH that is not nvcc-forge itself, else
// $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc. Error (exit 2) when none exists.
Result<std::filesystem::path> find_real_nvcc();

Result<ToolkitInfo> probe_toolkit(const std::filesystem::path& nvcc);

// Pure parsers of nvcc's text (tested against captured output).
// "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88".
Result<std::string> parse_nvcc_version(std::string_view version_text);
// The 'Allowed values' list of --gpu-architecture in `nvcc --help` (includes a/f/lto).
std::set<arch::Target> parse_help_targets(std::string_view help_text);
// `nvcc --list-gpu-code` (one sm_XX per line, plain targets only).
std::set<arch::Target> parse_list_gpu_code(std::string_view text);

// Runs argv (no shell), returns stdout; error with the exit status otherwise.
Result<std::string> run_capture(const std::vector<std::string>& argv);

} // namespace forge::policy
