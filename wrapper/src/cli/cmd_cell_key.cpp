// nvcc-forge cell-key: a stable key of a build cell (sha256 over cuda/torch/python/platform/
// package, the resolved list and build_epoch); a build_epoch bump changes every key, so an arch
// policy change rebuilds wheels instead of serving old-arch ones forever (docs/arch-rules.md,
// "Provenance and build_epoch").
#include "cli/command.h"
#include "cli/policy_options.h"

#include <fmt/format.h>

namespace forge::cli {

namespace {

int run_cell_key(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("cell-key options");
    desc.add_options()("help,h", "show this help");
    add_resolve_options(desc, false);
    po::variables_map vm;
    if (auto rc = parse_command_line(argc, argv, desc, vm, "nvcc-forge cell-key [resolve options]"))
        return *rc;
    auto res = resolve_from_options(vm);
    if (!res) return report_error("cell-key", res.error());
    fmt::print("{}\n", policy::cell_key(*res));
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("cell-key", "print the sha256 key of a build cell (changes with build_epoch)",
              forge::cli::run_cell_key,
              "nvcc-forge cell-key --cuda 12.8 --torch 2.9 --python 3.12");
