// Asking an nvcc what it is: `--version`, `--list-gpu-code` and `--help`, run without a shell
// through core/process.h. The parsers are separate so tests (and the front end's cache) can feed
// captured output.
#pragma once

#include "core/result.h"
#include "toolkit/caps.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace forge::toolkit {

// Runs the three queries (~15 ms in all) and builds the caps: the release, every plain sm_X of
// --list-gpu-code with its compute_X (without it an nvcc whose --help lacks the allowed-values
// list would have every PTX request clamped away), and the a/f/lto targets of the "Allowed values"
// of --gpu-code in --help when nvcc prints them (11.x does not; a failing --help is not an
// error). default_sm per default_sm_for. native_sm stays unset (query_native_sm, on demand).
Result<ToolkitCaps> probe_toolkit(const std::string& nvcc_path);

// "Cuda compilation tools, release 13.0, V13.0.88" -> 13.0.88; "release 12.4" alone -> 12.4 with
// the patch unknown. An error when there is no release, or when it and the V-string disagree.
Result<CudaVersion> parse_nvcc_version(std::string_view version_output);
// "13.0.88", "13.0" (patch 0): user input and policy files.
Result<CudaVersion> parse_version_text(std::string_view text);
// Targets named in the "Allowed values" list of --gpu-code in `nvcc --help` (includes a/f/lto).
Result<std::set<arch::Target>> parse_help_gpu_codes(std::string_view help_output);
// Targets one per line (or whitespace separated), as `--list-gpu-code` prints them.
Result<std::set<arch::Target>> parse_target_list(std::string_view list_output);
// nvcc's default arch when no target flag is given (CMake encodes the same table).
int default_sm_for(int major);

// The directory nvcc runs from, as its `-dryrun` names it: a launcher script named nvcc (`exec
// /usr/local/cuda-13.0/bin/nvcc "$@"`) is the toolkit behind it, which realpath cannot see.
// Both streams are read (-dryrun writes to stderr); nullopt when nvcc does not say.
std::optional<std::string> query_nvcc_home(const std::string& nvcc_path);
// The value of "#$ _HERE_=/usr/local/cuda-13.0/bin" in -dryrun output; nullopt if none.
std::optional<std::string> parse_dryrun_here(std::string_view dryrun_output);

// What `-arch=native` resolves to here: runs `__nvcc_device_query` next to nvcc (what nvcc itself
// runs; it prints "90" on an H200 and fails without a driver). nullopt: no GPU, nvcc falls back to
// its default. With several GPUs the lowest CC is returned.
std::optional<int> query_native_sm(const std::string& nvcc_path);
// Parses __nvcc_device_query's output ("90", "80,90"); nullopt if none.
std::optional<int> parse_device_query(std::string_view output);

} // namespace forge::toolkit
