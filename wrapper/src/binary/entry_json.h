// `list --format json`: one line per fatbin entry, written by hand because nlohmann's DOM costs
// more than reading the whole file on libraries with thousands of entries (`list` is meant to take
// milliseconds), and its dump() has no one-object-per-line layout.
#pragma once

#include "binary/reader.h"

#include <string>
#include <string_view>
#include <vector>

namespace forge::binary {

// A JSON string literal (quotes included): ", \, \n, \t, \r escaped, other control bytes as
// \u00XX, every other byte (UTF-8 included) as is.
std::string json_string(std::string_view s);

// `  {"file": ..., "member": ..., ..., "toolkit": ..., "found": ...}` (no newline).
std::string entry_json(const Entry& e);

// "[\n" rows joined by ",\n" "\n]\n"; "[]\n" when there are none.
std::string entries_json(const std::vector<Entry>& rows);

} // namespace forge::binary
