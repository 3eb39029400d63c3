#include "binary/entry_json.h"

#include <fmt/format.h>
#include <optional>
#include <type_traits>

namespace forge::binary {

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                out += fmt::format("\\u{:04x}", static_cast<int>(c));
            else
                out += c;
        }
    }
    return out + "\"";
}

namespace {

template <class T> std::string json_optional(const std::optional<T>& v) {
    if (!v) return "null";
    if constexpr (std::is_same_v<T, std::string>)
        return json_string(*v);
    else
        return fmt::format("{}", *v);
}

} // namespace

std::string entry_json(const Entry& e) {
    return fmt::format(
        "  {{\"file\": {}, \"member\": {}, \"section\": {}, \"fatbin\": {}, \"fatbin_offset\": {}, "
        "\"offset\": {}, \"kind\": \"{}\", \"arch\": \"{}\", \"compression\": \"{}\", \"size\": "
        "{}, "
        "\"uncompressed_size\": {}, \"stub\": {}, \"kernels\": {}, \"toolkit\": {}, "
        "\"found\": \"{}\"}}",
        json_string(e.file), json_optional(e.member), json_string(e.section), e.fatbin_index,
        e.fatbin_offset, e.entry_offset, arch::kind_string(e.target.kind), e.target.name(),
        compression_string(e.compression), e.payload_size, e.uncompressed_size,
        json_optional(stub_known(e)), json_optional(e.kernels), json_optional(e.toolkit),
        found_string(e.found));
}

std::string entries_json(const std::vector<Entry>& rows) {
    std::string out = "[";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        out += i ? ",\n" : "\n";
        out += entry_json(rows[i]);
    }
    out += rows.empty() ? "]\n" : "\n]\n";
    return out;
}

} // namespace forge::binary
