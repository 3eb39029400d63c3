#include "lint/report.h"

#include <fmt/format.h>

namespace forge::lint {

std::string lint_to_text(const LintReport& report, const arch::ArchList& list,
                         std::string_view list_source) {
    std::string out;
    const std::string list_text = list.empty() ? std::string("nothing") : list.to_string();
    for (const auto& f : report.findings) {
        out += fmt::format("{}:{}: {}: {}", f.file, f.line, f.rule, f.pattern);
        if (!f.needs.empty()) out += fmt::format(" (needs {}; list has {})", f.needs, list_text);
        if (f.ignored())
            out += fmt::format(" \u2014 ignored (lint_ignore: {})\n", f.ignored_by);
        else
            out += fmt::format(" \u2014 {}\n", f.why);
    }
    out += fmt::format("lint: {} finding{}, {} ignored, {} file{} scanned (list: {}{}{})\n",
                       report.active_count(), report.active_count() == 1 ? "" : "s",
                       report.ignored_count(), report.files_scanned,
                       report.files_scanned == 1 ? "" : "s", list_text,
                       list_source.empty() ? "" : " from ", list_source);
    for (const auto& s : report.skipped)
        out += fmt::format("lint: skipped {}\n", s);
    for (const auto& u : report.unused_ignores)
        out += fmt::format("lint: lint_ignore entry '{}' matched no finding\n", u);
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
             {"ignored_by", f.ignored() ? nlohmann::json(f.ignored_by) : nlohmann::json(nullptr)}});
    }
    return arr;
}

} // namespace forge::lint
