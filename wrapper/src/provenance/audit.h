// The fleet audit (docs/policy.md): for each wheel or shared object, what it carries vs what it
// was built to carry (its stamp, else its ledger entry) vs the current policy. Provenance is what
// separates "the wheel is wrong" from "the config moved since"; a file without provenance is
// compared with the current policy and marked inferred, never presented as fact.
#pragma once

#include "arch/arch.h"
#include "binary/reader.h"
#include "core/result.h"
#include "provenance/ledger.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace forge::provenance {

// The statuses, exactly as printed and written to JSON.
inline constexpr std::string_view kAuditOk = "ok";
inline constexpr std::string_view kAuditWheelWrong = "wheel-wrong";
inline constexpr std::string_view kAuditConfigMoved = "config-moved";
inline constexpr std::string_view kAuditStaleEpoch = "stale-epoch";
inline constexpr std::string_view kAuditNoProvenance = "no-provenance";
inline constexpr std::string_view kAuditUnreadable = "unreadable";
// A wheel lacks a module the ledger's previous wheel of the same package carried; it wins over
// every status but unreadable (what the other statuses judge is only what was built).
inline constexpr std::string_view kAuditExtensionLost = "extension-lost";
// In report order.
inline constexpr std::string_view kAuditStatuses[] = {
    kAuditOk,         kAuditWheelWrong,   kAuditExtensionLost, kAuditConfigMoved,
    kAuditStaleEpoch, kAuditNoProvenance, kAuditUnreadable};

// The policy the fleet is audited against.
struct AuditPolicy {
    arch::ArchList list;
    std::optional<long> build_epoch;
    std::vector<arch::Target> allow_missing; // the package's verify waivers (inferred comparison)
    std::string waiver_source;               // where those come from, as printed
    std::vector<std::string> narrowed;       // tokens the cell drops against the policy row
    std::string source;                      // "--arch-list", "arch_policy[12.8]"
    std::string policy_file;                 // "" when none
    std::string policy_sha256;               // "" when none
    // Not policy: where the answers of images read before are kept (list --toolkit's cache,
    // binary/result_cache.h); nullptr reads every image.
    binary::ResultCache* image_cache = nullptr;
};

// What a file was built to carry.
struct Provenance {
    std::string source; // "stamp" | "ledger"
    std::string where;  // "pkg/_build_info.json" or "ledger.jsonl:12"
    nlohmann::json record;
    arch::ArchList list;
    std::optional<long> build_epoch;
    std::vector<arch::Target> allow_missing; // waivers the build was stamped with
};

struct AuditResult {
    std::string file;
    std::string status;
    bool inferred = false;              // no provenance: compared with the current policy
    std::optional<bool> inferred_match; // no-provenance only: did it carry the current list
    std::vector<std::string> carries;   // SASS with kernels and PTX, over its extensions
    std::vector<std::string> stub_only; // arches present only as kernel-less cubins
    int extensions = 0;                 // host ELFs with GPU code
    std::optional<Provenance> provenance;
    std::vector<std::string> details; // why, one line each
    // Every waiver the comparison used, with where it came from ("sm_100 (the wheel's own stamp
    // pkg/_build_info.json; found only in the artifact)").
    std::vector<std::string> waivers;
    bool narrowed = false; // judged in a cell whose list drops tokens of the policy row
    std::string error;     // unreadable: the reader's error (file, member, offset)
    std::vector<std::string> lost_extensions; // extension-lost: modules the previous wheel had
};

// Does every extension with GPU code carry exactly `list` (verify's gate, kernel-less stubs not
// counted, `allow_missing` waived as verify waives them)? `why` receives the failed checks.
// False when no extension has GPU code.
// `waiver_source` names where `allow_missing` comes from; `waived` receives the waivers used.
bool carries_list(const std::vector<binary::Extension>& extensions, const arch::ArchList& list,
                  const std::vector<arch::Target>& allow_missing, std::vector<std::string>* why,
                  const std::string& waiver_source = "allow_missing",
                  std::vector<std::string>* waived = nullptr);

// Classifies one file from what was read (separated from I/O so every status is testable).
AuditResult classify(const std::string& file, const std::vector<binary::Extension>& extensions,
                     const std::optional<Provenance>& provenance, const AuditPolicy& policy);

// Marks `r` extension-lost when `extensions` lack a module (modules.h module_key) that
// `previous` (a ledger record with `modules`) lists. Unreadable results are left alone.
void check_lost_extensions(AuditResult& r, const std::vector<binary::Extension>& extensions,
                           const LedgerEntry& previous, const std::string& previous_filename);

