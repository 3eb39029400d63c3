// The layout file and verify-bundle's checks (bundle/verify.cpp).
#include "bundle/verify.h"
#include "support.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

using namespace forge;
using namespace forge::bundle;
using forge::bundle::test::sample_bundle;

namespace {

BundleLayout layout_of(const std::string& yaml) {
    auto l = parse_bundle_layout(yaml, "layout.yml");
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    return l.ok() ? *l : BundleLayout{};
}

const char* kGoodLayout = "blobs:\n"
                          "  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"
                          "  - {toolkit: \"13.0\", sms: [110]}\n";

binary::Entry cubin(int sm, std::optional<std::string> toolkit) {
    binary::Entry e;
    e.target = {arch::Kind::Sass, sm};
    e.toolkit = std::move(toolkit);
    return e;
}

// Stands in for the binary reader: what each blob "contains", by blob index.
BlobReader fake_reader(std::vector<std::vector<binary::Entry>> per_blob) {
    return [per_blob](const BundleBlob& blob,
                      const std::string&) -> Result<std::vector<binary::Entry>> {
        for (std::size_t i = 0; i < per_blob.size(); ++i)
            if (blob.toolkit == (i == 0 ? "12.8.93" : "13.0.88")) return per_blob[i];
        return Error("unknown blob");
    };
}

std::vector<std::vector<binary::Entry>> honest_contents() {
    binary::Entry ptx;
    ptx.target = {arch::Kind::Ptx, 90};
    return {{cubin(90, "12.8"), cubin(100, "12.8"), cubin(120, "12.8"), ptx}, {cubin(110, "13.0")}};
}

bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
    for (const auto& s : v)
        if (s.find(needle) != std::string::npos) return true;
    return false;
}

} // namespace

TEST(BundleLayoutTest, ParsesInOrderAndRejectsWithLines) {
    auto l = layout_of(kGoodLayout);
    ASSERT_EQ(l.blobs.size(), 2u);
    EXPECT_EQ(l.blobs[0].toolkit, "12.8");
    EXPECT_EQ(l.blobs[0].sms, (std::vector<int>{90, 100, 120}));
    EXPECT_EQ(l.blobs[1].line, 3);

    struct Bad {
        const char* yaml;
        int line;
    };
    for (const Bad& bad : {Bad{"blobs:\n  - {toolkit: \"12\", sms: [90]}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: 90}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: [90, 90]}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: [hopper]}\n", 2},
                           Bad{"blobs:\n  - toolkit: \"12.8\"\n    sm: [90]\n", 3},
                           Bad{"blobs: []\n", 1}, Bad{"layout:\n  - x\n", 1}}) {
        auto r = parse_bundle_layout(bad.yaml, "layout.yml");
        ASSERT_FALSE(r.ok()) << bad.yaml;
        EXPECT_EQ(r.error().file, "layout.yml");
        EXPECT_EQ(r.error().line.value_or(-1), bad.line) << bad.yaml << r.error().to_string();
    }
}

TEST(BundleLayoutTest, IsReadWithTheStrictYamlRules) {
    // a key given twice would otherwise be read as its first value, silently
    auto dup = parse_bundle_layout("blobs:\n  - toolkit: \"12.8\"\n    toolkit: \"13.0\"\n"
                                   "    sms: [90]\n",
                                   "layout.yml");
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().line.value_or(-1), 3) << dup.error().to_string();
    EXPECT_NE(dup.error().message.find("duplicate key"), std::string::npos) << dup.error().message;
    auto unknown =
        parse_bundle_layout("blobs:\n  - {toolkit: \"12.8\", sms: [90], sm: 1}\n", "layout.yml");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().key, "sm");
    EXPECT_NE(unknown.error().message.find("allowed: toolkit, sms"), std::string::npos)
        << unknown.error().message;
    auto top =
        parse_bundle_layout("blobs:\n  - {toolkit: \"12.8\", sms: [90]}\nextra: 1\n", "layout.yml");
    ASSERT_FALSE(top.ok());
    EXPECT_EQ(top.error().line.value_or(-1), 3) << top.error().to_string();
}

TEST(BundleLayoutTest, OrNewerWordingIsAccepted) {
    // the layout wording "CUDA 13.0+": that release or a later one
    auto l = layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"
                       "  - {toolkit: \"13.0+\", sms: [110]}\n");
    ASSERT_EQ(l.blobs.size(), 2u);
    EXPECT_EQ(l.blobs[1].toolkit, "13.0");
    EXPECT_TRUE(l.blobs[1].or_newer);
    EXPECT_TRUE(l.blobs[1].accepts("13.0"));
    EXPECT_TRUE(l.blobs[1].accepts("13.2.51"));
    EXPECT_FALSE(l.blobs[1].accepts("12.9"));
    EXPECT_FALSE(l.blobs[0].accepts("13.0")); // an exact release stays exact
    auto check = verify_bundle(sample_bundle(), l, "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok()) << check.error().to_string();
    EXPECT_TRUE(check->mismatches.empty()) << check->mismatches.front();
}

