// Text output of names the user does not control (wheel members, archive members, section names,
// paths): a control character printed raw could end a table row and forge the next one, or send
// a terminal escape sequence. JSON output escapes on its own; text output goes through here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace forge {

// `s` with each control character (below 0x20, and 0x7f) written as a C escape: \n, \r, \t,
// else \xHH. Every other byte, UTF-8 included, is kept. `keep_newlines` keeps '\n' as it is
// (a message that is meant to span lines).
std::string escape_control(std::string_view s, bool keep_newlines = false);
// "\x1b": how text output writes a byte it does not write as itself (escape_control, JUnit XML).
std::string escaped_byte(unsigned char c);

// The offset of the first byte of `s` that does not start or continue a well-formed UTF-8
// sequence (RFC 3629, section 4: no overlong forms, no surrogates, nothing above U+10FFFF), or
// nullopt when all of `s` is UTF-8. Text files nvcc-forge reads as text (the YAML policy files)
// must be UTF-8; its JSON writer (core/json.h) replaces such bytes.
std::optional<std::size_t> first_invalid_utf8(std::string_view s);
// The length of the well-formed UTF-8 sequence that starts at s[i] (1 for ASCII), 0 when none
// starts there; the one UTF-8 table (JUnit's XML keeps such a sequence, escapes other bytes).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);
// A value the user gave (a variable, an option), for a message: escape_control'd and, past
// `max_bytes`, cut with its length said ("/aaaa... (131072 bytes)").
std::string shown_value(std::string_view s, std::size_t max_bytes = 120);

// The entity for a character that HTML and XML text or attributes cannot carry as itself
// (& < > " '), or nullptr for any other character.
const char* markup_entity(char c);

} // namespace forge
