#include "verify/gate.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace forge::verify {

using arch::Kind;
using arch::Suffix;
using arch::Target;

namespace {

std::vector<std::string> names(const std::set<Target>& s) {
    std::vector<std::string> out;
    for (const auto& t : s)
        out.push_back(t.name());
    return out;
}

// An expected plain target is satisfied by the same target with any suffix (suffix folding:
// sm_90a / sm_100f count as sm_90 / sm_100); an expected a/f target only by itself.
bool satisfied(const Target& want, const std::set<Target>& have) {
    if (have.count(want)) return true;
    if (want.suffix != Suffix::None) return false;
    return std::any_of(have.begin(), have.end(),
                       [&](const Target& t) { return t.folded() == want; });
}

const Waiver* find_waiver(const Target& t, const std::vector<Waiver>& waivers) {
    for (const auto& w : waivers)
        if (w.target.kind == t.kind && w.target.folded() == t.folded()) return &w;
    return nullptr;
}

bool parse_version(std::string_view s, int& major, int& minor) {
    auto dot = s.find('.');
    if (dot == std::string_view::npos) return false;
    auto a = s.substr(0, dot), b = s.substr(dot + 1);
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), major);
    auto r2 = std::from_chars(b.data(), b.data() + b.size(), minor);
    return r1.ec == std::errc() && r1.ptr == a.data() + a.size() && r2.ec == std::errc() &&
           r2.ptr == b.data() + b.size();
}

} // namespace

Result<MaxToolkit> parse_max_toolkit(std::string_view spec) {
    MaxToolkit m;
    m.spec = std::string(spec);
    auto eq = spec.find('=');
    Error bad{
        fmt::format("bad --max-toolkit '{}': expected SM=X.Y (e.g. 120=12.8) or *=X.Y", spec)};
    bad.key = std::string(spec);
    if (eq == std::string_view::npos) return bad;
    auto sm = spec.substr(0, eq);
    if (sm != "*" && sm != "all") {
        auto r = std::from_chars(sm.data(), sm.data() + sm.size(), m.sm);
        if (r.ec != std::errc() || r.ptr != sm.data() + sm.size() || m.sm < 10) return bad;
    }
    if (!parse_version(spec.substr(eq + 1), m.major, m.minor)) return bad;
    return m;
}

