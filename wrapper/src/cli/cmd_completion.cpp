// nvcc-forge completion bash|zsh|fish: a completion script for the shell, on stdout.
// The command names are written in from the registry; a command's options are asked of
// `nvcc-forge help COMMAND` when completed, so the script never lists an option the tools lack.
#include "cli/command.h"
#include "core/result.h"

#include <fmt/format.h>
#include <string>
#include <utility>

namespace forge::cli {
namespace {

constexpr const char* kCompletionUsage = "usage: nvcc-forge completion bash|zsh|fish";

// The pattern of a long option in a help text, for grep -E and fish's string match -r.
constexpr const char* kOptionPattern = "--[a-z][a-z0-9-]*";

std::string command_words() {
    std::string words = "help";
    for (const auto& c : sorted_commands())
        words += fmt::format(" {}", c.name);
    return words;
}

// `script` with @WORDS@ and @OPTION@ filled in (the scripts are full of braces: no fmt here).
std::string filled(std::string script, const std::string& words) {
    for (const auto& [mark, value] :
         {std::pair<std::string, std::string>{"@WORDS@", words}, {"@OPTION@", kOptionPattern}}) {
        for (auto at = script.find(mark); at != std::string::npos;
             at = script.find(mark, at + value.size()))
            script.replace(at, mark.size(), value);
    }
    return script;
}

// clang-format off
constexpr const char* kBashScript = R"sh(# nvcc-forge completion for bash: eval "$(nvcc-forge completion bash)"
_nvcc_forge() {
    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
    if [[ $COMP_CWORD -eq 1 || ( $cmd == help && $COMP_CWORD -eq 2 ) ]]; then
        COMPREPLY=($(compgen -W "@WORDS@" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" help "$cmd" 2>/dev/null |
            grep -oE -- '@OPTION@' | sort -u)" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o default -F _nvcc_forge nvcc-forge
)sh";

constexpr const char* kZshScript = R"sh(#compdef nvcc-forge
# nvcc-forge completion for zsh: eval "$(nvcc-forge completion zsh)"
_nvcc_forge() {
    if (( CURRENT == 2 )) || [[ $words[2] == help && CURRENT -eq 3 ]]; then
        compadd -- @WORDS@
    elif [[ $PREFIX == -* ]]; then
        compadd -- ${(f)"$($words[1] help $words[2] 2>/dev/null | grep -oE -- '@OPTION@' | sort -u)"}
    else
        _files
    fi
}
compdef _nvcc_forge nvcc-forge
)sh";
// clang-format on

void print_fish() {
    fmt::print("# nvcc-forge completion for fish: nvcc-forge completion fish | source\n"
               "complete -c nvcc-forge -f -n __fish_use_subcommand -a help -d 'a command\\'s "
               "options and an example'\n");
    for (const auto& c : sorted_commands()) {
        std::string summary(c.summary);
        std::string quoted;
        for (char ch : summary)
            quoted += ch == '\'' ? std::string("\\'") : std::string(1, ch);
        fmt::print("complete -c nvcc-forge -f -n __fish_use_subcommand -a {} -d '{}'\n", c.name,
                   quoted);
    }
    fmt::print("complete -c nvcc-forge -n 'not __fish_use_subcommand' -a '(nvcc-forge help "
               "(commandline -opc)[2] 2>/dev/null | string match -ar -- \"{}\" | sort -u)'\n",
               kOptionPattern);
}

int run_completion(int argc, char** argv) {
    const std::string shell = argc == 2 ? argv[1] : "";
    const std::string words = command_words();
    if (shell == "-h" || shell == "--help") {
        fmt::print("{}\n  bash: eval \"$(nvcc-forge completion bash)\" (in ~/.bashrc)\n"
                   "  zsh:  eval \"$(nvcc-forge completion zsh)\" (in ~/.zshrc, after compinit)\n"
                   "  fish: nvcc-forge completion fish | source\n",
                   kCompletionUsage);
    } else if (shell == "bash") {
        fmt::print("{}", filled(kBashScript, words));
    } else if (shell == "zsh") {
        fmt::print("{}", filled(kZshScript, words));
    } else if (shell == "fish") {
        print_fish();
    } else {
        fmt::print(stderr, "nvcc-forge completion: {}\n{}\n",
                   shell.empty() ? std::string("which shell?")
                                 : fmt::format("no completion for '{}'", shell),
                   kCompletionUsage);
        return kExitInput;
    }
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("completion", "print a shell completion script (bash, zsh, fish)",
              forge::cli::run_completion, "eval \"$(nvcc-forge completion bash)\"");
