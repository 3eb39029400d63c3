// The fleet audit: classification, the directory sweep and the worker pool (the ledger: ledger.h).
#include "provenance/audit.h"

#include "core/workers.h"
#include "provenance/modules.h"
#include "provenance/stamp.h"
#include "verify/gate.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

namespace forge::provenance {
namespace {

bool has_gpu_code(const binary::Extension& e) {
    return !e.entries.empty();
}

std::string epoch_text(const std::optional<long>& e) {
    return e ? std::to_string(*e) : "none";
}

} // namespace

Result<Provenance> provenance_from_record(const nlohmann::json& record, std::string source,
                                          std::string where) {
    Provenance p;
    p.source = std::move(source);
    p.where = std::move(where);
    p.record = record;
    auto bad = [&](std::string msg, std::string key) {
        Error e{std::move(msg)};
        e.file = p.where;
        e.key = std::move(key);
        return e;
    };
    if (!record.is_object()) return bad("the provenance record is not a JSON object", "");
    auto it = record.find("arch_list");
    if (it == record.end() || !it->is_string())
        return bad("the provenance record has no string arch_list", "arch_list");
    auto list = arch::ArchList::parse(it->get<std::string>(), p.where + ": arch_list");
    if (!list) return std::move(list).error();
    p.list = std::move(*list);
    if (auto e = record.find("build_epoch"); e != record.end() && !e->is_null()) {
        if (!e->is_number_integer()) return bad("build_epoch is not an integer", "build_epoch");
        p.build_epoch = e->get<long>();
    }
    if (auto w = record.find("allow_missing"); w != record.end() && !w->is_null()) {
        if (!w->is_array()) return bad("allow_missing is not a list of targets", "allow_missing");
        for (const auto& t : *w) {
            if (!t.is_string())
                return bad("allow_missing is not a list of targets", "allow_missing");
            auto target = arch::parse_target(t.get<std::string>(), p.where + ": allow_missing");
            if (!target) return std::move(target).error();
            p.allow_missing.push_back(*target);
        }
    }
    return p;
}

bool carries_list(const std::vector<binary::Extension>& extensions, const arch::ArchList& list,
                  const std::vector<arch::Target>& allow_missing, std::vector<std::string>* why,
                  const std::string& waiver_source, std::vector<std::string>* waived) {
    verify::Options opts; // exact match: no extras, no pure-python pass; only declared waivers
    for (const auto& t : allow_missing)
        opts.waivers.push_back({t, waiver_source});
    std::set<std::string> used;
    bool any = false, all = true;
    for (const auto& ext : extensions) {
        if (!has_gpu_code(ext)) continue;
        any = true;
        auto report = verify::verify_extension(ext, list, opts);
        used.insert(report.waived.begin(), report.waived.end());
        if (report.pass) continue;
        all = false;
        if (why) {
            std::string where = ext.member ? *ext.member : std::string();
            for (const auto& c : report.checks)
                if (!c.ok)
                    why->push_back(where.empty()
                                       ? fmt::format("{}: {}", c.name, c.detail)
                                       : fmt::format("{}: {}: {}", where, c.name, c.detail));
        }
    }
    if (!any && why) why->push_back("no GPU code in any extension");
    if (waived != nullptr) waived->assign(used.begin(), used.end());
    return any && all;
}

AuditResult classify(const std::string& file, const std::vector<binary::Extension>& extensions,
                     const std::optional<Provenance>& provenance, const AuditPolicy& policy) {
    AuditResult r;
    r.file = file;
    std::set<std::string> carried, stubs, with_kernels;
    for (const auto& ext : extensions) {
        if (!has_gpu_code(ext)) continue;
        ++r.extensions;
        for (const auto& e : ext.entries) {
            if (e.target.kind == arch::Kind::Sass && (e.stub || (e.kernels && *e.kernels == 0))) {
                stubs.insert(e.target.name());
                continue;
            }
            carried.insert(e.target.name());
        }
    }
    r.carries.assign(carried.begin(), carried.end());
    for (const auto& s : stubs)
        if (!carried.count(s)) r.stub_only.push_back(s);
    r.provenance = provenance;

    if (!provenance) {
        r.status = kAuditNoProvenance;
        r.inferred = true;
        std::vector<std::string> why;
        r.narrowed = !policy.narrowed.empty();
        r.inferred_match = carries_list(extensions, policy.list, policy.allow_missing, &why,
                                        policy.waiver_source, &r.waivers);
        r.details.push_back(fmt::format(
            "no stamp and no ledger entry; inferred from its contents: {} the current policy ({})",
            *r.inferred_match ? "matches" : "does not match", policy.list.to_string()));
        for (auto& w : why)
            r.details.push_back(std::move(w));
        return r;
    }

    std::vector<std::string> why;
    // A stamp or ledger record may waive what the package file does not: say so.
    std::vector<arch::Target> only_there;
    for (const auto& t : provenance->allow_missing)
        if (std::none_of(policy.allow_missing.begin(), policy.allow_missing.end(),
                         [&](const arch::Target& p) { return p.folded() == t.folded(); }))
            only_there.push_back(t);
    const std::string from = provenance->source == "stamp"
                                 ? fmt::format("the wheel's own stamp {}", provenance->where)
                                 : fmt::format("the ledger {}", provenance->where);
    r.narrowed = provenance->list == policy.list && !policy.narrowed.empty();
    if (auto n = provenance->record.find("narrowed");
        n != provenance->record.end() && n->is_array() && !n->empty())
        r.narrowed = true;
    bool carried_ok = carries_list(extensions, provenance->list, provenance->allow_missing, &why,
                                   from, &r.waivers);
    for (auto& w : r.waivers)
        for (const auto& t : only_there)
            if (w.starts_with(t.name() + " ") || w.starts_with(t.folded().name() + " "))
                w.insert(w.size() - 1, provenance->source == "stamp"
                                           ? "; found only in the artifact, not in the package file"
                                           : "; found only in the ledger, not in the package file");
    if (!carried_ok) {
        r.status = kAuditWheelWrong;
        r.details.push_back(fmt::format("does not carry what it was built to carry ({}, from {})",
                                        provenance->list.to_string(), provenance->where));
        for (auto& w : why)
            r.details.push_back(std::move(w));
        return r;
    }
    if (!(provenance->list == policy.list)) {
        r.status = kAuditConfigMoved;
        r.details.push_back(fmt::format("built for {} as asked; the policy now asks for {}",
                                        provenance->list.to_string(), policy.list.to_string()));
        return r;
    }
    if (provenance->build_epoch && policy.build_epoch) {
        if (*provenance->build_epoch < *policy.build_epoch) {
            r.status = kAuditStaleEpoch;
            r.details.push_back(fmt::format("built at build_epoch {}; the policy is at {}: the "
                                            "policy change asks for a rebuild",
                                            *provenance->build_epoch, *policy.build_epoch));
            return r;
        }
        if (*provenance->build_epoch > *policy.build_epoch) {
            // The wheel is newer than the policy audited against: the config moved backwards.
            r.status = kAuditConfigMoved;
            r.details.push_back(fmt::format("built at build_epoch {}, newer than the policy's {}",
                                            *provenance->build_epoch, *policy.build_epoch));
            return r;
        }
    } else if (provenance->build_epoch || policy.build_epoch) {
        r.details.push_back(fmt::format("build_epoch not compared (provenance {}, policy {})",
                                        epoch_text(provenance->build_epoch),
                                        epoch_text(policy.build_epoch)));
    }
    r.status = kAuditOk;
    return r;
}

void check_lost_extensions(AuditResult& r, const std::vector<binary::Extension>& extensions,
                           const LedgerEntry& previous, const std::string& previous_filename) {
    if (r.status == kAuditUnreadable) return;
    auto modules = modules_from_record(previous.record, previous.where);
    if (!modules) {
        r.details.push_back(fmt::format("modules not compared: {}", modules.error().to_string()));
        return;
    }
    std::set<std::string> have;
    for (const auto& m : module_records(extensions))
        have.insert(module_key(m.module));
    std::vector<std::string> lost;
    for (const auto& m : *modules)
        if (!have.count(module_key(m.module))) lost.push_back(m.module);
    if (lost.empty()) return;
    std::vector<std::string> details;
    for (const auto& m : lost)
        details.push_back(
            fmt::format("lacks {}, which {} carried ({})", m, previous_filename, previous.where));
    if (r.status != kAuditOk) details.push_back(fmt::format("besides ({}):", r.status));
    details.insert(details.end(), r.details.begin(), r.details.end());
    r.details = std::move(details);
    r.status = kAuditExtensionLost;
    r.lost_extensions = std::move(lost);
}

AuditResult audit_file(const std::string& file, const Ledger* ledger, const AuditPolicy& policy) {
    auto unreadable = [&](const Error& e) {
        AuditResult r;
        r.file = file;
        r.status = kAuditUnreadable;
        r.error = e.to_string();
        r.details.push_back(r.error);
        return r;
    };
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // kernel-less stubs must not count as carried
    ro.cache = policy.image_cache;
    ro.scan_embedded = false; // the stamp records the registered fatbins (what the build made)
    auto exts = binary::read_extensions(file, ro);
    if (!exts) return unreadable(exts.error());

    std::optional<Provenance> provenance;
    std::string ledger_note;
    const std::string filename = std::filesystem::path(file).filename().string();
    if (filename.ends_with(".whl")) {
        auto stamp = read_stamp(file);
        if (!stamp) return unreadable(stamp.error());
        if (*stamp) {
            auto p = provenance_from_record((*stamp)->record, "stamp", (*stamp)->member);
            if (!p) return unreadable(p.error().in_file(file));
            provenance = std::move(*p);
        }
    }
    std::optional<LedgerEntry> entry;
    if (ledger) {
        auto found = ledger->find(filename);
        if (!found) return unreadable(found.error());
        entry = std::move(*found);
    }
    if (!provenance && entry) {
        auto p = provenance_from_record(entry->record, "ledger", entry->where);
        if (!p) return unreadable(p.error());
        provenance = std::move(*p);
    } else if (provenance && entry) {
        auto p = provenance_from_record(entry->record, "ledger", entry->where);
        if (p && !(p->list == provenance->list))
            ledger_note =
                fmt::format("the ledger ({}) says {}, the stamp says {}; the stamp wins",
                            entry->where, p->list.to_string(), provenance->list.to_string());
    }
    entry.reset(); // its record lives on in the provenance
    AuditResult r = classify(file, *exts, provenance, policy);
    if (!ledger_note.empty()) r.details.push_back(ledger_note);
    if (ledger && filename.ends_with(".whl")) {
        auto previous = ledger->previous_wheel(filename);
        if (!previous) return unreadable(previous.error());
        if (*previous) check_lost_extensions(r, *exts, **previous, (*previous)->wheel);
    }
    return r;
}

namespace {

// Results finished out of order wait here until every file before them is delivered; a worker
// starts a file only while it is within `window` of the next one to deliver, so what waits stays
// bounded whatever the fleet's size (a slow file holds back at most the window).
class InOrderDelivery {
  public:
    InOrderDelivery(size_t total, size_t window, const AuditSink& sink,
                    const AuditProgress& progress)
        : total_(total), window_(window), sink_(sink), progress_(progress) {}

