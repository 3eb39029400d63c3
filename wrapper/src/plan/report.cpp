#include "plan/report.h"

#include "ci/finding.h"
#include "core/glob.h"
#include "core/json.h"
#include "core/process.h"
#include "core/text.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

namespace forge::plan {

namespace fs = std::filesystem;

namespace {

std::string names(const std::vector<std::string>& v) {
    return v.empty() ? "-" : fmt::format("{}", fmt::join(v, " "));
}

// The modules the gate read, as the plan's "extensions": where each is and what it carries.
nlohmann::json built_extensions(const PlanReport& r) {
    nlohmann::json out = nlohmann::json::array();
    if (!r.gate.is_object() || !r.gate.contains("extensions")) return out;
    for (const auto& e : r.gate["extensions"]) {
        nlohmann::json sass = e.value("sass", nlohmann::json::array());
        nlohmann::json ptx = e.value("ptx", nlohmann::json::array());
        out.push_back({{"file", e.value("file", "")},
                       {"member", e.contains("member") ? e["member"] : nlohmann::json(nullptr)},
                       {"sass", sass},
                       {"ptx", ptx},
                       {"pass", e.value("pass", false)}});
    }
    return out;
}

std::string module_name(const nlohmann::json& e) {
    std::string name = e.value("file", "");
    if (e.contains("member") && e["member"].is_string())
        name += ":" + e["member"].get<std::string>();
    return name;
}

std::string text_formatter(const PlanReport& r) {
    return to_text(r);
}
std::string json_formatter(const PlanReport& r) {
    return json_text(to_json(r), 2) + "\n";
}
std::string github_formatter(const PlanReport& r) {
    return to_github(r);
}

struct NamedFormatter {
    std::string_view name;
    Formatter fn;
};
constexpr NamedFormatter kFormatters[] = {
    {"text", text_formatter}, {"json", json_formatter}, {"github", github_formatter}};

} // namespace

Result<std::vector<frontend::LogRecord>> read_log(const fs::path& path) {
    std::vector<frontend::LogRecord> out;
    std::error_code ec;
    if (!fs::exists(path, ec)) return out;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Error{"cannot read the plan's compile log", path.string()};
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
        ++n;
        if (line.empty()) continue;
        auto rec = frontend::LogRecord::from_json(line);
        if (!rec) {
            Error e = std::move(rec).error();
            e.file = path.string();
            e.line = n;
            return e;
        }
        out.push_back(std::move(*rec));
    }
    return out;
}

void judge(PlanReport& r) {
    r.tus.clear();
    for (const auto& rec : r.calls) {
        if (r.mode.empty()) r.mode = rec.mode;
        if (rec.action == frontend::kActionPassthrough) continue;
        r.tus.push_back(TuRow{frontend::tu_name(rec), rec.requested, rec.missing, rec.extra,
                              rec.injected, frontend::dropped_targets(rec), rec.action,
                              rec.arch_rule});
    }
    std::vector<std::string> short_tus;
    for (const auto& t : r.tus)
        if (!t.dropped.empty())
            short_tus.push_back(fmt::format("{} ({})", t.tu, fmt::join(t.dropped, ", ")));
    if (!r.build_error.empty() || r.build_exit != 0) {
        r.verdict = verify::Outcome::Error;
        if (!r.build_error.empty())
            r.reason = r.build_error;
        else if (!r.build_exit)
            r.reason = "the build command did not run; nothing was gated";
        else if (r.build_signal != 0)
            r.reason = fmt::format("the build command was killed by {}; nothing was gated",
                                   signal_name(r.build_signal));
        else
            r.reason = fmt::format("the build command exited {}; nothing was gated", *r.build_exit);
        return;
    }
    if (r.gated && r.gate_outcome == verify::Outcome::Error) {
        r.verdict = verify::Outcome::Error;
        r.reason = "the gate could not read every file (see the messages above)";
        return;
    }
    std::vector<std::string> why;
    if (!short_tus.empty())
        why.push_back(fmt::format("{} TU(s) miss targets the mode does not restore: {}",
                                  short_tus.size(), fmt::join(short_tus, "; ")));
    if (r.gated && r.gate_outcome != verify::Outcome::Pass)
        why.push_back("the gate fails: " + r.gate.value("reason", std::string("see its table")));
    r.verdict = why.empty() ? verify::Outcome::Pass : verify::Outcome::Fail;
    if (why.empty())
        r.reason = r.gated ? "every TU carries the policy and the gate passes"
                           : "every TU carries the policy (nothing gated: no --gate)";
    else
        r.reason = fmt::format("{}", fmt::join(why, "; "));
}

std::string to_text(const PlanReport& r) {
    std::string out = fmt::format("nvcc-forge plan: {} ({})\n", verify::outcome_word(r.verdict),
                                  escape_control(r.reason));
    out += fmt::format("policy: {}{}\n", r.list, r.mode.empty() ? "" : " (mode " + r.mode + ")");
    for (const auto& k : r.knobs)
        out += fmt::format("knob: {}={} ({})\n", k.variable, escape_control(k.value),
                           k.from_caller ? "the caller's, left alone" : "set by plan");
    out += fmt::format("calls: {} ({} compared, {} passed to the real nvcc)\n", r.calls.size(),
                       r.tus.size(), r.calls.size() - r.tus.size());
    for (const auto& t : r.tus) {
        out += fmt::format("  {}\n", escape_control(t.tu));
        out += fmt::format("    requested {}\n", names(t.requested));
        out += fmt::format("    missing   {}{}\n", names(t.missing),
                           t.dropped.empty() ? "" : "  (not restored: " + names(t.dropped) + ")");
        out += fmt::format("    extra     {}\n", names(t.extra));
        out += fmt::format("    injected  {}\n", names(t.injected));
    }
    if (!r.gated) {
        out += "gate: none (no --gate)\n";
        return out;
    }
    const nlohmann::json exts = built_extensions(r);
    out += fmt::format("extensions built: {}\n", exts.size());
    for (const auto& e : exts)
        out += fmt::format("  {}\n", escape_control(module_name(e)));
    out += "gate:\n" + r.gate_text;
    return out;
}

