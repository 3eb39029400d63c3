// The arch list: its spellings, its canonical form and its outputs; targets by name.
#include "arch/arch.h"
#include "support.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

using namespace forge::arch;
using forge::arch::test::parse_ok;

namespace {

std::string canon(std::string_view text) {
    return parse_ok(text).to_string();
}

} // namespace

TEST(ArchList, MixedSeparatorsDuplicatesAndSorting) {
    EXPECT_EQ(canon("9.0+PTX;8.0, 7.5 8.0;;"), "7.5 8.0 9.0+PTX");
    // policy rows use ';', overrides use ' ': both normalise to the same string
    EXPECT_EQ(canon("7.5;8.0;8.6;9.0+PTX;10.0;12.0+PTX"),
              canon("7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX"));
    EXPECT_EQ(canon("12.0+PTX 10.0 7.5"), "7.5 10.0 12.0+PTX"); // numeric, not lexicographic
}

TEST(ArchList, MergesPtxIntoSameSlot) {
    EXPECT_EQ(canon("9.0 9.0+PTX"), "9.0+PTX");
    EXPECT_EQ(canon("sm_90 compute_90"), "9.0+PTX");
    EXPECT_EQ(canon("90-real 90-virtual"), "9.0+PTX");
}

TEST(ArchList, SuffixesAreSeparateSlots) {
    EXPECT_EQ(canon("9.0a 9.0 10.0f 12.0a+PTX"), "9.0 9.0a 10.0f 12.0a+PTX");
}

TEST(ArchList, NvccAndCmakeSpellings) {
    EXPECT_EQ(canon("sm_90a"), "9.0a");
    EXPECT_EQ(canon("90"), "9.0+PTX");
    EXPECT_EQ(canon("90a"), "9.0a+PTX");
    EXPECT_EQ(canon("100f-real"), "10.0f");
    EXPECT_EQ(canon("compute_90"), "compute_90");
    EXPECT_EQ(canon("lto_90"), "lto_90");
}

TEST(ArchList, TorchNamedArches) {
    EXPECT_EQ(canon("Ampere"), "8.0 8.6+PTX");
    EXPECT_EQ(canon("Hopper Ampere+Tegra"), "8.7 9.0+PTX");
    EXPECT_EQ(canon("Blackwell"), "10.0 10.3 12.0 12.1+PTX");
}

TEST(ArchList, BadTokensNameTheTokenAndOrigin) {
    for (std::string_view bad : {"8.O", "sm_", "9.0b", "ampere", "9.0+ptx", "8.0a", "9.0f",
                                 "sm_80a", "compute_", "90-fake", "1.2.3", "x"}) {
        auto r = ArchList::parse(std::string("8.0 ") + std::string(bad), "policy.yml:3");
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().to_string().find(std::string(bad)), std::string::npos)
            << r.error().to_string();
        EXPECT_NE(r.error().to_string().find("policy.yml:3"), std::string::npos);
    }
}

// The one split of torch and CMake spellings: the lint reads a tail on either form, the list
// parser refuses the other form's tail with the form's own message.
TEST(ArchSpelling, SplitsEitherFormAndLeavesTheChecksToTheCaller) {
    using Tail = ArchSpelling::Tail;
    auto torch = split_arch_spelling("9.0a+PTX");
    ASSERT_TRUE(torch);
    EXPECT_EQ(torch->sm, 90);
    EXPECT_EQ(torch->suffix, Suffix::Specific);
    EXPECT_EQ(torch->tail, Tail::Ptx);
    EXPECT_TRUE(torch->dotted);
    auto cmake = split_arch_spelling("100f-virtual");
    ASSERT_TRUE(cmake);
    EXPECT_EQ(cmake->sm, 100);
    EXPECT_EQ(cmake->suffix, Suffix::Family);
    EXPECT_EQ(cmake->tail, Tail::Virtual);
    EXPECT_FALSE(cmake->dotted);
    auto crossed = split_arch_spelling("9.0-real");
    ASSERT_TRUE(crossed);
    EXPECT_EQ(crossed->tail, Tail::Real);
    EXPECT_TRUE(split_arch_spelling("8.0a")); // the suffix's CC range is the caller's check
    for (std::string_view no : {"", "9", "9.", ".0", "9.00", "0.5", "1.2.3", "sm_90", "Ampere",
                                "90-fake", "x+PTX", "1000"})
        EXPECT_FALSE(split_arch_spelling(no)) << no;
    for (auto [bad, why] : {std::pair{"9.0-real", "expected X.Y"}, {"90+PTX", "not an arch"}}) {
        auto r = ArchList::parse(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().to_string();
    }
}

TEST(ArchList, OutputFormats) {
    auto l = parse_ok("7.5;8.0;8.6;9.0+PTX;10.0;12.0+PTX");
    EXPECT_EQ(l.to_cmake(), "75-real;80-real;86-real;90;100-real;120");
    auto g = l.to_gencode();
    ASSERT_EQ(g.size(), 8u);
    EXPECT_EQ(g[0], "-gencode=arch=compute_75,code=sm_75");
    EXPECT_EQ(g[4], "-gencode=arch=compute_90,code=compute_90");
    EXPECT_EQ(parse_ok("9.0a+PTX").to_gencode()[0], "-gencode=arch=compute_90a,code=sm_90a");
    EXPECT_FALSE(parse_ok("compute_90").to_torch().ok());
    EXPECT_EQ(*parse_ok("8.0 9.0+PTX").to_torch(), "8.0 9.0+PTX");
    // canonical output round-trips
    auto mixed = parse_ok("compute_90 8.0 lto_100 10.0f+PTX");
    EXPECT_EQ(parse_ok(mixed.to_string()), mixed);
}

TEST(ArchList, EnsurePtxOnHighestBaseSkipsSuffixedTokens) {
    auto l = parse_ok("8.0 9.0 9.0a");
    EXPECT_EQ(l.ensure_ptx_on_highest_base(), 90);
    EXPECT_EQ(l.to_string(), "8.0 9.0+PTX 9.0a");
    EXPECT_EQ(l.ensure_ptx_on_highest_base(), -1); // idempotent
    auto only_a = parse_ok("10.0a 12.0a");
    EXPECT_EQ(only_a.ensure_ptx_on_highest_base(), -1);
}

TEST(Target, ParseAndName) {
    auto t = parse_target("sm_100f");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->sm, 100);
    EXPECT_EQ(t->suffix, Suffix::Family);
    EXPECT_EQ(t->name(), "sm_100f");
    EXPECT_EQ(t->folded().name(), "sm_100");
    EXPECT_FALSE(parse_target("sm_9x").ok());
    EXPECT_FALSE(parse_target("gfx90a").ok());
}
