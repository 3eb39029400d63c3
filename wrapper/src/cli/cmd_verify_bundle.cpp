// nvcc-forge verify-bundle HEADER.h --layout LAYOUT.yml
// Checks a `bundle` header against a hand-written layout: per blob, the SASS arch and the build
// toolkit of every embedded cubin, and the SM lists baked into the header's table.
// Exit 0 pass, 1 mismatch (each printed), 2 unusable input.
#include "bundle/header.h"
#include "bundle/verify.h"
#include "cli/command.h"
#include "cli/policy_options.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

int run_verify_bundle(int argc, char** argv) {
    po::options_description desc("nvcc-forge verify-bundle HEADER.h --layout LAYOUT.yml");
    std::string header_path, layout_path;
    desc.add_options()("help,h", "show this help")("header", po::value(&header_path),
                                                   "the bundle header")(
        "layout", po::value(&layout_path),
        "blobs: [{toolkit: \"12.8\", sms: [90, 100, 120]}, ...]");
    po::positional_options_description pos;
    pos.add("header", 1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "verify-bundle")) return kExitInput;
    if (vm.count("help")) {
        std::cout << desc << "\nExit: 0 pass, 1 mismatch, 2 unusable input.\n";
        return kExitOk;
    }
    auto fail = [](const Error& e) { return report_error("verify-bundle", e); };
    if (header_path.empty()) return fail(Error("no HEADER.h given"));
    if (layout_path.empty()) return fail(Error("--layout LAYOUT.yml is required"));
    std::ifstream in(header_path, std::ios::binary);
    if (!in) return fail(Error("cannot read the header", header_path));
    std::ostringstream text;
    text << in.rdbuf();
    auto built = bundle::parse_bundle_header(text.str(), header_path);
    if (!built) return fail(built.error());
    auto layout = bundle::load_bundle_layout(layout_path);
    if (!layout) return fail(layout.error());
    auto check = bundle::verify_bundle(*built, *layout, header_path);
    if (!check) return fail(check.error());
    for (const auto& p : check->passed)
        fmt::print("ok: {}\n", p);
    for (const auto& m : check->mismatches)
        fmt::print("MISMATCH: {}\n", m);
    if (!check->mismatches.empty()) {
        fmt::print("verify-bundle: {} mismatch(es) in {}\n", check->mismatches.size(), header_path);
        return kExitPolicy;
    }
    fmt::print("verify-bundle: {} matches {} ({} blob(s))\n", header_path, layout_path,
               built->blobs.size());
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("verify-bundle", "check a bundle header's cubins against a hand-written layout",
              forge::cli::run_verify_bundle,
              "nvcc-forge verify-bundle kernels_bundle.h --layout layout.yml");