std::string to_github(const PlanReport& r) {
    // A TU of one source is annotated on that file; several sources or a link on none.
    auto file_of = [](const std::string& tu) {
        return tu.find(' ') != std::string::npos || tu.starts_with("(") ? std::string()
                                                                        : ci::workspace_path(tu);
    };
    std::vector<ci::Finding> findings;
    for (const auto& t : r.tus) {
        if (!t.dropped.empty())
            findings.push_back({ci::Severity::Error, file_of(t.tu), 0, 0, "plan: targets not built",
                                fmt::format("{} misses {} (mode {} does not restore them); "
                                            "requested {}",
                                            t.tu, names(t.dropped), r.mode, names(t.requested))});
        else if (!t.injected.empty())
            findings.push_back({ci::Severity::Notice, file_of(t.tu), 0, 0, "plan: targets injected",
                                fmt::format("{}: injected {} (requested {})", t.tu,
                                            names(t.injected), names(t.requested))});
    }
    if (!r.build_error.empty())
        findings.push_back({ci::Severity::Error, "", 0, 0, "plan: build command",
                            fmt::format("could not start the build: {}", r.build_error)});
    else if (r.build_exit != 0)
        findings.push_back({ci::Severity::Error, "", 0, 0, "plan: build command",
                            r.build_signal != 0
                                ? "the build was killed by " + signal_name(r.build_signal)
                                : fmt::format("the build exited {}", r.build_exit.value_or(-1))});
    std::string out = ci::to_github(findings);
    if (r.gated) out += r.gate_github;
    out += fmt::format("nvcc-forge plan: {} ({})\n", verify::outcome_word(r.verdict),
                       escape_control(r.reason));
    return out;
}

nlohmann::json to_json(const PlanReport& r) {
    nlohmann::json calls = nlohmann::json::array();
    for (const auto& c : r.calls)
        calls.push_back(nlohmann::json::parse(c.to_json()));
    nlohmann::json tus = nlohmann::json::array();
    for (const auto& t : r.tus)
        tus.push_back({{"tu", t.tu},
                       {"requested", t.requested},
                       {"missing", t.missing},
                       {"extra", t.extra},
                       {"injected", t.injected},
                       {"not_restored", t.dropped},
                       {"action", t.action},
                       {"arch_rule", t.arch_rule.empty() ? nlohmann::json(nullptr)
                                                         : nlohmann::json(t.arch_rule)}});
    nlohmann::json knobs = nlohmann::json::array();
    for (const auto& k : r.knobs)
        knobs.push_back({{"variable", k.variable},
                         {"value", k.value},
                         {"set_by", k.from_caller ? "caller" : "plan"}});
    return {{"verdict", std::string(verify::outcome_word(r.verdict))},
            {"reason", r.reason},
            {"list", r.list},
            {"arch_knobs", knobs},
            {"mode", r.mode},
            {"build_exit", r.build_exit ? nlohmann::json(*r.build_exit) : nlohmann::json(nullptr)},
            {"calls", calls},
            {"tus", tus},
            {"extensions", built_extensions(r)},
            {"gate", r.gated ? r.gate : nlohmann::json(nullptr)}};
}

Formatter formatter(std::string_view name) {
    for (const auto& f : kFormatters)
        if (f.name == name) return f.fn;
    return nullptr;
}

std::string format_names() {
    std::string out;
    for (const auto& f : kFormatters)
        out += (out.empty() ? "" : "|") + std::string(f.name);
    return out;
}

std::vector<std::string> expand_gate_glob(const std::string& glob, const fs::path& cwd) {
    const bool absolute = !glob.empty() && glob.front() == '/';
    // The fixed leading components: the one directory the glob can match under.
    std::string fixed;
    std::size_t start = absolute ? 1 : 0;
    while (true) {
        const std::size_t slash = glob.find('/', start);
        if (slash == std::string::npos) break;
        const std::string_view comp(glob.data() + start, slash - start);
        if (glob_has_wildcard(comp)) break;
        fixed = glob.substr(0, slash);
        start = slash + 1;
    }
    const fs::path root =
        absolute ? fs::path(fixed.empty() ? "/" : fixed) : (fixed.empty() ? cwd : cwd / fixed);
    std::vector<std::string> out;
    std::error_code ec;
    if (!glob_has_wildcard(glob)) {
        const fs::path p = absolute ? fs::path(glob) : cwd / glob;
        if (fs::is_regular_file(p, ec)) out.push_back(absolute ? glob : p.string());
        return out;
    }
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string rel =
            absolute ? it->path().string() : it->path().lexically_relative(cwd).generic_string();
        if (glob_match(glob, rel)) out.push_back(absolute ? rel : (cwd / rel).string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace forge::plan
