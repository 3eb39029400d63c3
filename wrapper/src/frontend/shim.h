// The shadow CUDA root (`nvcc-forge shim`) and shell quoting for `nvcc-forge env`.
// torch.utils.cpp_extension runs CUDA_HOME/bin/nvcc and derives CUDA_HOME from the nvcc on PATH
// without realpath, so the wrapper has to sit at <root>/bin/nvcc of something that otherwise is
// the real toolkit: every top-level entry links to the real root, bin/ is a real directory whose
// entries link to the real bin/, except bin/nvcc, which links to the wrapper, and
// bin/.nvcc-forge-real, which names the real nvcc.
#pragma once

#include "core/result.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace forge::frontend {

struct ShimPlan {
    std::filesystem::path cuda_home; // the real toolkit root (resolved)
    std::filesystem::path out;       // the shim root to create or refresh
    std::filesystem::path wrapper;   // the nvcc-forge binary bin/nvcc points to
    // The policy the shim is bound to (NVCC_FORGE_<NAME>=VALUE, frontend/settings.h); none: an
    // unbound shim, whose nvcc reads the policy from each call's environment.
    std::vector<std::string> settings;
};

// Creates or refreshes `out`. An existing non-empty directory that is not a shim is an error
// (nothing in it is touched); an existing shim is rebuilt in place.
Status make_shim(const ShimPlan& plan);

// Is `dir` a shim root made by make_shim?
bool is_shim(const std::filesystem::path& dir);

// A bound shim's settings as text, one per line, beside its nvcc: what it is bound to.
inline constexpr const char* kShimPolicyFile = ".nvcc-forge-policy";

// Makes `dir`/bin/nvcc the wrapper: a symlink to it when `settings` is empty; else a copy of it
// with the settings appended (settings.h), which caches in front of the shim see as another
// compiler. The copy's mtime is a function of the settings and of the wrapper's own size and
// mtime: binding the same policy again gives ccache (compiler_check=mtime) the same identity and
// its earlier objects back; another policy, or another nvcc-forge, a new one.
Status bind_shim(const std::filesystem::path& dir, const std::filesystem::path& wrapper,
                 const std::vector<std::string>& settings);

// Where a shim root keeps its bound shims, one per policy: <root>/.policies/<id>.
inline constexpr const char* kBoundShimsDir = ".policies";

// The shim one build runs under a policy (`env --shim ROOT`): <root>/.policies/<id>, a shim of
// the root's real toolkit whose nvcc is bound to `settings`, <id> drawn from the bound nvcc's
// identity (the settings, the wrapper's size and mtime, the real nvcc). It is made in a scratch
// directory and renamed into place, and never rewritten after: a cache took the identity of the
// nvcc it runs when its call started, so a shim rebound under a running build would have it store
// one policy's objects under another's key (two CI cells on one host, one CCACHE_DIR). Binding
// the same policy again returns the same path (and ccache its objects). `root` may itself be
// such a bound shim; its root is used.
Result<std::filesystem::path> bind_policy_shim(const std::filesystem::path& root,
                                               const std::filesystem::path& wrapper,
                                               const std::vector<std::string>& settings);

// POSIX shell single-quoting: 'it'\''s' — safe for eval whatever the bytes.
std::string shell_quote(std::string_view s);

} // namespace forge::frontend