ExtensionReport verify_extension(const binary::Extension& ext, const arch::ArchList& expected,
                                 const Options& opts) {
    ExtensionReport r;
    r.file = ext.file;
    r.member = ext.member;
    r.source = opts.source;

    std::set<Target> want_sass, want_ptx;
    for (const auto& t : expected.targets()) {
        if (t.kind == Kind::Sass)
            want_sass.insert(t);
        else if (t.kind == Kind::Ptx)
            want_ptx.insert(t);
        r.expected.push_back(t.name());
    }

    std::set<Target> have_sass, have_ptx, have_lto, stub_sass;
    for (const auto& e : ext.entries) {
        switch (e.target.kind) {
        case Kind::Sass:
            // A kernel-less cubin (the nvlink device-link stub, or a TU without kernels) proves
            // nothing about an arch: only cubins with kernels count as device code.
            if (e.stub || (e.kernels && *e.kernels == 0))
                stub_sass.insert(e.target);
            else
                have_sass.insert(e.target);
            if (e.kernels)
                r.kernels[e.target.name()] += *e.kernels;
            else
                r.kernels.try_emplace(e.target.name(), 0);
            break;
        case Kind::Ptx:
            have_ptx.insert(e.target);
            break;
        case Kind::Lto:
            have_lto.insert(e.target);
            break;
        }
    }
    r.sass = names(have_sass);
    r.ptx = names(have_ptx);
    r.lto = names(have_lto);
    for (const auto& s : stub_sass)
        if (!have_sass.count(s)) r.stub_only.push_back(s.name());
    r.device_code = !have_sass.empty() || !have_ptx.empty();

    // 6 (decided first because it changes what the others mean): no device code at all.
    if (!r.device_code) {
        Check c{"device-code", opts.allow_pure_python, ""};
        c.detail = opts.allow_pure_python
                       ? "no device code; allowed (allow_pure_python)"
                       : (stub_sass.empty()
                              ? "no SASS and no PTX at all: a wheel without GPU code imports fine "
                                "and fails at the first kernel launch"
                              : fmt::format("only kernel-less cubins ({}): no kernel was compiled",
                                            fmt::join(r.stub_only, " ")));
        if (opts.allow_pure_python) {
            r.checks.push_back(c);
            r.pass = true;
            return r;
        }
        r.checks.push_back(c);
    }

    // 1. family: a CC major asked for with no cubin of that major at all.
    std::set<int> want_majors, have_majors;
    for (const auto& t : want_sass)
        want_majors.insert(arch::sm_major(t.sm));
    for (const auto& t : have_sass)
        have_majors.insert(arch::sm_major(t.sm));
    {
        Check c{"family", true, ""};
        for (int m : want_majors) {
            if (have_majors.count(m)) continue;
            bool all_waived = std::all_of(want_sass.begin(), want_sass.end(), [&](const Target& t) {
                return arch::sm_major(t.sm) != m || find_waiver(t, opts.waivers) != nullptr;
            });
            if (all_waived) continue;
            r.missing_families.push_back(fmt::format("sm_{}x", m));
        }
        c.ok = r.missing_families.empty();
        c.detail = c.ok ? "every major present"
                        : fmt::format("no cubin at all for {}", fmt::join(r.missing_families, " "));
        r.checks.push_back(c);
    }

    std::set<std::string> waived_used;
    auto missing_of = [&](const std::set<Target>& want, const std::set<Target>& have,
                          std::vector<std::string>& out) {
        for (const auto& t : want) {
            if (satisfied(t, have)) continue;
            if (const Waiver* w = find_waiver(t, opts.waivers)) {
                waived_used.insert(fmt::format("{} ({})", t.name(), w->source));
                continue;
            }
            out.push_back(t.name());
        }
    };

    // 2 + 4. exact SASS with suffix folding.
    missing_of(want_sass, have_sass, r.missing_sass);
    {
        Check c{"sass", r.missing_sass.empty(), ""};
        c.detail = c.ok ? fmt::format("{} cubin arch(es) as asked", want_sass.size())
                        : fmt::format("missing {}", fmt::join(r.missing_sass, " "));
        std::vector<std::string> stub_missing;
        for (const auto& m : r.missing_sass)
            if (std::find(r.stub_only.begin(), r.stub_only.end(), m) != r.stub_only.end())
                stub_missing.push_back(m);
        if (!stub_missing.empty())
            c.detail += fmt::format(" ({} present only as kernel-less cubins: kernels vanished)",
                                    fmt::join(stub_missing, " "));
        r.checks.push_back(c);
    }

    // 3 + 4. PTX: every +PTX token needs its compute_X entry.
    missing_of(want_ptx, have_ptx, r.missing_ptx);
    {
        Check c{"ptx", r.missing_ptx.empty(), ""};
        c.detail =
            c.ok ? (want_ptx.empty()
                        ? "no PTX asked"
                        : fmt::format("{} PTX as asked", fmt::join(names(want_ptx), " ")))
                 : fmt::format(
                       "missing PTX {}: the forward-compat tail the list declares is not there",
                       fmt::join(r.missing_ptx, " "));
        r.checks.push_back(c);
    }

    // 5. extra: actual - expected; a build that silently widens is as wrong as one that narrows.
    for (const auto& t : have_sass)
        if (!want_sass.count(t) && !want_sass.count(t.folded())) r.extra.push_back(t.name());
    for (const auto& t : have_ptx)
        if (!want_ptx.count(t) && !want_ptx.count(t.folded())) r.extra.push_back(t.name());
    {
        Check c{"extra", r.extra.empty() || opts.allow_extra, ""};
        c.detail = r.extra.empty()
                       ? "nothing beyond the list"
                       : fmt::format("not in the list: {}{}", fmt::join(r.extra, " "),
                                     opts.allow_extra ? " (allowed: --allow-extra)" : "");
        r.checks.push_back(c);
    }

    // Toolkit bounds (driver compatibility): cubins built by a newer toolkit than allowed.
    if (!opts.max_toolkit.empty()) {
        Check c{"toolkit", true, ""};
        for (const auto& e : ext.entries) {
            if (e.target.kind != Kind::Sass || e.stub) continue;
            for (const auto& m : opts.max_toolkit) {
                if (m.sm != 0 && m.sm != e.target.sm) continue;
                int maj = 0, min = 0;
                if (!e.toolkit || !parse_version(*e.toolkit, maj, min)) {
                    r.toolkit_violations.push_back(fmt::format("{}: toolkit unknown (max {}.{})",
                                                               e.target.name(), m.major, m.minor));
                } else if (std::pair(maj, min) > std::pair(m.major, m.minor)) {
                    r.toolkit_violations.push_back(fmt::format("{}: built by CUDA {} > {}.{}",
                                                               e.target.name(), *e.toolkit, m.major,
                                                               m.minor));
                }
            }
        }
        std::sort(r.toolkit_violations.begin(), r.toolkit_violations.end());
        r.toolkit_violations.erase(
            std::unique(r.toolkit_violations.begin(), r.toolkit_violations.end()),
            r.toolkit_violations.end());
        c.ok = r.toolkit_violations.empty();
        c.detail = c.ok ? "every cubin within its toolkit bound"
                        : fmt::format("{}", fmt::join(r.toolkit_violations, "; "));
        r.checks.push_back(c);
    }

    // 7. waivers used are always printed.
    r.waived.assign(waived_used.begin(), waived_used.end());
    r.pass = std::all_of(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.ok; });
    return r;
}

} // namespace forge::verify
