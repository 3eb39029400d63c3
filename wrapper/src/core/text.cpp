#include "core/text.h"

#include <fmt/format.h>

namespace forge {

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
            out += fmt::format("\\x{:02x}", c);
        }
    }
    return out;
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
