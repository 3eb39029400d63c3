#include "lint/report.h"

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <system_error>

namespace forge::lint {

namespace {

// What a report prints: one entry per finding, except that a script block (a ladder of target
// lines) is one entry, active when any of its lines is, ignored when all are.
struct Shown {
    const LintFinding* f = nullptr; // the first line of a block
    bool block = false;
    std::string ignored_by; // "" when active
    std::string why;        // a block's: its first -gencode line's
};

std::vector<Shown> shown_findings(const LintReport& report) {
    std::vector<Shown> out;
    std::map<std::pair<std::string, int>, std::size_t> blocks; // -> index in out
    for (const auto& f : report.findings) {
        if (f.block_first == 0) {
            out.push_back({&f, false, f.ignored_by, f.why});
            continue;
        }
        auto [it, fresh] = blocks.try_emplace({f.file, f.block_first}, out.size());
        if (fresh) {
            out.push_back({&f, true, f.ignored_by, ""});
        } else if (!f.ignored()) {
            out[it->second].ignored_by.clear();
        }
        Shown& b = out[it->second];
        if (b.why.empty() && f.rule == "script-emits-gencode") b.why = f.why;
    }
    for (auto& b : out)
        if (b.block && b.why.empty()) b.why = b.f->why;
    return out;
}

std::string list_name(const arch::ArchList& list) {
    return list.empty() ? std::string("nothing") : list.to_string();
}

std::string summary_line(const std::vector<Shown>& shown, const LintReport& report,
                         const arch::ArchList& list, std::string_view list_source) {
    std::size_t active = 0, ignored = 0;
    for (const auto& s : shown)
        ++(s.ignored_by.empty() ? active : ignored);
    return fmt::format("lint: {} finding{}, {} ignored, {} file{} scanned (list: {}{}{})\n", active,
                       active == 1 ? "" : "s", ignored, report.files_scanned,
                       report.files_scanned == 1 ? "" : "s", list_name(list),
                       list_source.empty() ? "" : " from ", list_source);
}

std::string unused_ignore_line(const std::string& entry) {
    return fmt::format("lint_ignore entry '{}' matched no finding", entry);
}

} // namespace

std::string lint_to_text(const LintReport& report, const arch::ArchList& list,
                         std::string_view list_source) {
    std::string out;
    const std::string list_text = list_name(list);
    const std::vector<Shown> shown = shown_findings(report);
    for (const auto& s : shown) {
        const LintFinding& f = *s.f;
        if (s.block) {
            out += fmt::format("{}:{}-{}: script-emits-gencode: a target block of lines {}-{}: {}",
                               f.file, f.block_first, f.block_last, f.block_first, f.block_last,
                               f.block_summary);
            if (!s.ignored_by.empty())
                out += fmt::format(" \u2014 ignored (lint_ignore: {})\n", s.ignored_by);
            else
                out += fmt::format(" \u2014 {} (every line: --format json)\n", s.why);
            continue;
        }
        out += fmt::format("{}:{}: {}: {}", f.file, f.line, f.rule, f.pattern);
        if (!f.needs.empty()) out += fmt::format(" (needs {}; list has {})", f.needs, list_text);
        if (f.ignored())
            out += fmt::format(" \u2014 ignored (lint_ignore: {})\n", f.ignored_by);
        else
            out += fmt::format(" \u2014 {}\n", f.why);
    }
    out += summary_line(shown, report, list, list_source);
    for (const auto& s : report.skipped)
        out += fmt::format("lint: skipped {}\n", s);
    for (const auto& u : report.unused_ignores)
        out += fmt::format("lint: {}\n", unused_ignore_line(u));
    return out;
}

std::string lint_summary_line(const LintReport& report, const arch::ArchList& list,
                              std::string_view list_source) {
    return summary_line(shown_findings(report), report, list, list_source);
}

std::vector<ci::Finding> lint_findings(const LintReport& report, const std::string& root,
                                       const arch::ArchList& list) {
    namespace fs = std::filesystem;
    using ci::Severity;
    // A finding's path is relative to the linted directory (or is the linted file's name).
    std::error_code ec;
    const fs::path base =
        fs::is_directory(root, ec) ? fs::path(root) : fs::path(root).parent_path();
    std::vector<ci::Finding> out;
    for (const auto& s : shown_findings(report)) {
        const LintFinding& f = *s.f;
        ci::Finding g;
        g.severity = s.ignored_by.empty() ? Severity::Error : Severity::Notice;
        g.file = ci::workspace_path((base / f.file).generic_string());
        g.title = fmt::format("lint {}", f.rule);
        std::string text;
        if (s.block) {
            g.line = f.block_first;
            g.end_line = f.block_last;
            g.title = "lint script-emits-gencode";
            text = fmt::format("a target block of lines {}-{}: {}", f.block_first, f.block_last,
                               f.block_summary);
        } else {
            g.line = f.line;
            text = f.pattern;
            if (!f.needs.empty())
                text += fmt::format(" (needs {}; list has {})", f.needs, list_name(list));
        }
        g.message = s.ignored_by.empty()
                        ? fmt::format("{} \u2014 {}", text, s.why)
                        : fmt::format("{} \u2014 ignored (lint_ignore: {})", text, s.ignored_by);
        out.push_back(std::move(g));
    }
    for (const auto& sk : report.skipped)
        out.push_back({Severity::Warning, "", 0, 0, "lint skipped", fmt::format("skipped {}", sk)});
    for (const auto& u : report.unused_ignores)
        out.push_back({Severity::Warning, "", 0, 0, "lint lint_ignore", unused_ignore_line(u)});
    return out;
}

nlohmann::json lint_to_json(const LintReport& report) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& f : report.findings) {
        arr.push_back(
            {{"file", f.file},
             {"line", f.line},
             {"rule", f.rule},
             {"needs", f.needs.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.needs)},
             {"pattern", f.pattern},
             {"why", f.why},
             {"ignored", f.ignored()},
             {"ignored_by", f.ignored() ? nlohmann::json(f.ignored_by) : nlohmann::json(nullptr)},
             {"block", f.block_first == 0 ? nlohmann::json(nullptr)
                                          : nlohmann::json{{"first", f.block_first},
                                                           {"last", f.block_last},
                                                           {"summary", f.block_summary}}}});
    }
    return arr;
}

} // namespace forge::lint
