// Rendering audit results: one JSON object per file, and a summary table for a CI log.
#include "provenance/audit.h"

#include "core/text.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::provenance {
namespace {

nlohmann::json policy_json(const AuditPolicy& p) {
    nlohmann::json j;
    j["arch_list"] = p.list.to_string();
    auto targets = nlohmann::json::array();
    for (const auto& t : p.list.targets())
        targets.push_back(t.name());
    j["targets"] = targets;
    j["source"] = p.source;
    j["build_epoch"] = p.build_epoch ? nlohmann::json(*p.build_epoch) : nlohmann::json();
    j["policy_file"] = p.policy_file.empty() ? nlohmann::json() : nlohmann::json(p.policy_file);
    j["policy_sha256"] =
        p.policy_sha256.empty() ? nlohmann::json() : nlohmann::json(p.policy_sha256);
    return j;
}

} // namespace

size_t narrowed_count(const std::vector<AuditResult>& results) {
    return static_cast<size_t>(std::count_if(results.begin(), results.end(),
                                             [](const AuditResult& r) { return r.narrowed; }));
}

std::map<std::string, size_t> audit_counts(const std::vector<AuditResult>& results) {
    std::map<std::string, size_t> counts;
    for (auto s : kAuditStatuses)
        counts[std::string(s)] = 0;
    for (const auto& r : results)
        ++counts[r.status];
    return counts;
}

nlohmann::json audit_to_json(const AuditResult& r, const AuditPolicy& policy) {
    nlohmann::json j;
    j["file"] = r.file;
    j["status"] = r.status;
    j["inferred"] = r.inferred;
    if (r.inferred_match) j["inferred_match"] = *r.inferred_match;
    nlohmann::json carries;
    carries["targets"] = r.carries;
    carries["stub_only"] = r.stub_only;
    carries["extensions"] = r.extensions;
    j["carries"] = r.status == kAuditUnreadable ? nlohmann::json() : carries;
    if (r.provenance) {
        nlohmann::json p;
        p["source"] = r.provenance->source;
        p["where"] = r.provenance->where;
        p["arch_list"] = r.provenance->list.to_string();
        p["build_epoch"] = r.provenance->build_epoch ? nlohmann::json(*r.provenance->build_epoch)
                                                     : nlohmann::json();
        p["record"] = r.provenance->record;
        j["provenance"] = p;
    } else {
        j["provenance"] = nullptr;
    }
    j["policy"] = policy_json(policy);
    j["details"] = r.details;
    j["lost_extensions"] = r.lost_extensions;
    j["waivers"] = r.waivers;
    j["narrowed"] = r.narrowed;
    if (!r.error.empty()) j["error"] = r.error;
    return j;
}

nlohmann::json audit_to_json(const std::vector<AuditResult>& results, const AuditPolicy& policy) {
    auto out = nlohmann::json::array();
    for (const auto& r : results)
        out.push_back(audit_to_json(r, policy));
    return out;
}

std::string audit_to_text(const std::vector<AuditResult>& results, const AuditPolicy& policy) {
    std::string out =
        fmt::format("audit: {} file(s) against {} = {} (build_epoch {})\n", results.size(),
                    policy.source, policy.list.to_string(),
                    policy.build_epoch ? std::to_string(*policy.build_epoch) : std::string("none"));
    auto counts = audit_counts(results);
    out += fmt::format("  {:<15} {:>6}\n", "status", "files");
    for (auto s : kAuditStatuses)
        out += fmt::format("  {:<15} {:>6}\n", s, counts[std::string(s)]);
    if (!policy.narrowed.empty())
        out += fmt::format("  narrowed cell: {} drops {}\n", policy.source,
                           fmt::join(policy.narrowed, " "));
    out += fmt::format("  {:<15} {:>6}\n", "narrowed", narrowed_count(results));
    for (const auto& r : results) {
        // A waiver changes what "ok" means, so it is printed whatever the status.
        for (const auto& w : r.waivers)
            out += fmt::format("{:<15} {}: {}\n", "waived", r.file, w);
        if (r.status == kAuditOk) continue;
        std::string first = r.details.empty() ? std::string() : r.details.front();
        // The reader's error starts with the file name already printed on this line.
        if (std::string prefix = r.file + ": "; first.starts_with(prefix))
            first = first.substr(prefix.size());
        out +=
            fmt::format("{:<15} {}: {}\n", r.status, escape_control(r.file), escape_control(first));
        for (size_t i = 1; i < r.details.size(); ++i)
            out += fmt::format("{:<15}   {}\n", "", escape_control(r.details[i]));
    }
    return out;
}

} // namespace forge::provenance
