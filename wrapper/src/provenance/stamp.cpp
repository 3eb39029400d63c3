// The stamp record, RECORD lines and the ledger; the wheel rewrite is in stamp_wheel.cpp.
#include "provenance/stamp.h"

#include "binary/wheel_record.h"
#include "core/env.h"
#include "core/file.h"
#include "core/json.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace forge::provenance {

EnvLookup process_env() {
    return [](std::string_view name) -> std::optional<std::string> {
        return getenv_opt(std::string(name).c_str());
    };
}

std::optional<RunId> ci_run_id(const EnvLookup& env) {
    // GitHub Actions, GitLab, Buildkite, CircleCI, Azure Pipelines, AWS CodeBuild, Travis, and
    // Jenkins' BUILD_ID last: the name is generic enough that other systems set it too.
    static constexpr std::string_view kVariables[] = {
        "GITHUB_RUN_ID", "CI_PIPELINE_ID",     "BUILDKITE_BUILD_ID", "CIRCLE_WORKFLOW_ID",
        "BUILD_BUILDID", "CODEBUILD_BUILD_ID", "TRAVIS_BUILD_ID",    "BUILD_ID"};
    for (auto name : kVariables) {
        auto v = env(name);
        if (!v || v->empty()) continue;
        RunId id{*v, std::string(name)};
        // A re-run of a GitHub workflow keeps its run id; the attempt tells the two apart.
        if (name == "GITHUB_RUN_ID") {
            if (auto attempt = env("GITHUB_RUN_ATTEMPT"); attempt && !attempt->empty())
                id.value += "/" + *attempt;
        }
        return id;
    }
    return std::nullopt;
}

Result<std::int64_t> stamp_time(const EnvLookup& env) {
    if (auto sde = env("SOURCE_DATE_EPOCH")) {
        std::int64_t t = 0;
        const std::string& text = *sde;
        const char* b = text.data();
        const char* e = b + text.size();
        auto [p, ec] = std::from_chars(b, e, t);
        if (text.empty() || ec != std::errc() || p != e || t < 0) {
            Error err{fmt::format("'{}' is not a non-negative integer number of seconds", text)};
            err.key = "SOURCE_DATE_EPOCH";
            return err;
        }
        return t;
    }
    return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
}

std::string iso8601_utc(std::int64_t seconds) {
    std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Result<WheelName> parse_wheel_filename(std::string_view filename) {
    auto bad = [&](std::string why) {
        Error e{fmt::format("not a wheel filename: {} (expected "
                            "{{distribution}}-{{version}}(-{{build}})?-{{python}}-{{abi}}-"
                            "{{platform}}.whl)",
                            why)};
        e.file = std::string(filename);
        return e;
    };
    constexpr std::string_view ext = ".whl";
    if (filename.size() <= ext.size() || filename.substr(filename.size() - ext.size()) != ext)
        return bad("no .whl extension");
    std::string_view stem = filename.substr(0, filename.size() - ext.size());
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= stem.size(); ++i) {
        if (i == stem.size() || stem[i] == '-') {
            parts.emplace_back(stem.substr(start, i - start));
            start = i + 1;
        }
    }
    if (parts.size() != 5 && parts.size() != 6)
        return bad(fmt::format("{} dash-separated parts", parts.size()));
    for (const auto& p : parts)
        if (p.empty()) return bad("an empty part");
    WheelName w;
    w.distribution = parts[0];
    w.version = parts[1];
    size_t i = 2;
    if (parts.size() == 6) w.build = parts[i++];
    w.python = parts[i++];
    w.abi = parts[i++];
    w.platform = parts[i++];
    return w;
}

