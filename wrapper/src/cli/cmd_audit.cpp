// nvcc-forge audit PATH... [--ledger FILE] (--arch-list LIST | resolve options) [--jobs N]
//   [--format text|json]
// Sweeps wheels and shared objects: what each carries vs its provenance vs the current policy.
// Exit 0 all ok, 1 any file not ok, 2 usage errors, a PATH that does not exist, or any file that
// cannot be read (the report still lists every file). The report is written as the files are
// audited (docs/policy.md, "The audit's report"); a signal finishes it and ends the process.
#include "binary/result_cache.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "core/text.h"
#include "policy/policy_file.h"
#include "provenance/audit.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace forge::cli {
namespace {

constexpr std::string_view kAuditUsage =
    "nvcc-forge audit PATH... [--ledger FILE] (--arch-list LIST | resolve options) [--jobs N] "
    "[--format text|json]";

// A one-line bar redrawn in place, with the rate and the time left; only ever drawn on a
// terminal, at most ~10 times a second.
class ProgressBar {
  public:
    void operator()(size_t done, size_t total) {
        auto now = std::chrono::steady_clock::now();
        if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        constexpr size_t width = 30;
        const size_t filled = total ? done * width / total : width;
        const double seconds = std::chrono::duration<double>(now - start_).count();
        const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
        std::string speed;
        // The first files pay the start (the ledger, the workers' first reads): a rate taken
        // from them over-estimates a short run many times, so the time left waits for a sample.
        const bool sampled = seconds >= 1.0 || done * 10 >= total;
        if (rate > 0 && sampled)
            speed = fmt::format("  {:.0f} files/s, {} left", rate,
                                left_text(static_cast<double>(total - done) / rate));
        line_ = fmt::format("[{}{}] {}/{}{}", std::string(filled, '#'),
                            std::string(width - filled, ' '), done, total, speed);
        fmt::print(stderr, "\r{}\x1b[K", line_);
        if (done == total) fmt::print(stderr, "\r\x1b[K");
        std::fflush(stderr);
    }
    // Takes the bar off its line before a report line is written to the same terminal (the
    // report would run on from the bar's text); the next redraw puts it back below the report.
    void clear() {
        if (line_.empty()) return;
        fmt::print(stderr, "\r\x1b[K");
        std::fflush(stderr);
    }
    // Ends the line the bar is on (an interrupted run leaves it, with what it says, in place).
    void end_line() const {
        if (!line_.empty()) fmt::print(stderr, "\n");
        std::fflush(stderr);
    }

  private:
    static std::string left_text(double s) {
        if (s < 60) return fmt::format("{:.0f} s", s);
        if (s < 3600)
            return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
        return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s, 3600) / 60);
    }
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_{};
    std::string line_;
};

// SIGINT/SIGTERM/SIGHUP during an audit: the workers start no new file, the report is finished
// for the files audited, and the process then ends by that signal. A second one ends it at once
// (SA_RESETHAND).
std::atomic<bool> g_audit_stop{false};
std::atomic<int> g_audit_signal{0};
constexpr int kAuditSignals[] = {SIGINT, SIGTERM, SIGHUP};

void on_audit_signal(int sig) {
    g_audit_signal.store(sig);
    g_audit_stop.store(true);
}

void catch_audit_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_audit_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig : kAuditSignals) {
        // A signal the caller ignores (nohup, a background job's SIGINT) stays ignored.
        struct sigaction before {};
        if (::sigaction(sig, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
        ::sigaction(sig, &sa, nullptr);
    }
}

// Audits the fleet, writing the report as the results arrive (memory does not grow with the
// fleet), and ends as an interrupted run must.
int audit_fleet(provenance::AuditFileList& files, const provenance::Ledger* ledger,
                const provenance::AuditPolicy& policy, int jobs, const std::string& format) {
    std::optional<ProgressBar> bar;
    provenance::AuditProgress progress;
    if (::isatty(STDERR_FILENO)) {
        bar.emplace();
        progress = [&](size_t done, size_t total) { (*bar)(done, total); };
    }
    catch_audit_signals();
    provenance::AuditReport report(
        std::cout, format == "json" ? provenance::AuditFormat::Json : provenance::AuditFormat::Text,
        policy, files.size());
    provenance::audit_stream(
        files.size(), [&] { return files.next(); }, ledger, policy, jobs,
        [&](provenance::AuditResult&& r) {
            if (!bar) return report.add(r);
            bar->clear();
            report.add(r);
            std::cout.flush(); // on the terminal before the bar is drawn again
        },
        progress, &g_audit_stop);
    const bool interrupted = g_audit_stop.load();
    report.finish(interrupted);
    if (files.size() == 0)
        fmt::print(stderr, "nvcc-forge audit: no wheel or shared object found\n");
    if (interrupted) {
        if (bar) bar->end_line();
        const int sig = g_audit_signal.load();
        fmt::print(stderr,
                   "nvcc-forge audit: interrupted ({}) after {} of {} file(s); the report "
                   "covers those\n",
                   strsignal(sig), report.audited(), files.size());
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return 128 + sig; // the signal was blocked or ignored by the caller
    }
    const auto& counts = report.counts();
    // An unreadable file is unusable input (exit 2, as for every command), not a finding.
    if (counts.at(std::string(provenance::kAuditUnreadable)) > 0) return kExitInput;
    return counts.at(std::string(provenance::kAuditOk)) == report.audited() ? kExitOk : kExitPolicy;
}

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
                   "stale-epoch, no-provenance, unreadable\njson: {{\"policy\", \"files\", "
                   "\"entries\": [one per file, written as it is done], \"counts\", "
                   "\"narrowed\", \"audited\", \"interrupted\"}}\nSIGINT: the report is finished "
                   "for the files audited, then the process ends by the signal\nexit codes: 0 all "
                   "ok, 1 any not ok, 2 unusable input (any file unreadable) or usage\n",
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

    auto files = provenance::AuditFileList::collect(paths);
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
    const int rc = audit_fleet(*files, ledger ? &*ledger : nullptr, policy, jobs, format);
    for (const auto& w : image_cache.take_warnings())
        fmt::print(stderr, "nvcc-forge audit: warning: {}\n", escape_control(w));
    return rc;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("audit", "sweep wheels and .so files: carried arches vs provenance vs policy",
              forge::cli::run_audit,
              "nvcc-forge audit wheelhouse/ --ledger ledger.jsonl --cuda 12.8 --torch 2.9");
