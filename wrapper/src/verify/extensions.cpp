#include "verify/extensions.h"

#include "core/glob.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::verify {

namespace {

std::string module_name(const ExtensionReport& r) {
    return r.member ? *r.member : r.file;
}

} // namespace

bool module_matches(const std::string& glob, const std::string& file,
                    const std::optional<std::string>& member) {
    return member ? glob_match(glob, *member) : glob_match_unrooted(glob, file);
}

bool expected_host_only(const std::vector<ExpectedModule>& expected, const std::string& file,
                        const std::optional<std::string>& member) {
    return std::any_of(expected.begin(), expected.end(), [&](const ExpectedModule& e) {
        return !e.device_code && module_matches(e.glob, file, member);
    });
}

ExtensionsReport check_extensions(const std::vector<ExpectedModule>& expected,
                                  const std::vector<ExtensionReport>& modules,
                                  const std::vector<UnreadFile>& unread) {
    ExtensionsReport out;
    for (const auto& e : expected) {
        ModuleResult m{e, {}, "missing", ""};
        bool with_code = false;
        for (const auto& r : modules) {
            if (!module_matches(e.glob, r.file, r.member)) continue;
            m.matched.push_back(module_name(r));
            with_code = with_code || r.device_code;
        }
        if (m.matched.empty() && !unread.empty()) {
            m.status = "unreadable";
            m.why = unread.front().message;
            for (const auto& u : unread)
                if (!u.member.empty() && module_matches(e.glob, u.file, u.member))
                    m.why = u.message;
            out.unreadable.push_back(e.glob);
        } else if (m.matched.empty()) {
            out.missing.push_back(e.glob);
        } else if (e.device_code && !with_code) {
            out.no_device_code.push_back(e.glob);
        }
        if (!m.matched.empty()) m.status = e.device_code && !with_code ? "no-device-code" : "ok";
        out.modules.push_back(std::move(m));
    }
    out.check.name = "extensions";
    out.check.ok = out.missing.empty() && out.no_device_code.empty() && out.unreadable.empty();
    std::vector<std::string> parts;
    if (!out.unreadable.empty())
        parts.push_back(fmt::format("not judged: {} (a file could not be read)",
                                    fmt::join(out.unreadable, " ")));
    if (!out.missing.empty())
        parts.push_back(fmt::format("absent: {} ({} of {} expected modules were never built)",
                                    fmt::join(out.missing, " "), out.missing.size(),
                                    expected.size()));
    if (!out.no_device_code.empty())
        parts.push_back(fmt::format("no device code in {}", fmt::join(out.no_device_code, " ")));
    out.check.detail = out.check.ok ? fmt::format("{} expected module{} present", expected.size(),
                                                  expected.size() == 1 ? "" : "s")
                                    : fmt::format("{}", fmt::join(parts, "; "));
    return out;
}

nlohmann::json extensions_json(const ExtensionsReport& r) {
    nlohmann::json modules = nlohmann::json::array();
    for (const auto& m : r.modules) {
        nlohmann::json j = {{"module", m.expected.glob},
                            {"reason", m.expected.reason},
                            {"device_code", m.expected.device_code},
                            {"source", m.expected.source},
                            {"matched", m.matched},
                            {"status", m.status}};
        if (m.status == "unreadable") j["error"] = m.why;
        modules.push_back(std::move(j));
    }
    return {{"missing_extensions", r.missing}, {"expected_extensions", modules}};
}

std::string extensions_text(const ExtensionsReport& r) {
    std::string out = fmt::format("{}  expected extensions\n", r.pass() ? "PASS" : "FAIL");
    out += fmt::format("  1. {:<12} {:<4}  {}\n", r.check.name, r.check.ok ? "ok" : "FAIL",
                       r.check.detail);
    for (const auto& m : r.modules) {
        std::string what = m.matched.empty() ? std::string("never built")
                                             : fmt::format("{}", fmt::join(m.matched, " "));
        if (m.status == "unreadable") what = "not read: " + m.why;
        out += fmt::format("  {:<14} {}  {}\n", m.status, m.expected.glob, what);
        out += fmt::format("  {:<14} {}[{}]\n", "",
                           m.expected.reason.empty() ? "" : m.expected.reason + "  ",
                           m.expected.source);
    }
    out += "\n";
    return out;
}

} // namespace forge::verify
