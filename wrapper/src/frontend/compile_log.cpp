#include "frontend/compile_log.h"

#include "arch/arch.h"
#include "core/colour.h"
#include "core/file.h"
#include "core/json.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::frontend {

using nlohmann::json;

namespace {

const char* const kKeys[] = {"cwd",     "sources", "output",    "policy",     "requested",
                             "missing", "extra",   "injected",  "clamped",    "arch_specific",
                             "mode",    "action",  "exit_code", "duration_ms"};

Result<std::vector<std::string>> string_array(const json& j, const char* key) {
    const auto& v = j.at(key);
    if (!v.is_array()) return make_error(fmt::format("'{}' is not an array", key));
    std::vector<std::string> out;
    for (const auto& e : v) {
        if (!e.is_string()) return make_error(fmt::format("'{}' holds a non-string", key));
        out.push_back(e.get<std::string>());
    }
    return out;
}

bool target_less(const std::string& a, const std::string& b) {
    auto ta = arch::parse_target(a), tb = arch::parse_target(b);
    if (ta.ok() && tb.ok()) return *ta < *tb;
    if (ta.ok() != tb.ok()) return ta.ok();
    return a < b;
}

} // namespace

std::string LogRecord::to_json() const {
    // ordered_json keeps the documented key order, which makes logs diffable.
    nlohmann::ordered_json j;
    j["cwd"] = cwd;
    j["sources"] = sources;
    j["output"] = output;
    j["policy"] = policy;
    j["requested"] = requested;
    j["missing"] = missing;
    j["extra"] = extra;
    j["injected"] = injected;
    j["clamped"] = clamped;
    j["arch_specific"] = arch_specific;
    j["arch_rule"] =
        arch_rule.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(arch_rule);
    j["mode"] = mode;
    j["action"] = action;
    j["exit_code"] = exit_code;
    j["duration_ms"] = duration_ms;
    // Invalid UTF-8 in a path must not make the wrapper throw: replace it.
    return json_text(j);
}

Result<LogRecord> LogRecord::from_json(const std::string& line) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return make_error("not a JSON object");
    for (const char* k : kKeys)
        if (!j.contains(k)) return make_error(fmt::format("missing key '{}'", k));
    LogRecord r;
    try {
        r.cwd = j.at("cwd").get<std::string>();
        r.output = j.at("output").get<std::string>();
        r.mode = j.at("mode").get<std::string>();
        r.action = j.at("action").get<std::string>();
        r.arch_specific = j.at("arch_specific").get<bool>();
        if (auto it = j.find("arch_rule"); it != j.end() && !it->is_null())
            r.arch_rule = it->get<std::string>();
        r.exit_code = j.at("exit_code").get<int>();
        r.duration_ms = j.at("duration_ms").get<long long>();
    } catch (const json::exception& e) {
        return make_error(fmt::format("wrong type: {}", e.what()));
    }
    std::pair<const char*, std::vector<std::string>*> arrays[] = {
        {"sources", &r.sources}, {"policy", &r.policy}, {"requested", &r.requested},
        {"missing", &r.missing}, {"extra", &r.extra},   {"injected", &r.injected},
        {"clamped", &r.clamped}};
    for (auto& [key, dst] : arrays) {
        auto v = string_array(j, key);
        if (!v) return std::move(v).error();
        *dst = std::move(*v);
    }
    return r;
}

