#include "cli/verify_gate.h"

#include "binary/reader.h"
#include "cli/policy_options.h"
#include "verify/extensions.h"
#include "verify/gate.h"
#include "verify/judge.h"
#include "verify/report.h"

#include <fmt/format.h>

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

// The gate's options: --gpus, the flags, and the waivers of the command line and the package.
Result<verify::Options> gate_options(const boost::program_options::variables_map& vm,
                                     const policy::Resolution& resolution, const GateArgs& args) {
    verify::Options opts;
    auto gpus = gpus_from_options(vm);
    if (!gpus) return std::move(gpus).error();
    opts.gpus = std::move(*gpus);
    opts.allow_extra = args.allow_extra;
    opts.allow_pure_python = args.allow_pure_python || resolution.allow_pure_python;
    opts.judge_embedded = resolution.judge_embedded;
    auto waivers = parse_waivers(args.allow_missing);
    if (!waivers) return std::move(waivers).error();
    opts.waivers = std::move(*waivers);
    for (const auto& t : resolution.allow_missing)
        opts.waivers.push_back(
            {t, resolution.package.empty()
                    ? std::string("verify.allow_missing_archs")
                    : fmt::format("packages/{}/arch_override.yml verify.allow_missing_archs",
                                  resolution.package)});
    for (const auto& spec : args.max_toolkit) {
        auto m = verify::parse_max_toolkit(spec);
        if (!m) return std::move(m).error();
        opts.max_toolkit.push_back(*m);
    }
    return opts;
}

// The modules the run must hold: the package's `verify.extensions`, then --expect-extension.
std::vector<verify::ExpectedModule> expected_modules(const policy::Resolution& resolution,
                                                     const GateArgs& args) {
    std::vector<verify::ExpectedModule> expected;
    for (const auto& e : resolution.expected_extensions)
        expected.push_back(
            {e.module, e.reason, e.device_code,
             fmt::format("{}:{} verify.extensions", resolution.package_file, e.line)});
    for (const auto& g : args.expect_extension)
        expected.push_back({g, "", true, "--expect-extension"});
    return expected;
}

} // namespace

Result<GateOutcome> run_gate(const boost::program_options::variables_map& vm,
                             const policy::Resolution& resolution, const GateArgs& args) {
    auto opts = gate_options(vm, resolution, args);
    if (!opts) return std::move(opts).error();
    verify::JudgeSetup setup{resolution.builds_as(), std::move(*opts),
                             expected_modules(resolution, args), args.plan_products,
                             args.unreadable_fails};
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // kernel counts and toolkits need the cubins themselves
    ro.inspect_embedded = setup.opts.judge_embedded; // else only their headers are reported
    ro.check_record = true; // a wheel's members against its RECORD (docs/wheels.md)
    const verify::Judgement judged = verify::judge(
        args.files, setup, [&ro](const std::string& f) { return binary::read_extensions(f, ro); },
        [&args](const Error& why) { report_error(args.command, why); });
    const std::vector<verify::ExtensionReport>& reports = judged.reports;
    verify::RunContext run{judged.verdict, {}, &judged.extensions, judged.unreadable};
    GateOutcome out;
    for (const auto& n : resolution.narrowed)
        run.narrowed.push_back(
            fmt::format("{} (dropped against {}: {})", n.token, n.against, n.reason));
    // The JSON always has the expected-extension keys; the text, the workflow commands and the
    // JUnit report show the check only when the run had expected modules.
    out.json = verify::to_json(reports, run);
    if (setup.expected.empty()) run.expected = nullptr;
    out.text = verify::to_text(
        reports,
        resolution.built ? fmt::format("{} = {}, built as {}", resolution.source,
                                       resolution.list.to_string(), resolution.built->to_string())
                         : fmt::format("{} = {}", resolution.source, resolution.list.to_string()),
        run);
    out.github =
        ci::to_github(verify::to_findings(reports, run)) + verify::verdict_line(reports, run);
    out.junit = ci::to_junit("nvcc-forge verify", verify::to_test_cases(reports, run));
    out.outcome = judged.outcome();
    return out;
}

} // namespace forge::cli
