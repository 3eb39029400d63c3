// binary/read_standalone.cpp: a .fatbin file is one fatbin stream, a .cubin file one entry; both
// recognised by content, offsets within the file.
#include "support.h"

namespace forge::binary::test {
namespace {

TEST(BinaryStandalone, AFatbinFilesEntriesAreAtTheirFileOffsets) {
    const auto fb = fatbin_bytes({{.arch = 80}, {.arch = 90, .payload = tiny_cubin(90)}});
    auto r = read_memory(fb);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].section, "fatbin");
    EXPECT_EQ((*r)[0].target.name(), "sm_80");
    EXPECT_EQ((*r)[0].fatbin_offset, 0u);
    EXPECT_EQ((*r)[0].entry_offset, 16u); // after the 16-byte fatbin header
    EXPECT_EQ((*r)[1].target.name(), "sm_90");
    EXPECT_EQ((*r)[1].entry_offset, 16u + 64 + tiny_cubin(80).size());
    EXPECT_EQ((*r)[1].fatbin_size, fb.size());
}

TEST(BinaryStandalone, ATruncatedFatbinFileIsAnErrorInsideIt) {
    auto fb = fatbin_bytes({{.arch = 80}});
    fb.resize(fb.size() - 8); // the entry's payload runs past the end of the file
    const Error e = must_fail(fb);
    ASSERT_TRUE(e.offset);
    EXPECT_LT(*e.offset, fb.size());
}

TEST(BinaryStandalone, ABareCubinIsOneEntryThatIsTheWholeFile) {
    const auto cubin = tiny_cubin(90);
    auto r = read_memory(cubin);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].section, "cubin");
    EXPECT_EQ((*r)[0].target.name(), "sm_90");
    EXPECT_EQ((*r)[0].entry_offset, 0u);
    EXPECT_EQ((*r)[0].payload_size, cubin.size());
    EXPECT_EQ((*r)[0].kernels, 1); // its one .text.k section
}

TEST(BinaryStandalone, ABareCubinWithoutAnSmIsAnErrorAtItsFlags) {
    const Error e = must_fail(tiny_cubin(5));
    EXPECT_EQ(e.offset, 48u); // e_flags in the ELF64 header
    EXPECT_TRUE(mentions(e, "e_flags")) << e.to_string();
}

TEST(BinaryStandalone, ABareCubinCountsAgainstTheEntryLimit) {
    ReadOptions opts;
    opts.max_entries = 0;
    const Error e = must_fail(tiny_cubin(90), opts);
    EXPECT_EQ(e.offset, 0u);
}

} // namespace
} // namespace forge::binary::test
