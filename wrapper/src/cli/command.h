// Subcommands register themselves: a file cmd_<name>.cpp defines its function and one
// FORGE_COMMAND(...) line, so adding a command touches no shared table. The line holds what
// `nvcc-forge help`, `help COMMAND`, the shell completions and docs/cli.md show of it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::cli {

// argv[0] is the subcommand name; the function returns the process exit code.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
    std::string_view name;
    std::string_view summary;
    CommandFn run;
    std::string_view example; // one typical call, shown under the command's --help
};

std::vector<Command>& command_registry();
// The commands by name; the one named `name` (nullptr when none is).
std::vector<Command> sorted_commands();
const Command* registered_command(std::string_view name);

struct CommandRegistrar {
    CommandRegistrar(std::string_view name, std::string_view summary, CommandFn fn,
                     std::string_view example) {
        command_registry().push_back({name, summary, fn, example});
    }
};

} // namespace forge::cli

#define FORGE_COMMAND_CAT2(a, b) a##b
#define FORGE_COMMAND_CAT(a, b) FORGE_COMMAND_CAT2(a, b)
#define FORGE_COMMAND(name, summary, fn, example)                                                  \
    static const ::forge::cli::CommandRegistrar FORGE_COMMAND_CAT(forge_cmd_, __LINE__) {          \
        name, summary, fn, example                                                                 \
    }
