#include "core/paths.h"

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
    std::error_code ec;
    fs::path exe = self_exe();
    if (!exe.empty()) {
        fs::path installed = exe.parent_path().parent_path() / FORGE_DATA_REL_DIR;
        if (fs::is_regular_file(installed / "policy" / "arch_policy.yml", ec)) return installed;
    }
    return fs::path(FORGE_SOURCE_DIR);
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

} // namespace forge
