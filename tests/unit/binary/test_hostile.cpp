// Hostile and malformed input: every case is an Error with the file and a byte offset, never a
// crash, a hang or a silent pass.
#include "support.h"

#include "../joined.h"

#include <lz4.h>
#include <zstd.h>

namespace forge::binary::test {
namespace {

TEST(BinaryHostile, WellFormedSyntheticFatbinReads) {
    auto fb = fatbin_bytes(
        {{.kind = 2, .arch = 90, .flags = 0x100011}, {.kind = 1, .arch = 120, .flags = 0x200011}});
    auto r = read_memory(fb);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].target.name(), "sm_90a");
    EXPECT_EQ((*r)[1].target.name(), "compute_120f");
    EXPECT_EQ((*r)[0].entry_offset, 16u);
    EXPECT_EQ((*r)[1].entry_offset, 16u + 0x40 + tiny_cubin(80).size());
}

TEST(BinaryHostile, FatSizeOverflowAndPastEnd) {
    auto fb = fatbin_bytes({{}});
    Buf b{fb};
    b.put64(8, 0xFFFFFFFFFFFFFFF8ull); // 16 + fat_size wraps around
    auto e = must_fail(b.b);
    EXPECT_EQ(e.offset, 8u);
    b.put64(8, fb.size()); // 16 bytes too many
    e = must_fail(b.b);
    EXPECT_EQ(e.offset, 8u);
    EXPECT_TRUE(mentions(e, "past the end"));
}

TEST(BinaryHostile, EntrySizesPastTheEnd) {
    auto fb = fatbin_bytes({{}});
    Buf b{fb};
    b.put64(16 + 8, 0xFFFFFFFFFFFFFF00ull); // padded_size overflowing the entry end
    EXPECT_EQ(must_fail(b.b).offset, 16u + 8);
    b = Buf{fb};
    b.put32(16 + 4, 0xFFFFFFF0u); // header_size huge
    EXPECT_EQ(must_fail(b.b).offset, 16u + 8);
    b = Buf{fb};
    b.put32(16 + 4, 0x20); // header_size below the base header
    EXPECT_EQ(must_fail(b.b).offset, 16u + 4);
    b = Buf{fb};
    b.put32(16 + 0x10, 0x10000); // compressed size beyond the stored payload
    EXPECT_EQ(must_fail(b.b).offset, 16u + 0x10);
}

TEST(BinaryHostile, BadEntryFields) {
    auto fb = fatbin_bytes({{}});
    Buf b{fb};
    b.put16(16, 0x40); // unknown kind
    EXPECT_TRUE(mentions(must_fail(b.b), "unknown fatbin entry kind"));
    b = Buf{fb};
    b.put16(18, 0x0202); // entry version
    EXPECT_EQ(must_fail(b.b).offset, 18u);
    b = Buf{fb};
    b.put64(16 + 0x28, 0x300011); // both a and f
    EXPECT_EQ(must_fail(b.b).offset, 16u + 0x28);
    b = Buf{fb};
    b.put64(16 + 0x28, 0xA011); // both LZ4 and ZSTD
    EXPECT_EQ(must_fail(b.b).offset, 16u + 0x28);
    b = Buf{fb};
    b.put32(16 + 0x1c, 70000); // arch
    EXPECT_EQ(must_fail(b.b).offset, 16u + 0x1c);
    b = Buf{fb};
    b.put16(4, 2); // fatbin version
    EXPECT_EQ(must_fail(b.b).offset, 4u);
}

TEST(BinaryHostile, TruncatedEntryHeaderInsideFatbin) {
    auto fb = fatbin_bytes({{}});
    Buf b{fb};
    b.zeros(8);
    b.put64(8, fb.size() - 16 + 8); // 8 stray bytes inside the fatbin: not a whole entry
    auto e = must_fail(b.b);
    EXPECT_EQ(e.offset, fb.size());
    EXPECT_TRUE(mentions(e, "truncated fatbin entry header"));
}

TEST(BinaryHostile, ZeroPaddingBetweenFatbinsIsToleratedGarbageIsNot) {
    EntrySpec odd{.kind = 1};
    odd.payload.assign(4, 0x7); // fatbin of 16 + 0x40 + 4 bytes: next one needs padding
    auto one = fatbin_bytes({odd});
    auto two = fatbin_bytes({{.arch = 120}});
    std::vector<std::uint8_t> section = one;
    section.insert(section.end(), 4, 0);
    section.insert(section.end(), two.begin(), two.end());
    section.insert(section.end(), 16, 0); // zero tail
    auto elf = host_elf(".nv_fatbin", section);
    auto r = read_memory(elf);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[1].fatbin_index, 1u);
    EXPECT_EQ((*r)[1].target.name(), "sm_120");
    EXPECT_EQ((*r)[1].fatbin_offset, 64u + one.size() + 4); // section starts at 64

    section[one.size() + 1] = 0x55; // garbage in the padding
    auto e = must_fail(host_elf(".nv_fatbin", section));
    EXPECT_EQ(e.offset, 64u + one.size());
}

