#include "verify/report.h"

#include "core/text.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::verify {

nlohmann::json to_json(const ExtensionReport& r) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : r.checks)
        checks.push_back(
            {{"check", c.name}, {"ok", c.ok}, {"detail", c.detail}, {"waived", c.waived}});
    nlohmann::json lost = nlohmann::json::array();
    for (const auto& g : r.lost)
        lost.push_back({{"cc", arch::cc_string(g.sm)},
                        {"products", g.products},
                        {"promised", arch::tier_string(g.promised)},
                        {"actual", arch::tier_string(g.actual)},
                        {"waived", g.waived}});
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
        {"ptx_without_kernels", r.ptx_without_kernels},
        {"lost_gpus", lost},
        {"host_only", r.host_only},
        {"kernels", r.kernels},
        {"toolkit_violations", r.toolkit_violations},
        {"device_code", r.device_code},
        {"source", r.source},
        {"verdict", r.pass ? "pass" : "fail"},
        {"checks", checks},
    };
}

nlohmann::json to_json(const std::vector<ExtensionReport>& reports, const RunContext& run) {
    nlohmann::json exts = nlohmann::json::array();
    for (const auto& r : reports)
        exts.push_back(to_json(r));
    nlohmann::json out = {{"verdict", run.verdict.pass ? "pass" : "fail"},
                          {"reason", run.verdict.reason},
                          {"narrowed", run.narrowed},
                          {"extensions", exts}};
    if (run.expected != nullptr) out.update(extensions_json(*run.expected));
    return out;
}

std::string to_text(const std::vector<ExtensionReport>& reports, const std::string& list_source,
                    const RunContext& run) {
    std::string out;
    for (const auto& n : run.narrowed)
        out += fmt::format("narrowed  {}\n", n);
    if (!run.narrowed.empty()) out += "\n";
    for (const auto& r : reports) {
        std::string name =
            escape_control(r.member ? fmt::format("{} [{}]", r.file, *r.member) : r.file);
        if (r.host_only) {
            out += fmt::format("HOST  {}\n  {}\n\n", name, r.checks.front().detail);
            continue;
        }
        out += fmt::format("{}  {}\n", r.pass ? "PASS" : "FAIL", name);
        out += fmt::format("  expected  {}   (from {}; read by {})\n",
                           r.expected.empty() ? "-" : fmt::format("{}", fmt::join(r.expected, " ")),
                           list_source, r.source);
        out += fmt::format("  found     {}{}{}\n", r.sass.empty() && r.ptx.empty() ? "-" : "",
                           fmt::join(r.sass, " "),
                           r.ptx.empty() ? "" : fmt::format(" {}", fmt::join(r.ptx, " ")));
        int n = 1;
        for (const auto& c : r.checks) {
            // A waived target is never "as asked": the waiver and its evidence sit on the line.
            std::string status = c.ok ? "ok" : "FAIL";
            if (!c.waived.empty())
                status += fmt::format(" (waived: {})", fmt::join(c.waived, "; "));
            out += fmt::format("  {}. {:<12} {:<4}  {}\n", n++, c.name, status, c.detail);
        }
        if (!r.kernels.empty()) {
            std::vector<std::string> k;
            for (const auto& [a, count] : r.kernels)
                k.push_back(fmt::format("{}={}", a, count));
            out += fmt::format("  kernels   {}\n", fmt::join(k, " "));
        }
        for (const auto& w : r.waived)
            out += fmt::format("  waived    {}\n", w);
        if (!r.ptx_without_kernels.empty())
            out += fmt::format("  no-entry  {} (PTX without a kernel: not counted)\n",
                               fmt::join(r.ptx_without_kernels, " "));
        for (const auto& g : r.lost)
            out += fmt::format("  lost      {}\n", g.describe());
        out += "\n";
    }
    if (run.expected != nullptr) out += extensions_text(*run.expected);
    out += fmt::format("verdict: {} ({} extension{}){}\n", run.verdict.pass ? "pass" : "FAIL",
                       reports.size(), reports.size() == 1 ? "" : "s",
                       run.verdict.reason.empty() ? "" : fmt::format(": {}", run.verdict.reason));
    return out;
}

} // namespace forge::verify
