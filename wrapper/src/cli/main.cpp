// nvcc-forge-tools: the commands of nvcc-forge (resolve, coverage, list, verify, ...). Users run
// them as `nvcc-forge <command>`: the entry binary (src/entry/) keeps the nvcc front end for
// itself and execs this one, installed in <prefix>/libexec, for everything else.
#include "cli/command.h"
#include "core/result.h"
#include "core/suggest.h"

#include <algorithm>
#include <boost/program_options/value_semantic.hpp>
#include <cstring>
#include <fmt/format.h>
#include <string_view>

namespace forge::cli {

std::vector<Command>& command_registry() {
    static std::vector<Command> registry;
    return registry;
}

std::vector<Command> sorted_commands() {
    auto cmds = command_registry();
    std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return cmds;
}

const Command* registered_command(std::string_view name) {
    for (const auto& c : command_registry())
        if (c.name == name) return &c;
    return nullptr;
}

namespace {

void print_usage(std::FILE* out) {
    fmt::print(
        out, "usage: nvcc-forge <command> [options]\n"
             "       nvcc-forge [ccache|sccache] /path/to/nvcc <nvcc args>   (compiler launcher)\n"
             "       nvcc <nvcc args>              (invoked as nvcc: a symlink to nvcc-forge)\n"
             "\ncommands:\n");
    for (const auto& c : sorted_commands())
        fmt::print(out, "  {:<13} {}\n", c.name, c.summary);
    fmt::print(out, "\n'nvcc-forge help COMMAND' (or COMMAND --help) shows a command's options "
                    "and an example.\nexit codes: 0 ok, 1 policy finding, 2 unusable input or "
                    "usage\n");
}

// An unknown command: one line that names it, the nearest command when it looks like a typo, and
// where the list is (not the whole usage: it buries the line that matters).
int unknown_command(std::string_view what, std::string_view sub) {
    std::vector<std::string> names;
    for (const auto& c : command_registry())
        names.emplace_back(c.name);
    names.emplace_back("help");
    names.emplace_back("version");
    const std::string near = nearest_name(sub, names);
    fmt::print(stderr, "nvcc-forge: unknown {} '{}'{}\n", what, sub,
               near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near));
    fmt::print(stderr, "run 'nvcc-forge help' for the list of commands\n");
    return kExitInput;
}

// True when argv[from..] holds `flag` before a "--" (after it, the words are a build's own).
bool has_flag(int argc, char** argv, int from, std::initializer_list<std::string_view> flags) {
    for (int i = from; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") return false;
        if (std::find(flags.begin(), flags.end(), a) != flags.end()) return true;
    }
    return false;
}

int run_command(const Command& c, int argc, char** argv) {
    const bool help = has_flag(argc, argv, 1, {"-h", "--help"});
    const int rc = c.run(argc, argv);
    if (help && rc == kExitOk && !c.example.empty()) fmt::print("\nexample:\n  {}\n", c.example);
    return rc;
}

} // namespace
} // namespace forge::cli

int main(int argc, char** argv) {
    using namespace forge::cli;
    boost::program_options::arg = "VALUE"; // Boost's placeholder in every help is "arg"
    if (argc < 2) {
        print_usage(stderr);
        return forge::kExitInput;
    }
    std::string_view sub = argv[1];
    if (sub == "-h" || sub == "--help" || sub == "help") {
        if (sub == "help" && argc >= 3) { // help COMMAND: the command's own --help
            const Command* c = registered_command(argv[2]);
            if (c == nullptr) return unknown_command("command", argv[2]);
            char help_flag[] = "--help";
            char* help_argv[] = {argv[2], help_flag, nullptr};
            return run_command(*c, 2, help_argv);
        }
        print_usage(stdout);
        return forge::kExitOk;
    }
    if (sub == "--version" || sub == "version" || has_flag(argc, argv, 2, {"--version"})) {
        fmt::print("nvcc-forge {}\n", FORGE_VERSION);
        return forge::kExitOk;
    }
    if (const Command* c = registered_command(sub)) return run_command(*c, argc - 1, argv + 1);
    return unknown_command(sub.starts_with("-") ? "option" : "command", sub);
}