Status append_log_line(const std::string& path, const std::string& line) {
    // core/file.h's open: O_NONBLOCK, so a FIFO without a reader fails at once (ENXIO) instead
    // of holding the build after nvcc has finished, and one with a reader is refused, as is any
    // other special file but a character device (NVCC_FORGE_LOG=/dev/null is a way to switch the
    // log off); O_NOFOLLOW, so a symbolic link another user planted is never written through
    // (nor its dangling target created).
    auto opened = open_file(path, O_WRONLY | O_APPEND | O_CREAT, FileKind::RegularOrDevice);
    if (!opened)
        return Error{fmt::format("cannot open the compile log: {}", opened.error().message), path};
    FileHandle handle = std::move(*opened);
    const int fd = handle.get();
    std::string data = line + "\n";
    // O_APPEND makes each write(2) land at the end as a unit for lines up to PIPE_BUF on every
    // local file system; longer lines (a TU with hundreds of sources) also take an exclusive lock,
    // so a short write and its continuation cannot be split by another writer.
    bool locked = data.size() > PIPE_BUF && ::flock(fd, LOCK_EX) == 0;
    size_t done = 0;
    int err = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            err = errno;
            break;
        }
        done += static_cast<size_t>(n);
    }
    if (locked) ::flock(fd, LOCK_UN);
    if (done != data.size())
        return Error{fmt::format("cannot write the compile log: {}", std::strerror(err)), path};
    return ok_status();
}

std::string drop_line(const std::string& tu, const std::string& dropped, const std::string& policy,
                      const std::string& requested, const std::string& why) {
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= dropped.size();) {
        const std::size_t comma = std::min(dropped.find(", ", at), dropped.size());
        names.push_back(dropped.substr(at, comma - at));
        at = comma + 2;
    }
    return drop_lines(tu, DropReport{{}, names, {}, policy, requested, why, ""}, false);
}

namespace {

// What `verify --package` says of a binary built of this object alone: the gate's own words for a
// missing cubin and a missing PTX (verify/gate.cpp's sass and ptx checks).
std::string gate_will_report(const std::vector<std::string>& dropped) {
    std::vector<std::string> sass, ptx;
    for (const auto& d : dropped)
        (d.starts_with("compute_") ? ptx : sass).push_back(d);
    std::string out;
    if (!sass.empty()) out = fmt::format("sass: missing {}", fmt::join(sass, " "));
    if (!ptx.empty())
        out += fmt::format("{}ptx: missing PTX {}", out.empty() ? "" : ", ", fmt::join(ptx, " "));
    return fmt::format("the gate will report {} unless another object of the binary carries {}",
                       out, dropped.size() == 1 ? "it" : "them");
}

} // namespace

std::string drop_lines(const std::string& tu, const DropReport& report, bool quiet, bool colour) {
    auto join = [](const std::vector<std::string>& names) {
        std::string out;
        for (const auto& n : names)
            out += (out.empty() ? "" : ", ") + n;
        return out;
    };
    const std::string context =
        fmt::format("(policy {}; requested {})", report.policy,
                    report.requested.empty() ? std::string("nvcc default") : report.requested);
    const std::string dropped = painted("dropped", kColourYellow, colour);
    std::string out;
    const bool all_injected = report.dropped.empty();
    if (!report.injected.empty() || !report.dropped.empty()) {
        if (!(quiet && all_injected)) {
            std::string what;
            if (!report.injected.empty())
                what = fmt::format("{} {} -> {}", dropped, join(report.injected),
                                   painted("injected", kColourGreen, colour));
            if (!report.dropped.empty())
                what +=
                    fmt::format("{}{} {}", what.empty() ? "" : "; ", dropped, join(report.dropped));
            std::string tail = report.rule.empty() ? "" : "; " + report.rule;
            if (!report.dropped.empty() && !report.why.empty()) tail += "; " + report.why;
            if (!report.dropped.empty()) tail += "; " + gate_will_report(report.dropped);
            out += fmt::format("nvcc-forge: {}: {} {}{}\n", tu, what, context, tail);
        }
    }
    if (!report.clamped.empty())
        out += fmt::format("nvcc-forge: {}: {} {} -> removed {}; nvcc cannot emit {}\n", tu,
                           painted("clamped", kColourYellow, colour), join(report.clamped), context,
                           report.clamped.size() == 1 ? "it" : "them");
    return out;
}

std::vector<std::string> dropped_targets(const LogRecord& r) {
    if (r.action == kActionPassthrough) return {};
    if (r.action == kActionInjected) {
        std::vector<std::string> out;
        for (const auto& m : r.missing)
            if (std::find(r.injected.begin(), r.injected.end(), m) == r.injected.end())
                out.push_back(m);
        return out;
    }
    // compared, injection-failed, call-failed, refused: none of it is in an output;
    // launcher-failed: the call failed, whatever nvcc alone left behind
    return r.missing;
}

