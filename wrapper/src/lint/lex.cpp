#include "lint/lex.h"

#include "lint/chars.h"

#include <algorithm>

namespace forge::lint {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Blanks out[k] unless it is a line break, so line numbers survive.
void blank_at(std::string& out, std::size_t k) {
    if (out[k] != '\n' && out[k] != '\r') out[k] = ' ';
}

// A quoted literal starting at `open` (the quote). Returns the index one past the closing quote
// (or the end of the line for an unterminated one). Contents are blanked unless `keep`.
std::size_t skip_c_quoted(std::string_view in, std::string& out, std::size_t open, bool keep) {
    const char quote = in[open];
    std::size_t k = open + 1;
    while (k < in.size()) {
        char c = in[k];
        if (c == '\\' && k + 1 < in.size()) {
            if (!keep) {
                blank_at(out, k);
                blank_at(out, k + 1);
            }
            k += 2;
            continue;
        }
        if (c == quote) return k + 1;
        if (c == '\n') return k; // unterminated: the compiler would reject it; stop at the line
        if (!keep) blank_at(out, k);
        ++k;
    }
    return k;
}

// R"delim( ... )delim" with `quote` at the opening quote. Returns one past the closing quote, or
// npos when the delimiter is not a valid raw-string delimiter (then it is an ordinary string).
std::size_t skip_c_raw(std::string_view in, std::string& out, std::size_t quote, bool keep) {
    std::size_t k = quote + 1;
    std::string delim;
    while (k < in.size() && in[k] != '(') {
        char c = in[k];
        if (is_space(c) || c == '\\' || c == ')' || c == '"' || delim.size() >= 16)
            return std::string_view::npos;
        delim += c;
        ++k;
    }
    if (k >= in.size()) return std::string_view::npos;
    std::string close = ")" + delim + "\"";
    std::size_t end = in.find(close, k + 1);
    std::size_t stop = end == std::string_view::npos ? in.size() : end + close.size() - 1;
    if (!keep)
        for (std::size_t j = quote + 1; j < stop; ++j)
            blank_at(out, j);
    return end == std::string_view::npos ? in.size() : stop + 1;
}

bool is_raw_prefix(std::string_view ident) {
    return ident == "R" || ident == "u8R" || ident == "uR" || ident == "UR" || ident == "LR";
}
bool is_asm_keyword(std::string_view ident) {
    return ident == "asm" || ident == "__asm__" || ident == "__asm";
}
bool is_asm_qualifier(std::string_view ident) {
    return ident == "volatile" || ident == "__volatile__" || ident == "goto" || ident == "inline";
}

} // namespace

std::string blank_c_like(std::string_view in) {
    std::string out(in);
    const std::size_t n = in.size();
    std::size_t i = 0;
    int paren_depth = 0;
    int asm_close_depth = -1; // paren depth whose ')' ends the asm statement; -1 outside asm
    bool asm_pending = false; // saw `asm [qualifiers]`, waiting for '('
    while (i < n) {
        const char c = in[i];
        const char next = i + 1 < n ? in[i + 1] : '\0';
        if (c == '/' && next == '/') {
            std::size_t k = i;
            while (k < n && in[k] != '\n') {
                // A backslash at the end of a // comment line continues the comment.
                if (in[k] == '\\' && k + 1 < n && in[k + 1] == '\n') {
                    blank_at(out, k);
                    k += 2;
                    continue;
                }
                if (in[k] == '\\' && k + 2 < n && in[k + 1] == '\r' && in[k + 2] == '\n') {
                    blank_at(out, k);
                    k += 3;
                    continue;
                }
                blank_at(out, k);
                ++k;
            }
            i = k;
            continue;
        }
        if (c == '/' && next == '*') {
            std::size_t end = in.find("*/", i + 2);
            std::size_t stop = end == std::string_view::npos ? n : end + 2;
            for (std::size_t k = i; k < stop; ++k)
                blank_at(out, k);
            i = stop;
            continue;
        }
        const bool keep = asm_close_depth >= 0;
        if (c == '"') {
            i = skip_c_quoted(in, out, i, keep);
            continue;
        }
        if (c == '\'') {
            i = skip_c_quoted(in, out, i, keep);
            continue;
        }
        if (is_digit(c) || (c == '.' && is_digit(next))) {
            // pp-number: digits, letters, '.', digit separators, exponent signs.
            std::size_t k = i + 1;
            while (k < n) {
                char d = in[k];
                const bool exponent_sign =
                    (d == '+' || d == '-') &&
                    (in[k - 1] == 'e' || in[k - 1] == 'E' || in[k - 1] == 'p' || in[k - 1] == 'P');
                if (is_ident_char(d) || d == '.' || exponent_sign) {
                    ++k;
                } else if (d == '\'' && k + 1 < n && is_ident_char(in[k + 1])) {
                    k += 2;
                } else {
                    break;
                }
            }
            asm_pending = false;
            i = k;
            continue;
        }
        if (is_ident_start(c)) {
            std::size_t k = i + 1;
            while (k < n && is_ident_char(in[k]))
                ++k;
            std::string_view ident = in.substr(i, k - i);
            if (k < n && in[k] == '"' && is_raw_prefix(ident)) {
                std::size_t end = skip_c_raw(in, out, k, keep);
                i = end != std::string_view::npos ? end : skip_c_quoted(in, out, k, keep);
                continue;
            }
            if (is_asm_keyword(ident))
                asm_pending = true;
            else if (!(asm_pending && is_asm_qualifier(ident)))
                asm_pending = false;
            i = k;
            continue;
        }
        if (c == '(') {
            ++paren_depth;
            if (asm_pending && asm_close_depth < 0) asm_close_depth = paren_depth;
            asm_pending = false;
        } else if (c == ')') {
            if (paren_depth == asm_close_depth) asm_close_depth = -1;
            if (paren_depth > 0) --paren_depth;
        } else if (!is_space(c)) {
            asm_pending = false;
        }
        ++i;
    }
    return out;
}

