#include "core/paths.h"

#include "core/file.h"
#include "core/text.h"

#include <atomic>
#include <cstdio>

#include <cstdlib>
#include <system_error>

namespace forge {

namespace fs = std::filesystem;

fs::path self_exe() {
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : p;
}

fs::path wrapper_exe() {
    if (const char* env = std::getenv(kWrapperExeEnv); env != nullptr && *env != '\0')
        return fs::path(env);
    return self_exe();
}

fs::path data_dir() {
    if (const char* env = std::getenv("NVCC_FORGE_DATA_DIR"); env != nullptr && *env != '\0')
        return fs::path(env);
    const fs::path exe = self_exe();
    // The binaries where this build writes them read the source tree's data. Any other binary
    // (installed, copied, moved with its prefix) reads only the data next to it: a broken install
    // then fails naming where it looked, instead of silently reading the tree it was built from.
    std::error_code ec;
    if (exe.empty() || fs::equivalent(exe.parent_path(), FORGE_BUILD_EXE_DIR, ec))
        return fs::path(FORGE_SOURCE_DIR);
    return exe.parent_path().parent_path() / FORGE_DATA_REL_DIR;
}

fs::path default_policy_file() {
    return data_dir() / "policy" / "arch_policy.yml";
}
fs::path default_gpus_file() {
    return data_dir() / "policy" / "gpus.yml";
}
fs::path default_packages_dir() {
    return data_dir() / "packages";
}

namespace {

fs::path chosen_cache_root(const std::string& configured) {
    if (!configured.empty()) return configured;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
        return fs::path(xdg) / "nvcc-forge";
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
        return fs::path(home) / ".cache" / "nvcc-forge";
    return {};
}

} // namespace

fs::path cache_root(const std::string& configured) {
    fs::path root = chosen_cache_root(configured);
    // A cache another user can write could feed this run (a policy, a verdict) or turn its writes
    // and prunes against files of ours: ignored, said once per process (docs/DEVELOPING.md,
    // "Trust").
    if (const std::string why = untrusted_directory(root); !root.empty() && !why.empty()) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            std::fprintf(stderr, "nvcc-forge: warning: the cache directory %s is not used: %s\n",
                         escape_control(root.string()).c_str(), why.c_str());
        return {};
    }
    return root;
}

} // namespace forge
