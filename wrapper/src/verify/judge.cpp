#include "verify/judge.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

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

// Where an input failed to read: "lib.so at byte 0x8e9d0", "pkg.whl (member pkg/_C.so)".
std::string where_not_read(const Error& e) {
    std::string where = e.file;
    if (!e.key.empty()) where += fmt::format(" (member {})", e.key);
    if (e.offset) where += fmt::format(" at byte 0x{:x}", *e.offset);
    return where;
}

// The verdict of a run whose every judged module was skipped: inputs were not read, and nothing
// read carries a module to judge. Nothing is concluded from what was skipped ("no extension
// module", "pure-Python", "nothing carries GPU code" would be said of files not understood).
Verdict not_read_verdict(std::size_t count, const Error& first) {
    return {false, fmt::format("{} input(s) not judged (first: {}): nothing is concluded about "
                               "the device code they hold",
                               count, where_not_read(first))};
}

void add_reason(Verdict& v, const std::string& why) {
    v.pass = false;
    v.reason = v.reason.empty() ? why : v.reason + "; " + why;
}

} // namespace

std::string_view outcome_word(Outcome o) {
    switch (o) {
    case Outcome::Pass:
        return "pass";
    case Outcome::Fail:
        return "fail";
    case Outcome::Error:
        break;
    }
    return "error";
}

int outcome_exit_code(Outcome o) {
    switch (o) {
    case Outcome::Pass:
        return kExitOk;
    case Outcome::Fail:
        return kExitPolicy;
    case Outcome::Error:
        break;
    }
    return kExitInput;
}

Outcome Judgement::outcome() const {
    if (!unreadable.empty()) return Outcome::Error;
    return verdict.pass ? Outcome::Pass : Outcome::Fail;
}

Judgement judge(const std::vector<std::string>& files, const JudgeSetup& setup,
                const ReadInput& read, const NotJudged& not_judged) {
    Judgement out;
    std::vector<UnreadFile> unread; // the reader's refusals (not plan's), for the expected check
    std::optional<Error> first_not_judged;
    for (const auto& f : files) {
        Result<std::vector<binary::Extension>> exts = read(f);
        if (!exts) {
            not_judged(exts.error());
            if (!first_not_judged) first_not_judged = exts.error();
            out.unreadable.emplace_back(f, exts.error().to_string());
            unread.push_back({f, exts.error().key, exts.error().to_string()});
            continue;
        }
        for (const auto& ext : *exts) {
            if (ext.plan_product && !setup.plan_products) {
                const Error refused = refused_plan_product(ext);
                not_judged(refused);
                if (!first_not_judged) first_not_judged = refused;
                out.unreadable.emplace_back(f, refused.to_string());
                continue;
            }
            out.reports.push_back(judge_module(ext, setup));
        }
    }
    out.extensions = check_extensions(setup.expected, out.reports, unread);
    const bool none_judged = std::all_of(out.reports.begin(), out.reports.end(),
                                         [](const ExtensionReport& r) { return r.host_only; });
    const bool not_read = first_not_judged.has_value() && none_judged;
    out.verdict = not_read ? not_read_verdict(out.unreadable.size(), *first_not_judged)
                           : verdict(out.reports, setup.opts);
    if (!out.extensions.pass())
        add_reason(out.verdict,
                   fmt::format("expected extension(s) absent or without device code: {}",
                               out.extensions.check.detail));
    if (setup.unreadable_fails && !out.unreadable.empty() && !not_read)
        add_reason(out.verdict,
                   fmt::format("{} input(s) could not be read (see the messages above)",
                               out.unreadable.size()));
    return out;
}

} // namespace forge::verify
