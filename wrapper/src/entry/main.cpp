// nvcc-forge, the entry binary. It is what sits in front of nvcc on every compile of a build, so
// it links only the front end (statically where the libraries allow) and starts in about the time
// of a static "hello": the tools, with their zip/compression/YAML-report dependencies, are a
// separate binary it execs for every other command.
//   nvcc ...                      (a symlink named nvcc: PATH-prepended, or a shim's bin/nvcc)
//   nvcc-forge /path/to/nvcc ...  (compiler launcher: CMAKE_CUDA_COMPILER_LAUNCHER)
//   nvcc-forge ccache|sccache /path/to/nvcc ...
//   nvcc-forge NVCC_FORGE_ARCH_LIST=... [NVCC_FORGE_MODE=...] [ccache|sccache] nvcc ...
//   nvcc-forge <command> ...      -> <prefix>/libexec/nvcc-forge-tools <command> ...
#include "core/paths.h"
#include "core/process.h"
#include "core/result.h"
#include "entry/frontend_entry.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

constexpr const char* kToolsName = "nvcc-forge-tools";

// Next to the entry in a build tree; <prefix>/libexec/ when installed (<prefix>/bin/nvcc-forge).
fs::path find_tools(const fs::path& self) {
    std::error_code ec;
    const fs::path dir = self.parent_path();
    for (const fs::path& cand : {dir / kToolsName, dir.parent_path() / "libexec" / kToolsName})
        if (fs::is_regular_file(cand, ec) && ::access(cand.c_str(), X_OK) == 0) return cand;
    return {};
}

int exec_tools(int argc, char** argv) {
    const fs::path self = forge::self_exe();
    const fs::path tools = find_tools(self);
    if (tools.empty()) {
        fmt::print(stderr,
                   "nvcc-forge: cannot find {} next to {} or in {}/libexec (broken install?)\n",
                   kToolsName, self.string(), self.parent_path().parent_path().string());
        return forge::kExitInput;
    }
    ::setenv(forge::kWrapperExeEnv, self.c_str(), 1);
    forge::ProcessSpec spec;
    spec.path = tools.string();
    spec.argv.assign(argv, argv + argc); // argv[0] stays "nvcc-forge": messages and usage name it
    const forge::Error failed = forge::exec_process(spec);
    fmt::print(stderr, "nvcc-forge: {}\n", failed.message);
    return forge::kExitInput;
}

} // namespace

int main(int argc, char** argv) {
    using namespace forge::entry;
    std::string_view self = argc > 0 ? argv[0] : "nvcc-forge";
    if (auto slash = self.rfind('/'); slash != std::string_view::npos)
        self = self.substr(slash + 1);
    if (self != "nvcc-forge" && self.find("nvcc") != std::string_view::npos)
        return run_as_nvcc(argc, argv); // PATH-prepended as nvcc
    if (argc >= 2) {
        std::string_view first = argv[1];
        if (first == "ccache" || first == "sccache")
            return run_as_launcher_chain(argc - 1, argv + 1);
        if (first == "--version" || first == "version") {
            fmt::print("nvcc-forge {}\n", FORGE_VERSION);
            return forge::kExitOk;
        }
        // No tool's name holds a '/' or "nvcc", or starts with NVCC_FORGE_: such a first argument
        // is the compiler of a launcher call (nvcc-forge /usr/local/cuda/bin/nvcc -c k.cu), or a
        // setting the build fixed in front of it (nvcc-forge NVCC_FORGE_ARCH_LIST=9.0 nvcc ...).
        if (first.find('/') != std::string_view::npos ||
            first.find("nvcc") != std::string_view::npos || first.starts_with("NVCC_FORGE_"))
            return run_as_launcher(argc, argv);
    }
    return exec_tools(argc, argv);
}
