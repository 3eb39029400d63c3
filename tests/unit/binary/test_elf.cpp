// What the ELF format promises and what it does not (docs/fatbin-format.md, "What the ELF
// readers rely on"): a valid cubin or host ELF that uses a rule the format allows reads, and
// every header that lies about the bytes a reader needs is still an error at its offset.
#include "support.h"

#include "binary/cubin.h"
#include "binary/elf.h"

namespace forge::binary::test {
namespace {

constexpr std::uint32_t kShtCudaShared = 0x7000000a; // SHT_LOPROC + 0xa: .nv.shared.<kernel>

// Section i's header offset in an elf_with() file.
std::uint64_t header_of(const std::vector<std::uint8_t>& elf, std::uint64_t i) {
    std::uint64_t shoff = 0;
    std::memcpy(&shoff, &elf[40], 8);
    return shoff + i * 64;
}

// A new-ABI sm_90 cubin: one kernel, and a memory window `window_type` of 0x1000 bytes at the
// end of the file, with no bytes in it (as nvcc -rdc writes .nv.shared.<kernel>).
std::vector<std::uint8_t> cubin_with_window(std::uint32_t window_type) {
    Buf b{elf_with({{".text._Z1kPf", 1, std::vector<std::uint8_t>(16, 0)},
                    {".nv.shared._Z1kPf", window_type, {}}},
                   190)};
    b.b[8] = 8;
    b.put32(48, (0x06u << 24) | (90u << 8) | 0x02u);
    const std::uint64_t h = header_of(b.b, 2);
    b.put64(h + 24, b.b.size()); // sh_offset: the end of the file
    b.put64(h + 32, 0x1000);     // sh_size
    return b.b;
}

TEST(BinaryElfRules, AMemoryWindowWithoutFileBytesReads) {
    // The case of issue 34: nvcc -rdc's relocatable cubin keeps .nv.shared.<kernel> as
    // SHT_LOPROC + 0xa, a size and no bytes; SHT_NOBITS is the standard spelling of the same.
    for (std::uint32_t type : {kShtCudaShared, kShtNobits}) {
        const auto cubin = cubin_with_window(type);
        auto info =
            inspect_cubin(Bytes{cubin.data(), cubin.size()}, Where{"k.cubin", std::nullopt});
        ASSERT_TRUE(info.ok()) << std::hex << type << ": " << info.error().to_string();
        EXPECT_EQ(info->sm, 90);
        EXPECT_EQ(info->kernels, 1);
    }
    // A section the format promises bytes for (SHT_PROGBITS) past the end is still an error, at
    // its section header.
    const auto bad = cubin_with_window(1);
    auto info = inspect_cubin(Bytes{bad.data(), bad.size()}, Where{"k.cubin", std::nullopt});
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.error().offset, header_of(bad, 2));
    EXPECT_TRUE(mentions(info.error(), "'.nv.shared._Z1kPf'")) << info.error().to_string();
}

TEST(BinaryElfRules, AProcessorSectionIsCheckedWhereItIsRead) {
    // .nv.info.<kernel> (SHT_LOPROC) is read for the toolkit: past the end it is an error.
    Buf b{elf_with({{".text.k", 1, std::vector<std::uint8_t>(16, 0)},
                    {".nv.info.k", 0x70000000, {0x04, 0x37, 0x04, 0x00, 0x7e, 0, 0, 0}}},
                   190)};
    b.b[8] = 8;
    b.put32(48, (0x06u << 24) | (90u << 8));
    b.put64(header_of(b.b, 2) + 32, 1ull << 40);
    auto info = inspect_cubin(Bytes{b.b.data(), b.b.size()}, Where{"k.cubin", std::nullopt});
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.error().offset, header_of(b.b, 2));
}

