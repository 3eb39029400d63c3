// The bundle header (bundle/header.cpp): render and parse.
#include "../replace_once.h"
#include "bundle/header.h"
#include "support.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <regex>
#include <string>

using namespace forge;
using namespace forge::bundle;
using forge::bundle::test::sample_bundle;

using forge::test::replace_once;

namespace {

std::string render(const Bundle& b) {
    auto h = render_bundle_header(b);
    EXPECT_TRUE(h.ok()) << h.error().to_string();
    return h.ok() ? *h : std::string();
}

void expect_same(const Bundle& a, const Bundle& b) {
    EXPECT_EQ(a.symbol, b.symbol);
    ASSERT_EQ(a.blobs.size(), b.blobs.size());
    for (std::size_t i = 0; i < a.blobs.size(); ++i) {
        EXPECT_EQ(a.blobs[i].toolkit, b.blobs[i].toolkit) << i;
        EXPECT_EQ(a.blobs[i].sms, b.blobs[i].sms) << i;
        EXPECT_EQ(a.blobs[i].data, b.blobs[i].data) << i;
    }
}

Error parse_error_of(const std::string& text) {
    auto b = parse_bundle_header(text, "h.h");
    EXPECT_FALSE(b.ok()) << "parsed:\n" << text;
    return b.ok() ? Error() : b.error();
}

} // namespace

TEST(BundleHeaderTest, RoundTripsThroughTheParser) {
    const Bundle b = sample_bundle();
    const std::string text = render(b);
    auto back = parse_bundle_header(text, "h.h");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    expect_same(b, *back);
}

TEST(BundleHeaderTest, IsDeterministicAndCarriesNoPathsOrTimes) {
    const std::string a = render(sample_bundle()), b = render(sample_bundle());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.find('/' + std::string("tmp")), std::string::npos);
    EXPECT_FALSE(std::regex_search(a, std::regex(R"(\d{4}-\d{2}-\d{2}|\d\d:\d\d:\d\d)")));
    EXPECT_NE(a.find("#ifndef NVCC_FORGE_BUNDLE_COND_KERNEL_H_"), std::string::npos);
    EXPECT_NE(a.find("cond_kernel_blobs[2]"), std::string::npos);
    EXPECT_NE(a.find("{\"12.8.93\", cond_kernel_blob0_sms, 3, cond_kernel_blob0, "
                     "sizeof(cond_kernel_blob0)}"),
              std::string::npos);
}

TEST(BundleHeaderTest, ParsesAfterReflowing) {
    // What clang-format may do to a committed header: other line breaks and indentation anywhere
    // between tokens, and comments added.
    const Bundle b = sample_bundle();
    std::string text = render(b);
    std::string reflowed;
    int commas = 0;
    for (char c : text) {
        reflowed += c;
        if (c == ',' && ++commas % 5 == 0) reflowed += "\n        ";
        if (c == '{') reflowed += "\n  // comment {0x99}\n";
    }
    reflowed = std::regex_replace(reflowed, std::regex(R"(\] = )"), "]\n    =\n");
    auto back = parse_bundle_header(reflowed, "h.h");
    ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << reflowed;
    expect_same(b, *back);
}

TEST(BundleHeaderTest, RejectsBadSymbolsAndEmptyBundles) {
    Bundle b = sample_bundle();
    for (const char* bad : {"", "9lives", "my-kernel", "a b"}) {
        b.symbol = bad;
        EXPECT_FALSE(render_bundle_header(b).ok()) << bad;
    }
    b = sample_bundle();
    b.blobs[1].data.clear();
    EXPECT_FALSE(render_bundle_header(b).ok());
    b.blobs.clear();
    EXPECT_FALSE(render_bundle_header(b).ok());
}

TEST(BundleHeaderTest, StructuralLiesAreErrorsWithLines) {
    const std::string good = render(sample_bundle());
    // the table says 3 SMs, the array holds 2
    Error e = parse_error_of(
        replace_once(good, "_blob0_sms[3] = {90, 100, 120}", "_blob0_sms[2] = {90, 100}"));
    EXPECT_TRUE(e.line.has_value());
    EXPECT_NE(e.message.find("3 SMs"), std::string::npos) << e.to_string();
    // declared size disagrees with the bytes listed
    e = parse_error_of(replace_once(good, "cond_kernel_blob1[3]", "cond_kernel_blob1[4]"));
    EXPECT_NE(e.message.find("declares 4"), std::string::npos) << e.to_string();
    // not a byte
    e = parse_error_of(replace_once(good, "0xff,", "0x1ff,"));
    EXPECT_NE(e.message.find("not a byte"), std::string::npos) << e.to_string();
    // the table points at one array and takes the size of another
    e = parse_error_of(replace_once(good, "cond_kernel_blob1, sizeof(cond_kernel_blob1)",
                                    "cond_kernel_blob1, sizeof(cond_kernel_blob0)"));
    EXPECT_NE(e.message.find("sizeof"), std::string::npos) << e.to_string();
    // an array the table does not use
    e = parse_error_of(replace_once(
        good, "static const nvcc_forge_fatbin_blob",
        "static const unsigned char stray[1] = {1};\nstatic const nvcc_forge_fatbin_blob"));
    EXPECT_NE(e.message.find("stray"), std::string::npos) << e.to_string();
    EXPECT_GT(e.line.value_or(0), 10);
    // no table at all; a foreign declaration; a C string with escapes
    parse_error_of("static const unsigned char x[] = {1};\n");
    parse_error_of(good + "static const float f = 1;\n");
    parse_error_of(replace_once(good, "\"13.0.88\"", "\"13.0\\n\""));
    parse_error_of(replace_once(good, "};\nstatic const size_t", "\nstatic const size_t"));
}
