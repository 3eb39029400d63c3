// The character classes of the C-family and script lexers (ASCII; the scans never need locale).
#pragma once

namespace forge::lint {

inline bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_ident_char(char c) {
    return is_ident_start(c) || (c >= '0' && c <= '9');
}
inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

} // namespace forge::lint
