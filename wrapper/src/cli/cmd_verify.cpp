// nvcc-forge verify FILE... (--arch-list LIST | resolve options) [--allow-missing sm_X,...]
//   [--allow-pure-python] [--allow-extra] [--max-toolkit SM=X.Y]... [--format text|json|github]
//   [--junit FILE] [--expect-extension GLOB]...
// Exit 0 pass, 1 fail, 2 unreadable input.
#include "cli/colour.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "cli/verify_gate.h"
#include "core/json.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

int run_verify(int argc, char** argv) {
    po::options_description desc("nvcc-forge verify FILE... (--arch-list LIST | resolve options)");
    std::vector<std::string> files, allow_missing, max_toolkit, expect_extension;
    std::string format = "text", junit;
    desc.add_options()("help,h", "show this help")("file", po::value(&files),
                                                   "files: .so, .o, .a, .cubin, .fatbin, .whl")(
        "allow-missing", po::value(&allow_missing)->composing(),
        "waive missing targets (sm_X,compute_X,...); every waiver used is printed")(
        "allow-pure-python", po::bool_switch(), "an extension without device code passes")(
        "allow-extra", po::bool_switch(), "targets beyond the list do not fail")(
        "max-toolkit", po::value(&max_toolkit)->composing(),
        "SM=X.Y: cubins of SM must be built by CUDA <= X.Y (*=X.Y for all)")(
        "expect-extension", po::value(&expect_extension)->composing(),
        "GLOB: a module the wheel (or the files given) must contain, with device code; repeatable")(
        "format", po::value(&format), "text | json | github (GitHub Actions workflow commands)")(
        "junit", po::value(&junit),
        "FILE: also write a JUnit XML report (a case per module and check)");
    add_resolve_options(desc, /*with_arch_list=*/true);
    po::positional_options_description pos;
    pos.add("file", -1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "verify")) return kExitInput;
    if (vm.count("help")) {
        std::cout << desc << "\nExit: 0 pass, 1 fail, 2 unreadable input.\n";
        return kExitOk;
    }
    if (files.empty()) return report_error("verify", Error("no FILE given"));
    if (format != "text" && format != "json" && format != "github")
        return report_error(
            "verify",
            Error(fmt::format("--format must be text, json or github, not '{}'", format)));

    auto resolution = resolve_from_options(vm);
    if (!resolution) return report_error("verify", resolution.error());
    GateArgs args;
    args.files = files;
    args.allow_missing = allow_missing;
    args.max_toolkit = max_toolkit;
    args.expect_extension = expect_extension;
    args.allow_extra = vm["allow-extra"].as<bool>();
    args.allow_pure_python = vm["allow-pure-python"].as<bool>();
    auto gate = run_gate(vm, *resolution, args);
    if (!gate) return report_error("verify", gate.error());
    if (format == "json")
        std::cout << json_text(gate->json, 2) << "\n";
    else if (format == "github")
        std::cout << gate->github; // workflow commands, then the verdict as a plain log line
    else
        std::cout << (colour_wanted(STDOUT_FILENO) ? coloured_verdicts(gate->text) : gate->text);
    if (!junit.empty()) {
        std::ofstream out(junit, std::ios::binary | std::ios::trunc);
        out << gate->junit;
        out.close();
        if (!out) return report_error("verify", Error("cannot write the JUnit report", junit));
    }
    return gate->exit_code();
}

} // namespace

FORGE_COMMAND(
    "verify", "assert that binaries carry exactly the policy's GPU code", run_verify,
    "nvcc-forge verify dist/*.whl --package flash_attn --cuda 12.8 --torch 2.9 --junit verify.xml");

} // namespace forge::cli