// Reads the file (wheel stamp, then `ledger` by file name) and classifies it. Never fails: a
// reader error is the `unreadable` status.
AuditResult audit_file(const std::string& file, const Ledger* ledger, const AuditPolicy& policy);

// Wheels (*.whl) and shared objects (*.so, *.so.N, *.pyd) under the directories, recursively,
// plus every file given directly; sorted, unique. Error (exit 2) when a path does not exist or a
// directory cannot be listed. The walk holds one directory's names per level, not the list.
Status walk_audit_files(const std::vector<std::string>& paths,
                        const std::function<Status(const std::string& file)>& each);
Result<std::vector<std::string>> collect_audit_files(const std::vector<std::string>& paths);

// The same files, kept in an unnamed temporary file: what the audit holds does not grow with the
// fleet, and the report can say how many files there are before the first one is read.
class AuditFileList {
  public:
    static Result<AuditFileList> collect(const std::vector<std::string>& paths);
    [[nodiscard]] size_t size() const { return size_; }
    // The next path, in order; called at most size() times.
    Result<std::string> next();

  private:
    struct Close {
        void operator()(std::FILE* f) const;
    };
    std::unique_ptr<std::FILE, Close> file_;
    size_t size_ = 0;
    size_t read_ = 0;
};

// The files to audit, in order, one call at a time (at most `total` calls).
using NextAuditFile = std::function<Result<std::string>()>;

// Audits `files` with `jobs` worker threads (<= 0: hardware concurrency), handing each result to
// `sink` in the order of `files` as soon as every file before it is done (one call at a time):
// at most a small window of results is held, whatever the fleet's size. `progress(done, total)`
// is called after each file, serialised with the sink. Once `*stop` is true the workers start no
// new file; those already started are finished and delivered. Returns how many were delivered.
using AuditSink = std::function<void(AuditResult&& result)>;
using AuditProgress = std::function<void(size_t done, size_t total)>;
size_t audit_stream(const std::vector<std::string>& files, const Ledger* ledger,
                    const AuditPolicy& policy, int jobs, const AuditSink& sink,
                    const AuditProgress& progress = {}, const std::atomic<bool>* stop = nullptr);
// The same over `total` files from `next` (AuditFileList's): a file that `next` cannot give is
// an unreadable result.
size_t audit_stream(size_t total, const NextAuditFile& next, const Ledger* ledger,
                    const AuditPolicy& policy, int jobs, const AuditSink& sink,
                    const AuditProgress& progress = {}, const std::atomic<bool>* stop = nullptr);
// The same, collected (tests, small sets).
std::vector<AuditResult> audit_files(const std::vector<std::string>& files, const Ledger* ledger,
                                     const AuditPolicy& policy, int jobs,
                                     const AuditProgress& progress = {});

// Parses a record's arch_list and build_epoch into a Provenance. Error: missing or bad arch_list.
Result<Provenance> provenance_from_record(const nlohmann::json& record, std::string source,
                                          std::string where);

// Rendering (docs/policy.md, "audit"). The report is written as the results arrive: the policy
// and the number of files first, then one entry per file, then the status counts. JSON: one
// object, {"policy", "files", "entries": [...], "counts", "narrowed", "audited", "interrupted"},
// each entry on a line of its own; text: the header, the files that are not ok (and every
// waiver), then the table of counts.
enum class AuditFormat : std::uint8_t { Text, Json };
class AuditReport {
  public:
    AuditReport(std::ostream& out, AuditFormat format, const AuditPolicy& policy, size_t files);
    void add(const AuditResult& r);
    // The counts, and how far the audit got when it was interrupted; closes the JSON document.
    void finish(bool interrupted);
    [[nodiscard]] const std::map<std::string, size_t>& counts() const { return counts_; }
    [[nodiscard]] size_t audited() const { return audited_; }

  private:
    std::ostream& out_;
    AuditFormat format_;
    const AuditPolicy& policy_;
    size_t files_;
    size_t audited_ = 0;
    size_t narrowed_ = 0;
    std::map<std::string, size_t> counts_;
};

nlohmann::json audit_policy_json(const AuditPolicy& policy);
nlohmann::json audit_to_json(const AuditResult& r); // one entry
// The whole report of `results`, as AuditReport writes it.
nlohmann::json audit_to_json(const std::vector<AuditResult>& results, const AuditPolicy& policy);
std::string audit_to_text(const std::vector<AuditResult>& results, const AuditPolicy& policy);
std::map<std::string, size_t> audit_counts(const std::vector<AuditResult>& results);
size_t narrowed_count(const std::vector<AuditResult>& results); // files in narrowed cells

} // namespace forge::provenance