namespace {

void blank_range(std::string& out, std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k)
        blank_at(out, k);
}

std::size_t line_end(std::string_view in, std::size_t from) {
    std::size_t e = in.find('\n', from);
    return e == std::string_view::npos ? in.size() : e;
}

// CMake bracket open "[" "="* "[" at `at`: returns the number of '=' or -1.
int cmake_bracket_level(std::string_view in, std::size_t at) {
    if (at >= in.size() || in[at] != '[') return -1;
    std::size_t k = at + 1;
    int level = 0;
    while (k < in.size() && in[k] == '=') {
        ++level;
        ++k;
    }
    return k < in.size() && in[k] == '[' ? level : -1;
}

void lex_python(std::string_view in, ScriptText& st) {
    std::size_t i = 0;
    const std::size_t n = in.size();
    while (i < n) {
        char c = in[i];
        if (c == '#') {
            std::size_t e = line_end(in, i);
            blank_range(st.code, i, e);
            i = e;
            continue;
        }
        if (c == '"' || c == '\'') {
            const bool triple = i + 2 < n && in[i + 1] == c && in[i + 2] == c;
            const std::size_t open_len = triple ? 3 : 1;
            std::size_t k = i + open_len;
            std::size_t close = std::string_view::npos;
            while (k < n) {
                if (in[k] == '\\' && k + 1 < n) {
                    k += 2;
                    continue;
                }
                if (in[k] == c && (!triple || (k + 2 < n && in[k + 1] == c && in[k + 2] == c))) {
                    close = k;
                    break;
                }
                if (!triple && in[k] == '\n') break; // unterminated single-line string
                ++k;
            }
            std::size_t end = close == std::string_view::npos ? k : close;
            st.strings.push_back({i + open_len, end});
            i = close == std::string_view::npos ? k : close + open_len;
            continue;
        }
        ++i;
    }
}

void lex_cmake(std::string_view in, ScriptText& st) {
    std::size_t i = 0;
    const std::size_t n = in.size();
    auto bracket_close = [&](std::size_t open, int level) {
        std::string close = "]" + std::string(static_cast<std::size_t>(level), '=') + "]";
        std::size_t e = in.find(close, open + static_cast<std::size_t>(level) + 2);
        return std::pair<std::size_t, std::size_t>{e == std::string_view::npos ? n : e,
                                                   e == std::string_view::npos ? n
                                                                               : e + close.size()};
    };
    while (i < n) {
        char c = in[i];
        if (c == '#') {
            int level = cmake_bracket_level(in, i + 1);
            if (level >= 0) {
                auto [content_end, after] = bracket_close(i + 1, level);
                (void)content_end;
                blank_range(st.code, i, after);
                i = after;
            } else {
                std::size_t e = line_end(in, i);
                blank_range(st.code, i, e);
                i = e;
            }
            continue;
        }
        if (c == '"') {
            std::size_t k = i + 1;
            while (k < n && in[k] != '"')
                k += (in[k] == '\\' && k + 1 < n) ? 2 : 1;
            st.strings.push_back({i + 1, std::min(k, n)});
            i = k < n ? k + 1 : n;
            continue;
        }
        if (c == '[' && (i == 0 || is_space(in[i - 1]) || in[i - 1] == '(')) {
            int level = cmake_bracket_level(in, i);
            if (level >= 0) {
                auto [content_end, after] = bracket_close(i, level);
                st.strings.push_back({i + static_cast<std::size_t>(level) + 2, content_end});
                i = after;
                continue;
            }
        }
        ++i;
    }
}

void lex_shell(std::string_view in, ScriptText& st) {
    std::size_t i = 0;
    const std::size_t n = in.size();
    while (i < n) {
        char c = in[i];
        if (c == '\\' && i + 1 < n) {
            i += 2;
            continue;
        }
        if (c == '#') {
            char prev = i == 0 ? '\n' : in[i - 1];
            // `$#` and `${#var}` are not comments; a comment starts a word.
            if (is_space(prev) || prev == ';' || prev == '|' || prev == '&' || prev == '(' ||
                prev == '`') {
                std::size_t e = line_end(in, i);
                blank_range(st.code, i, e);
                i = e;
                continue;
            }
        }
        if (c == '\'' || c == '"') {
            std::size_t k = i + 1;
            while (k < n && in[k] != c)
                k += (c == '"' && in[k] == '\\' && k + 1 < n) ? 2 : 1;
            st.strings.push_back({i + 1, std::min(k, n)});
            i = k < n ? k + 1 : n;
            continue;
        }
        ++i;
    }
}

} // namespace

ScriptText lex_script(std::string_view text, ScriptDialect dialect) {
    ScriptText st;
    st.code = std::string(text);
    switch (dialect) {
    case ScriptDialect::Python:
        lex_python(text, st);
        break;
    case ScriptDialect::CMake:
        lex_cmake(text, st);
        break;
    case ScriptDialect::Shell:
        lex_shell(text, st);
        break;
    }
    return st;
}

int line_of(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    return 1 + static_cast<int>(
                   std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

} // namespace forge::lint
