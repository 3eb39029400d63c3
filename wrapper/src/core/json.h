// The one way nvcc-forge writes JSON. Strings reach it from files and the command line as bytes
// (paths, wheel member names, nvcc's messages, YAML values), and a JSON text must be UTF-8
// (RFC 8259, section 8.1). nlohmann's dump() throws type_error.316 on a string that is not
// UTF-8, and uncaught that ends the process with SIGABRT. The rule here, the same for every
// document: valid UTF-8 is written as it is; each byte that does not start or continue a valid
// UTF-8 sequence is written as U+FFFD (the replacement character), as nlohmann's
// error_handler_t::replace does. The text output of the same strings escapes them instead
// (core/text.h: \xHH); the JSON output never fails for them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace forge {

// `j` as JSON text under the rule above: compact when `indent` is -1, else pretty-printed with
// that many spaces per level (no trailing newline).
std::string json_text(const nlohmann::json& j, int indent = -1);
std::string json_text(const nlohmann::ordered_json& j, int indent = -1);

// A JSON string literal (quotes included) of `s` under the same rule, for JSON written without
// a DOM (list's rows): exactly what json_text writes for that string.
std::string json_quote(std::string_view s);

} // namespace forge
