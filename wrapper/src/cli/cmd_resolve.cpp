// nvcc-forge resolve: the arch list a build cell gets (policy row or package override, clamped,
// +PTX ensured), in the spelling the consumer needs.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "policy/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::cli {

namespace {

int run_resolve(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("resolve options");
    desc.add_options()("help,h", "show this help")(
        "format", po::value<std::string>()->default_value("torch"),
        "torch (TORCH_CUDA_ARCH_LIST) | gencode (nvcc flags) | cmake (CUDA_ARCHITECTURES) | json");
    add_resolve_options(desc, false);
    po::variables_map vm;
    if (auto rc = parse_command_line(
            argc, argv, desc, vm,
            "nvcc-forge resolve [--cuda 12.8] [--torch 2.9] [--platform P] [--python 3.12] "
            "[--package NAME] [--policy FILE] [--packages-dir DIR] [--format F]"))
        return *rc;
    std::string format = vm["format"].as<std::string>();
    if (format != "torch" && format != "gencode" && format != "cmake" && format != "json")
        return report_error(
            "resolve",
            Error(fmt::format("unknown --format '{}' (torch, gencode, cmake, json)", format)));
    auto res = resolve_from_options(vm);
    if (!res) return report_error("resolve", res.error());
    if (format == "json") {
        fmt::print("{}\n", json_text(policy::resolution_json(*res), 2));
        return kExitOk;
    }
    for (const auto& c : res->clamped)
        fmt::print(stderr, "nvcc-forge resolve: clamped {}: {}\n", c.token, c.reason);
    for (const auto& n : res->narrowed)
        fmt::print(stderr, "nvcc-forge resolve: narrowed {}: dropped against {} ({})\n", n.token,
                   n.against, n.reason.empty() ? "the override gives no reason" : n.reason);
    for (const auto& d : res->ptx_dropped)
        fmt::print(stderr, "nvcc-forge resolve: ptx_dropped {}: {}\n", d.token, d.reason);
    if (res->built) {
        std::vector<std::string> names;
        for (const auto& t : res->built->targets())
            names.push_back(t.name());
        fmt::print(stderr, "nvcc-forge resolve: builds_as {} ({})\n", fmt::join(names, " "),
                   res->forms_source);
    }
    for (const auto& p : res->ptx_added)
        fmt::print(stderr, "nvcc-forge resolve: ptx_added {}: {}\n", arch::cc_string(p.sm), p.why);
    for (const auto& n : res->notes)
        fmt::print(stderr, "nvcc-forge resolve: note: {}\n", n);
    const policy::KnobExport knobs = policy::export_knobs(res->arch_knobs, res->list);
    for (const auto& v : knobs.values)
        fmt::print(stderr, "nvcc-forge resolve: knob {}={}\n", v.variable, v.value);
    for (const auto& g : knobs.cannot_express)
        fmt::print(stderr,
                   "nvcc-forge resolve: knob_cannot_express {} ({}): {}; left to the wrapper's "
                   "injection\n",
                   g.token, g.variable, g.reason);
    for (const auto& n : knobs.notes)
        fmt::print(stderr, "nvcc-forge resolve: note: {}\n", n);
    if (format == "torch") {
        auto t = policy::torch_arch_list(*res);
        if (!t) return report_error("resolve", t.error());
        fmt::print("{}\n", *t);
    } else if (format == "cmake") {
        fmt::print("{}\n", res->list.to_cmake());
    } else {
        fmt::print("{}\n", fmt::join(res->list.to_gencode(), " "));
    }
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("resolve", "print the arch list of a build cell (policy + package, clamped)",
              forge::cli::run_resolve, "nvcc-forge resolve --cuda 12.8 --torch 2.9 --format cmake");
