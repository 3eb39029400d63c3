// Subcommands register themselves: a file cmd_<name>.cpp defines its function and one
// FORGE_COMMAND(...) line, so adding a command touches no shared table.
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
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
    CommandRegistrar(std::string_view name, std::string_view summary, CommandFn fn) {
        command_registry().push_back({name, summary, fn});
    }
};

} // namespace forge::cli

#define FORGE_COMMAND_CAT2(a, b) a##b
#define FORGE_COMMAND_CAT(a, b) FORGE_COMMAND_CAT2(a, b)
#define FORGE_COMMAND(name, summary, fn)                                                           \
    static const ::forge::cli::CommandRegistrar FORGE_COMMAND_CAT(forge_cmd_, __LINE__) {          \
        name, summary, fn                                                                          \
    }
