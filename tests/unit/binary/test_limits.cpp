// Bounded work on hostile input: what a file claims (sizes, counts, sections, chains) may not
// make a read allocate or walk more than the file itself could hold. Each case is a small file
// that the reader used to accept, or to answer only after a huge allocation or a quadratic walk.
#include "support.h"

#include "binary/cubin.h"
#include "binary/fatbin.h"

#include <lz4.h>
#include <zstd.h>

namespace forge::binary::test {
namespace {

// The ELF from elf_with() with `copies` extra section headers that repeat the first section's.
std::vector<std::uint8_t> with_repeated_section(std::vector<std::uint8_t> elf, std::size_t copies) {
    Buf b{std::move(elf)};
    std::uint64_t shoff = 0;
    std::memcpy(&shoff, &b.b[40], 8);
    std::uint16_t shnum = 0, shstrndx = 0;
    std::memcpy(&shnum, &b.b[60], 2);
    std::memcpy(&shstrndx, &b.b[62], 2);
    const std::vector<std::uint8_t> first(b.b.begin() + static_cast<std::ptrdiff_t>(shoff + 64),
                                          b.b.begin() + static_cast<std::ptrdiff_t>(shoff + 128));
    for (std::size_t i = 0; i < copies; ++i)
        b.bytes(first);
    b.put16(60, static_cast<std::uint16_t>(shnum + copies));
    return b.b;
}

// Section i of an elf_with() file: its header offset.
std::size_t shdr(const std::vector<std::uint8_t>& elf, std::size_t i) {
    std::uint64_t shoff = 0;
    std::memcpy(&shoff, &elf[40], 8);
    return static_cast<std::size_t>(shoff + 64 * i);
}

TEST(BinaryLimits, SectionsNamingOneFatbinAreReadOnce) {
    auto fb = fatbin_bytes({{.arch = 80}, {.kind = 1, .arch = 80}, {.arch = 90}});
    auto elf = with_repeated_section(host_elf(".nv_fatbin", fb), 500);
    auto r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 3u); // not 501 x 3
    EXPECT_EQ((*r)[0].target.name(), "sm_80");
    EXPECT_EQ((*r)[2].target.name(), "sm_90");
}

TEST(BinaryLimits, SectionInsideAnotherFatbinSectionIsReadOnce) {
    // Two fatbins end to end; a second header names only the second one.
    auto one = fatbin_bytes({{.arch = 80}});
    auto two = fatbin_bytes({{.arch = 90}});
    std::vector<std::uint8_t> both = one;
    both.insert(both.end(), two.begin(), two.end());
    auto elf = elf_with({{".nv_fatbin", 1, both}, {"__nv_relfatbin", 1, {}}});
    Buf b{elf};
    std::uint64_t off = 0;
    std::memcpy(&off, &b.b[shdr(elf, 1) + 24], 8);
    b.put64(shdr(elf, 2) + 24, off + one.size()); // __nv_relfatbin = the second fatbin
    b.put64(shdr(elf, 2) + 32, two.size());
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].section, ".nv_fatbin");
    EXPECT_EQ((*r)[1].section, ".nv_fatbin");
    // Sticking out of the first one: both cannot be fatbin streams.
    b.put64(shdr(elf, 2) + 32, two.size() + 8);
    b.b.resize(b.b.size() + 8, 0);
    auto bad = read_memory(b.b);
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(mentions(bad.error(), "overlap partly")) << bad.error().to_string();
    EXPECT_EQ(bad.error().offset, shdr(elf, 2));
}

TEST(BinaryLimits, EntryCountPerReadIsCapped) {
    std::vector<EntrySpec> specs(12, EntrySpec{.kind = 1, .arch = 80, .payload = {}});
    ReadOptions opts;
    opts.max_entries = 12;
    ASSERT_TRUE(read_memory(fatbin_bytes(specs), opts).ok());
    opts.max_entries = 11;
    auto r = read_memory(fatbin_bytes(specs), opts);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(mentions(r.error(), "more than 11 fatbin entry headers")) << r.error().to_string();
    EXPECT_EQ(r.error().offset, 16u + 11 * 0x40); // the twelfth entry
    EXPECT_EQ(r.error().exit_code, kExitInput);
}

TEST(BinaryLimits, SectionCountIsBoundedBeforeTheTableIsDecoded) {
    // A header whose extended section count (section 0's sh_size) claims one section more than
    // the limit, with a table that really is that large (zeros, as a sparse file would hold).
    const std::uint64_t n = kMaxSections + 1;
    Buf f;
    elf64_header(f, {.shoff = 64}); // e_shnum 0: the count is section 0's sh_size
    f.b.resize(64 + n * 64, 0);
    f.put64(64 + 32, n);
    auto r = read_memory(f.b);
    ASSERT_FALSE(r.ok()) << "a table of " << n << " sections was decoded";
    EXPECT_TRUE(mentions(r.error(), "claims 1048577 sections")) << r.error().to_string();
    EXPECT_EQ(r.error().offset, 60u);
}

// An ELF without a section table whose bytes are one chain of `n` entries; a fatbin header sits
// in the unused bytes (0x30-0x3f) of every entry, starts the chain at the next entry and ends
// where the chain ends, and the last entry is broken. Every header is a candidate of the magic
// scan and each one's walk covers the rest of the chain: n^2/2 entry headers, quadratic.
std::vector<std::uint8_t> stripped_chain(std::size_t n) {
    constexpr std::size_t kStart = 64;
    Buf b;
    elf64_header(b, {.type = 3}); // no section table
    const std::size_t end = kStart + n * 0x40;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t e = b.b.size();
        auto entry = entry_bytes({.kind = 1, .arch = 80, .payload = {}});
        b.bytes(entry);
        b.put32(e + 0x30, kFatbinMagic);
        b.put16(e + 0x34, 1);
        b.put16(e + 0x36, 0x10);
        b.put64(e + 0x38, end - (e + 0x40));    // the entry's unused uncompressed size
        if (i + 1 == n) b.put16(e + 2, 0x0202); // a version nobody writes
    }
    return b.b;
}

