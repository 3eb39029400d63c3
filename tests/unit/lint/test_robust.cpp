// The lint never crashes and never reports outside its input: random mixes of the tokens that
// steer its lexers and rules (quotes, comments, raw strings, brackets, directives, gates).
#include "helpers.h"
#include "lint/lex.h"
#include "lint/lint.h"

#include "../seed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace forge;
using namespace forge::lint;
using forge::lint::test::test_gpus;

namespace {

const std::vector<std::string> kPieces = {"\"",
                                          "'",
                                          "/",
                                          "*",
                                          "\\",
                                          "\n",
                                          "\r\n",
                                          " ",
                                          "R\"(",
                                          ")\"",
                                          "R\"x(",
                                          ")x\"",
                                          "#",
                                          "if",
                                          " 0",
                                          "#if 0\n",
                                          "#else\n",
                                          "#endif\n",
                                          "#define ",
                                          "A ",
                                          "890",
                                          "(",
                                          ")",
                                          "__CUDA_ARCH__",
                                          ">=",
                                          "<",
                                          "==",
                                          "e4m3",
                                          "__nv_fp8_e5m2",
                                          "asm",
                                          "volatile",
                                          "[[",
                                          "]]",
                                          "#[[",
                                          "[=[",
                                          "]=]",
                                          "$ENV{",
                                          "ENV{",
                                          "}",
                                          "${",
                                          "$",
                                          "=",
                                          "set(",
                                          "TORCH_CUDA_ARCH_LIST",
                                          "sm_90a",
                                          "compute_",
                                          "120",
                                          "\"\"\"",
                                          "'''",
                                          "1'000",
                                          "u8R\"",
                                          "__CUDA_ARCH_SPECIFIC__",
                                          "__CUDA_ARCH_FAMILY_SPECIFIC__",
                                          "__CUDA_ARCH_FEAT_SM90_ALL",
                                          "__CUDA_ARCH_HAS_FEATURE__(",
                                          "NV_PROVIDES_SM_",
                                          "HAS_SM89",
                                          "CUDA_ARCHITECTURES",
                                          "90a-real",
                                          "\"9.0a;10.0f\"",
                                          "-gencode",
                                          "os.environ[",
                                          "]",
                                          "get(",
                                          "del ",
                                          ":",
                                          ",",
                                          "unset ",
                                          "export ",
                                          "\t",
                                          "\0"};

std::string random_text(std::mt19937& rng, std::size_t pieces) {
    std::uniform_int_distribution<std::size_t> pick(0, kPieces.size() - 1);
    std::string s;
    for (std::size_t i = 0; i < pieces; ++i) {
        const auto& p = kPieces[pick(rng)];
        s += p.empty() ? std::string(1, '\0') : p;
    }
    return s;
}

void check_findings(const std::vector<LintFinding>& found, std::string_view text) {
    const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    for (const auto& f : found) {
        EXPECT_GE(f.line, 1);
        EXPECT_LE(f.line, lines);
        EXPECT_FALSE(f.rule.empty());
    }
}

} // namespace

TEST(LintRobust, RandomInputsNeverCrashOrEscapeTheText) {
    std::mt19937 rng(forge::test::test_seed(20261130));
    auto list = arch::ArchList::parse("8.0 8.6 9.0+PTX", "test");
    ASSERT_TRUE(list.ok());
    for (int iter = 0; iter < 1500; ++iter) {
        std::string text = random_text(rng, 1 + static_cast<std::size_t>(iter % 60));
        std::string blanked = blank_c_like(text);
        ASSERT_EQ(blanked.size(), text.size());
        ASSERT_EQ(std::count(blanked.begin(), blanked.end(), '\n'),
                  std::count(text.begin(), text.end(), '\n'));
        for (auto d : {ScriptDialect::Python, ScriptDialect::CMake, ScriptDialect::Shell}) {
            ScriptText st = lex_script(text, d);
            ASSERT_EQ(st.code.size(), text.size());
            std::size_t prev = 0;
            for (const auto& s : st.strings) {
                ASSERT_LE(s.begin, s.end);
                ASSERT_LE(s.end, text.size());
                ASSERT_GE(s.begin, prev);
                prev = s.end;
            }
        }
        MacroTable macros;
        macros.collect(blanked, "r.cu");
        check_findings(lint_source_text("r.cu", text, *list, macros, test_gpus()), text);
        for (std::string_view path : {"setup.py", "CMakeLists.txt", "build.sh"})
            check_findings(lint_build_text(path, text, *list, test_gpus()), text);
    }
}
