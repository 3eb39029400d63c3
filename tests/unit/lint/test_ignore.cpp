// lint_ignore entries (lint/ignore.h) and the glob dialect they are written in (core/glob.h).
#include "lint/lint.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::lint;

TEST(LintIgnore, ParseAndMatch) {
    auto a = parse_lint_ignore("csrc/fp8/*.cu", "pkg.yml");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->glob, "csrc/fp8/*.cu");
    EXPECT_EQ(a->rule, "");
    auto b = parse_lint_ignore(" csrc/x.cu:fp8-type ", "pkg.yml");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->entry, "csrc/x.cu:fp8-type");
    EXPECT_EQ(b->glob, "csrc/x.cu");
    EXPECT_EQ(b->rule, "fp8-type");

    auto bad = parse_lint_ignore("csrc/x.cu:fp8-types", "packages/p/arch_override.yml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().key, "csrc/x.cu:fp8-types");
    EXPECT_EQ(bad.error().exit_code, kExitInput);
    EXPECT_NE(bad.error().to_string().find("packages/p/arch_override.yml"), std::string::npos);
    EXPECT_NE(bad.error().to_string().find("fp8-types"), std::string::npos);
    EXPECT_FALSE(parse_lint_ignore("  ", "x").ok());

    LintFinding f{"csrc/fp8/gemm.cu", 3, "fp8-type", "e4m3", "8.9", "", ""};
    EXPECT_TRUE(ignore_matches(*a, f));
    EXPECT_FALSE(ignore_matches(*b, f));
    f.file = "csrc/x.cu";
    EXPECT_TRUE(ignore_matches(*b, f));
    f.rule = "arch-gate";
    EXPECT_FALSE(ignore_matches(*b, f));
}

TEST(LintIgnore, GlobSemantics) {
    EXPECT_TRUE(glob_match("csrc/*.cu", "csrc/a.cu"));
    EXPECT_FALSE(glob_match("csrc/*.cu", "csrc/sub/a.cu")); // * stays in one component
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/a.cu"));
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/x/y/a.cu"));
    EXPECT_TRUE(glob_match("third_party/**", "third_party/cutlass/include/a.h"));
    EXPECT_TRUE(glob_match("third_party", "third_party/cutlass/a.h")); // plain directory
    EXPECT_FALSE(glob_match("third_party", "third_party_x/a.h"));
    EXPECT_TRUE(glob_match("*.cuh", "deep/dir/k.cuh")); // no '/': the file name anywhere
    EXPECT_TRUE(glob_match("setup.py", "setup.py"));
    EXPECT_FALSE(glob_match("setup.py", "setup.pyc"));
    EXPECT_TRUE(glob_match("k?.cu", "k1.cu"));
    EXPECT_FALSE(glob_match("csrc/?", "csrc/ab"));
}
