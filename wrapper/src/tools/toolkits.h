// CUDA toolkits installed on this machine: where they are, which release each is, and which
// targets each can emit -- asked of the toolkit itself, never assumed from its version. `bundle`
// builds each SM with the toolkit policy/sm_toolkit.yml pins it to (seed multi-toolkit-fatbin).
#pragma once

#include "arch/arch.h"
#include "core/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace forge::tools {

// A CUDA release as nvcc reports it ("V13.0.88").
struct ToolkitVersion {
    int major = 0, minor = 0, patch = 0;
    [[nodiscard]] std::string full() const;    // "13.0.88"
    [[nodiscard]] std::string release() const; // "13.0"
    auto operator<=>(const ToolkitVersion&) const = default;
};

// Parses `nvcc --version` output: "Cuda compilation tools, release 13.0, V13.0.88".
Result<ToolkitVersion> parse_nvcc_version(std::string_view version_output);
// "13.0.88", "13.0" (patch 0): for tests and user input.
Result<ToolkitVersion> parse_version_text(std::string_view text);

struct Toolkit {
    ToolkitVersion version;
    std::string nvcc;                   // realpath of the nvcc binary (the dedup key)
    std::string root;                   // the CUDA root: parent of nvcc's bin/
    std::vector<arch::Target> sass;     // sorted, unique: sm_90, sm_90a, sm_100f ...
    std::vector<arch::Target> ptx;      // compute_*
    std::vector<arch::Target> lto;      // lto_*
    std::vector<std::string> found_via; // "PATH", "CUDA_HOME", "/usr/local/cuda-*", ...

    [[nodiscard]] bool can_emit_sass(int sm) const; // the plain sm_X (no a/f)
};

// Asks the nvcc at `nvcc_path` for its full version (--version) and, through
// forge::nvcc::probe_toolkit, the targets it can emit (--list-gpu-code and the "Allowed values"
// of --help, where the a/f variants are listed). Errors name the path.
Result<Toolkit> probe_toolkit(const std::string& nvcc_path);

// Where discovery looks. from_process() reads the real environment; tests build their own.
struct DiscoveryInputs {
    std::string path_env;                 // $PATH
    std::string cuda_home, cuda_path;     // $CUDA_HOME, $CUDA_PATH
    std::string candidates_env;           // $NVCC_FORGE_NVCC_CANDIDATES (os.pathsep list)
    std::string usr_local = "/usr/local"; // scanned for cuda-*/bin/nvcc and cuda/bin/nvcc
    std::vector<std::string> site_dirs;   // python site-packages-like dirs (nvidia/cu*/bin/nvcc)
    std::string self_exe;                 // this binary: never a toolkit

    // Site dirs are guessed from python3 on PATH, VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH, ~/.local
    // and one `python3 -c 'import sys; print(sys.path)'` (unless `ask_python` is false).
    static DiscoveryInputs from_process(bool ask_python = true);
};

struct DiscoveryReport {
    std::vector<Toolkit> toolkits;    // sorted by version, then path
    std::vector<std::string> skipped; // candidates that are not usable toolkits, and why
};

// Every nvcc found, deduplicated by realpath, the wrapper itself excluded, each probed.
DiscoveryReport discover_toolkits(const DiscoveryInputs& in);

// The JSON/text forms printed by `nvcc-forge toolkits`.
std::string toolkits_to_json(const std::vector<Toolkit>& toolkits);
std::string toolkits_to_text(const std::vector<Toolkit>& toolkits);

} // namespace forge::tools
