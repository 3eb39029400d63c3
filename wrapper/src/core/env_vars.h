// Every NVCC_FORGE_* environment variable the programs read or set, with what it does: the one
// table `nvcc-forge env --explain` prints and docs/environment.md is generated from
// (cli.env.reference_current checks that every such name in wrapper/src is here, and that the
// page is current).
#pragma once

#include <array>
#include <string_view>

namespace forge {

struct EnvVar {
    std::string_view name;
    std::string_view read_by; // who reads it: "wrapper" (every nvcc call), "tools", "both"
    std::string_view meaning;
};

inline constexpr std::array kEnvVars{
    EnvVar{"NVCC_FORGE_ARCH_LIST", "wrapper",
           "the arch list the wrapper holds every compile to (\"8.0 9.0+PTX\"); wins over "
           "NVCC_FORGE_PACKAGE's resolution"},
    EnvVar{"NVCC_FORGE_PACKAGE", "wrapper",
           "resolve the policy for this package (packages/<name>/arch_override.yml) on each call"},
    EnvVar{"NVCC_FORGE_TORCH", "wrapper",
           "the torch version of the cell NVCC_FORGE_PACKAGE resolves"},
    EnvVar{"NVCC_FORGE_PLATFORM", "wrapper",
           "the platform of the cell NVCC_FORGE_PACKAGE resolves (default: this host's)"},
    EnvVar{"NVCC_FORGE_POLICY", "wrapper", "an arch policy file instead of the bundled one"},
    EnvVar{"NVCC_FORGE_PACKAGES_DIR", "both",
           "a package overrides directory instead of the bundled packages/"},
    EnvVar{"NVCC_FORGE_MODE", "wrapper",
           "what the wrapper does with a compile that misses targets: observe, inject or "
           "strict"},
    EnvVar{"NVCC_FORGE_LOG", "both",
           "append one JSON line per nvcc call to this file (read it with `nvcc-forge log "
           "summarize`; `verify` ends with its one-line summary)"},
    EnvVar{"NVCC_FORGE_QUIET", "wrapper",
           "1: no stderr line for a compile whose dropped targets were all injected back"},
    EnvVar{"NVCC_FORGE_REAL_NVCC", "both",
           "the real nvcc to run (default: found on PATH or under the default CUDA root, "
           "never the wrapper itself)"},
    EnvVar{"NVCC_FORGE_DEPTH", "wrapper",
           "set by the wrapper on what it starts (<depth>:<pid>:<start>) so that it never calls "
           "itself; not for users"},
    EnvVar{"NVCC_FORGE_CACHE_DIR", "both",
           "where the caches live (default: $XDG_CACHE_HOME/nvcc-forge, else "
           "~/.cache/nvcc-forge)"},
    EnvVar{"NVCC_FORGE_DATA_DIR", "both",
           "where policy/ and packages/ are read from (default: next to the installed binaries)"},
    EnvVar{
        "NVCC_FORGE_NVCC_CANDIDATES", "tools",
        "more toolkits for `toolkits` and `bundle` (nvcc binaries or CUDA roots, ':'-separated)"},
    EnvVar{"NVCC_FORGE_PATH_MAP", "tools",
           "FROM=TO[,FROM=TO...]: paths under FROM (a build container's /project) are named "
           "under TO (empty: the working directory) in --format github findings"},
    EnvVar{"NVCC_FORGE_CUOBJDUMP", "tools", "the cuobjdump `list --backend cuobjdump` runs"},
    EnvVar{"NVCC_FORGE_LIST_THREADS", "tools",
           "threads of `list --toolkit` (default: the core count, at most 16)"},
    EnvVar{"NVCC_FORGE_WRAPPER_EXE", "tools",
           "set by `nvcc-forge` for the tools it starts: the front end's own path; not for users"},
};

} // namespace forge