TEST(BundleLayoutTest, AVersionTooLargeForAnIntIsRefusedNotThrown) {
    // std::stoi threw on these (issue 40): a layout's toolkit and a bundle's release are input.
    auto r =
        parse_bundle_layout("blobs:\n  - {toolkit: \"99999999999.0+\", sms: [90]}\n", "layout.yml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().line.value_or(-1), 2) << r.error().to_string();
    auto l = layout_of("blobs:\n  - {toolkit: \"13.0+\", sms: [110]}\n");
    EXPECT_FALSE(l.blobs[0].accepts("99999999999.0"));
    EXPECT_FALSE(l.blobs[0].accepts("13.99999999999"));
}

TEST(VerifyBundleTest, HonestBundlePasses) {
    auto check = verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h",
                               fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok()) << check.error().to_string();
    EXPECT_TRUE(check->mismatches.empty()) << check->mismatches.front();
    EXPECT_EQ(check->passed.size(), 4u);
}

TEST(VerifyBundleTest, Sm120BuiltByNewerToolkitIsCaught) {
    // the load-bearing fact: sm_120 must be a 12.8 cubin, not 13.x (INVALID_IMAGE on 570 drivers)
    auto contents = honest_contents();
    contents[0][2] = cubin(120, "13.0");
    auto check =
        verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h", fake_reader(contents));
    ASSERT_TRUE(check.ok());
    ASSERT_EQ(check->mismatches.size(), 1u);
    EXPECT_NE(check->mismatches[0].find("sm_120 cubin"), std::string::npos) << check->mismatches[0];
    EXPECT_NE(check->mismatches[0].find("built by CUDA 13.0"), std::string::npos)
        << check->mismatches[0];
}

TEST(VerifyBundleTest, WrongLayoutToolkitOrSmListIsCaught) {
    auto wrong_tk = verify_bundle(sample_bundle(),
                                  layout_of("blobs:\n  - {toolkit: \"12.9\", sms: [90, 100, 120]}\n"
                                            "  - {toolkit: \"13.0\", sms: [110]}\n"),
                                  "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(wrong_tk.ok());
    EXPECT_TRUE(any_contains(wrong_tk->mismatches,
                             "the header's table says CUDA 12.8.93, the layout expects 12.9"));
    EXPECT_TRUE(any_contains(wrong_tk->mismatches, "sm_90 cubin"));

    auto wrong_sms = verify_bundle(sample_bundle(),
                                   layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 120]}\n"
                                             "  - {toolkit: \"13.0\", sms: [100, 110]}\n"),
                                   "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(wrong_sms.ok());
    EXPECT_TRUE(any_contains(wrong_sms->mismatches, "blob 0 (layout.yml:2): sm_100 cubin"));
    EXPECT_TRUE(any_contains(wrong_sms->mismatches, "blob 1 (layout.yml:3): no sm_100 cubin"));
}

TEST(VerifyBundleTest, TableThatLiesAboutItsBlobIsCaught) {
    Bundle b = sample_bundle();
    b.blobs[0].sms = {90, 100}; // table drifted from what is baked in
    auto check = verify_bundle(b,
                               layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100]}\n"
                                         "  - {toolkit: \"13.0\", sms: [110]}\n"),
                               "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok());
    EXPECT_TRUE(any_contains(check->mismatches, "holds SASS for sm_90 sm_100 sm_120"));
}

TEST(VerifyBundleTest, BlobCountUnknownToolkitAndUnreadableBlob) {
    auto count = verify_bundle(sample_bundle(),
                               layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"),
                               "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(count.ok());
    EXPECT_TRUE(any_contains(count->mismatches, "2 blob(s)"));

    auto contents = honest_contents();
    contents[1][0].toolkit.reset();
    auto unknown =
        verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h", fake_reader(contents));
    ASSERT_TRUE(unknown.ok());
    EXPECT_TRUE(any_contains(unknown->mismatches, "records no build toolkit"));

    Bundle b = sample_bundle();
    b.blobs[1].toolkit = "13.0.99"; // the fake reader cannot read it
    auto unreadable =
        verify_bundle(b, layout_of(kGoodLayout), "h.h", fake_reader(honest_contents()));
    EXPECT_FALSE(unreadable.ok());
}

TEST(VerifyBundleTest, DefaultReaderRejectsBytesThatAreNotAFatbin) {
    // sample_bundle()'s bytes are no fatbin: unusable input, naming the header and the blob
    auto check = verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h");
    ASSERT_FALSE(check.ok());
    EXPECT_NE(check.error().to_string().find("h.h[blob 0]"), std::string::npos)
        << check.error().to_string();
}

// ---- build_bundle over a fake nvcc -----------------------------------------------------------
