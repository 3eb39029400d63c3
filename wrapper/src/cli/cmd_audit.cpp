// nvcc-forge audit PATH... [--ledger FILE] (--arch-list LIST | resolve options) [--jobs N]
//   [--format text|json]
// Sweeps wheels and shared objects: what each carries vs its provenance vs the current policy.
// Exit 0 all ok, 1 any file not ok, 2 usage errors, a PATH that does not exist, or any file that
// cannot be read (the report still lists every file).
#include "binary/result_cache.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "core/text.h"
#include "policy/policy_file.h"
#include "provenance/audit.h"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace forge::cli {
namespace {

constexpr std::string_view kAuditUsage =
    "nvcc-forge audit PATH... [--ledger FILE] (--arch-list LIST | resolve options) [--jobs N] "
    "[--format text|json]";

// A one-line bar redrawn in place; only ever drawn on a terminal, at most ~10 times a second.
class ProgressBar {
  public:
    void operator()(size_t done, size_t total) {
        auto now = std::chrono::steady_clock::now();
        if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        constexpr size_t width = 30;
        size_t filled = total ? done * width / total : width;
        fmt::print(stderr, "\r[{}{}] {}/{}", std::string(filled, '#'),
                   std::string(width - filled, ' '), done, total);
        if (done == total) fmt::print(stderr, "\r{}\r", std::string(width + 24, ' '));
        std::fflush(stderr);
    }

  private:
    std::chrono::steady_clock::time_point last_{};
};

int run_audit(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("audit options");
    std::vector<std::string> paths;
    std::string format = "text";
    int jobs = 0;
    desc.add_options()("help,h", "show this help")("path", po::value(&paths),
                                                   "directories (searched recursively) and files")(
        "ledger", po::value<std::string>(), "JSON-lines ledger: wheel filename -> build record")(
        "jobs,j", po::value(&jobs), "worker threads (default: hardware concurrency)")(
        "format", po::value(&format), "text | json");
    add_resolve_options(desc, /*with_arch_list=*/true);
    po::positional_options_description pos;
    pos.add("path", -1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "audit", kAuditUsage)) return kExitInput;
    if (vm.count("help")) {
        std::ostringstream os;
        os << desc;
        fmt::print("usage: {}\n\n{}\nstatuses: ok, wheel-wrong, extension-lost, config-moved, "
                   "stale-epoch, no-provenance, unreadable\nexit codes: 0 all ok, 1 any not ok, 2 "
                   "unusable input (any file unreadable) or usage\n",
                   kAuditUsage, os.str());
        return kExitOk;
    }
    if (paths.empty())
        return report_error("audit", Error(fmt::format("no PATH given\nusage: {}", kAuditUsage)));
    if (format != "text" && format != "json")
        return report_error("audit",
                            Error(fmt::format("--format must be text or json, not '{}'", format)));
    if (vm.count("jobs") && jobs < 1)
        return report_error("audit", Error(fmt::format("--jobs must be at least 1, not {}", jobs)));

    auto files = provenance::collect_audit_files(paths);
    if (!files) return report_error("audit", files.error());
    std::optional<provenance::Ledger> ledger;
    if (vm.count("ledger")) {
        auto l = provenance::load_ledger(vm["ledger"].as<std::string>());
        if (!l) return report_error("audit", l.error());
        ledger = std::move(*l);
    }
    auto res = resolve_from_options(vm);
    if (!res) return report_error("audit", res.error());
    provenance::AuditPolicy policy;
    policy.list = res->list;
    policy.source = res->source;
    policy.build_epoch = res->build_epoch;
    policy.allow_missing = res->allow_missing;
    policy.waiver_source =
        res->package.empty()
            ? std::string("verify.allow_missing_archs")
            : fmt::format("packages/{}/arch_override.yml verify.allow_missing_archs", res->package);
    for (const auto& n : res->narrowed)
        policy.narrowed.push_back(n.token);
    policy.policy_file = res->policy_file;
    policy.policy_sha256 = res->policy_sha256;
    // --arch-list skips the resolver; an explicit --policy still gives the epoch to compare.
    if (vm.count("arch-list") && vm.count("policy")) {
        auto file = policy_file_from_options(vm);
        auto p = policy::load_policy(file);
        if (!p) return report_error("audit", p.error());
        policy.build_epoch = p->build_epoch;
        policy.policy_file = file.string();
        policy.policy_sha256 = p->sha256;
    }

    binary::ResultCache image_cache(binary::default_result_cache_dir());
    policy.image_cache = &image_cache;
    provenance::AuditProgress progress;
    if (::isatty(STDERR_FILENO)) progress = ProgressBar{};
    auto results =
        provenance::audit_files(*files, ledger ? &*ledger : nullptr, policy, jobs, progress);
    if (files->empty()) fmt::print(stderr, "nvcc-forge audit: no wheel or shared object found\n");
    for (const auto& w : image_cache.take_warnings())
        fmt::print(stderr, "nvcc-forge audit: warning: {}\n", escape_control(w));

    if (format == "json")
        std::cout << json_text(provenance::audit_to_json(results, policy), 2) << "\n";
    else
        std::cout << provenance::audit_to_text(results, policy);
    // An unreadable file is unusable input (exit 2, as for every command), not a finding.
    const bool any_unreadable = std::any_of(results.begin(), results.end(), [](const auto& r) {
        return r.status == provenance::kAuditUnreadable;
    });
    bool all_ok = std::all_of(results.begin(), results.end(),
                              [](const auto& r) { return r.status == provenance::kAuditOk; });
    if (any_unreadable) return kExitInput;
    return all_ok ? kExitOk : kExitPolicy;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("audit", "sweep wheels and .so files: carried arches vs provenance vs policy",
              forge::cli::run_audit);