namespace {

nlohmann::json or_null(const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

} // namespace

nlohmann::json make_build_info(const policy::Resolution& r, const StampInputs& in) {
    nlohmann::json j;
    j["schema"] = kBuildInfoSchema;
    j["arch_list"] = r.list.to_string();
    auto tokens = nlohmann::json::array();
    for (const auto& e : r.list.entries())
        tokens.push_back(e.token());
    j["tokens"] = tokens;
    auto targets = nlohmann::json::array();
    for (const auto& t : r.list.targets())
        targets.push_back(t.name());
    j["targets"] = targets;
    j["list_source"] = r.source;
    // The package's verify waivers: what the build was allowed to miss, so an audit does not call
    // a waived arch missing.
    auto waivers = nlohmann::json::array();
    for (const auto& t : r.allow_missing)
        waivers.push_back(t.name());
    j["allow_missing"] = waivers;
    j["policy_file"] = or_null(r.policy_file);
    j["policy_sha256"] = or_null(r.policy_sha256);
    j["build_epoch"] = r.build_epoch ? nlohmann::json(*r.build_epoch) : nlohmann::json();
    j["cuda"] = or_null(r.cuda);
    j["torch"] = or_null(r.torch);
    j["python"] = or_null(r.python);
    j["platform"] = or_null(r.platform);
    j["package"] = or_null(r.package.empty() ? in.package : r.package);
    j["distribution"] = or_null(in.distribution);
    j["nvcc_forge_version"] = FORGE_VERSION;
    j["run_id"] = in.run_id ? nlohmann::json(in.run_id->value) : nlohmann::json();
    j["run_id_source"] = in.run_id ? nlohmann::json(in.run_id->variable) : nlohmann::json();
    j["time"] = iso8601_utc(in.time);
    j["inferred"] = false;
    j["modules"] = in.modules ? modules_json(*in.modules) : nlohmann::json();
    if (!in.modules && !in.modules_error.empty()) j["modules_error"] = in.modules_error;
    return j;
}

std::string update_record(std::string_view record_text, std::string_view record_member,
                          std::string_view member, std::string_view member_bytes) {
    std::vector<std::string_view> lines;
    size_t start = 0;
    while (start < record_text.size()) {
        size_t nl = record_text.find('\n', start);
        size_t end = nl == std::string_view::npos ? record_text.size() : nl + 1;
        lines.push_back(record_text.substr(start, end - start));
        start = end;
    }
    // Keep the file's own line terminator for the lines we write.
    std::string eol = "\n";
    if (!lines.empty() && lines.front().size() >= 2 &&
        lines.front().substr(lines.front().size() - 2) == "\r\n")
        eol = "\r\n";
    std::string new_line = fmt::format("{},{},{}{}", binary::record_csv_field(member),
                                       binary::record_hash(member_bytes), member_bytes.size(), eol);
    std::string out;
    bool placed = false;
    for (auto line : lines) {
        std::string_view body = line;
        while (!body.empty() && (body.back() == '\n' || body.back() == '\r'))
            body.remove_suffix(1);
        if (body.empty()) continue; // blank lines carry nothing; pip ignores them too
        const std::string path = binary::record_fields(body).front();
        if (path == member) continue; // a previous stamp: replaced below
        if (path == record_member && !placed) {
            out += new_line;
            placed = true;
        }
        out += body;
        out += eol;
    }
    if (!placed) {
        out += new_line;
        out += fmt::format("{},,{}", binary::record_csv_field(record_member), eol);
    }
    return out;
}

Status append_ledger(const std::string& ledger_path, std::string_view wheel_filename,
                     const nlohmann::json& record) {
    nlohmann::json line = nlohmann::json::object();
    line["wheel"] = wheel_filename;
    for (const auto& [k, v] : record.items())
        if (k != "wheel") line[k] = v;
    std::string text = json_text(line) + "\n";
    // Not through a symbolic link, nor into a FIFO: open_file's rules (core/file.h).
    auto opened = open_file(ledger_path, O_WRONLY | O_APPEND | O_CREAT, FileKind::Regular);
    if (!opened)
        return Error{fmt::format("cannot open the ledger: {}", opened.error().message),
                     ledger_path};
    const int fd = opened->release();
    // One write per line: O_APPEND makes each write land whole at the end, so parallel stampers
    // appending to one ledger never interleave inside a line.
    ssize_t n = ::write(fd, text.data(), text.size());
    int write_errno = errno;
    bool closed = ::close(fd) == 0;
    if (n < 0)
        return Error{fmt::format("cannot append to the ledger: {}", std::strerror(write_errno)),
                     ledger_path};
    if (static_cast<size_t>(n) != text.size())
        return Error{fmt::format("short write to the ledger ({} of {} bytes)", n, text.size()),
                     ledger_path};
    if (!closed)
        return Error{fmt::format("cannot close the ledger: {}", std::strerror(errno)), ledger_path};
    return ok_status();
}

} // namespace forge::provenance