TEST(BinaryHostile, ElfHeaderProblems) {
    auto good = host_elf(".nv_fatbin", fatbin_bytes({{}}));
    ASSERT_TRUE(read_memory(good).ok());
    Buf b{good};
    b.b[4] = 1; // ELFCLASS32
    auto e = must_fail(b.b);
    EXPECT_TRUE(mentions(e, "ELF64 little-endian")) << e.to_string();
    b = Buf{good};
    b.b[5] = 2; // big-endian
    EXPECT_TRUE(mentions(must_fail(b.b), "big-endian"));
    b = Buf{good};
    b.put64(40, 1ull << 40); // e_shoff past the end
    EXPECT_EQ(must_fail(b.b).offset, 40u);
    b = Buf{good};
    b.put16(62, 9); // e_shstrndx out of range
    EXPECT_EQ(must_fail(b.b).offset, 62u);
    b = Buf{good};
    b.put16(58, 40); // e_shentsize
    EXPECT_EQ(must_fail(b.b).offset, 58u);
    b = Buf{good};
    const std::uint64_t shoff = b.b[40] | (b.b[41] << 8);
    b.put64(shoff + 64 + 32, 1ull << 50); // .nv_fatbin size past the end
    EXPECT_TRUE(mentions(must_fail(b.b), "'.nv_fatbin'"));
    b = Buf{good};
    b.put32(shoff + 64, 0xFFFFFF); // section name offset outside the name table
    EXPECT_TRUE(mentions(must_fail(b.b), "name offset"));
    b = Buf{good};
    b.put16(52, 0x40 + 8); // e_ehsize
    EXPECT_EQ(must_fail(b.b).offset, 52u);
    b = Buf{good};
    b.put64(40, 16); // e_shoff inside the ELF header
    EXPECT_EQ(must_fail(b.b).offset, 40u);
    // An allocated section the embedded scan reads must lie inside the file too.
    Buf o{host_elf(".rodata", fatbin_bytes({{}}))};
    std::uint64_t o_shoff = 0;
    std::memcpy(&o_shoff, &o.b[40], 8);
    o.put64(o_shoff + 64 + 32, 1ull << 50);
    EXPECT_TRUE(mentions(must_fail(o.b), "'.rodata'"));
}

std::vector<std::uint8_t> tiny_cubin(int sm) {
    // A tiny CUDA ELF: one `.text.k` section, new ABI e_flags (sm in bits 8-15).
    auto elf = host_elf(".text.k", std::vector<std::uint8_t>(16, 0), 190);
    Buf b{elf};
    b.b[8] = 8;                           // EI_ABIVERSION 8
    b.put32(48, 0x06000002u | (sm << 8)); // e_flags
    return b.b;
}

