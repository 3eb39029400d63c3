// The one parser of a CUDA "X.Y" / "X.Y.Z" version (core/version.h).
#include "core/version.h"

#include <gtest/gtest.h>

using namespace forge;

TEST(CudaVersionTest, WholeTextIsXYOrXYZ) {
    auto v = parse_cuda_version("12.8");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->major, 12);
    EXPECT_EQ(v->minor, 8);
    EXPECT_FALSE(v->patch);
    auto full = parse_cuda_version("13.0.88");
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->patch.value_or(-1), 88);
    EXPECT_FALSE(parse_cuda_version("13.0.88", false).ok());
    for (const char* bad : {"", "12", "12.", ".8", "12.8.", "12.8.1.2", "v12.8", "12.8 ", "-1.2",
                            "+1.2", "12.x", "99999999999.0", "12.99999999999"}) {
        auto r = parse_cuda_version(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().key, bad);
    }
}

TEST(CudaVersionTest, LeadingVersionSaysWhereItEnds) {
    auto v = leading_cuda_version("13.0, V13.0.88");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->length, 4u);
    EXPECT_EQ(v->version.major, 13);
    auto three = leading_cuda_version("12.8.93 rest");
    ASSERT_TRUE(three);
    EXPECT_EQ(three->length, 7u);
    EXPECT_EQ(three->version.patch.value_or(-1), 93);
    auto dot = leading_cuda_version("12.8.x"); // a dot without a patch ends the version
    ASSERT_TRUE(dot);
    EXPECT_EQ(dot->length, 4u);
    EXPECT_FALSE(leading_cuda_version("12"));
    EXPECT_FALSE(leading_cuda_version("release 12.8"));
    EXPECT_FALSE(leading_cuda_version("99999999999.0"));
}
