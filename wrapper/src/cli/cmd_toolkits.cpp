// nvcc-forge toolkits [--format text|json]
// Lists the CUDA toolkits found on this machine: full version, nvcc path, SASS/PTX it can emit.
// Exit 0 (an empty list included), 2 usage.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "toolkit/discover.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

int run_toolkits(int argc, char** argv) {
    po::options_description desc("nvcc-forge toolkits [--format text|json]");
    std::string format = "text";
    desc.add_options()("help,h", "show this help")("format", po::value(&format), "text | json")(
        "verbose,v", po::bool_switch(),
        "also print the candidates that were not toolkits, and why");
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, nullptr, vm, "toolkits")) return kExitInput;
    if (vm.count("help")) {
        std::cout
            << desc
            << "\nLooks in NVCC_FORGE_NVCC_CANDIDATES (':'-separated nvcc binaries or CUDA "
               "roots),\n"
               "CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda-*/bin/nvcc, /usr/local/cuda,\n"
               "and pip-installed nvidia/cu*/bin/nvcc and nvidia/cuda_nvcc/bin/nvcc.\n";
        return kExitOk;
    }
    if (format != "text" && format != "json")
        return report_error("toolkits",
                            Error(fmt::format("--format must be text or json, not '{}'", format)));
    auto report = toolkit::discover_toolkits(toolkit::DiscoveryInputs::from_process());
    if (vm["verbose"].as<bool>())
        for (const auto& s : report.skipped)
            fmt::print(stderr, "skipped: {}\n", s);
    fmt::print("{}", format == "json" ? toolkit::toolkits_to_json(report.toolkits)
                                      : toolkit::toolkits_to_text(report.toolkits));
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("toolkits", "list the CUDA toolkits on this machine and what each can emit",
              forge::cli::run_toolkits, "nvcc-forge toolkits --format json");
