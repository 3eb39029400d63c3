// The path-glob dialect (core/glob.h) shared by lint_ignore and wrapper.arch_specific_sources.
#include "core/glob.h"

#include <gtest/gtest.h>

using forge::glob_has_wildcard;
using forge::glob_match;
using forge::glob_match_unrooted;

TEST(Glob, StarAndQuestionStayInOneComponent) {
    EXPECT_TRUE(glob_match("csrc/*.cu", "csrc/a.cu"));
    EXPECT_TRUE(glob_match("csrc/*.cu", "csrc/.cu"));
    EXPECT_FALSE(glob_match("csrc/*.cu", "csrc/sub/a.cu"));
    EXPECT_FALSE(glob_match("csrc/*", "csrc/sub/a.cu"));
    EXPECT_TRUE(glob_match("csrc/k?.cu", "csrc/k1.cu"));
    EXPECT_FALSE(glob_match("csrc/k?.cu", "csrc/k12.cu"));
    EXPECT_FALSE(glob_match("a?b/x", "a/b/x"));
    EXPECT_TRUE(glob_match("csrc/*_sm90*.cu", "csrc/flash_fwd_sm90_bf16.cu"));
    EXPECT_FALSE(glob_match("csrc/*_sm90*.cu", "csrc/flash_fwd_sm80.cu"));
}

TEST(Glob, DoubleStarSpansComponents) {
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/a.cu")); // `**/` may be no directory
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/x/y/a.cu"));
    EXPECT_FALSE(glob_match("csrc/**/*.cu", "other/x/a.cu"));
    EXPECT_TRUE(glob_match("third_party/**", "third_party/cutlass/include/a.h"));
    EXPECT_TRUE(glob_match("**/gemm.cu", "a/b/gemm.cu"));
    EXPECT_TRUE(glob_match("**/gemm.cu", "gemm.cu"));
    EXPECT_FALSE(glob_match("**/gemm.cu", "a/xgemm.cu"));
    EXPECT_TRUE(glob_match("a/**b/c", "a/x/yb/c"));
}

TEST(Glob, NameGlobMatchesAnyComponent) {
    EXPECT_TRUE(glob_match("*.cuh", "deep/dir/k.cuh"));
    EXPECT_TRUE(glob_match("third_party", "third_party/cutlass/a.h"));
    EXPECT_TRUE(glob_match("cutlass", "third_party/cutlass/a.h"));
    EXPECT_FALSE(glob_match("third_party", "third_party_x/a.h"));
    EXPECT_TRUE(glob_match("setup.py", "setup.py"));
    EXPECT_FALSE(glob_match("setup.py", "setup.pyc"));
    EXPECT_FALSE(glob_match("*", "")); // no component, nothing to name
    EXPECT_FALSE(glob_match("", "/abs/a.cu"));
}

TEST(Glob, PlainPathCoversItsSubtree) {
    EXPECT_TRUE(glob_match("third_party/flash", "third_party/flash"));
    EXPECT_TRUE(glob_match("third_party/flash", "third_party/flash/a/b.cu"));
    EXPECT_FALSE(glob_match("third_party/flash", "third_party/flash2/b.cu"));
    EXPECT_FALSE(glob_match("third_party/fl?sh", "third_party/flash/b.cu")); // a wildcard: exact
    EXPECT_FALSE(glob_match("csrc/a.cu", "x/csrc/a.cu"));                    // rooted
}

TEST(Glob, BracketSets) {
    EXPECT_TRUE(glob_match("k[0-9].cu", "k7.cu"));
    EXPECT_FALSE(glob_match("k[0-9].cu", "kx.cu"));
    EXPECT_TRUE(glob_match("k[!0-9].cu", "kx.cu"));
    EXPECT_TRUE(glob_match("k[^0-9].cu", "kx.cu"));
    EXPECT_FALSE(glob_match("k[!0-9].cu", "k7.cu"));
    EXPECT_TRUE(glob_match("sm[89]0.cu", "sm90.cu"));
    EXPECT_FALSE(glob_match("sm[89]0.cu", "sm70.cu"));
    EXPECT_TRUE(glob_match("a[]]b", "a]b"));       // ']' first is literal
    EXPECT_TRUE(glob_match("a[x-]b", "a-b"));      // '-' before ']' is literal
    EXPECT_FALSE(glob_match("a[!x]b/c", "a/b/c")); // a set never matches '/'
    EXPECT_TRUE(glob_match("a[b", "a[b"));         // unclosed: a literal '['
    EXPECT_FALSE(glob_match("a[b", "ab"));
}

TEST(Glob, BackslashEscapes) {
    EXPECT_TRUE(glob_match("a\\*b", "a*b"));
    EXPECT_FALSE(glob_match("a\\*b", "axb"));
    EXPECT_TRUE(glob_match("a\\[x]", "a[x]"));
    EXPECT_FALSE(glob_match("a\\[x]", "ax"));
    EXPECT_TRUE(glob_match("a\\", "a\\")); // a trailing backslash is itself
}

TEST(Glob, UnrootedMatchesFromAnyComponent) {
    EXPECT_TRUE(glob_match_unrooted("hopper/*.cu", "hopper/gemm.cu"));
    EXPECT_TRUE(glob_match_unrooted("hopper/*.cu", "../src/hopper/gemm.cu"));
    EXPECT_TRUE(glob_match_unrooted("hopper/*.cu", "/abs/hopper/gemm.cu"));
    EXPECT_FALSE(glob_match_unrooted("hopper/*.cu", "/abs/xhopper/gemm.cu"));
    EXPECT_FALSE(glob_match_unrooted("hopper/*.cu", "hopper/sm90/gemm.cu"));
    EXPECT_TRUE(glob_match_unrooted("hopper/**", "hopper/sm90/gemm.cu"));
    EXPECT_TRUE(glob_match_unrooted("/abs/hopper/*.cu", "/abs/hopper/gemm.cu"));
    EXPECT_FALSE(glob_match_unrooted("/abs/hopper/*.cu", "/x/abs/hopper/gemm.cu"));
    EXPECT_TRUE(glob_match_unrooted("*_sm90.cu", "../csrc/flash_fwd_sm90.cu"));
    EXPECT_FALSE(glob_match_unrooted("*_sm90.cu", "../csrc/flash_fwd.cu"));
    EXPECT_FALSE(glob_match("hopper/*.cu", "../src/hopper/gemm.cu")); // the rooted form is not
}

// What plan's --gate expansion reads to find the directory a glob can match under.
TEST(Glob, WildcardsAreTheMatchersOwn) {
    for (const char* g : {"*.so", "a/?/b", "lib[0-9].so", "a\\*b", "dist/**"})
        EXPECT_TRUE(glob_has_wildcard(g)) << g;
    for (const char* g : {"", "dist/a.so", "/abs/path", "a-b_c.d"})
        EXPECT_FALSE(glob_has_wildcard(g)) << g;
    // A glob without one covers what is under the directory it names.
    EXPECT_TRUE(glob_match("dist/lib", "dist/lib/a.so"));
    EXPECT_FALSE(glob_match("dist/l?b", "dist/lib/a.so"));
}
