#include "cli/verify_gate.h"

#include "binary/reader.h"
#include "cli/policy_options.h"
#include "verify/extensions.h"
#include "verify/gate.h"
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

} // namespace

int GateOutcome::exit_code() const {
    if (unreadable) return kExitInput;
    return pass ? kExitOk : kExitPolicy;
}

Result<GateOutcome> run_gate(const boost::program_options::variables_map& vm,
                             const policy::Resolution& resolution, const GateArgs& args) {
    verify::Options opts;
    opts.source = "native";
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

    std::vector<verify::ExpectedModule> expected;
    for (const auto& e : resolution.expected_extensions)
        expected.push_back(
            {e.module, e.reason, e.device_code,
             fmt::format("{}:{} verify.extensions", resolution.package_file, e.line)});
    for (const auto& g : args.expect_extension)
        expected.push_back({g, "", true, "--expect-extension"});

    GateOutcome out;
    std::vector<verify::ExtensionReport> reports;
    std::vector<std::pair<std::string, std::string>> unreadable; // (file, message)
    std::vector<verify::UnreadFile> unread;
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // kernel counts and toolkits need the cubins themselves
    ro.inspect_embedded = opts.judge_embedded; // else only their headers are reported
    ro.check_record = true; // a wheel's members against its RECORD (docs/wheels.md)
    for (const auto& f : args.files) {
        Result<std::vector<binary::Extension>> exts = binary::read_extensions(f, ro);
        if (!exts) {
            report_error(args.command, exts.error());
            unreadable.emplace_back(f, exts.error().to_string());
            unread.push_back({f, exts.error().key, exts.error().to_string()});
            continue;
        }
        for (const auto& ext : *exts) {
            if (ext.plan_product && !args.plan_products) {
                // Its GPU code is a stub: judging it would pass or fail code that was never built.
                const Error refused{"built by `nvcc-forge plan` (stub device code, never to ship); "
                                    "gate the product of the real build",
                                    ext.member ? fmt::format("{}:{}", ext.file, *ext.member)
                                               : ext.file};
                report_error(args.command, refused);
                unreadable.emplace_back(f, refused.to_string());
                continue;
            }
            verify::Options module_opts = opts;
            const bool named_host_only = verify::expected_host_only(expected, ext.file, ext.member);
            if (named_host_only) module_opts.allow_pure_python = true;
            // What the package's build compiles (its target_forms: sm_100a for 10.0), so the
            // checks and the lost lines read the forms the wheel really carries.
            reports.push_back(verify::verify_extension(ext, resolution.builds_as(), module_opts));
            // A module the package names with `device_code: false` is judged (and accepted
            // without device code), not set aside as a vendored host library.
            if (named_host_only) reports.back().host_only = false;
        }
    }
    const verify::ExtensionsReport ext_report = verify::check_extensions(expected, reports, unread);
    verify::RunContext run{verify::verdict(reports, opts), {}, &ext_report, unreadable};
    out.unreadable = !unreadable.empty();
    if (!ext_report.pass()) {
        run.verdict.pass = false;
        const std::string why = fmt::format(
            "expected extension(s) absent or without device code: {}", ext_report.check.detail);
        run.verdict.reason = run.verdict.reason.empty() ? why : run.verdict.reason + "; " + why;
    }
    if (args.unreadable_fails && !unreadable.empty()) {
        run.verdict.pass = false;
        const std::string why = fmt::format(
            "{} input(s) could not be read (see the messages above)", unreadable.size());
        run.verdict.reason = run.verdict.reason.empty() ? why : run.verdict.reason + "; " + why;
    }
    for (const auto& n : resolution.narrowed)
        run.narrowed.push_back(
            fmt::format("{} (dropped against {}: {})", n.token, n.against, n.reason));
    // The JSON always has the expected-extension keys; the text, the workflow commands and the
    // JUnit report show the check only when the run had expected modules.
    out.json = verify::to_json(reports, run);
    if (expected.empty()) run.expected = nullptr;
    out.text = verify::to_text(
        reports,
        resolution.built ? fmt::format("{} = {}, built as {}", resolution.source,
                                       resolution.list.to_string(), resolution.built->to_string())
                         : fmt::format("{} = {}", resolution.source, resolution.list.to_string()),
        run);
    out.github =
        ci::to_github(verify::to_findings(reports, run)) + verify::verdict_line(reports, run);
    out.junit = ci::to_junit("nvcc-forge verify", verify::to_test_cases(reports, run));
    out.pass = run.verdict.pass;
    return out;
}

} // namespace forge::cli
