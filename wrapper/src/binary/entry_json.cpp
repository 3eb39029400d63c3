#include "binary/entry_json.h"

#include "core/json.h"

#include <fmt/format.h>
#include <optional>
#include <type_traits>

namespace forge::binary {

namespace {

template <class T> std::string json_optional(const std::optional<T>& v) {
    if (!v) return "null";
    if constexpr (std::is_same_v<T, std::string>)
        return json_quote(*v);
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
        json_quote(e.file), json_optional(e.member), json_quote(e.section), e.fatbin_index,
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
