#include "core/json.h"

namespace forge {

namespace {

constexpr char kIndentChar = ' ';
constexpr bool kAsciiOnly = false; // UTF-8 stays UTF-8; only invalid bytes are replaced

template <class Json> std::string dump(const Json& j, int indent) {
    return j.dump(indent, kIndentChar, kAsciiOnly, Json::error_handler_t::replace);
}

// Bytes a JSON string carries as they are: printable ASCII but the quote and the backslash.
bool plain(std::string_view s) {
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
    }
    return true;
}

} // namespace

std::string json_text(const nlohmann::json& j, int indent) {
    return dump(j, indent);
}

std::string json_text(const nlohmann::ordered_json& j, int indent) {
    return dump(j, indent);
}

std::string json_quote(std::string_view s) {
    if (plain(s)) { // nearly every path and section name: no DOM, no escaping
        std::string out;
        out.reserve(s.size() + 2);
        out += '"';
        out += s;
        out += '"';
        return out;
    }
    return dump(nlohmann::json(std::string(s)), -1);
}

} // namespace forge