TEST(BinaryElfRules, AnEmptySectionNeedsNoBytesWhereverItPoints) {
    auto elf = elf_with({{".nv_fatbin", 1, fatbin_bytes({{}})}, {".empty", 1, {}}});
    Buf b{elf};
    b.put64(header_of(b.b, 2) + 24, 1ull << 50); // sh_offset far past the end, sh_size 0
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->size(), 1u);
    // In a cubin too, where every section with bytes is checked: an empty one has none.
    Buf c{cubin_with_window(1)};
    c.put64(header_of(c.b, 2) + 24, 1ull << 50);
    c.put64(header_of(c.b, 2) + 32, 0);
    auto info = inspect_cubin(Bytes{c.b.data(), c.b.size()}, Where{"k.cubin", std::nullopt});
    ASSERT_TRUE(info.ok()) << info.error().to_string();
    EXPECT_EQ(info->kernels, 1);
    // An empty fatbin section is still an error (it is named as holding a fatbin).
    Buf e{elf};
    e.put64(header_of(e.b, 1) + 32, 0);
    EXPECT_FALSE(read_memory(e.b).ok());
}

TEST(BinaryElfRules, AnEmptyNameTableNamesEverySectionEmpty) {
    // gABI: an empty string table is allowed, and index 0 in it is the empty string.
    Buf b{elf_with({{".data", 1, std::vector<std::uint8_t>(8, 1)}})};
    for (std::uint64_t i = 1; i <= 2; ++i)
        b.put32(header_of(b.b, i), 0);  // sh_name 0
    b.put64(header_of(b.b, 2) + 32, 0); // the name table (last section) is empty
    auto elf = parse_elf(Bytes{b.b.data(), b.b.size()}, Where{"x.o", std::nullopt});
    ASSERT_TRUE(elf.ok()) << elf.error().to_string();
    EXPECT_EQ(elf->sections.size(), 3u);
    EXPECT_EQ(elf->sections[1].name, "");
    // A non-zero index into it is an error.
    b.put32(header_of(b.b, 1), 1);
    EXPECT_FALSE(parse_elf(Bytes{b.b.data(), b.b.size()}, Where{"x.o", std::nullopt}).ok());
}

TEST(BinaryElfRules, ExtendedNumberingOfSectionsNamesAndProgramHeaders) {
    auto good = elf_with({{".nv_fatbin", 1, fatbin_bytes({{}})}});
    // e_shnum 0 and e_shstrndx SHN_XINDEX: the real values in section 0's sh_size and sh_link.
    Buf x{good};
    const std::uint64_t s0 = header_of(x.b, 0);
    x.put64(s0 + 32, 3);
    x.put32(s0 + 40, 2);
    x.put16(60, 0);
    x.put16(62, 0xffff);
    auto r = read_memory(x.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->size(), 1u);
    // e_phnum PN_XNUM: the count in section 0's sh_info (0 here: no program header table).
    x.put16(56, 0xffff);
    x.put16(54, 56);
    r = read_memory(x.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    // The count it gives is checked like any other.
    x.put32(s0 + 44, 1000);
    r = read_memory(x.b);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().offset, 32u); // e_phoff
}

TEST(BinaryElfRules, FatbinsArePaddedToTheSectionsAlignment) {
    // NVIDIA's aarch64 libraries (libnvjpeg.so.13): .nv_fatbin has sh_addralign 256, and the
    // linker pads each input fatbin to it with zeros (40 bytes where the reader allowed 8).
    auto one = fatbin_bytes({{}});
    const std::size_t pad = (256 - one.size() % 256) % 256;
    ASSERT_GT(pad, 8u); // more than the 8 bytes the reader allowed before
    auto both = one;
    both.insert(both.end(), pad, 0);
    both.insert(both.end(), one.begin(), one.end());
    Buf b{elf_with({{".nv_fatbin", 1, both}})};
    b.put64(header_of(b.b, 1) + 48, 256); // sh_addralign
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->size(), 2u);
    // With an alignment of 8 the same zeros are not padding: an error at their offset.
    b.put64(header_of(b.b, 1) + 48, 8);
    r = read_memory(b.b);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(mentions(r.error(), "expected a fatbin header")) << r.error().to_string();
    // A boundary past the section (a huge sh_addralign, capped at the section): the zeros do not
    // reach it, so they are not padding either.
    b.put64(header_of(b.b, 1) + 48, 1ull << 63);
    EXPECT_FALSE(read_memory(b.b).ok());
}

} // namespace
} // namespace forge::binary::test
