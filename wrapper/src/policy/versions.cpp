#include "policy/versions.h"

#include "core/version.h"

#include <charconv>
#include <fmt/format.h>
#include <vector>

namespace forge::policy {

namespace {

bool to_int(std::string_view s, int& out) {
    if (s.empty() || s.size() > 4) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

// Leading numeric components of a dotted version ("2.10.0a0" -> {2, 10, 0}); stops at the first
// component that is not all digits.
std::vector<int> numeric_parts(std::string_view s) {
    std::vector<int> parts;
    while (!s.empty()) {
        auto dot = s.find('.');
        std::string_view part = s.substr(0, dot);
        int v = 0;
        std::size_t digits = 0;
        while (digits < part.size() && part[digits] >= '0' && part[digits] <= '9')
            ++digits;
        if (digits == 0 || !to_int(part.substr(0, digits), v)) break;
        parts.push_back(v);
        if (digits != part.size() || dot == std::string_view::npos) break;
        s.remove_prefix(dot + 1);
    }
    return parts;
}

Error bad(std::string_view what, std::string_view text, std::string_view expected) {
    Error e{fmt::format("bad {} '{}': expected {}", what, text, expected)};
    e.key = std::string(text);
    return e;
}

} // namespace

Result<std::string> normalize_cuda(std::string_view text) {
    constexpr std::string_view expected = "a CUDA version like 12.8, 12.8.1 or cu128";
    if (text.starts_with("cu")) {
        std::string_view digits = text.substr(2);
        int v = 0;
        if (digits.size() < 3 || !to_int(digits, v)) return bad("CUDA version", text, expected);
        // cu128 -> 12.8, cu130 -> 13.0: the minor is always the last digit.
        return fmt::format("{}.{}", v / 10, v % 10);
    }
    // The dotted spellings are core/version.h's (one parser of "X.Y"/"X.Y.Z"); a major alone
    // ("13") is its ".0".
    const bool major_only = text.find('.') == std::string_view::npos;
    auto v = parse_cuda_version(major_only ? std::string(text) + ".0" : std::string(text));
    if (!v || v->major < 1) return bad("CUDA version", text, expected);
    return fmt::format("{}.{}", v->major, v->minor);
}

Result<std::string> normalize_torch(std::string_view text) {
    constexpr std::string_view expected = "a torch version like 2.9 or 2.9.1+cu128";
    std::string_view base = text.substr(0, text.find('+'));
    auto parts = numeric_parts(base);
    if (parts.size() < 2 || base.empty() || base[0] < '0' || base[0] > '9')
        return bad("torch version", text, expected);
    return fmt::format("{}.{}", parts[0], parts[1]);
}

Result<std::string> normalize_python(std::string_view text) {
    constexpr std::string_view expected = "a Python version like 3.12 or cp312";
    if (text.starts_with("cp")) {
        int v = 0;
        std::string_view d = text.substr(2);
        if (d.size() < 2 || !to_int(d, v)) return bad("Python version", text, expected);
        return fmt::format("{}.{}", d[0] - '0', d.substr(1));
    }
    for (char c : text)
        if ((c < '0' || c > '9') && c != '.') return bad("Python version", text, expected);
    auto parts = numeric_parts(text);
    if (parts.size() < 2) return bad("Python version", text, expected);
    return fmt::format("{}.{}", parts[0], parts[1]);
}

std::string_view host_platform() {
#if defined(_WIN32)
    return "win_amd64";
#elif defined(__aarch64__)
    return "linux_aarch64";
#else
    return "linux_x86_64";
#endif
}

Result<std::string> normalize_platform(std::string_view text) {
    if (text == "linux_x86_64" || text == "win_amd64" || text == "linux_aarch64")
        return std::string(text);
    if ((text.starts_with("manylinux") || text.starts_with("musllinux")) &&
        text.ends_with("_x86_64"))
        return std::string("linux_x86_64");
    if ((text.starts_with("manylinux") || text.starts_with("musllinux")) &&
        text.ends_with("_aarch64"))
        return std::string("linux_aarch64");
    return bad("platform", text, "linux_x86_64, linux_aarch64 or win_amd64");
}

bool version_less(std::string_view a, std::string_view b) {
    auto pa = numeric_parts(a), pb = numeric_parts(b);
    if (pa.empty() || pb.empty() || pa == pb) return a < b;
    return pa < pb;
}

} // namespace forge::policy