TEST(BinaryHostile, CompressedPayloadsAreCheckedWhenInspected) {
    const auto cubin = tiny_cubin(100);
    ReadOptions inspect;
    inspect.inspect_payloads = true;
    // Sanity: a correct ZSTD and a correct LZ4 payload inspect fine.
    std::vector<std::uint8_t> z(ZSTD_compressBound(cubin.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), cubin.data(), cubin.size(), 3));
    std::vector<std::uint8_t> l(LZ4_compressBound(static_cast<int>(cubin.size())));
    l.resize(LZ4_compress_default(reinterpret_cast<const char*>(cubin.data()),
                                  reinterpret_cast<char*>(l.data()), static_cast<int>(cubin.size()),
                                  static_cast<int>(l.size())));
    auto pad = [](std::vector<std::uint8_t> v) {
        v.resize((v.size() + 7) & ~std::size_t{7}, 0);
        return v;
    };
    EntrySpec zs{.kind = 2,
                 .arch = 100,
                 .flags = 0x8011,
                 .payload = pad(z),
                 .compressed_size = static_cast<std::uint32_t>(z.size()),
                 .uncompressed_size = cubin.size()};
    EntrySpec ls{.kind = 2,
                 .arch = 100,
                 .flags = 0x2011,
                 .payload = pad(l),
                 .compressed_size = static_cast<std::uint32_t>(l.size()),
                 .uncompressed_size = cubin.size()};
    auto r = read_memory(fatbin_bytes({zs, ls}), inspect);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ((*r)[0].kernels, 1);
    EXPECT_EQ((*r)[1].kernels, 1);
    EXPECT_EQ((*r)[0].compression, Compression::Zstd);
    EXPECT_EQ((*r)[1].compression, Compression::Lz4);

    // Listing never decompresses: a corrupt payload lists, inspecting it fails.
    EntrySpec corrupt = zs;
    for (std::size_t i = 4; i < corrupt.payload.size(); ++i)
        corrupt.payload[i] ^= 0x5a;
    ASSERT_TRUE(read_memory(fatbin_bytes({corrupt})).ok());
    EXPECT_EQ(must_fail(fatbin_bytes({corrupt}), inspect).offset, 16u + 0x40); // the payload

    EntrySpec zlie = zs;
    zlie.uncompressed_size = cubin.size() + 8; // header disagrees with the frame
    EXPECT_TRUE(mentions(must_fail(fatbin_bytes({zlie}), inspect), "header says"));
    EntrySpec llie = ls;
    llie.uncompressed_size = cubin.size() - 8;
    must_fail(fatbin_bytes({llie}), inspect);
    EntrySpec huge = ls;
    huge.uncompressed_size = 1ull << 40; // a decompression bomb by declaration
    EXPECT_TRUE(mentions(must_fail(fatbin_bytes({huge}), inspect), "over the limit"));
    // The decompressed image must be a cubin.
    std::vector<std::uint8_t> junk(64, 0x41);
    std::vector<std::uint8_t> jz(ZSTD_compressBound(junk.size()));
    jz.resize(ZSTD_compress(jz.data(), jz.size(), junk.data(), junk.size(), 3));
    EntrySpec notelf{.kind = 2,
                     .arch = 100,
                     .flags = 0x8011,
                     .payload = pad(jz),
                     .compressed_size = static_cast<std::uint32_t>(jz.size()),
                     .uncompressed_size = junk.size()};
    EXPECT_TRUE(mentions(must_fail(fatbin_bytes({notelf}), inspect), "decompressed cubin"));
}

TEST(BinaryHostile, LtoIsNeverDecompressed) {
    EntrySpec lto{.kind = 8,
                  .arch = 80,
                  .flags = 0x18011,
                  .payload = std::vector<std::uint8_t>(16, 0xee),
                  .compressed_size = 16,
                  .uncompressed_size = 1ull << 40};
    ReadOptions inspect;
    inspect.inspect_payloads = true;
    auto r = read_memory(fatbin_bytes({lto}), inspect);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ((*r)[0].target.name(), "lto_80");
}

TEST(BinaryHostile, NotABinaryAtTopLevel) {
    std::vector<std::uint8_t> text{'h', 'e', 'l', 'l', 'o'};
    EXPECT_TRUE(mentions(must_fail(text), "not a recognised binary"));
    EXPECT_EQ(must_fail({}).offset, 0u);
}

TEST(BinaryHostile, CubinWithoutKernelsOrWithStubFlagIsStub) {
    auto cubin = tiny_cubin(80);
    auto r = read_memory(cubin);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ((*r)[0].target.name(), "sm_80");
    EXPECT_FALSE((*r)[0].stub);
    Buf b{cubin};
    b.put32(48, 0x05005004u); // nvlink stub e_flags
    r = read_memory(b.b);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE((*r)[0].stub);
    auto empty = host_elf(".nv.info", std::vector<std::uint8_t>(8, 0), 190);
    Buf e{empty};
    e.b[8] = 8;
    e.put32(48, 0x06005004u);
    r = read_memory(e.b);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE((*r)[0].stub);
    EXPECT_EQ((*r)[0].kernels, 0);
}

} // namespace
} // namespace forge::binary::test

namespace forge::binary::test {
namespace {} // namespace
} // namespace forge::binary::test

