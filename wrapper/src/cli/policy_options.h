// The resolve options shared by every subcommand that needs "the policy" (resolve, coverage,
// verify, lint, stamp, audit, env, cell-key): --arch-list LIST, or --cuda/--torch/--platform/
// --python/--package/--policy/--packages-dir. INTERFACE CONTRACT: every command reads the policy
// through it.
#pragma once

#include "core/result.h"
#include "policy/policy_file.h"
#include "policy/resolve.h"

#include <boost/program_options.hpp>
#include <optional>
#include <string_view>

namespace forge::cli {

// Adds --cuda, --torch, --platform, --python, --package, --policy, --packages-dir, --gpus and,
// when `with_arch_list`, --arch-list.
void add_resolve_options(boost::program_options::options_description& desc, bool with_arch_list);

// --arch-list wins (source "--arch-list"); otherwise runs the resolver. Errors carry exit codes
// (2 unusable input, 1 a list that collapses to empty).
// With --arch-list the list is taken as given (no clamp, no +PTX, no target_forms: write sm_90a
// to mean sm_90a); --package still loads the package's verify/wrapper settings, and
// --cuda/--torch/--platform/--python are recorded (--cuda with --torch: that torch's ceiling).
// Without --cuda the real nvcc on this machine gives the CUDA version and what it can emit.
Result<policy::Resolution> resolve_from_options(const boost::program_options::variables_map& vm);

// --packages-dir DIR, else NVCC_FORGE_PACKAGES_DIR (the wrapper's variable: a command reads the
// overrides the build it judges was wrapped with), else the bundled packages/. A directory named
// either way that cannot be used is an error naming it (exit 2), never the policy row in silence.
Result<std::filesystem::path>
packages_dir_from_options(const boost::program_options::variables_map& vm);

// --gpus FILE or the bundled policy/gpus.yml (its `retired:` entries only when asked: the lint).
Result<std::vector<arch::Gpu>> gpus_from_options(const boost::program_options::variables_map& vm,
                                                 policy::Retired retired = policy::Retired::Skip);
// --policy FILE or the bundled policy/arch_policy.yml.
std::filesystem::path policy_file_from_options(const boost::program_options::variables_map& vm);

// Parses argv (argv[0] = subcommand, skipped) into vm, with `positional` when not null. On a usage
// error prints "nvcc-forge <command>: <error>" (then "usage: <usage>" when given) on stderr and
// returns false: the command exits 2.
bool store_command_line(int argc, char** argv,
                        const boost::program_options::options_description& desc,
                        const boost::program_options::positional_options_description* positional,
                        boost::program_options::variables_map& vm, std::string_view command,
                        std::string_view usage = {});

// Parses argv (argv[0] = subcommand) into vm. Returns an exit code when the command should stop:
// 2 after a usage error (message on stderr), 0 after --help (usage on stdout).
std::optional<int> parse_command_line(int argc, char** argv,
                                      const boost::program_options::options_description& desc,
                                      boost::program_options::variables_map& vm,
                                      std::string_view usage);

// Prints "nvcc-forge <cmd>: <error>" on stderr and returns the error's exit code.
int report_error(std::string_view command, const Error& error);

} // namespace forge::cli
