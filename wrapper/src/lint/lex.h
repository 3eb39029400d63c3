// The lint's two small lexers. They do not tokenize for a compiler; they only decide which bytes
// are code, so that `e4m3` in a comment or "__CUDA_ARCH__ >= 890" in a printf never matches.
// Both keep the text's length and every newline, so byte offsets and line numbers of the output
// are those of the input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace forge::lint {

// C, C++ and CUDA: comments (// with line continuations, /* */) and the contents of string and
// character literals (escapes, raw strings R"d(...)d", u8/u/U/L prefixes) become spaces. Digit
// separators (1'000) are not character literals. The templates of inline assembly
// (asm/__asm__/asm volatile(...)) are device code, so their strings are kept: that is where
// `cvt.rn.satfinite.e4m3x2.f32` and `mma...e4m3` live.
std::string blank_c_like(std::string_view text);

// Build scripts: Python (and TOML), CMake, shell and Makefiles. `#` comments are not code, but
// strings are (setup.py emits "-gencode" strings), so only comments are blanked and the string
// literals are returned as spans for the checks that want a whole literal.
enum class ScriptDialect { Python, CMake, Shell };

struct StringSpan {
    std::size_t begin = 0; // first byte of the contents (after the opening quote)
    std::size_t end = 0;   // one past the last byte of the contents
};

struct ScriptText {
    std::string code;                // the text with comments blanked
    std::vector<StringSpan> strings; // string literal contents, in order
};

ScriptText lex_script(std::string_view text, ScriptDialect dialect);

// 1-based line of byte `offset` in `text`.
int line_of(std::string_view text, std::size_t offset);

} // namespace forge::lint
