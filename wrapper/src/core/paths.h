// Where the running binary and its data live. The installed binary finds its data relative to
// itself (<prefix>/bin/nvcc-forge -> <prefix>/share/nvcc-forge), so an install works from any
// prefix; only the build tree's own binaries (where the build writes them) read the source tree.
#pragma once

#include <filesystem>
#include <string>

namespace forge {

std::filesystem::path self_exe(); // /proc/self/exe, resolved
// The nvcc front end's binary (bin/nvcc-forge), what an `nvcc` symlink or a shim points at. The
// tools run as a separate binary (libexec/nvcc-forge-tools) that the front end execs with
// kWrapperExeEnv set, so a tool that must recognise or link the wrapper asks here, not self_exe().
inline constexpr const char* kWrapperExeEnv = "NVCC_FORGE_WRAPPER_EXE";
std::filesystem::path wrapper_exe();
// NVCC_FORGE_DATA_DIR, else the source tree for the build's own binaries, else <exe>/../share/...
std::filesystem::path data_dir();
std::filesystem::path default_policy_file();  // data_dir()/policy/arch_policy.yml
std::filesystem::path default_gpus_file();    // data_dir()/policy/gpus.yml
std::filesystem::path default_packages_dir(); // data_dir()/packages
// Where caches live: `configured` (NVCC_FORGE_CACHE_DIR's value) when not empty, else
// $XDG_CACHE_HOME/nvcc-forge, else $HOME/.cache/nvcc-forge; empty when none of them is set.
// Each cache takes a folder of its own (plan/: stubs; toolkit/: --toolkit's per-image results).
std::filesystem::path cache_root(const std::string& configured);

} // namespace forge
