#include "lint/ignore.h"

#include "lint/scan.h"

#include <algorithm>
#include <fmt/format.h>

namespace forge::lint {

using scan::trim;

Result<LintIgnore> parse_lint_ignore(std::string_view entry, std::string_view origin) {
    LintIgnore ig;
    ig.entry = trim(entry);
    auto fail = [&](std::string msg) {
        Error e(std::move(msg));
        e.key = ig.entry;
        if (!origin.empty()) e.file = std::string(origin);
        return e;
    };
    if (ig.entry.empty()) return fail("empty lint_ignore entry");
    std::string_view s = ig.entry;
    auto colon = s.rfind(':');
    if (colon != std::string_view::npos) {
        std::string_view rule = s.substr(colon + 1);
        bool rule_like = !rule.empty() && std::all_of(rule.begin(), rule.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '*';
        });
        if (rule_like) {
            const auto& ids = lint_rule_ids();
            if (rule != "*" && std::find(ids.begin(), ids.end(), rule) == ids.end()) {
                std::string known;
                for (auto id : ids)
                    known += (known.empty() ? "" : ", ") + std::string(id);
                return fail(
                    fmt::format("unknown rule '{}' in lint_ignore entry (rules: {})", rule, known));
            }
            ig.rule = std::string(rule);
            s = s.substr(0, colon);
        }
    }
    ig.glob = trim(s);
    if (ig.glob.empty()) ig.glob = "**";
    if (ig.glob.starts_with("./")) ig.glob = ig.glob.substr(2);
    if (ig.glob.ends_with("/")) ig.glob += "**";
    return ig;
}

bool ignore_matches(const LintIgnore& ignore, const LintFinding& finding) {
    if (!ignore.rule.empty() && ignore.rule != "*" && ignore.rule != finding.rule) return false;
    return glob_match(ignore.glob, finding.file);
}

} // namespace forge::lint