    // The next file to start (its index and path), or nullopt when there is none or the audit
    // stops.
    std::optional<std::pair<size_t, Result<std::string>>> claim(const NextAuditFile& next,
                                                                const std::atomic<bool>* stop) {
        std::unique_lock lock(mutex_);
        if (stopped(stop) || next_ >= total_) return std::nullopt;
        const size_t i = next_++;
        Result<std::string> file = next();
        // `stop` is set by a signal handler, which cannot notify: the wait looks at it again
        // every so often, not only when a delivery wakes it.
        constexpr auto kLookAgain = std::chrono::milliseconds(100);
        while (!room_.wait_for(lock, kLookAgain,
                               [&] { return i < delivered_ + window_ || stopped(stop); })) {
        }
        if (stopped(stop)) return std::nullopt; // stopped while waiting
        return std::pair(i, std::move(file));
    }

    void done(size_t i, AuditResult&& r) {
        std::lock_guard lock(mutex_);
        pending_.emplace(i, std::move(r));
        ++finished_;
        if (progress_) progress_(finished_, total_);
        for (auto it = pending_.begin(); it != pending_.end() && it->first == delivered_;
             it = pending_.erase(it)) {
            if (sink_) sink_(std::move(it->second));
            ++delivered_;
        }
        room_.notify_all();
    }

