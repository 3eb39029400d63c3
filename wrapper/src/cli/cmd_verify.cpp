// nvcc-forge verify FILE... (--arch-list LIST | resolve options) [--allow-missing sm_X,...]
//   [--allow-pure-python] [--allow-extra] [--max-toolkit SM=X.Y]... [--format text|json|github]
//   [--junit FILE] [--backend native] [--expect-extension GLOB]...
// Exit 0 pass, 1 fail, 2 unreadable input.
#include "binary/reader.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "verify/extensions.h"
#include "verify/gate.h"
#include "verify/report.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

Result<std::vector<verify::Waiver>> parse_waivers(const std::vector<std::string>& specs) {
    std::vector<verify::Waiver> out;
    for (const auto& spec : specs) {
        auto list = arch::ArchList::parse(spec, "--allow-missing");
        if (!list) return std::move(list).error();
        for (const auto& t : list->targets())
            out.push_back({t, "--allow-missing"});
    }
    return out;
}

int run_verify(int argc, char** argv) {
    po::options_description desc("nvcc-forge verify FILE... (--arch-list LIST | resolve options)");
    std::vector<std::string> files, allow_missing, max_toolkit, expect_extension;
    std::string format = "text", backend = "native", junit;
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
        "backend", po::value(&backend),
        "native (the only reader the gate judges with; `list --backend cuobjdump` is the oracle)");
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
    if (backend != "native") return report_error("verify", Error("--backend must be native"));

    auto resolution = resolve_from_options(vm);
    if (!resolution) return report_error("verify", resolution.error());
    verify::Options opts;
    opts.source = backend;
    auto gpus = gpus_from_options(vm);
    if (!gpus) return report_error("verify", gpus.error());
    opts.gpus = std::move(*gpus);
    opts.allow_extra = vm["allow-extra"].as<bool>();
    opts.allow_pure_python = vm["allow-pure-python"].as<bool>() || resolution->allow_pure_python;
    auto waivers = parse_waivers(allow_missing);
    if (!waivers) return report_error("verify", waivers.error());
    opts.waivers = std::move(*waivers);
    for (const auto& t : resolution->allow_missing)
        opts.waivers.push_back(
            {t, resolution->package.empty()
                    ? std::string("verify.allow_missing_archs")
                    : fmt::format("packages/{}/arch_override.yml verify.allow_missing_archs",
                                  resolution->package)});
    for (const auto& spec : max_toolkit) {
        auto m = verify::parse_max_toolkit(spec);
        if (!m) return report_error("verify", m.error());
        opts.max_toolkit.push_back(*m);
    }

    std::vector<verify::ExpectedModule> expected;
    for (const auto& e : resolution->expected_extensions)
        expected.push_back(
            {e.module, e.reason, e.device_code,
             fmt::format("{}:{} verify.extensions", resolution->package_file, e.line)});
    for (const auto& g : expect_extension)
        expected.push_back({g, "", true, "--expect-extension"});

    std::vector<verify::ExtensionReport> reports;
    std::vector<std::pair<std::string, std::string>> unreadable;
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // kernel counts and toolkits need the cubins themselves
    for (const auto& f : files) {
        Result<std::vector<binary::Extension>> exts = binary::read_extensions(f, ro);
        if (!exts) {
            report_error("verify", exts.error());
            unreadable.emplace_back(f, exts.error().to_string());
            continue;
        }
        for (const auto& ext : *exts) {
            verify::Options module_opts = opts;
            const bool named_host_only = verify::expected_host_only(expected, ext.file, ext.member);
            if (named_host_only) module_opts.allow_pure_python = true;
            reports.push_back(verify::verify_extension(ext, resolution->list, module_opts));
            // A module the package names with `device_code: false` is judged (and accepted
            // without device code), not set aside as a vendored host library.
            if (named_host_only) reports.back().host_only = false;
        }
    }
    const verify::ExtensionsReport ext_report = verify::check_extensions(expected, reports);
    verify::RunContext run{verify::verdict(reports, opts), {}, &ext_report, unreadable};
    if (!ext_report.pass()) {
        run.verdict.pass = false;
        const std::string why = fmt::format(
            "expected extension(s) absent or without device code: {}", ext_report.check.detail);
        run.verdict.reason = run.verdict.reason.empty() ? why : run.verdict.reason + "; " + why;
    }
    for (const auto& n : resolution->narrowed)
        run.narrowed.push_back(
            fmt::format("{} (dropped against {}: {})", n.token, n.against, n.reason));
    // The JSON always has the expected-extension keys; the text, the workflow commands and the
    // JUnit report show the check only when the run had expected modules.
    const verify::ExtensionsReport* shown = expected.empty() ? nullptr : &ext_report;
    if (format == "json") {
        std::cout << verify::to_json(reports, run).dump(2) << "\n";
    }
    run.expected = shown;
    if (format == "github") {
        // Workflow commands, then the verdict as a plain log line.
        std::cout << ci::to_github(verify::to_findings(reports, run))
                  << verify::verdict_line(reports, run);
    } else if (format == "text") {
        std::cout << verify::to_text(
            reports, fmt::format("{} = {}", resolution->source, resolution->list.to_string()), run);
    }
    if (!junit.empty()) {
        std::ofstream out(junit, std::ios::binary | std::ios::trunc);
        out << ci::to_junit("nvcc-forge verify", verify::to_test_cases(reports, run));
        out.close();
        if (!out) return report_error("verify", Error("cannot write the JUnit report", junit));
    }
    if (!unreadable.empty()) return kExitInput;
    return run.verdict.pass ? kExitOk : kExitPolicy;
}

} // namespace

FORGE_COMMAND("verify", "assert that binaries carry exactly the policy's GPU code", run_verify);

} // namespace forge::cli
