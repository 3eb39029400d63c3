// nvcc-forge-tools: the commands of nvcc-forge (resolve, coverage, list, verify, ...). Users run
// them as `nvcc-forge <command>`: the entry binary (src/entry/) keeps the nvcc front end for
// itself and execs this one, installed in <prefix>/libexec, for everything else.
#include "cli/command.h"

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
    fmt::print(
        out, "usage: nvcc-forge <command> [options]\n"
             "       nvcc-forge [ccache|sccache] /path/to/nvcc <nvcc args>   (compiler launcher)\n"
             "       nvcc <nvcc args>              (invoked as nvcc: a symlink to nvcc-forge)\n"
             "\ncommands:\n");
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
    fmt::print(stderr, "nvcc-forge: unknown command '{}'\n", sub);
    print_usage(stderr);
    return 2;
}
