// What the installed nvcc can do (ToolkitCaps), asked from the nvcc binary itself.
#pragma once

#include "core/result.h"
#include "nvcc/cmdline.h"

#include <optional>
#include <string>
#include <string_view>

namespace forge::nvcc {

// Runs `nvcc --version`, `nvcc --list-gpu-code` and `nvcc --help` (no shell, ~15 ms in all) and
// builds the caps: release X.Y, every target nvcc accepts (plain sm_X and compute_X from
// --list-gpu-code, a/f/lto from the "Allowed values" of --gpu-code in --help), default_sm 75 for
// CUDA >= 13, 52 for 11/12.
// native_sm stays unset (the frontend asks __nvcc_device_query only when -arch=native is used).
Result<ToolkitCaps> probe_toolkit(const std::string& nvcc_path);

// What `-arch=native` resolves to here: runs `__nvcc_device_query` next to nvcc (what nvcc itself
// runs; it prints "90" on an H200 and fails without a driver). nullopt: no GPU, nvcc falls back to
// its default. With several GPUs the lowest CC is returned.
std::optional<int> query_native_sm(const std::string& nvcc_path);
// Parses __nvcc_device_query's output ("90", "80,90"); nullopt if none.
std::optional<int> parse_device_query(std::string_view output);

// The parsing halves, for tests and for callers that cache the tool outputs.
Result<std::pair<int, int>> parse_release(std::string_view version_output);
// Targets named in `nvcc --help`'s "Allowed values" list of --gpu-code.
Result<std::set<arch::Target>> parse_help_gpu_codes(std::string_view help_output);
// Targets one per line (or whitespace separated), as `--list-gpu-code` prints them.
Result<std::set<arch::Target>> parse_target_list(std::string_view list_output);
// nvcc's default arch when no target flag is given (CMake encodes the same table).
int default_sm_for(int major);

} // namespace forge::nvcc
