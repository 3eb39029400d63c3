// Rendering audit results as they arrive: the policy once, one entry per file, the counts last.
#include "provenance/audit.h"

#include "core/json.h"
#include "core/text.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>

namespace forge::provenance {

nlohmann::json audit_policy_json(const AuditPolicy& p) {
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

nlohmann::json audit_to_json(const AuditResult& r) {
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
    j["details"] = r.details;
    j["lost_extensions"] = r.lost_extensions;
    j["waivers"] = r.waivers;
    j["narrowed"] = r.narrowed;
    if (!r.error.empty()) j["error"] = r.error;
    return j;
}

AuditReport::AuditReport(std::ostream& out, AuditFormat format, const AuditPolicy& policy,
                         size_t files)
    : out_(out), format_(format), policy_(policy), files_(files) {
    for (auto s : kAuditStatuses)
        counts_[std::string(s)] = 0;
    if (format_ == AuditFormat::Json) {
        out_ << "{\"policy\": " << json_text(audit_policy_json(policy_))
             << ",\n\"files\": " << files_ << ",\n\"entries\": [";
    } else {
        out_ << fmt::format("audit: {} file(s) against {} = {} (build_epoch {})\n", files_,
                            policy_.source, policy_.list.to_string(),
                            policy_.build_epoch ? std::to_string(*policy_.build_epoch)
                                                : std::string("none"));
        if (!policy_.narrowed.empty())
            out_ << fmt::format("  narrowed cell: {} drops {}\n", policy_.source,
                                fmt::join(policy_.narrowed, " "));
    }
    out_.flush();
}

void AuditReport::add(const AuditResult& r) {
    ++counts_[r.status];
    narrowed_ += r.narrowed ? 1 : 0;
    if (format_ == AuditFormat::Json) {
        out_ << (audited_ == 0 ? "\n" : ",\n") << json_text(audit_to_json(r));
        ++audited_;
        out_.flush();
        return;
    }
    ++audited_;
    std::string out;
    // A waiver changes what "ok" means, so it is printed whatever the status.
    for (const auto& w : r.waivers)
        out += fmt::format("{:<15} {}: {}\n", "waived", escape_control(r.file), escape_control(w));
    if (r.status != kAuditOk) {
        std::string first = r.details.empty() ? std::string() : r.details.front();
        // The reader's error starts with the file name already printed on this line.
        if (std::string prefix = r.file + ": "; first.starts_with(prefix))
            first = first.substr(prefix.size());
        out +=
            fmt::format("{:<15} {}: {}\n", r.status, escape_control(r.file), escape_control(first));
        for (size_t i = 1; i < r.details.size(); ++i)
            out += fmt::format("{:<15}   {}\n", "", escape_control(r.details[i]));
    }
    out_ << out;
    if (!out.empty()) out_.flush();
}

void AuditReport::finish(bool interrupted) {
    if (format_ == AuditFormat::Json) {
        nlohmann::json counts(counts_);
        out_ << (audited_ == 0 ? "],\n" : "\n],\n") << "\"counts\": " << json_text(counts)
             << ",\n\"narrowed\": " << narrowed_ << ",\n\"audited\": " << audited_
             << ",\n\"interrupted\": " << (interrupted ? "true" : "false") << "}\n";
        out_.flush();
        return;
    }
    std::string out = fmt::format("  {:<15} {:>6}\n", "status", "files");
    for (auto s : kAuditStatuses)
        out += fmt::format("  {:<15} {:>6}\n", s, counts_.at(std::string(s)));
    out += fmt::format("  {:<15} {:>6}\n", "narrowed", narrowed_);
    if (interrupted)
        out += fmt::format("interrupted: {} of {} file(s) audited; the rest were not read\n",
                           audited_, files_);
    out_ << out;
    out_.flush();
}

nlohmann::json audit_to_json(const std::vector<AuditResult>& results, const AuditPolicy& policy) {
    std::ostringstream os;
    AuditReport report(os, AuditFormat::Json, policy, results.size());
    for (const auto& r : results)
        report.add(r);
    report.finish(false);
    return nlohmann::json::parse(os.str());
}

std::string audit_to_text(const std::vector<AuditResult>& results, const AuditPolicy& policy) {
    std::ostringstream os;
    AuditReport report(os, AuditFormat::Text, policy, results.size());
    for (const auto& r : results)
        report.add(r);
    report.finish(false);
    return os.str();
}

} // namespace forge::provenance
