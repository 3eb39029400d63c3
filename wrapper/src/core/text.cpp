#include "core/text.h"

#include <fmt/format.h>

namespace forge {

std::string escaped_byte(unsigned char c) {
    return fmt::format("\\x{:02x}", c);
}

std::string escape_control(std::string_view s, bool keep_newlines) {
    constexpr unsigned char kFirstPrintable = 0x20;
    constexpr unsigned char kDel = 0x7f;
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= kFirstPrintable && c != kDel) || (keep_newlines && c == '\n')) {
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            out += escaped_byte(c);
        }
    }
    return out;
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return 1;
    // The lead byte gives the length and the range of the second byte (RFC 3629's table).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; // overlong below U+0800
        if (c == 0xed) hi = 0x9f; // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90; // overlong below U+10000
        if (c == 0xf4) hi = 0x8f; // above U+10FFFF
    } else {
        return 0; // a continuation byte alone, 0xc0/0xc1 (overlong), 0xf5..0xff
    }
    if (i + len > s.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
    return len;
}

std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t len = utf8_sequence_length(s, i);
        if (len == 0) return i;
        i += len;
    }
    return std::nullopt;
}

std::string shown_value(std::string_view s, std::size_t max_bytes) {
    if (s.size() <= max_bytes) return escape_control(s);
    return fmt::format("{}... ({} bytes)", escape_control(s.substr(0, max_bytes)), s.size());
}

const char* markup_entity(char c) {
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return nullptr;
    }
}

} // namespace forge