    [[nodiscard]] size_t delivered() {
        std::lock_guard lock(mutex_);
        return delivered_;
    }

  private:
    static bool stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

    std::mutex mutex_;
    std::condition_variable room_;
    size_t total_;
    size_t window_;
    const AuditSink& sink_;
    const AuditProgress& progress_;
    size_t next_ = 0;      // files handed out
    size_t finished_ = 0;  // files audited
    size_t delivered_ = 0; // results handed to the sink, in order
    std::map<size_t, AuditResult> pending_;
};

} // namespace

size_t audit_stream(size_t total, const NextAuditFile& next, const Ledger* ledger,
                    const AuditPolicy& policy, int jobs, const AuditSink& sink,
                    const AuditProgress& progress, const std::atomic<bool>* stop) {
    if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    jobs =
        static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(total, 1)));
    constexpr size_t kWindowPerJob = 16;
    InOrderDelivery delivery(total, kWindowPerJob * static_cast<size_t>(jobs), sink, progress);
    auto worker = [&] {
        while (auto claimed = delivery.claim(next, stop)) {
            auto& [i, file] = *claimed;
            if (!file) {
                AuditResult r;
                r.file = "(the list of files)";
                r.status = kAuditUnreadable;
                r.error = file.error().to_string();
                r.details.push_back(r.error);
                delivery.done(i, std::move(r));
                continue;
            }
            delivery.done(i, audit_file(*file, ledger, policy));
        }
    };
    run_workers(static_cast<unsigned>(jobs), worker); // the calling thread is one of them
    return delivery.delivered();
}

size_t audit_stream(const std::vector<std::string>& files, const Ledger* ledger,
                    const AuditPolicy& policy, int jobs, const AuditSink& sink,
                    const AuditProgress& progress, const std::atomic<bool>* stop) {
    size_t at = 0;
    return audit_stream(
        files.size(), [&]() -> Result<std::string> { return files[at++]; }, ledger, policy, jobs,
        sink, progress, stop);
}

std::vector<AuditResult> audit_files(const std::vector<std::string>& files, const Ledger* ledger,
                                     const AuditPolicy& policy, int jobs,
                                     const AuditProgress& progress) {
    std::vector<AuditResult> results;
    results.reserve(files.size());
    audit_stream(
        files, ledger, policy, jobs, [&](AuditResult&& r) { results.push_back(std::move(r)); },
        progress);
    return results;
}

} // namespace forge::provenance
