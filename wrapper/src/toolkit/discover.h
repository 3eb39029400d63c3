// CUDA toolkits installed on this machine: where they are, which release each is, and which
// targets each can emit -- asked of the toolkit itself, never assumed from its version
// (`nvcc-forge toolkits`; `bundle` picks from them per policy/sm_toolkit.yml).
#pragma once

#include "arch/arch.h"
#include "core/result.h"
#include "toolkit/caps.h"

#include <string>
#include <string_view>
#include <vector>

namespace forge::toolkit {

// One toolkit found on this machine: its caps (version, nvcc realpath, emittable) and where it was
// found.
struct Toolkit : ToolkitCaps {
    std::string root;                   // the CUDA root: parent of nvcc's bin/
    std::vector<std::string> found_via; // "PATH", "CUDA_HOME", "/usr/local/cuda-*", ...

    // The emittable targets of one kind, sorted: sm_90, sm_90a, sm_100f ... / compute_* / lto_*.
    [[nodiscard]] std::vector<arch::Target> sass() const;
    [[nodiscard]] std::vector<arch::Target> ptx() const;
    [[nodiscard]] std::vector<arch::Target> lto() const;
    [[nodiscard]] bool can_emit_sass(int sm) const; // the plain sm_X (no a/f)
};

// toolkit::probe_toolkit on the realpath of `nvcc_path`, with the root beside it. An nvcc that
// lists no SASS target is not a toolkit. Errors name the path.
Result<Toolkit> probe_installed(const std::string& nvcc_path);

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

} // namespace forge::toolkit
