// nvcc-forge coverage: what an arch list really buys, GPU by GPU (native / jit / dead), the
// policy matrix page (--matrix --format html), and what a binary really runs on
// (coverage FILE...: from its cubins and PTX with kernels, not from a list).
#include "binary/reader.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "core/paths.h"
#include "policy/report.h"
#include "verify/gate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>

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
        auto dir = packages_dir_from_options(vm);
        if (!dir) return report_error("coverage", dir.error());
        auto p = policy::load_package(*dir, vm["package"].as<std::string>());
        if (!p) return report_error("coverage", p.error());
        pkg = std::move(*p);
        title += fmt::format(" - package {}", pkg->name);
    }
    auto cells = policy::policy_matrix(*policy, pkg ? &*pkg : nullptr, *gpus);
    if (format == "json")
        fmt::print("{}\n", json_text(policy::matrix_json(cells), 2));
    else
        fmt::print("{}", policy::matrix_html(*policy, cells, *gpus, title));
    return kExitOk;
}

// coverage FILE...: one coverage per extension module; a host-only library is listed, not rated.
int run_files(const std::vector<std::string>& files, const std::vector<arch::Gpu>& gpus,
              const std::string& format) {
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // kernel counts decide what runs (kernel-less images run nothing)
    ro.scan_embedded = false;   // rated as verify judges by default: the registered fatbins
    nlohmann::ordered_json exts = nlohmann::ordered_json::array();
    std::string text;
    bool unreadable = false;
    for (const auto& f : files) {
        auto read = binary::read_extensions(f, ro);
        if (!read) {
            report_error("coverage", read.error());
            unreadable = true;
            continue;
        }
        if (read->empty())
            text += fmt::format("{}\n  no extension module (no ELF with device code)\n\n", f);
        for (const auto& ext : *read) {
            const std::string name =
                ext.member ? fmt::format("{} [{}]", ext.file, *ext.member) : ext.file;
            auto carried = verify::classify(ext);
            auto targets = carried.runnable();
            std::vector<std::string> carries, empty;
            for (const auto& t : targets)
                carries.push_back(t.name());
            for (const auto& t : carried.stub_sass)
                if (!carried.sass.count(t)) empty.push_back(t.name());
            for (const auto& t : carried.empty_ptx)
                if (!carried.ptx.count(t)) empty.push_back(t.name());
            const bool host_only = verify::is_host_only(ext);
            nlohmann::ordered_json j{{"file", ext.file},
                                     {"member", ext.member ? nlohmann::ordered_json(*ext.member)
                                                           : nlohmann::ordered_json(nullptr)},
                                     {"carries", carries},
                                     {"kernel_less", empty},
                                     {"host_only", host_only}};
            text += fmt::format("{}\n", name);
            if (host_only) {
                text += "  host-only library: no fatbin, not a Python extension module\n\n";
                j["coverage"] = nullptr;
                exts.push_back(j);
                continue;
            }
            text += fmt::format("  carries     {}\n",
                                carries.empty() ? "-" : fmt::format("{}", fmt::join(carries, " ")));
            if (!empty.empty())
                text += fmt::format("  kernel-less {} (runs nothing, not counted)\n",
                                    fmt::join(empty, " "));
            policy::CoverageReport report{arch::coverage(targets, gpus),
                                          arch::major_gaps(targets, gpus)};
            text += "\n" + policy::coverage_rows_text(report) + "\n";
            j["coverage"] = policy::coverage_json(report);
            exts.push_back(j);
        }
    }
    if (format == "json")
        fmt::print("{}\n", json_text(nlohmann::ordered_json{{"extensions", exts}}, 2));
    else
        fmt::print("{}", text);
    return unreadable ? kExitInput : kExitOk;
}

int run_coverage(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("coverage options");
    desc.add_options()("help,h", "show this help")(
        "format", po::value<std::string>(),
        "text | json | markdown (default text); with --matrix: html | json")(
        "matrix", po::bool_switch(), "every policy cell (CUDA x torch x platform) as one page")(
        "fail-on-gap", po::bool_switch(),
        "exit 1 when a major without cubins has no PTX net below it")(
        "file", po::value<std::vector<std::string>>(),
        "binaries (.whl, .so, ...): what they really carry, not a list");
    add_resolve_options(desc, true);
    po::positional_options_description pos;
    pos.add("file", -1);
    po::variables_map vm;
    constexpr std::string_view usage = "nvcc-forge coverage (--arch-list LIST | resolve options) "
                                       "[--format text|json|markdown]\n"
                                       "       nvcc-forge coverage FILE... [--format text|json]\n"
                                       "       nvcc-forge coverage --matrix [--format html|json] "
                                       "[--policy FILE] [--package NAME]";
    if (!store_command_line(argc, argv, desc, &pos, vm, "coverage", usage)) return kExitInput;
    if (vm.count("help")) {
        std::cout << "usage: " << usage << "\n\n"
                  << desc << "\nexit codes: 0 ok, 1 policy finding, 2 unusable input or usage\n";
        return kExitOk;
    }
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
    if (vm.count("file")) {
        if (format != "text" && format != "json")
            return report_error(
                "coverage",
                Error(fmt::format("coverage FILE renders text or json, not '{}'", format)));
        if (vm.count("arch-list") || vm.count("package") || vm.count("cuda"))
            return report_error("coverage", Error("coverage FILE reads what the files carry; it "
                                                  "takes no list (verify compares the two)"));
        auto gpus = gpus_from_options(vm);
        if (!gpus) return report_error("coverage", gpus.error());
        return run_files(vm["file"].as<std::vector<std::string>>(), *gpus, format);
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
    auto report = policy::coverage_report(*res, *gpus);
    if (format == "json")
        fmt::print("{}\n", json_text(policy::coverage_json(report), 2));
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
              forge::cli::run_coverage, "nvcc-forge coverage --arch-list \"8.0 9.0+PTX\"");
