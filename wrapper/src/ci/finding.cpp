#include "ci/finding.h"

#include "core/env.h"

#include <filesystem>
#include <fmt/format.h>
#include <system_error>

namespace forge::ci {

namespace fs = std::filesystem;

std::string_view severity_name(Severity s) {
    switch (s) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Notice:
        return "notice";
    }
    return "error";
}

namespace {

std::string escape_github(std::string_view s, bool property) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '%':
            out += "%25";
            break;
        case '\r':
            out += "%0D";
            break;
        case '\n':
            out += "%0A";
            break;
        case ':':
            out += property ? "%3A" : ":";
            break;
        case ',':
            out += property ? "%2C" : ",";
            break;
        default:
            out += c;
        }
    }
    return out;
}

} // namespace

std::string escape_github_data(std::string_view s) {
    return escape_github(s, false);
}
std::string escape_github_property(std::string_view s) {
    return escape_github(s, true);
}

std::string github_command(const Finding& f) {
    std::string props;
    auto add = [&](std::string_view key, const std::string& value) {
        if (value.empty()) return;
        props +=
            fmt::format("{}{}={}", props.empty() ? " " : ",", key, escape_github_property(value));
    };
    add("file", f.file);
    if (f.line > 0) add("line", std::to_string(f.line));
    if (f.line > 0 && f.end_line > f.line) add("endLine", std::to_string(f.end_line));
    add("title", f.title);
    return fmt::format("::{}{}::{}", severity_name(f.severity), props,
                       escape_github_data(f.message));
}

std::string to_github(const std::vector<Finding>& findings) {
    std::string out;
    for (const auto& f : findings)
        out += github_command(f) + "\n";
    return out;
}

namespace {

// NVCC_FORGE_PATH_MAP=FROM=TO[,FROM=TO...]: a path under FROM (a build container's /project) is
// the same path under TO (the repository checkout); an empty TO is the workspace itself. The
// first FROM that holds the path applies.
fs::path mapped_path(const fs::path& p, const fs::path& workspace) {
    const std::string map = getenv_str("NVCC_FORGE_PATH_MAP");
    std::string_view rest = map;
    while (!rest.empty()) {
        const std::string_view entry = rest.substr(0, rest.find(','));
        rest.remove_prefix(std::min(rest.size(), entry.size() + 1));
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        const fs::path from = fs::path(entry.substr(0, eq)).lexically_normal();
        const fs::path to = eq + 1 == entry.size() ? workspace : fs::path(entry.substr(eq + 1));
        const fs::path below = p.lexically_relative(from);
        if (below.empty() || *below.begin() == "..") continue;
        return (to / below).lexically_normal();
    }
    return p;
}

} // namespace

std::string workspace_path(std::string_view path, std::string_view base) {
    if (path.empty()) return {};
    std::error_code ec;
    fs::path b = base.empty() ? fs::current_path(ec) : fs::path(base);
    const fs::path p = mapped_path(fs::path(path).lexically_normal(), b);
    if (ec || !p.is_absolute() || !b.is_absolute()) return p.generic_string();
    b = b.lexically_normal();
    const fs::path rel = p.lexically_relative(b);
    // Under `base`: no ".." step. Outside it, the absolute path says more than "../../x".
    if (rel.empty() || *rel.begin() == "..") return p.generic_string();
    return rel.generic_string();
}

} // namespace forge::ci
