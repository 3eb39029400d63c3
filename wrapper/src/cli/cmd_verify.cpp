// nvcc-forge verify FILE... (--arch-list LIST | resolve options) [--allow-missing sm_X,...]
//   [--allow-pure-python] [--allow-extra] [--max-toolkit SM=X.Y]... [--format text|json|github]
//   [--junit FILE] [--expect-extension GLOB]... [--build-log FILE]
// Exit 0 pass, 1 fail, 2 unreadable input.
#include "cli/colour.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "cli/verify_gate.h"
#include "core/env.h"
#include "core/file.h"
#include "core/json.h"
#include "core/process.h"
#include "frontend/compile_log.h"

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

// The build's compile log in one line, for a build whose stderr pip hid (a quiet `pip wheel`, or
// sccache 0.16, which keeps none of the shim's stderr): --build-log FILE, else NVCC_FORGE_LOG
// (which `env --shim` sets). Never changes the verdict; a log named on the command line that
// cannot be read is bad input (exit 2), the environment's only a note.
std::optional<int> print_build_log(const std::string& option, const std::string& format) {
    const std::string path = option.empty() ? getenv_str("NVCC_FORGE_LOG") : option;
    if (path.empty()) return std::nullopt;
    // JSON stays one valid document on stdout: the line goes to stderr then.
    std::FILE* out = format == "json" ? stderr : stdout;
    auto summary = frontend::summarize_log(path);
    if (!summary) {
        if (!option.empty()) return report_error("verify", summary.error());
        fmt::print(out, "nvcc-forge: build log (NVCC_FORGE_LOG): {}\n",
                   summary.error().to_string());
        return std::nullopt;
    }
    fmt::print(out, "nvcc-forge: build log {}: {}\n", path, frontend::summary_line(*summary));
    return std::nullopt;
}

int run_verify(int argc, char** argv) {
    po::options_description desc("nvcc-forge verify FILE... (--arch-list LIST | resolve options)");
    std::vector<std::string> files, allow_missing, max_toolkit, expect_extension;
    std::string format = "text", junit, build_log;
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
        "FILE: also write a JUnit XML report (a case per module and check)")(
        "build-log", po::value(&build_log),
        "FILE: end with a one-line summary of this compile log (default: NVCC_FORGE_LOG)");
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
        // The path the user names, written in place as the shell's > writes it (a device such as
        // /dev/null included), but never through a symbolic link nor into a FIFO (core/file.h).
        auto out = open_file(junit, O_WRONLY | O_CREAT | O_TRUNC, FileKind::RegularOrDevice);
        if (!out || !write_all(out->get(), gate->junit))
            return report_error("verify",
                                Error(fmt::format("cannot write the JUnit report: {}",
                                                  out ? std::strerror(errno) : out.error().message),
                                      junit));
    }
    std::cout.flush();
    if (auto rc = print_build_log(build_log, format)) return *rc;
    return gate->exit_code();
}

} // namespace

FORGE_COMMAND(
    "verify", "assert that binaries carry exactly the policy's GPU code", run_verify,
    "nvcc-forge verify dist/*.whl --package flash_attn --cuda 12.8 --torch 2.9 --junit verify.xml");

} // namespace forge::cli
