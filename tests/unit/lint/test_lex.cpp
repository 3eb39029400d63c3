// The lint's lexers (lint/lex.h): what counts as code.
#include "lint/lex.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace forge::lint;

namespace {

bool has(std::string_view code, std::string_view needle) {
    return code.find(needle) != std::string_view::npos;
}

} // namespace

TEST(LintLexC, CommentsAndStringsBlankedLinesKept) {
    std::string src = "int a; // e4m3 here\n"
                      "/* __CUDA_ARCH__ >= 890\n   e5m2 */ int b;\n"
                      "const char* s = \"__nv_fp8_e4m3 \\\" e4m3\";\n"
                      "char c = '\\'';\n"
                      "int x = __CUDA_ARCH__;\n";
    std::string out = blank_c_like(src);
    ASSERT_EQ(out.size(), src.size());
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
    EXPECT_FALSE(has(out, "e4m3"));
    EXPECT_FALSE(has(out, "e5m2"));
    EXPECT_FALSE(has(out, "890"));
    EXPECT_TRUE(has(out, "int a;"));
    EXPECT_TRUE(has(out, "int b;"));
    EXPECT_TRUE(has(out, "char c ="));
    EXPECT_TRUE(has(out, "int x = __CUDA_ARCH__;"));
    // the code after the block comment is still on line 3
    EXPECT_EQ(line_of(out, out.find("int b;")), 3);
}

TEST(LintLexC, LineCommentContinuesOverBackslashNewline) {
    std::string src = "// a comment \\\n__nv_fp8_e4m3 still comment\nint __nv_fp8_e5m2_code;\n";
    std::string out = blank_c_like(src);
    EXPECT_FALSE(has(out, "e4m3"));
    EXPECT_TRUE(has(out, "__nv_fp8_e5m2_code"));
    EXPECT_EQ(line_of(out, out.find("__nv_fp8_e5m2_code")), 3);
}

TEST(LintLexC, RawStringsWithDelimiters) {
    std::string src = "auto p = R\"xy(e4m3 )\" still inside )xy\"; int e5m2_after;\n"
                      "auto q = u8R\"(\n__CUDA_ARCH__ >= 890\n)\"; int tail;\n";
    std::string out = blank_c_like(src);
    EXPECT_FALSE(has(out, "e4m3"));
    EXPECT_FALSE(has(out, "890"));
    EXPECT_TRUE(has(out, "e5m2_after"));
    EXPECT_TRUE(has(out, "int tail;"));
    EXPECT_EQ(line_of(out, out.find("int tail;")), 4);
}

TEST(LintLexC, DigitSeparatorsAreNotCharLiterals) {
    // If 1'000 opened a char literal, the identifier after it would be blanked.
    std::string out = blank_c_like("int n = 1'000'000; __nv_fp8_e4m3 v;\n");
    EXPECT_TRUE(has(out, "__nv_fp8_e4m3 v;"));
}

TEST(LintLexC, InlineAsmTemplatesStayCode) {
    std::string src = "asm volatile(\"cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;\" : \"=h\"(r) : "
                      "\"f\"(a), \"f\"(b));\n"
                      "printf(\"e5m2 in a printf\");\n"
                      "__asm__ __volatile__(\n  \"mma.sync.aligned.e4m3.e5m2\"\n);\n";
    std::string out = blank_c_like(src);
    EXPECT_TRUE(has(out, "cvt.rn.satfinite.e4m3x2.f32"));
    EXPECT_TRUE(has(out, "mma.sync.aligned.e4m3.e5m2"));
    EXPECT_FALSE(has(out, "e5m2 in a printf"));
}

TEST(LintLexC, UnterminatedInputsDoNotRunAway) {
    for (std::string_view s : {"\"abc", "/* open", "R\"(open", "'", "asm(", "x = 1'", "\\"}) {
        std::string out = blank_c_like(s);
        EXPECT_EQ(out.size(), s.size()) << s;
    }
    // an unterminated string stops at its line: the next line is code again
    std::string out = blank_c_like("const char* s = \"open\nint __nv_fp8_e4m3;\n");
    EXPECT_TRUE(has(out, "__nv_fp8_e4m3"));
}

TEST(LintLexScript, PythonCommentsBlankedStringsKept) {
    std::string src = "# sm_90a in a comment\n"
                      "flags = [\"-gencode\", 'arch=compute_90a,code=sm_90a']  # trailing sm_100a\n"
                      "s = \"# not a comment sm_120a\"\n"
                      "doc = \"\"\"multi\nline sm_89 \"\"\"\n";
    ScriptText st = lex_script(src, ScriptDialect::Python);
    ASSERT_EQ(st.code.size(), src.size());
    EXPECT_FALSE(has(st.code, "sm_90a in a comment"));
    EXPECT_FALSE(has(st.code, "sm_100a"));
    EXPECT_TRUE(has(st.code, "arch=compute_90a,code=sm_90a"));
    EXPECT_TRUE(has(st.code, "# not a comment sm_120a"));
    EXPECT_TRUE(has(st.code, "line sm_89"));
    ASSERT_EQ(st.strings.size(), 4u);
    auto text = [&](std::size_t i) {
        return src.substr(st.strings[i].begin, st.strings[i].end - st.strings[i].begin);
    };
    EXPECT_EQ(text(0), "-gencode");
    EXPECT_EQ(text(1), "arch=compute_90a,code=sm_90a");
    EXPECT_EQ(text(2), "# not a comment sm_120a");
    EXPECT_EQ(text(3), "multi\nline sm_89 ");
}

TEST(LintLexScript, CMakeBracketCommentsAndArguments) {
    std::string src = "#[[ set(CMAKE_CUDA_ARCHITECTURES 75)\n]] set(A \"90a;100a\") # 120a\n"
                      "set(B [=[sm_89 ]] still]=])\n";
    ScriptText st = lex_script(src, ScriptDialect::CMake);
    EXPECT_FALSE(has(st.code, "CMAKE_CUDA_ARCHITECTURES"));
    EXPECT_FALSE(has(st.code, "120a"));
    EXPECT_TRUE(has(st.code, "set(A \"90a;100a\")"));
    ASSERT_EQ(st.strings.size(), 2u);
    EXPECT_EQ(src.substr(st.strings[0].begin, st.strings[0].end - st.strings[0].begin), "90a;100a");
    EXPECT_EQ(src.substr(st.strings[1].begin, st.strings[1].end - st.strings[1].begin),
              "sm_89 ]] still");
}

TEST(LintLexScript, ShellHashOnlyStartsAWord) {
    std::string src = "echo ${#TORCH_CUDA_ARCH_LIST} $# # export TORCH_CUDA_ARCH_LIST=7.5\n"
                      "echo '# sm_90a quoted'\n";
    ScriptText st = lex_script(src, ScriptDialect::Shell);
    EXPECT_TRUE(has(st.code, "${#TORCH_CUDA_ARCH_LIST}"));
    EXPECT_FALSE(has(st.code, "export"));
    EXPECT_TRUE(has(st.code, "# sm_90a quoted"));
}
