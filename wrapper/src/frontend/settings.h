// Settings fixed when a build was set up, which win over the environment of each call: the
// `NVCC_FORGE_<NAME>=VALUE` arguments in front of a launcher call (ForgeArch writes the
// configure-time policy there, so ninja's command hash sees it) and the policy a shim is bound to
// (written into its bin/nvcc, so ccache's and sccache's compiler identity sees it). A cache keys
// an object on what it sees; an environment variable it does not see can only make its hits stale
// (docs/build-hosts.md, "Compiler caches"). The environment's differing values are kept for the
// note that names them (once per build).
#pragma once

#include "core/result.h"
#include "frontend/config.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::frontend {

// "NVCC_FORGE_<NAME>=..." (any name: an unknown one is an error of bind_settings).
bool is_setting_arg(std::string_view arg);

// An error when the assignment holds a control character (a newline would be a second setting
// in a shim's trailer or .nvcc-forge-policy).
Status check_setting_value(std::string_view assignment, std::string_view origin);

// Applies `assignments` ("NVCC_FORGE_ARCH_LIST=8.0 9.0", ...) to `env`, `origin` naming where they
// come from ("the launcher's arguments", "the shim /x"). A policy setting (ARCH_LIST, PACKAGE,
// TORCH, PLATFORM, POLICY, PACKAGES_DIR) replaces the environment's whole policy: one the
// assignments leave out is cleared. MODE and LOG replace only themselves. Unknown names, and
// settings the build cannot fix (REAL_NVCC, CACHE_DIR, DEPTH), are errors (exit 2).
Status bind_settings(FrontendEnv& env, const std::vector<std::string>& assignments,
                     std::string_view origin);

// A bound shim's bin/nvcc is a copy of nvcc-forge with its settings appended: a trailer after the
// ELF image (the loader reads only the segments), one assignment per line, then a fixed footer
// with the length. Its bytes (sccache, ccache compiler_check=content) and its size and mtime
// (ccache's default compiler_check=mtime) then change with the policy.
std::string shim_trailer(const std::vector<std::string>& assignments);
// The settings appended to `exe` (the running binary: /proc/self/exe); nullopt when it has none.
std::optional<std::vector<std::string>> read_shim_settings(const std::filesystem::path& exe);

} // namespace forge::frontend