namespace forge::binary::test {
namespace {

std::vector<std::uint8_t> note(std::uint32_t type, const std::vector<std::uint8_t>& desc) {
    Buf n;
    n.u32(12)
        .u32(static_cast<std::uint32_t>(desc.size()))
        .u32(type)
        .str(std::string("NVIDIA Corp") + '\0');
    n.bytes(desc);
    n.zeros((4 - desc.size() % 4) % 4);
    return n.b;
}

std::vector<std::uint8_t> cuda_elf(const std::vector<SectionSpec>& sections,
                                   std::uint8_t abiversion, std::uint32_t e_flags) {
    Buf b{elf_with(sections, 190)};
    b.b[8] = abiversion;
    b.put32(48, e_flags);
    return b.b;
}

Result<Entry> read_one(const std::vector<std::uint8_t>& bytes, bool inspect = true) {
    ReadOptions opts;
    opts.inspect_payloads = inspect;
    auto r = read_memory(bytes, opts);
    if (!r) return std::move(r).error();
    if (r->size() != 1) return Error{"expected one entry"};
    return (*r)[0];
}

TEST(BinaryCubin, OldAbiTakesTheSmFromTheLowByteAndTheAcceleratorBit) {
    const std::vector<SectionSpec> text{{".text.k", 1, std::vector<std::uint8_t>(8, 0)}};
    auto e = read_one(cuda_elf(text, 7, 0x00500550)); // v7: sm 0x50, virtual sm in bits 16-23
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_EQ(e->target.name(), "sm_80");
    e = read_one(cuda_elf(text, 7, 0x005A0D5A)); // 0x800: EF_CUDA_ACCELERATORS_V1 (sm_90a)
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_EQ(e->target.name(), "sm_90a");
    e = read_one(cuda_elf(text, 8, 0x06005A04)); // v8: sm in bits 8-15, `a` not in e_flags
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_EQ(e->target.name(), "sm_90");
}

TEST(BinaryCubin, ToolkitFallsBackFromTkinfoToCuinfoToApiVersion) {
    const SectionSpec text{".text.k", 1, std::vector<std::uint8_t>(8, 0)};
    // tkinfo: version, objFname, toolName, toolVersion, toolBranch, toolOptions, then the pool.
    std::string pool = std::string(1, '\0') + "ptxas" + '\0' +
                       "Cuda compilation tools, release 12.8, V12.8.93" + '\0' + "Build x" + '\0' +
                       "-arch sm_120 -m 64 " + '\0';
    Buf tk;
    tk.u32(2).u32(0).u32(1).u32(7).u32(7 + 47).u32(7 + 47 + 8).str(pool);
    const SectionSpec tkinfo{".note.nv.tkinfo", 7, note(2000, tk.b)};
    const SectionSpec cuinfo{".note.nv.cuinfo", 7, note(1000, {2, 0, 0x78, 0, 0x83, 0, 0, 0})};
    const SectionSpec nvinfo{".nv.info.k", 0x70000000, {0x04, 0x37, 0x04, 0x00, 0x7e, 0, 0, 0}};
    const std::uint32_t flags = 0x06007802;
    auto e = read_one(cuda_elf({text, tkinfo, cuinfo, nvinfo}, 8, flags));
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_EQ(e->toolkit, "12.8");
    e = read_one(cuda_elf({text, cuinfo, nvinfo}, 8, flags));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->toolkit, "13.1");
    e = read_one(cuda_elf({text, nvinfo}, 8, flags));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->toolkit, "12.6");
    e = read_one(cuda_elf({text}, 8, flags));
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->toolkit);
    e = read_one(cuda_elf({text, tkinfo}, 8, flags), /*inspect=*/false);
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->toolkit) << "the toolkit is reported only when payloads are inspected";
    // Notes with lying sizes are ignored, never read past their section.
    Buf bad{note(2000, tk.b)};
    bad.put32(4, 0xFFFFFF00u);
    e = read_one(cuda_elf({text, {".note.nv.tkinfo", 7, bad.b}}, 8, flags));
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_FALSE(e->toolkit);
}

TEST(BinaryCubin, NvCompatAttributeNineIsTheArchSpecificFlag) {
    const SectionSpec text{".text.k", 1, std::vector<std::uint8_t>(8, 0)};
    const std::vector<std::uint8_t> compat{0x02, 0x09, 0x01, 0x00, 0x04, 0x0b, 0x08, 0x00,
                                           0x50, 0,    0,    0,    0,    0,    0,    0};
    auto e = read_one(cuda_elf({text, {".nv.compat", 0x70000086, compat}}, 8, 0x06007802));
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    EXPECT_EQ(e->target.name(), "sm_120a");
    EXPECT_EQ(e->cubin_arch_specific, true);
    auto zero = compat;
    zero[2] = 0;
    e = read_one(cuda_elf({text, {".nv.compat", 0x70000086, zero}}, 8, 0x06007802));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->target.name(), "sm_120");
    // A record whose size runs past the section stops the walk, it does not read beyond.
    std::vector<std::uint8_t> lying{0x04, 0x0b, 0xff, 0x7f, 0x02, 0x09, 0x01, 0x00};
    e = read_one(cuda_elf({text, {".nv.compat", 0x70000086, lying}}, 8, 0x06007802));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->target.name(), "sm_120");
}

} // namespace
} // namespace forge::binary::test
