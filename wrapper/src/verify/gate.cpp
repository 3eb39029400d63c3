#include "verify/gate.h"

#include "core/version.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace forge::verify {

using arch::Kind;
using arch::Target;

namespace {

std::vector<std::string> names(const std::set<Target>& s) {
    std::vector<std::string> out;
    for (const auto& t : s)
        out.push_back(t.name());
    return out;
}

int rank(arch::Tier t) {
    return t == arch::Tier::Native ? 0 : t == arch::Tier::Jit ? 1 : 2;
}

const Waiver* find_waiver(const Target& t, const std::vector<Waiver>& waivers) {
    for (const auto& w : waivers)
        if (w.target.kind == t.kind && w.target.folded() == t.folded()) return &w;
    return nullptr;
}

bool parse_version(std::string_view s, int& major, int& minor) {
    const auto v = parse_cuda_version(s, false);
    if (!v) return false;
    major = v->major;
    minor = v->minor;
    return true;
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

Carried classify(const binary::Extension& ext, bool judge_embedded) {
    Carried c;
    for (const auto& e : ext.entries) {
        if (e.found == binary::Found::Embedded && !judge_embedded) continue; // reported apart
        switch (e.target.kind) {
        case Kind::Sass:
            // A kernel-less cubin (the nvlink device-link stub, or a TU without kernels) proves
            // nothing about an arch: only cubins with kernels count as device code.
            if (e.stub || (e.kernels && *e.kernels == 0))
                c.stub_sass.insert(e.target);
            else
                c.sass.insert(e.target);
            if (e.kernels)
                c.kernels[e.target.name()] += *e.kernels;
            else
                c.kernels.try_emplace(e.target.name(), 0);
            break;
        case Kind::Ptx:
            // The same for PTX: a TU without kernels still emits `.version/.target` and nothing
            // to JIT.
            if (e.kernels && *e.kernels == 0)
                c.empty_ptx.insert(e.target);
            else
                c.ptx.insert(e.target);
            if (e.kernels) c.kernels[e.target.name()] += *e.kernels;
            break;
        case Kind::Lto:
            c.lto.insert(e.target);
            break;
        }
    }
    return c;
}

std::vector<Target> Carried::runnable() const {
    std::vector<Target> out(sass.begin(), sass.end());
    out.insert(out.end(), ptx.begin(), ptx.end());
    return out;
}

bool is_python_extension(std::string_view path) {
    auto cut = [](std::string_view p) {
        auto slash = p.find_last_of("/\\");
        return slash == std::string_view::npos ? std::pair(std::string_view(), p)
                                               : std::pair(p.substr(0, slash), p.substr(slash + 1));
    };
    auto [dir, name] = cut(path);
    // auditwheel and delvewheel vendor host libraries into `<dist>.libs/` next to the package.
    if (cut(dir).second.ends_with(".libs")) return false;
    if (name.ends_with(".pyd") || name.ends_with(".abi3.so")) return true;
    return name.ends_with(".so") && name.find(".cpython-") != std::string_view::npos;
}

std::string LostGpu::describe() const {
    return fmt::format("{}{}: {} -> {}{}", arch::cc_string(sm),
                       products.empty() ? "" : fmt::format(" ({})", fmt::join(products, ", ")),
                       arch::tier_string(promised), arch::tier_string(actual),
                       waived ? " (waived)" : "");
}

namespace {

// A shared library by its name: only those can be host-only (an object or archive without a
// fatbin is a build that lost its device code).
bool is_shared_library(std::string_view path) {
    if (path.ends_with(".dll") || path.ends_with(".dylib")) return true;
    auto so = path.rfind(".so");
    if (so == std::string_view::npos) return false;
    auto rest = path.substr(so + 3);
    return std::all_of(rest.begin(), rest.end(),
                       [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

} // namespace

bool is_host_only(const binary::Extension& ext, bool judge_embedded) {
    const std::string& path = ext.member ? *ext.member : ext.file;
    const bool judged_code =
        std::any_of(ext.entries.begin(), ext.entries.end(), [&](const auto& e) {
            return judge_embedded || e.found != binary::Found::Embedded;
        });
    return !judged_code && is_shared_library(path) && !is_python_extension(path);
}

EmbeddedReport embedded_report(const binary::Extension& ext, bool judged) {
    EmbeddedReport r;
    r.judged = judged;
    std::set<std::pair<std::string, std::uint64_t>> containers; // (section, fatbin offset)
    std::set<std::string> sections;
    std::set<Target> sass, ptx, lto;
    for (const auto& e : ext.entries) {
        if (e.found != binary::Found::Embedded) continue;
        ++r.entries;
        containers.emplace(e.section, e.fatbin_offset);
        sections.insert(e.section);
        (e.target.kind == Kind::Sass  ? sass
         : e.target.kind == Kind::Ptx ? ptx
                                      : lto)
            .insert(e.target);
    }
    r.containers = containers.size();
    r.sections.assign(sections.begin(), sections.end());
    r.sass = names(sass);
    r.ptx = names(ptx);
    r.lto = names(lto);
    return r;
}

std::string EmbeddedReport::describe() const {
    std::vector<std::string> parts;
    if (!sass.empty()) parts.push_back(fmt::format("{}", fmt::join(sass, " ")));
    if (!ptx.empty()) parts.push_back(fmt::format("{}", fmt::join(ptx, " ")));
    if (!lto.empty()) parts.push_back(fmt::format("{}", fmt::join(lto, " ")));
    return fmt::format(
        "{} fatbin container{} ({} entr{}) in {}: {}; {}", containers, containers == 1 ? "" : "s",
        entries, entries == 1 ? "y" : "ies", fmt::join(sections, " "), fmt::join(parts, " "),
        judged ? "judged with the registered fatbins (verify.embedded_fatbins: judge)"
               : "not judged (verify.embedded_fatbins: report)");
}

namespace {

std::string waiver_text(const Target& t, const Waiver& w) {
    return fmt::format("{} — {}", t.name(), w.source);
}

// The list's targets by kind; their names go into the report as asked.
std::pair<std::set<Target>, std::set<Target>> wanted(const arch::ArchList& expected,
                                                     ExtensionReport& r) {
    std::set<Target> want_sass, want_ptx;
    for (const auto& t : expected.targets()) {
        if (t.kind == Kind::Sass)
            want_sass.insert(t);
        else if (t.kind == Kind::Ptx)
            want_ptx.insert(t);
        r.expected.push_back(t.name());
    }
    return {std::move(want_sass), std::move(want_ptx)};
}

ExtensionReport host_only_report(ExtensionReport r) {
    r.host_only = true;
    r.pass = true;
    r.checks.push_back({"device-code",
                        true,
                        "host-only library (no fatbin, not a Python extension module): "
                        "listed, not judged",
                        {}});
    return r;
}

// What the module carries, into the report: images with kernels, kernel-less ones apart.
void record_carried(ExtensionReport& r, const Carried& carried) {
    for (const auto& [name, count] : carried.kernels)
        r.kernels[name] = count;
    r.sass = names(carried.sass);
    r.ptx = names(carried.ptx);
    r.lto = names(carried.lto);
    for (const auto& s : carried.stub_sass)
        if (!carried.sass.count(s)) r.stub_only.push_back(s.name());
    for (const auto& p : carried.empty_ptx)
        if (!carried.ptx.count(p)) r.ptx_without_kernels.push_back(p.name());
    r.device_code = !carried.sass.empty() || !carried.ptx.empty();
}

// 6 (decided first because it changes what the others mean): no device code at all.
Check device_code_check(const ExtensionReport& r, const Carried& carried, const Options& opts) {
    Check c{"device-code", opts.allow_pure_python, "", {}};
    if (opts.allow_pure_python) {
        c.detail = "no device code; allowed (allow_pure_python)";
    } else if (carried.stub_sass.empty() && carried.empty_ptx.empty()) {
        c.detail = "no SASS and no PTX at all: a wheel without GPU code imports fine and fails at "
                   "the first kernel launch";
    } else {
        auto kernel_less = carried.stub_sass;
        kernel_less.insert(carried.empty_ptx.begin(), carried.empty_ptx.end());
        c.detail = fmt::format("only kernel-less images ({}): no kernel was compiled",
                               fmt::join(names(kernel_less), " "));
    }
    if (r.embedded.containers != 0 && !r.embedded.judged)
        c.detail += fmt::format(" (and {} embedded fatbin container(s), reported apart, not "
                                "judged: verify.embedded_fatbins)",
                                r.embedded.containers);
    return c;
}

// One module with device code being judged: what the list asks, what the module carries, the
// GPUs the coverage is read on, and the waivers the checks used.
struct Judging {
    Judging(const Options& o, ExtensionReport& report, std::set<Target> sass, std::set<Target> ptx,
            Carried c)
        : opts(o), r(report), want_sass(std::move(sass)), want_ptx(std::move(ptx)),
          carried(std::move(c)), tegra(o.gpus) {
        std::vector<Target> named(want_sass.begin(), want_sass.end());
        named.insert(named.end(), carried.sass.begin(), carried.sass.end());
        gpus = arch::judged_gpus(opts.gpus, named);
    }

    // The targets of `want` neither satisfied nor waived, into `out`; returns the waivers it
    // used, as the check line shows them.
    template <class Satisfied>
    std::vector<std::string> missing_of(const std::set<Target>& want, Satisfied&& is_satisfied,
                                        std::vector<std::string>& out) {
        std::vector<std::string> used;
        for (const auto& t : want) {
            if (is_satisfied(t)) continue;
            if (const Waiver* w = find_waiver(t, opts.waivers)) {
                waived_used.insert(fmt::format("{} ({})", t.name(), w->source));
                waived_targets.insert(t);
                used.push_back(waiver_text(t, *w));
                continue;
            }
            out.push_back(t.name());
        }
        return used;
    }

    const Options& opts;
    ExtensionReport& r;
    const std::set<Target> want_sass, want_ptx;
    const Carried carried;
    const arch::TegraSet tegra;
    std::vector<arch::Gpu> gpus;
    std::set<std::string> waived_used;
    std::set<Target> waived_targets;
};

std::string as_asked(std::size_t total, std::size_t waived, std::string_view what) {
    return waived == 0 ? fmt::format("{} {} as asked", total, what)
                       : fmt::format("{} of {} {} as asked", total - waived, total, what);
}

// 1. family: a CC major asked for with no cubin of that major at all.
Check family_check(Judging& j) {
    std::set<int> want_majors, have_majors;
    for (const auto& t : j.want_sass)
        want_majors.insert(arch::sm_major(t.sm));
    for (const auto& t : j.carried.sass)
        have_majors.insert(arch::sm_major(t.sm));
    Check c{"family", true, "", {}};
    for (int m : want_majors) {
        if (have_majors.count(m)) continue;
        bool all_waived = std::all_of(j.want_sass.begin(), j.want_sass.end(), [&](const Target& t) {
            return arch::sm_major(t.sm) != m || find_waiver(t, j.opts.waivers) != nullptr;
        });
        if (all_waived) continue;
        j.r.missing_families.push_back(fmt::format("sm_{}x", m));
    }
    c.ok = j.r.missing_families.empty();
    c.detail = c.ok ? "every major present"
                    : fmt::format("no cubin at all for {}", fmt::join(j.r.missing_families, " "));
    return c;
}

// 2 + 4. SASS, suffixes folded by coverage.
Check sass_check(Judging& j) {
    const std::set<Target>& have_sass = j.carried.sass;
    ExtensionReport& r = j.r;
    Check c{"sass", true, "", {}};
    c.waived = j.missing_of(
        j.want_sass, [&](const Target& t) { return arch::covers(have_sass, t, j.gpus, j.tegra); },
        r.missing_sass);
    c.ok = r.missing_sass.empty();
    std::vector<std::string> why;
    for (const auto& m : r.missing_sass) {
        auto t = *arch::parse_target(m);
        std::vector<std::string> stand_ins;
        for (const auto& h : have_sass)
            if (arch::asked_for(h, {t})) stand_ins.push_back(h.name());
        if (!stand_ins.empty())
            why.push_back(
                fmt::format("{} does not cover every CC {} runs on", fmt::join(stand_ins, " "), m));
    }
    c.detail = c.ok ? as_asked(j.want_sass.size(), c.waived.size(), "cubin arch(es)")
                    : fmt::format("missing {}", fmt::join(r.missing_sass, " "));
    if (!why.empty()) c.detail += fmt::format(" ({})", fmt::join(why, "; "));
    std::vector<std::string> stub_missing;
    for (const auto& m : r.missing_sass)
        if (std::find(r.stub_only.begin(), r.stub_only.end(), m) != r.stub_only.end())
            stub_missing.push_back(m);
    if (!stub_missing.empty())
        c.detail += fmt::format(" ({} present only as kernel-less cubins: kernels vanished)",
                                fmt::join(stub_missing, " "));
    return c;
}

// 3 + 4. PTX: a +PTX token is satisfied only by its own PTX with kernels. A compute_90a or
// compute_100f tail JITs onto one CC or one family, so it is not the forward tail a plain token
// promises.
Check ptx_check(Judging& j) {
    const std::set<Target>& have_ptx = j.carried.ptx;
    ExtensionReport& r = j.r;
    Check c{"ptx", true, "", {}};
    c.waived = j.missing_of(
        j.want_ptx, [&](const Target& t) { return arch::covers(have_ptx, t, j.gpus, j.tegra); },
        r.missing_ptx);
    c.ok = r.missing_ptx.empty();
    if (c.ok) {
        c.detail = j.want_ptx.empty()
                       ? "no PTX asked"
                       : (c.waived.empty()
                              ? fmt::format("{} PTX as asked", fmt::join(names(j.want_ptx), " "))
                              : as_asked(j.want_ptx.size(), c.waived.size(), "PTX"));
        return c;
    }
    c.detail = fmt::format("missing PTX {}: the forward-compat tail the list declares is not there",
                           fmt::join(r.missing_ptx, " "));
    std::vector<std::string> near;
    for (const auto& m : r.missing_ptx) {
        auto t = *arch::parse_target(m);
        for (const auto& h : have_ptx)
            if (h.folded() == t.folded() && h != t) near.push_back(h.name());
        if (j.carried.empty_ptx.count(t) && !have_ptx.count(t))
            near.push_back(fmt::format("{} without kernels", m));
    }
    if (!near.empty())
        c.detail += fmt::format(" (present: {}; an a/f PTX JITs onto one CC or family only, a "
                                "kernel-less PTX onto nothing)",
                                fmt::join(near, ", "));
    return c;
}

// What the binary really covers against what the list promises, GPU by GPU.
void lost_gpus(Judging& j) {
    std::vector<Target> promised(j.want_sass.begin(), j.want_sass.end());
    promised.insert(promised.end(), j.want_ptx.begin(), j.want_ptx.end());
    std::vector<Target> unwaived;
    for (const auto& t : promised)
        if (!j.waived_targets.count(t)) unwaived.push_back(t);
    std::vector<Target> actual(j.carried.sass.begin(), j.carried.sass.end());
    actual.insert(actual.end(), j.carried.ptx.begin(), j.carried.ptx.end());
    auto want_rows = arch::coverage(promised, j.gpus, j.tegra);
    auto unwaived_rows = arch::coverage(unwaived, j.gpus, j.tegra);
    auto have_rows = arch::coverage(actual, j.gpus, j.tegra);
    for (std::size_t i = 0; i < j.gpus.size(); ++i) {
        if (rank(have_rows[i].tier) <= rank(want_rows[i].tier)) continue;
        j.r.lost.push_back({j.gpus[i].sm, j.gpus[i].products, want_rows[i].tier, have_rows[i].tier,
                            rank(have_rows[i].tier) <= rank(unwaived_rows[i].tier)});
    }
}

// 5. extra: actual - expected; a build that silently widens is as wrong as one that narrows.
Check extra_check(Judging& j) {
    ExtensionReport& r = j.r;
    for (const auto& t : j.carried.sass)
        if (!arch::asked_for(t, j.want_sass)) r.extra.push_back(t.name());
    for (const auto& t : j.carried.ptx)
        if (!arch::asked_for(t, j.want_ptx)) r.extra.push_back(t.name());
    Check c{"extra", r.extra.empty() || j.opts.allow_extra, "", {}};
    const bool apart = r.embedded.containers != 0 && !r.embedded.judged;
    c.detail = r.extra.empty() ? (apart ? "nothing beyond the list in the registered fatbins (the "
                                          "embedded ones are reported apart)"
                                        : "nothing beyond the list")
                               : fmt::format("not in the list: {}{}", fmt::join(r.extra, " "),
                                             j.opts.allow_extra ? " (allowed: --allow-extra)" : "");
    return c;
}

// Toolkit bounds (driver compatibility): cubins built by a newer toolkit than allowed.
Check toolkit_check(const binary::Extension& ext, ExtensionReport& r, const Options& opts) {
    Check c{"toolkit", true, "", {}};
    for (const auto& e : ext.entries) {
        if (e.target.kind != Kind::Sass || e.stub) continue;
        if (e.found == binary::Found::Embedded && !opts.judge_embedded) continue;
        for (const auto& m : opts.max_toolkit) {
            if (m.sm != 0 && m.sm != e.target.sm) continue;
            int maj = 0, min = 0;
            if (!e.toolkit || !parse_version(*e.toolkit, maj, min)) {
                r.toolkit_violations.push_back(fmt::format("{}: toolkit unknown (max {}.{})",
                                                           e.target.name(), m.major, m.minor));
            } else if (std::pair(maj, min) > std::pair(m.major, m.minor)) {
                r.toolkit_violations.push_back(fmt::format(
                    "{}: built by CUDA {} > {}.{}", e.target.name(), *e.toolkit, m.major, m.minor));
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
    return c;
}

} // namespace

ExtensionReport verify_extension(const binary::Extension& ext, const arch::ArchList& expected,
                                 const Options& opts) {
    ExtensionReport r;
    r.file = ext.file;
    r.member = ext.member;
    // "none": nothing was measured, so no reader can be named as having seen it.
    r.source = ext.entries.empty() ? "none" : "native"; // the gate judges only what it read
    auto [want_sass, want_ptx] = wanted(expected, r);
    r.embedded = embedded_report(ext, opts.judge_embedded);
    if (is_host_only(ext, opts.judge_embedded)) return host_only_report(std::move(r));

    Carried carried = classify(ext, opts.judge_embedded);
    record_carried(r, carried);
    if (!r.device_code) {
        r.checks.push_back(device_code_check(r, carried, opts));
        if (opts.allow_pure_python) {
            r.pass = true;
            return r;
        }
    }
    Judging j(opts, r, std::move(want_sass), std::move(want_ptx), std::move(carried));
    r.checks.push_back(family_check(j));
    r.checks.push_back(sass_check(j));
    r.checks.push_back(ptx_check(j));
    lost_gpus(j);
    r.checks.push_back(extra_check(j));
    if (!opts.max_toolkit.empty()) r.checks.push_back(toolkit_check(ext, r, opts));
    // 7. waivers used are always printed.
    r.waived.assign(j.waived_used.begin(), j.waived_used.end());
    r.pass = std::all_of(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.ok; });
    return r;
}

} // namespace forge::verify

namespace forge::verify {

Verdict verdict(const std::vector<ExtensionReport>& reports, const Options& opts) {
    std::size_t judged = 0, failed = 0, host_only = 0;
    for (const auto& r : reports) {
        if (r.host_only) {
            ++host_only;
            continue;
        }
        ++judged;
        if (!r.pass) ++failed;
    }
    if (judged == 0) {
        std::string what = host_only == 0 ? std::string("no extension module at all")
                                          : fmt::format("only host-only libraries ({})", host_only);
        if (opts.allow_pure_python)
            return {true,
                    fmt::format("{}: a pure-Python package, allowed (allow_pure_python)", what)};
        return {false, fmt::format("{}: nothing carries GPU code; a package without any is "
                                   "allowed only with --allow-pure-python or "
                                   "verify.allow_pure_python",
                                   what)};
    }
    if (failed > 0) return {false, fmt::format("{} of {} extension(s) fail", failed, judged)};
    return {true, {}};
}

} // namespace forge::verify
