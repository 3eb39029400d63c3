// `list --format json`: one line per fatbin entry, written by hand because nlohmann's DOM costs
// more than reading the whole file on libraries with thousands of entries (`list` is meant to take
// milliseconds), and its dump() has no one-object-per-line layout. Its strings are written by
// core/json.h's json_quote(), under the one rule for bytes that are not UTF-8.
#pragma once

#include "binary/reader.h"

#include <string>
#include <string_view>
#include <vector>

namespace forge::binary {

// `  {"file": ..., "member": ..., ..., "toolkit": ..., "found": ...}` (no newline).
std::string entry_json(const Entry& e);

// "[\n" rows joined by ",\n" "\n]\n"; "[]\n" when there are none.
std::string entries_json(const std::vector<Entry>& rows);

} // namespace forge::binary
