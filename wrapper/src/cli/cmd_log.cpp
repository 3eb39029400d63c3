// nvcc-forge log summarize FILE [--format text|json|github] [--fail-on-drop]: which TUs dropped
// which targets, from the wrapper's NVCC_FORGE_LOG.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/result.h"
#include "frontend/compile_log.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

namespace forge::cli {

namespace po = boost::program_options;

namespace {

int cmd_log(int argc, char** argv) {
    po::options_description desc("nvcc-forge log summarize FILE");
    desc.add_options()("help,h", "show this help")(
        "format", po::value<std::string>()->default_value("text"),
        "text | json | github")("fail-on-drop", "exit 1 when any TU dropped a policy target")(
        "file", po::value<std::string>(), "the NVCC_FORGE_LOG file");
    const std::string_view sub = argc >= 2 ? std::string_view(argv[1]) : std::string_view();
    if (sub == "-h" || sub == "--help") { // `log --help`: the one subcommand's options
        fmt::print("{}", fmt::format("{}", fmt::streamed(desc)));
        return kExitOk;
    }
    if (sub != "summarize") {
        fmt::print(stderr, "usage: nvcc-forge log summarize FILE [--format text|json|github] "
                           "[--fail-on-drop]\n");
        return kExitInput;
    }
    po::positional_options_description pos;
    pos.add("file", 1);
    po::variables_map vm;
    if (!store_command_line(argc - 1, argv + 1, desc, &pos, vm, "log summarize")) return kExitInput;
    if (vm.count("help")) {
        fmt::print("{}", fmt::format("{}", fmt::streamed(desc)));
        return kExitOk;
    }
    if (!vm.count("file")) return report_error("log summarize", Error("FILE is required"));
    const auto format = vm["format"].as<std::string>();
    if (format != "text" && format != "json" && format != "github")
        return report_error(
            "log summarize",
            Error(fmt::format("--format must be text, json or github, not '{}'", format)));
    auto summary = frontend::summarize_log(vm["file"].as<std::string>());
    if (!summary) return report_error("log summarize", summary.error());
    const bool fail_on_drop = vm.count("fail-on-drop") > 0;
    if (format == "github")
        // Workflow commands, then the counts as a plain log line.
        fmt::print("{}{}", ci::to_github(frontend::summary_findings(*summary, fail_on_drop)),
                   frontend::summary_headline(*summary));
    else
        fmt::print("{}", format == "json" ? frontend::summary_json(*summary)
                                          : frontend::summary_text(*summary));
    if (fail_on_drop && summary->records_with_drops > 0) return kExitPolicy;
    return kExitOk;
}

} // namespace

FORGE_COMMAND("log", "summarize the wrapper's compile log (log summarize FILE)", cmd_log,
              "nvcc-forge log summarize nvcc-forge.log --fail-on-drop");

} // namespace forge::cli
