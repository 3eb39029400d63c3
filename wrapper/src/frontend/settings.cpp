#include "frontend/settings.h"

#include "core/text.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::frontend {

namespace {

constexpr std::string_view kPrefix = "NVCC_FORGE_";

struct Setting {
    std::string_view name;
    std::string FrontendEnv::*field;
    bool policy; // one of the settings that together define the policy
};

constexpr std::array<Setting, 8> kSettings{{
    {"ARCH_LIST", &FrontendEnv::arch_list, true},
    {"PACKAGE", &FrontendEnv::package, true},
    {"TORCH", &FrontendEnv::torch, true},
    {"PLATFORM", &FrontendEnv::platform, true},
    {"POLICY", &FrontendEnv::policy_file, true},
    {"PACKAGES_DIR", &FrontendEnv::packages_dir, true},
    {"MODE", &FrontendEnv::mode, false},
    {"LOG", &FrontendEnv::log, false},
}};

// "NVCC_FORGE_SHIM_SETTINGS " + 8 hex digits of the payload's length + "\n": 34 bytes.
constexpr std::string_view kFooterTag = "NVCC_FORGE_SHIM_SETTINGS ";
constexpr size_t kFooterSize = kFooterTag.size() + 8 + 1;
constexpr size_t kMaxPayload = 1 << 20;

} // namespace

bool is_setting_arg(std::string_view arg) {
    return arg.size() > kPrefix.size() && arg.substr(0, kPrefix.size()) == kPrefix &&
           arg.find('=') != std::string_view::npos;
}

Status check_setting_value(std::string_view assignment, std::string_view origin) {
    // A trailer and .nvcc-forge-policy hold one assignment per line: a newline in a value
    // would be a second setting (NVCC_FORGE_MODE=observe smuggled in a package name).
    const bool control = std::any_of(assignment.begin(), assignment.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (!control) return ok_status();
    Error e{fmt::format("{}: '{}' holds a control character: a setting's value is one line of "
                        "text",
                        origin, shown_value(assignment))};
    e.key = std::string(assignment.substr(0, assignment.find('=')));
    return e;
}

Status bind_settings(FrontendEnv& env, const std::vector<std::string>& assignments,
                     std::string_view origin) {
    FrontendEnv bound = env;
    bool policy_bound = false;
    std::array<bool, kSettings.size()> given{};
    for (const auto& a : assignments) {
        const auto eq = a.find('=');
        const std::string_view name =
            is_setting_arg(a) ? std::string_view(a).substr(kPrefix.size(), eq - kPrefix.size())
                              : std::string_view();
        size_t i = 0;
        while (i < kSettings.size() && kSettings[i].name != name)
            ++i;
        if (i == kSettings.size()) {
            Error e{fmt::format("{}: '{}' is not a setting a build can fix (NVCC_FORGE_ARCH_LIST, "
                                "_PACKAGE, _TORCH, _PLATFORM, _POLICY, _PACKAGES_DIR, _MODE, _LOG)",
                                origin, a)};
            e.key = a.substr(0, eq);
            return e;
        }
        FORGE_TRY_STATUS(check_setting_value(a, origin));
        bound.*kSettings[i].field = a.substr(eq + 1);
        given[i] = true;
        policy_bound = policy_bound || kSettings[i].policy;
    }
    for (size_t i = 0; i < kSettings.size(); ++i) {
        const Setting& s = kSettings[i];
        if (!given[i] && !(s.policy && policy_bound)) continue;
        if (!given[i]) bound.*s.field = std::string();
        const std::string& was = env.*s.field;
        if (!was.empty() && was != bound.*s.field)
            bound.env_not_used.push_back(fmt::format("{}{}={}", kPrefix, s.name, was));
    }
    bound.bound_by = std::string(origin);
    env = std::move(bound);
    return ok_status();
}

std::string shim_trailer(const std::vector<std::string>& assignments) {
    std::string payload = "\n";
    for (const auto& a : assignments)
        payload += a + "\n";
    return payload + fmt::format("{}{:08x}\n", kFooterTag, payload.size());
}

std::optional<std::vector<std::string>> read_shim_settings(const std::filesystem::path& exe) {
    const int fd = ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::optional<std::vector<std::string>> out;
    struct stat st {};
    std::array<char, kFooterSize> footer{};
    if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) > kFooterSize &&
        ::pread(fd, footer.data(), footer.size(), st.st_size - static_cast<off_t>(kFooterSize)) ==
            static_cast<ssize_t>(kFooterSize) &&
        std::string_view(footer.data(), kFooterTag.size()) == kFooterTag && footer.back() == '\n') {
        const std::string hex(footer.data() + kFooterTag.size(), 8);
        char* end = nullptr;
        const unsigned long len = std::strtoul(hex.c_str(), &end, 16);
        const auto room = static_cast<unsigned long>(st.st_size) - kFooterSize;
        if (end == hex.c_str() + 8 && len > 0 && len <= kMaxPayload && len <= room) {
            std::string payload(len, '\0');
            if (::pread(fd, payload.data(), len, static_cast<off_t>(room - len)) ==
                    static_cast<ssize_t>(len) &&
                payload.front() == '\n') {
                std::vector<std::string> lines;
                size_t start = 1;
                for (size_t nl; (nl = payload.find('\n', start)) != std::string::npos;
                     start = nl + 1)
                    if (nl > start && payload[start] != '#')
                        lines.push_back(payload.substr(start, nl - start));
                out = std::move(lines);
            }
        }
    }
    ::close(fd);
    return out;
}

} // namespace forge::frontend
