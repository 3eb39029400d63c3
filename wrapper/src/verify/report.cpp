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
        {"embedded",
         {{"judged", r.embedded.judged},
          {"containers", r.embedded.containers},
          {"entries", r.embedded.entries},
          {"sections", r.embedded.sections},
          {"sass", r.embedded.sass},
          {"ptx", r.embedded.ptx},
          {"lto", r.embedded.lto}}},
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
        const std::string embedded = r.embedded.containers == 0
                                         ? ""
                                         : fmt::format("  embedded  {}\n", r.embedded.describe());
        if (r.host_only) {
            out += fmt::format("HOST  {}\n  {}\n{}\n", name, r.checks.front().detail, embedded);
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
        out += embedded;
        out += "\n";
    }
    if (run.expected != nullptr) out += extensions_text(*run.expected);
    out += verdict_line(reports, run);
    return out;
}

std::string verdict_line(const std::vector<ExtensionReport>& reports, const RunContext& run) {
    // Inputs not read are counted as such: "0 extensions" would be said of files not understood.
    std::vector<std::string> counted;
    if (!reports.empty() || run.unreadable.empty())
        counted.push_back(
            fmt::format("{} extension{}", reports.size(), reports.size() == 1 ? "" : "s"));
    if (!run.unreadable.empty())
        counted.push_back(fmt::format("{} input(s) not read", run.unreadable.size()));
    return fmt::format("verdict: {} ({}){}\n", run.verdict.pass ? "pass" : "FAIL",
                       fmt::join(counted, ", "),
                       run.verdict.reason.empty() ? "" : fmt::format(": {}", run.verdict.reason));
}

namespace {

std::string module_label(const ExtensionReport& r) {
    return r.member ? fmt::format("{} [{}]", r.file, *r.member) : r.file;
}

std::string expected_label(const ModuleResult& m) {
    return fmt::format("expected extension {} ({}): {}", m.expected.glob, m.expected.source,
                       m.status == "missing"
                           ? std::string("never built")
                           : fmt::format("no device code in {}", fmt::join(m.matched, " ")));
}

} // namespace

std::vector<ci::Finding> to_findings(const std::vector<ExtensionReport>& reports,
                                     const RunContext& run) {
    using ci::Severity;
    std::vector<ci::Finding> out;
    bool error = false;
    for (const auto& n : run.narrowed)
        out.push_back({Severity::Notice, "", 0, 0, "verify narrowed", "narrowed " + n});
    for (const auto& [file, message] : run.unreadable) {
        out.push_back(
            {Severity::Error, ci::workspace_path(file), 0, 0, "verify unreadable", message});
        error = true;
    }
    for (const auto& r : reports) {
        if (r.host_only) continue; // listed in the text report, never judged
        const std::string file = ci::workspace_path(r.file);
        const std::string label = module_label(r);
        for (const auto& c : r.checks) {
            if (!c.ok) {
                out.push_back(
                    {Severity::Error, file, 0, 0, "verify " + c.name,
                     fmt::format("{}: {}{}", label, c.detail,
                                 c.waived.empty()
                                     ? std::string()
                                     : fmt::format(" (waived: {})", fmt::join(c.waived, "; ")))});
                error = true;
            } else if (!c.waived.empty()) {
                out.push_back({Severity::Warning, file, 0, 0, "verify " + c.name + " waived",
                               fmt::format("{}: waived: {}", label, fmt::join(c.waived, "; "))});
            }
        }
    }
    if (run.expected != nullptr)
        for (const auto& m : run.expected->modules) {
            if (m.status == "ok") continue;
            out.push_back({Severity::Error, "", 0, 0, "verify extensions", expected_label(m)});
            error = true;
        }
    if (!run.verdict.pass && !error) {
        std::string verdict = verdict_line(reports, run);
        verdict.pop_back(); // the newline
        out.push_back({Severity::Error, "", 0, 0, "verify", std::move(verdict)});
    }
    return out;
}

std::vector<ci::TestCase> to_test_cases(const std::vector<ExtensionReport>& reports,
                                        const RunContext& run) {
    using Status = ci::TestCase::Status;
    std::vector<ci::TestCase> out;
    for (const auto& [file, message] : run.unreadable)
        out.push_back({file, "read", Status::Error, message, ""});
    for (const auto& r : reports) {
        const std::string label = module_label(r);
        if (r.host_only) {
            out.push_back({label, "device-code", Status::Skipped,
                           r.checks.empty() ? std::string("host-only") : r.checks.front().detail,
                           ""});
            continue;
        }
        for (const auto& c : r.checks) {
            std::string detail = c.waived.empty()
                                     ? std::string()
                                     : fmt::format("waived: {}", fmt::join(c.waived, "; "));
            out.push_back({label, c.name, c.ok ? Status::Pass : Status::Failure, c.detail,
                           std::move(detail)});
            if (c.ok) out.back().message.clear();
        }
    }
    if (run.expected != nullptr)
        for (const auto& m : run.expected->modules)
            out.push_back({"expected extensions", m.expected.glob,
                           m.status == "ok" ? Status::Pass : Status::Failure,
                           m.status == "ok" ? std::string() : expected_label(m), ""});
    std::string verdict = verdict_line(reports, run);
    verdict.pop_back(); // the newline
    out.push_back({"verify", "verdict", run.verdict.pass ? Status::Pass : Status::Failure,
                   run.verdict.pass ? std::string() : verdict, ""});
    return out;
}

} // namespace forge::verify
