#include "lint/report.h"

#include <fmt/format.h>
#include <map>
#include <set>

namespace forge::lint {

std::string lint_to_text(const LintReport& report, const arch::ArchList& list,
                         std::string_view list_source) {
    std::string out;
    const std::string list_text = list.empty() ? std::string("nothing") : list.to_string();
    // A script block (a ladder of target lines) is one finding here: active when any of its lines
    // is, ignored when all are.
    struct Block {
        std::string ignored_by; // "" when any line is active
        std::string why;        // the first -gencode line's
    };
    std::map<std::pair<std::string, int>, Block> blocks;
    for (const auto& f : report.findings) {
        if (f.block_first == 0) continue;
        auto [it, fresh] = blocks.try_emplace({f.file, f.block_first}, Block{f.ignored_by, ""});
        if (!fresh && !f.ignored()) it->second.ignored_by.clear();
        if (it->second.why.empty() && f.rule == "script-emits-gencode") it->second.why = f.why;
    }
    std::set<std::pair<std::string, int>> printed;
    std::size_t active = 0, ignored = 0;
    for (const auto& f : report.findings) {
        if (f.block_first != 0) {
            if (!printed.insert({f.file, f.block_first}).second) continue;
            const Block& b = blocks.at({f.file, f.block_first});
            const std::string& by = b.ignored_by;
            out += fmt::format("{}:{}-{}: script-emits-gencode: a target block of lines {}-{}: {}",
                               f.file, f.block_first, f.block_last, f.block_first, f.block_last,
                               f.block_summary);
            if (!by.empty()) {
                out += fmt::format(" \u2014 ignored (lint_ignore: {})\n", by);
                ++ignored;
            } else {
                out += fmt::format(" \u2014 {} (every line: --format json)\n",
                                   b.why.empty() ? f.why : b.why);
                ++active;
            }
            continue;
        }
        out += fmt::format("{}:{}: {}: {}", f.file, f.line, f.rule, f.pattern);
        if (!f.needs.empty()) out += fmt::format(" (needs {}; list has {})", f.needs, list_text);
        if (f.ignored()) {
            out += fmt::format(" \u2014 ignored (lint_ignore: {})\n", f.ignored_by);
            ++ignored;
        } else {
            out += fmt::format(" \u2014 {}\n", f.why);
            ++active;
        }
    }
    out += fmt::format("lint: {} finding{}, {} ignored, {} file{} scanned (list: {}{}{})\n", active,
                       active == 1 ? "" : "s", ignored, report.files_scanned,
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
             {"ignored_by", f.ignored() ? nlohmann::json(f.ignored_by) : nlohmann::json(nullptr)},
             {"block", f.block_first == 0 ? nlohmann::json(nullptr)
                                          : nlohmann::json{{"first", f.block_first},
                                                           {"last", f.block_last},
                                                           {"summary", f.block_summary}}}});
    }
    return arr;
}

} // namespace forge::lint