std::string tu_name(const LogRecord& r) {
    if (!r.sources.empty()) {
        std::string out;
        for (const auto& s : r.sources)
            out += (out.empty() ? "" : " ") + s;
        return out;
    }
    if (!r.output.empty()) return r.output;
    return "(link)";
}

Result<DropSummary> summarize_log(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{fmt::format("cannot read: {}", std::strerror(errno)), path};
    DropSummary s;
    std::map<std::string, std::set<std::string>> tus, restored, extra;
    std::set<std::string> all_tus;
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto rec = LogRecord::from_json(line);
        if (!rec) {
            Error e = std::move(rec).error();
            e.file = path;
            e.line = line_no;
            e.message = "malformed log record: " + e.message;
            return e;
        }
        ++s.records;
        ++s.actions[rec->action];
        auto dropped = dropped_targets(*rec);
        if (!dropped.empty()) ++s.records_with_drops;
        std::string tu = tu_name(*rec);
        if (!rec->cwd.empty() && !tu.starts_with('/') && tu != "(link)")
            tu = fmt::format("{}/{}", rec->cwd, tu); // the same name in two build dirs is two TUs
        all_tus.insert(tu);
        for (const auto& t : dropped)
            tus[t].insert(tu);
        if (rec->action == kActionInjected && !rec->injected.empty()) {
            ++s.records_restored;
            for (const auto& t : rec->injected)
                restored[t].insert(tu);
        }
        if (!rec->extra.empty()) ++s.records_with_extra;
        for (const auto& t : rec->extra)
            extra[t].insert(tu);
    }
    s.tus = static_cast<long>(all_tus.size());
    for (auto& [target, set] : tus)
        s.tus_by_target[target] = {set.begin(), set.end()};
    for (auto& [target, set] : restored)
        s.restored_by_target[target] = {set.begin(), set.end()};
    for (auto& [target, set] : extra)
        s.extra_by_target[target] = {set.begin(), set.end()};
    return s;
}

namespace {

std::vector<std::string> sorted_targets(const std::map<std::string, std::vector<std::string>>& m) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : m)
        keys.push_back(k);
    std::sort(keys.begin(), keys.end(), target_less);
    return keys;
}

} // namespace

std::string summary_headline(const DropSummary& s) {
    return fmt::format("{} calls, {} with drops\n", s.records, s.records_with_drops);
}

std::string summary_line(const DropSummary& s) {
    auto plural = [](long n, std::string_view word) {
        return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
    };
    // "sm_90 (2 TUs), compute_90 (1 TU)", or "none"
    auto targets = [&](const std::map<std::string, std::vector<std::string>>& by_target) {
        std::string out;
        for (const auto& target : sorted_targets(by_target))
            out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", target,
                               plural(static_cast<long>(by_target.at(target).size()), "TU"));
        return out.empty() ? std::string("none") : out;
    };
    std::string out =
        fmt::format("{}, {}; injected {}; missing {}", plural(s.records, "nvcc call"),
                    plural(s.tus, "TU"), targets(s.restored_by_target), targets(s.tus_by_target));
    if (!s.extra_by_target.empty()) out += "; beyond the policy " + targets(s.extra_by_target);
    return out;
}

