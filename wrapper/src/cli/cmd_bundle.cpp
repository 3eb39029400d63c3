// nvcc-forge bundle SRC.cu --sm 90,100,110,120 [--sm-toolkit FILE] [--rdc [--devlink-lib LIB]...]
//   [--nvcc-arg ARG]... --symbol NAME --out HEADER.h
// Builds each SM with the toolkit policy/sm_toolkit.yml pins it to (one fatbin per toolkit) and
// writes one deterministic C header. Every SM is resolved before anything is compiled.
// Exit 0 ok, 2 unusable input (a missing toolkit, a failed compile).
#include "bundle/build.h"
#include "bundle/pin.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/file.h"
#include "core/paths.h"
#include "toolkit/discover.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

Result<std::vector<int>> parse_sm_list(const std::vector<std::string>& values) {
    std::vector<int> sms;
    static const std::regex re(R"((?:sm_)?(\d{2,3}))");
    for (const auto& v : values) {
        std::size_t start = 0;
        while (start <= v.size()) {
            std::size_t end = v.find(',', start);
            if (end == std::string::npos) end = v.size();
            std::string tok = v.substr(start, end - start);
            start = end + 1;
            if (tok.empty()) continue;
            std::smatch m;
            if (!std::regex_match(tok, m, re)) {
                Error e(fmt::format("--sm: '{}' is not an SM number (90, 100, sm_120)", tok));
                e.key = tok;
                return e;
            }
            int sm = std::stoi(m[1].str());
            if (std::find(sms.begin(), sms.end(), sm) == sms.end()) sms.push_back(sm);
        }
    }
    if (sms.empty()) return Error("--sm: no SM given");
    return sms;
}

int run_bundle(int argc, char** argv) {
    po::options_description desc("nvcc-forge bundle SRC.cu --sm LIST --symbol NAME --out HEADER.h");
    std::string source, sm_toolkit_file, symbol, out;
    std::vector<std::string> sm_values, devlink_libs, nvcc_args;
    desc.add_options()("help,h", "show this help")("source", po::value(&source), "the .cu file")(
        "sm", po::value(&sm_values)->composing(),
        "SMs to build, e.g. 90,100,110,120")("sm-toolkit", po::value(&sm_toolkit_file),
                                             "SM -> toolkit spec (default: policy/sm_toolkit.yml)")(
        "rdc", po::bool_switch(), "relocatable device code: -rdc=true -c, then -dlink")(
        "devlink-lib", po::value(&devlink_libs)->composing(),
        "library for the device link (cudadevrt)")("nvcc-arg", po::value(&nvcc_args)->composing(),
                                                   "extra argument for every compile (repeatable)")(
        "symbol", po::value(&symbol), "C identifier prefixing the arrays and the table")(
        "out", po::value(&out), "the header to write")("verbose,v", po::bool_switch(),
                                                       "print each nvcc command");
    po::positional_options_description pos;
    pos.add("source", 1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "bundle")) return kExitInput;
    if (vm.count("help")) {
        std::cout << desc << "\nExit: 0 ok, 2 unusable input (missing toolkit, failed compile).\n";
        return kExitOk;
    }
    auto fail = [](const Error& e) { return report_error("bundle", e); };
    if (source.empty()) return fail(Error("no SRC.cu given"));
    if (symbol.empty()) return fail(Error("--symbol NAME is required"));
    if (!bundle::is_c_identifier(symbol)) {
        Error e(fmt::format("--symbol '{}' is not a C identifier", symbol));
        e.key = symbol;
        return fail(e);
    }
    if (out.empty()) return fail(Error("--out HEADER.h is required"));
    if (!devlink_libs.empty() && !vm["rdc"].as<bool>())
        return fail(Error("--devlink-lib needs --rdc"));
    auto sms = parse_sm_list(sm_values);
    if (!sms) return fail(sms.error());
    if (sm_toolkit_file.empty())
        sm_toolkit_file = (data_dir() / "policy" / "sm_toolkit.yml").string();
    auto policy = bundle::load_sm_toolkit(sm_toolkit_file);
    if (!policy) return fail(policy.error());

    auto discovered = toolkit::discover_toolkits(toolkit::DiscoveryInputs::from_process());
    auto plan = bundle::plan_toolkits(*sms, *policy, discovered.toolkits);
    if (!plan) {
        for (const auto& s : discovered.skipped)
            fmt::print(stderr, "note: skipped {}\n", s);
        return fail(plan.error());
    }
    for (const auto& g : plan->groups) {
        std::string list;
        for (int sm : g.sms)
            list += fmt::format(" sm_{}", sm);
        fmt::print(stderr, "CUDA {} ({}):{}\n", g.toolkit->version.full(), g.toolkit->nvcc, list);
    }

    bundle::BundleOptions opts;
    opts.source = source;
    opts.rdc = vm["rdc"].as<bool>();
    opts.devlink_libs = devlink_libs;
    opts.nvcc_args = nvcc_args;
    std::string log;
    auto built = bundle::build_bundle(opts, *plan, symbol, &log);
    if (vm["verbose"].as<bool>()) fmt::print(stderr, "{}", log);
    if (!built) return fail(built.error());
    auto header = bundle::render_bundle_header(*built);
    if (!header) return fail(header.error());
    if (auto st = replace_file(out, *header); !st) return fail(st.error());
    fmt::print(stderr, "wrote {} ({} blob(s))\n", out, built->blobs.size());
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND(
    "bundle", "build each SM with its pinned toolkit into one C header of fatbins",
    forge::cli::run_bundle,
    "nvcc-forge bundle kernels.cu --sm 90,100,120 --symbol kKernels --out kernels_bundle.h");
