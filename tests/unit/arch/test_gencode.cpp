// The one -gencode spelling (arch/gencode.cpp).
#include "arch/arch.h"
#include "arch/gencode.h"
#include "support.h"

#include <gtest/gtest.h>

using namespace forge::arch;
using forge::arch::test::parse_ok;

TEST(Gencode, OneSpellingForEveryEmitter) {
    EXPECT_EQ(gencode_value(Target{Kind::Sass, 90}), "arch=compute_90,code=sm_90");
    EXPECT_EQ(gencode_value(Target{Kind::Sass, 90, Suffix::Specific}),
              "arch=compute_90a,code=sm_90a");
    EXPECT_EQ(gencode_value(Target{Kind::Lto, 100, Suffix::Family}),
              "arch=compute_100f,code=lto_100f");
    EXPECT_EQ(gencode_value(Target{Kind::Ptx, 120}, "[compute_120,lto_120]"),
              "arch=compute_120,code=[compute_120,lto_120]");
    // The arch list's -gencode flags are that value behind "-gencode=".
    for (const auto& flag : parse_ok("8.0 9.0+PTX").to_gencode())
        EXPECT_EQ(flag.rfind("-gencode=arch=compute_", 0), 0u) << flag;
}
