#include "verify/judge.h"

#include <fmt/format.h>

namespace forge::verify {

namespace {

// Why a module of plan's stub is not judged outside plan: judging it would pass or fail code that
// was never built.
Error refused_plan_product(const binary::Extension& ext) {
    return Error{"built by `nvcc-forge plan` (stub device code, never to ship); gate the product "
                 "of the real build",
                 ext.member ? fmt::format("{}:{}", ext.file, *ext.member) : ext.file};
}

// One module: a module the package names with `device_code: false` is judged (and accepted
// without device code), not set aside as a vendored host library.
ExtensionReport judge_module(const binary::Extension& ext, const JudgeSetup& setup) {
    Options opts = setup.opts;
    const bool named_host_only = expected_host_only(setup.expected, ext.file, ext.member);
    if (named_host_only) opts.allow_pure_python = true;
    ExtensionReport report = verify_extension(ext, setup.list, opts);
    if (named_host_only) report.host_only = false;
    return report;
}

void add_reason(Verdict& v, const std::string& why) {
    v.pass = false;
    v.reason = v.reason.empty() ? why : v.reason + "; " + why;
}

} // namespace

Judgement judge(const std::vector<std::string>& files, const JudgeSetup& setup,
                const ReadInput& read, const NotJudged& not_judged) {
    Judgement out;
    std::vector<UnreadFile> unread; // the reader's refusals (not plan's), for the expected check
    for (const auto& f : files) {
        Result<std::vector<binary::Extension>> exts = read(f);
        if (!exts) {
            not_judged(exts.error());
            out.unreadable.emplace_back(f, exts.error().to_string());
            unread.push_back({f, exts.error().key, exts.error().to_string()});
            continue;
        }
        for (const auto& ext : *exts) {
            if (ext.plan_product && !setup.plan_products) {
                const Error refused = refused_plan_product(ext);
                not_judged(refused);
                out.unreadable.emplace_back(f, refused.to_string());
                continue;
            }
            out.reports.push_back(judge_module(ext, setup));
        }
    }
    out.extensions = check_extensions(setup.expected, out.reports, unread);
    // No module read at all: the verdict is about the inputs. "Nothing carries GPU code" with its
    // remedy (--allow-pure-python) would describe files that were never understood.
    const bool nothing_read = out.reports.empty() && !out.unreadable.empty();
    out.verdict = nothing_read ? Verdict{false, {}} : verdict(out.reports, setup.opts);
    if (!out.extensions.pass())
        add_reason(out.verdict,
                   fmt::format("expected extension(s) absent or without device code: {}",
                               out.extensions.check.detail));
    if ((setup.unreadable_fails || nothing_read) && !out.unreadable.empty())
        add_reason(out.verdict,
                   fmt::format("{} input(s) could not be read (see the messages above)",
                               out.unreadable.size()));
    return out;
}

} // namespace forge::verify
