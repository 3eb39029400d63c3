#include "verify/report.h"

#include "core/text.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::verify {

nlohmann::json to_json(const ExtensionReport& r) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : r.checks)
        checks.push_back({{"check", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    return {
        {"file", r.file},
        {"member", r.member ? nlohmann::json(*r.member) : nlohmann::json(nullptr)},
        {"expected", r.expected},
        {"sass", r.sass},
        {"ptx", r.ptx},
        {"lto", r.lto},
        {"missing_sass", r.missing_sass},
        {"missing_ptx", r.missing_ptx},
        {"missing_families", r.missing_families},
        {"extra", r.extra},
        {"waived", r.waived},
        {"stub_only", r.stub_only},
        {"kernels", r.kernels},
        {"toolkit_violations", r.toolkit_violations},
        {"device_code", r.device_code},
        {"source", r.source},
        {"verdict", r.pass ? "pass" : "fail"},
        {"checks", checks},
    };
}

nlohmann::json to_json(const std::vector<ExtensionReport>& reports,
                       const ExtensionsReport* expected) {
    nlohmann::json exts = nlohmann::json::array();
    bool pass = !reports.empty() && (expected == nullptr || expected->pass());
    for (const auto& r : reports) {
        exts.push_back(to_json(r));
        pass = pass && r.pass;
    }
    nlohmann::json out = {{"verdict", pass ? "pass" : "fail"}, {"extensions", exts}};
    if (expected != nullptr) out.update(extensions_json(*expected));
    return out;
}

std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source,
                    const ExtensionsReport* expected) {
    std::string out;
    bool pass = !reports.empty() && (expected == nullptr || expected->pass());
    for (const auto& r : reports) {
        pass = pass && r.pass;
        std::string name =
            escape_control(r.member ? fmt::format("{} [{}]", r.file, *r.member) : r.file);
        out += fmt::format("{}  {}\n", r.pass ? "PASS" : "FAIL", name);
        out += fmt::format("  expected  {}   (from {}; read by {})\n",
                           r.expected.empty() ? "-" : fmt::format("{}", fmt::join(r.expected, " ")),
                           list_source, r.source);
        out += fmt::format("  found     {}{}{}\n", r.sass.empty() && r.ptx.empty() ? "-" : "",
                           fmt::join(r.sass, " "),
                           r.ptx.empty() ? "" : fmt::format(" {}", fmt::join(r.ptx, " ")));
        int n = 1;
        for (const auto& c : r.checks)
            out += fmt::format("  {}. {:<12} {:<4}  {}\n", n++, c.name, c.ok ? "ok" : "FAIL",
                               c.detail);
        if (!r.kernels.empty()) {
            std::vector<std::string> k;
            for (const auto& [a, count] : r.kernels)
                k.push_back(fmt::format("{}={}", a, count));
            out += fmt::format("  kernels   {}\n", fmt::join(k, " "));
        }
        for (const auto& w : r.waived)
            out += fmt::format("  waived    {}\n", w);
        out += "\n";
    }
    if (expected != nullptr) out += extensions_text(*expected);
    out += fmt::format("verdict: {} ({} extension{})\n", pass ? "pass" : "FAIL", reports.size(),
                       reports.size() == 1 ? "" : "s");
    return out;
}

} // namespace forge::verify