std::vector<ci::Finding> summary_findings(const DropSummary& s, bool drops_fail) {
    using ci::Severity;
    // TU -> targets, each map's targets in target order.
    auto by_tu = [](const std::map<std::string, std::vector<std::string>>& by_target) {
        std::map<std::string, std::vector<std::string>> out;
        for (const auto& target : sorted_targets(by_target))
            for (const auto& tu : by_target.at(target))
                out[tu].push_back(target);
        return out;
    };
    const auto dropped = by_tu(s.tus_by_target), extra = by_tu(s.extra_by_target),
               restored = by_tu(s.restored_by_target);
    std::set<std::string> tus;
    for (const auto* m : {&dropped, &extra, &restored})
        for (const auto& [tu, targets] : *m)
            tus.insert(tu);
    std::vector<ci::Finding> out;
    for (const auto& tu : tus) {
        // Several sources are one name joined by spaces: no one file to point at.
        const std::string file =
            tu == "(link)" || tu.find(' ') != std::string::npos ? "" : ci::workspace_path(tu);
        const std::string name = file.empty() ? tu : file;
        if (auto it = dropped.find(tu); it != dropped.end())
            out.push_back({drops_fail ? Severity::Error : Severity::Warning, file, 0, 0,
                           "nvcc-forge dropped targets",
                           fmt::format("{}: dropped {} (policy targets missing from the output)",
                                       name, fmt::join(it->second, ", "))});
        if (auto it = extra.find(tu); it != extra.end())
            out.push_back({Severity::Warning, file, 0, 0, "nvcc-forge extra targets",
                           fmt::format("{}: requested {} beyond the policy (the gate's extra check "
                                       "fails the binary)",
                                       name, fmt::join(it->second, ", "))});
        if (auto it = restored.find(tu); it != restored.end())
            out.push_back(
                {Severity::Notice, file, 0, 0, "nvcc-forge injected targets",
                 fmt::format("{}: did not request {}; the wrapper injected {}", name,
                             fmt::join(it->second, ", "), it->second.size() == 1 ? "it" : "them")});
    }
    return out;
}

std::string summary_text(const DropSummary& s) {
    std::string out = summary_headline(s);
    for (const auto& target : sorted_targets(s.tus_by_target)) {
        const auto& tus = s.tus_by_target.at(target);
        out +=
            fmt::format("{}: dropped by {} TU{}\n", target, tus.size(), tus.size() == 1 ? "" : "s");
        for (const auto& tu : tus)
            out += "  " + tu + "\n";
    }
    if (s.tus_by_target.empty()) out += "no drops\n";
    if (!s.restored_by_target.empty()) {
        out += fmt::format("{} call{} asked for less than the policy and got it injected back:\n",
                           s.records_restored, s.records_restored == 1 ? "" : "s");
        for (const auto& target : sorted_targets(s.restored_by_target)) {
            const auto& tus = s.restored_by_target.at(target);
            out += fmt::format("{}: not requested by {} TU{}, injected\n", target, tus.size(),
                               tus.size() == 1 ? "" : "s");
            for (const auto& tu : tus)
                out += "  " + tu + "\n";
        }
    }
    if (!s.extra_by_target.empty()) {
        out += fmt::format("{} call{} requested targets beyond the policy (the gate's extra check "
                           "fails them):\n",
                           s.records_with_extra, s.records_with_extra == 1 ? "" : "s");
        for (const auto& target : sorted_targets(s.extra_by_target)) {
            const auto& tus = s.extra_by_target.at(target);
            out += fmt::format("{}: requested beyond the policy by {} TU{}\n", target, tus.size(),
                               tus.size() == 1 ? "" : "s");
            for (const auto& tu : tus)
                out += "  " + tu + "\n";
        }
    }
    return out;
}

std::string summary_json(const DropSummary& s) {
    nlohmann::ordered_json j;
    j["records"] = s.records;
    j["records_with_drops"] = s.records_with_drops;
    nlohmann::ordered_json drops = nlohmann::ordered_json::object();
    for (const auto& target : sorted_targets(s.tus_by_target))
        drops[target] = s.tus_by_target.at(target);
    j["drops"] = drops;
    j["records_restored"] = s.records_restored;
    nlohmann::ordered_json restored = nlohmann::ordered_json::object();
    for (const auto& target : sorted_targets(s.restored_by_target))
        restored[target] = s.restored_by_target.at(target);
    j["restored"] = restored;
    j["records_with_extra"] = s.records_with_extra;
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (const auto& target : sorted_targets(s.extra_by_target))
        extra[target] = s.extra_by_target.at(target);
    j["extra"] = extra;
    j["actions"] = s.actions;
    return json_text(j, 2) + "\n";
}

} // namespace forge::frontend
