#include "core/version.h"

#include <charconv>
#include <fmt/format.h>

namespace forge {

namespace {

// The digits at the start of `s` as an int: how many were read (0: none, or too large).
std::size_t read_part(std::string_view s, int& out) {
    std::size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9')
        ++n;
    if (n == 0) return 0;
    const std::string_view digits = s.substr(0, n);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && p == digits.data() + digits.size() ? n : 0;
}

} // namespace

std::optional<LeadingVersion> leading_cuda_version(std::string_view text) {
    LeadingVersion out;
    std::size_t at = read_part(text, out.version.major);
    if (at == 0 || at >= text.size() || text[at] != '.') return std::nullopt;
    const std::size_t minor = read_part(text.substr(at + 1), out.version.minor);
    if (minor == 0) return std::nullopt;
    at += 1 + minor;
    int patch = 0;
    if (at < text.size() && text[at] == '.') {
        if (const std::size_t n = read_part(text.substr(at + 1), patch); n != 0) {
            out.version.patch = patch;
            at += 1 + n;
        }
    }
    out.length = at;
    return out;
}

Result<DottedVersion> parse_cuda_version(std::string_view text, bool allow_patch) {
    const auto lead = leading_cuda_version(text);
    if (!lead || lead->length != text.size() || (lead->version.patch && !allow_patch)) {
        Error e(fmt::format("'{}' is not a CUDA version ({})", text,
                            allow_patch ? "X.Y or X.Y.Z" : "X.Y"));
        e.key = std::string(text);
        return e;
    }
    return lead->version;
}

} // namespace forge
