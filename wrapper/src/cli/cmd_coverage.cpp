// nvcc-forge coverage: what an arch list really buys, GPU by GPU (native / jit / dead), and the
// policy matrix page (--matrix --format html).
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/paths.h"
#include "policy/report.h"

#include <fmt/format.h>

namespace forge::cli {

namespace {

int run_matrix(const boost::program_options::variables_map& vm, const std::string& format) {
    auto policy = policy::load_policy(policy_file_from_options(vm));
    if (!policy) return report_error("coverage", policy.error());
    auto gpus = gpus_from_options(vm);
    if (!gpus) return report_error("coverage", gpus.error());
    std::optional<policy::PackageOverride> pkg;
    std::string title = "nvcc-forge arch policy coverage";
    if (vm.count("package")) {
        auto dir = vm.count("packages-dir")
                       ? std::filesystem::path(vm["packages-dir"].as<std::string>())
                       : default_packages_dir();
        auto p = policy::load_package(dir, vm["package"].as<std::string>());
        if (!p) return report_error("coverage", p.error());
        pkg = std::move(*p);
        title += fmt::format(" - package {}", pkg->name);
    }
    auto cells = policy::policy_matrix(*policy, pkg ? &*pkg : nullptr, *gpus);
    if (format == "json")
        fmt::print("{}\n", policy::matrix_json(cells).dump(2));
    else
        fmt::print("{}", policy::matrix_html(*policy, cells, *gpus, title));
    return kExitOk;
}

int run_coverage(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("coverage options");
    desc.add_options()("help,h", "show this help")(
        "format", po::value<std::string>(),
        "text | json | markdown (default text); with --matrix: html | json")(
        "matrix", po::bool_switch(), "every policy cell (CUDA x torch x platform) as one page")(
        "fail-on-gap", po::bool_switch(),
        "exit 1 when a major without cubins has no PTX net below it");
    add_resolve_options(desc, true);
    po::variables_map vm;
    if (auto rc = parse_command_line(argc, argv, desc, vm,
                                     "nvcc-forge coverage (--arch-list LIST | resolve options) "
                                     "[--format text|json|markdown]\n"
                                     "       nvcc-forge coverage --matrix [--format html|json] "
                                     "[--policy FILE] [--package NAME]"))
        return *rc;
    bool matrix = vm["matrix"].as<bool>();
    std::string format =
        vm.count("format") ? vm["format"].as<std::string>() : (matrix ? "html" : "text");
    if (matrix) {
        if (format != "html" && format != "json") {
            return report_error(
                "coverage", Error(fmt::format("--matrix renders html or json, not '{}'", format)));
        }
        if (vm.count("arch-list")) {
            return report_error("coverage",
                                Error("--matrix covers the policy cells; it takes no --arch-list"));
        }
        return run_matrix(vm, format);
    }
    if (format != "text" && format != "json" && format != "markdown") {
        return report_error(
            "coverage",
            Error(fmt::format("unknown --format '{}' (text, json, markdown; html needs --matrix)",
                              format)));
    }
    auto res = resolve_from_options(vm);
    if (!res) return report_error("coverage", res.error());
    auto gpus = gpus_from_options(vm);
    if (!gpus) return report_error("coverage", gpus.error());
    auto report = policy::coverage_report(res->list, *gpus);
    if (format == "json")
        fmt::print("{}\n", policy::coverage_json(report).dump(2));
    else if (format == "markdown")
        fmt::print("{}", policy::coverage_markdown(*res, report));
    else
        fmt::print("{}", policy::coverage_text(*res, report));
    if (vm["fail-on-gap"].as<bool>())
        for (const auto& g : report.gaps)
            if (!g.has_ptx_net) return kExitPolicy;
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("coverage", "which GPUs an arch list runs on (native / jit / dead)",
              forge::cli::run_coverage);