TEST(BinaryLimits, MagicScanOverOverlappingChainsStopsInLinearWork) {
    // Small enough that the quadratic walk (8 million entry headers) ends in a second; what it
    // found then was "no device code", exit 0. The scan now stops once the walks of its
    // candidates exceed what the file could hold.
    auto r = read_memory(stripped_chain(4000));
    ASSERT_FALSE(r.ok()) << "overlapping header chains were walked to the end";
    EXPECT_TRUE(mentions(r.error(), "magic scan")) << r.error().to_string();
    EXPECT_TRUE(r.error().offset);
    EXPECT_EQ(r.error().exit_code, kExitInput);
}

TEST(BinaryLimits, MagicScanStillFindsManyRealFatbins) {
    // Disjoint fatbins, as a stripped executable holds them, are never near the limit.
    std::vector<std::uint8_t> body;
    for (int i = 0; i < 300; ++i) {
        auto fb = fatbin_bytes(
            {{.kind = 1, .arch = 80, .payload = {}}, {.kind = 1, .arch = 90, .payload = {}}});
        body.insert(body.end(), fb.begin(), fb.end());
    }
    Buf b{host_elf(".renamed", body)};
    b.put64(40, 0);
    b.put16(60, 0);
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->size(), 600u);
}

// A cubin whose .text.k section header lies: `field` (sh_offset or sh_size) is set to `value`.
std::vector<std::uint8_t> lying_cubin(std::size_t field, std::uint64_t value) {
    auto c = tiny_cubin(90);
    Buf b{c};
    b.put64(shdr(c, 1) + field, value);
    return b.b;
}

TEST(BinaryLimits, CubinSectionsOutsideTheImageAreErrors) {
    ReadOptions inspect;
    inspect.inspect_payloads = true;
    for (auto [field, value] :
         {std::pair<std::size_t, std::uint64_t>{32, ~0ull}, {32, 1ull << 20}, {24, 1ull << 40}}) {
        const auto cubin = lying_cubin(field, value);
        // Standalone, and inside a fatbin (listing reads the cubin's headers, so does --toolkit).
        for (const auto& bytes : {cubin, fatbin_bytes({{.arch = 90, .payload = cubin}})}) {
            for (const auto& opts : {ReadOptions{}, inspect}) {
                auto r = read_memory(bytes, opts);
                ASSERT_FALSE(r.ok())
                    << "a cubin with a section outside it was read, kernels="
                    << (r.ok() && !r->empty() && (*r)[0].kernels ? *(*r)[0].kernels : -1);
                EXPECT_TRUE(mentions(r.error(), "'.text.k'")) << r.error().to_string();
            }
        }
    }
    auto good = read_memory(tiny_cubin(90));
    ASSERT_TRUE(good.ok()) << good.error().to_string();
    EXPECT_EQ((*good)[0].kernels, 1);
}

TEST(BinaryLimits, DeclaredSizeBeyondWhatTheStreamCanHoldIsRefusedBeforeAllocating) {
    const auto cubin = tiny_cubin(100);
    std::vector<std::uint8_t> l(LZ4_compressBound(static_cast<int>(cubin.size())));
    l.resize(LZ4_compress_default(reinterpret_cast<const char*>(cubin.data()),
                                  reinterpret_cast<char*>(l.data()), static_cast<int>(cubin.size()),
                                  static_cast<int>(l.size())));
    std::vector<std::uint8_t> z(ZSTD_compressBound(cubin.size()));
    // Without the content size in the frame: only the fatbin header states it.
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    z.resize(ZSTD_compress2(cctx, z.data(), z.size(), cubin.data(), cubin.size()));
    ZSTD_freeCCtx(cctx);
    const Where where{"mem.bin", std::nullopt};
    const std::uint64_t limit = 4ull << 30;
    // Well-formed: decompresses.
    auto ok_l =
        decompress_payload(Bytes{l.data(), l.size()}, Compression::Lz4, cubin.size(), limit, where);
    ASSERT_TRUE(ok_l.ok()) << ok_l.error().to_string();
    auto ok_z = decompress_payload(Bytes{z.data(), z.size()}, Compression::Zstd, cubin.size(),
                                   limit, where);
    ASSERT_TRUE(ok_z.ok()) << ok_z.error().to_string();
    // 3 GiB from a few dozen LZ4 bytes, 4 GiB from a few dozen zstd bytes: under the per-entry
    // limit, over what the stored bytes can expand to.
    auto bomb_l = decompress_payload(Bytes{l.data(), l.size(), 0x50}, Compression::Lz4, 3ull << 30,
                                     limit, where);
    ASSERT_FALSE(bomb_l.ok());
    EXPECT_TRUE(mentions(bomb_l.error(), "expand to at most")) << bomb_l.error().to_string();
    EXPECT_EQ(bomb_l.error().offset, 0x50u);
    auto bomb_z = decompress_payload(Bytes{z.data(), z.size(), 0x50}, Compression::Zstd, 4ull << 30,
                                     limit, where);
    ASSERT_FALSE(bomb_z.ok());
    EXPECT_TRUE(mentions(bomb_z.error(), "expand to at most")) << bomb_z.error().to_string();
}

} // namespace
} // namespace forge::binary::test
