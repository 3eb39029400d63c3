// "Did you mean" (core/suggest.h): the one edit distance, which the CLI's suggestions and the
// nearest package name (policy/package.cpp) both ask.
#include "core/suggest.h"

#include <gtest/gtest.h>

using namespace forge;

TEST(Suggest, EditDistanceCountsASwapOfNeighboursAsOneEdit) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("resolve", "resolve"), 0u);
    EXPECT_EQ(edit_distance("resolve", "reslove"), 1u); // 'o' and 'l' swapped
    EXPECT_EQ(edit_distance("x86onyl", "x86only"), 1u);
    EXPECT_EQ(edit_distance("verify", "verfy"), 1u);
    EXPECT_EQ(edit_distance("verify", "vreifx"), 2u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, NearestNameIsATypoAwayOrNothing) {
    const std::vector<std::string> commands{"resolve", "verify", "coverage", "list"};
    EXPECT_EQ(nearest_name("reslove", commands), "resolve");
    EXPECT_EQ(nearest_name("cover", commands), "coverage"); // a prefix counts as one edit
    EXPECT_EQ(nearest_name("resolve", commands), "");       // the name itself is no suggestion
    EXPECT_EQ(nearest_name("xyz", commands), "");
    EXPECT_EQ(nearest_name("lsit", commands), "list");
}
