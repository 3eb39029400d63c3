// nvcc-forge: one multi-call binary.
//   nvcc-forge <subcommand> ...       the tools (resolve, coverage, list, verify, ...)
//   nvcc ...   (invoked through a symlink named nvcc)          the nvcc front end
//   nvcc-forge /path/to/nvcc ...       compiler-launcher form (CMAKE_CUDA_COMPILER_LAUNCHER)
#include "cli/command.h"
#include "cli/frontend_entry.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <string_view>

namespace forge::cli {

std::vector<Command>& command_registry() {
    static std::vector<Command> registry;
    return registry;
}

namespace {

void print_usage(std::FILE* out) {
    fmt::print(out,
               "usage: nvcc-forge <command> [options]\n"
               "       nvcc-forge /path/to/nvcc <nvcc args>   (compiler launcher)\n"
               "       nvcc <nvcc args>                       (invoked as nvcc)\n\ncommands:\n");
    auto cmds = command_registry();
    std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
    for (const auto& c : cmds)
        fmt::print(out, "  {:<12} {}\n", c.name, c.summary);
    fmt::print(out, "\nexit codes: 0 ok, 1 policy finding, 2 unusable input or usage\n");
}

} // namespace
} // namespace forge::cli

int main(int argc, char** argv) {
    using namespace forge::cli;
    std::string_view self = argc > 0 ? argv[0] : "nvcc-forge";
    if (auto slash = self.rfind('/'); slash != std::string_view::npos)
        self = self.substr(slash + 1);
    if (self != "nvcc-forge" && self.find("nvcc") != std::string_view::npos)
        return run_as_nvcc(argc, argv); // PATH-prepended as nvcc
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    std::string_view sub = argv[1];
    if (sub == "-h" || sub == "--help" || sub == "help") {
        print_usage(stdout);
        return 0;
    }
    if (sub == "--version" || sub == "version") {
        fmt::print("nvcc-forge {}\n", FORGE_VERSION);
        return 0;
    }
    for (const auto& c : command_registry())
        if (c.name == sub) return c.run(argc - 1, argv + 1);
    if (sub.find('/') != std::string_view::npos || sub.find("nvcc") != std::string_view::npos)
        return run_as_launcher(argc, argv); // nvcc-forge /path/to/nvcc args...
    fmt::print(stderr, "nvcc-forge: unknown command '{}'\n", sub);
    print_usage(stderr);
    return 2;
}
