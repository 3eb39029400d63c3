// binary/read_zip.cpp: wheel members read as files of their own, under the zip limits.
#include "support.h"

#include "../joined.h"

namespace forge::binary::test {
namespace {

std::vector<std::uint8_t> corpus_file(const std::string& name) {
    return slurp(forge::test::joined({FORGE_TEST_SOURCE_DIR, "/../bench/fuzz/corpus/", name}));
}

TEST(BinaryHostileZip, BombDeclaredHugeIsRefusedBeforeInflating) {
    auto bytes = corpus_file("zip-bomb-declared-huge.whl"); // 8 KB inflating to 8 MB
    ASSERT_FALSE(bytes.empty());
    ReadOptions opts;
    opts.max_member_bytes = 1 << 20;
    auto e = must_fail(bytes, opts);
    EXPECT_EQ(e.key, "pkg/bomb.so");
    EXPECT_TRUE(mentions(e, "over the limit"));
    opts.max_member_bytes = 64 << 20;
    opts.max_total_inflated = 1 << 20;
    EXPECT_TRUE(mentions(must_fail(bytes, opts), "total limit"));
}

TEST(BinaryHostileZip, DeclaredSmallerThanActualIsAnError) {
    auto e = must_fail(corpus_file("zip-declared-small.whl"));
    EXPECT_EQ(e.key, "pkg/_C.so");
}

TEST(BinaryHostileZip, TruncatedAndNestedZips) {
    must_fail(corpus_file("zip-truncated.whl"));
    EXPECT_TRUE(mentions(must_fail(corpus_file("zip-nested-deep.whl")), "nested deeper"));
    auto r = read_memory(corpus_file("zip-stored-ar.whl"));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].member, "pkg/lib.a(k.o)");
}

} // namespace
} // namespace forge::binary::test
