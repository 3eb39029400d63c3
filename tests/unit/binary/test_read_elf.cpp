// binary/read_elf.cpp: which fatbins of a host ELF file are registered (the wrapper records,
// the loader's view) and the magic scan of a file without a section table.
#include "support.h"

#include <fmt/format.h>

namespace forge::binary::test {
namespace {

// A linked file (ET_DYN) whose .nvFatBinSegment holds one wrapper record per address in `va`.
std::vector<std::uint8_t> wrapper_records(const std::vector<std::uint64_t>& va) {
    Buf seg;
    for (const std::uint64_t v : va)
        seg.u32(0x466243B1).u32(1).u64(v).u64(0);
    return seg.b;
}

std::vector<std::string> found_rows(const std::vector<Entry>& entries) {
    std::vector<std::string> rows;
    for (const auto& e : entries)
        rows.push_back(fmt::format("{} {} {}", e.section, e.target.name(), found_string(e.found)));
    return rows;
}

// Issue 36, 10: a fatbin section the loader does not map and no wrapper record points into is
// not the library's device code: reported apart (as an embedded fatbin), never registered.
TEST(BinaryHostile, ADecoyFatbinSectionIsNotRegistered) {
    const auto real = fatbin_bytes({{.arch = 80}});
    const auto decoy = fatbin_bytes({{.arch = 90, .payload = tiny_cubin(90)}});
    for (const bool with_records : {true, false}) {
        std::vector<SectionSpec> sections = {{".nv_fatbin", 1, real, 2, 0x10000},
                                             {"__nv_fatbin", 1, decoy, 0, 0}};
        if (with_records) sections.push_back({".nvFatBinSegment", 1, wrapper_records({0x10000})});
        auto entries = read_memory(elf_with(sections, 62, 3));
        ASSERT_TRUE(entries.ok()) << entries.error().to_string();
        EXPECT_EQ(found_rows(*entries), (std::vector<std::string>{".nv_fatbin sm_80 registered",
                                                                  "__nv_fatbin sm_90 embedded"}))
            << with_records;
    }
    // Mapped at an address, but the records point elsewhere: apart too.
    auto entries = read_memory(elf_with({{".nv_fatbin", 1, real, 2, 0x10000},
                                         {"__nv_fatbin", 1, decoy, 2, 0x20000},
                                         {".nvFatBinSegment", 1, wrapper_records({0x10000})}},
                                        62, 3));
    ASSERT_TRUE(entries.ok()) << entries.error().to_string();
    EXPECT_EQ(found_rows(*entries), (std::vector<std::string>{".nv_fatbin sm_80 registered",
                                                              "__nv_fatbin sm_90 embedded"}));
}

// Issue 36, 11: a registered fatbin is read where the wrapper records point, whatever its
// section is called; one in a section without file contents is an error, never "no device code".
TEST(BinaryHostile, AFatbinTheRecordsPointToIsReadUnderAnyName) {
    const auto fb = fatbin_bytes({{.arch = 90, .payload = tiny_cubin(90)}});
    ReadOptions no_scan;
    no_scan.scan_embedded = false;
    auto entries = read_memory(elf_with({{".rodata.x", 1, fb, 2, 0x10000},
                                         {".nvFatBinSegment", 1, wrapper_records({0x10000})}},
                                        62, 3),
                               no_scan);
    ASSERT_TRUE(entries.ok()) << entries.error().to_string();
    EXPECT_EQ(found_rows(*entries), (std::vector<std::string>{".rodata.x sm_90 registered"}));
    auto nobits = read_memory(elf_with(
        {{".rodata.x", 8, fb, 2, 0x10000}, {".nvFatBinSegment", 1, wrapper_records({0x10000})}}, 62,
        3));
    ASSERT_FALSE(nobits.ok());
    EXPECT_TRUE(mentions(nobits.error(), "'.rodata.x', which has no file contents"))
        << nobits.error().to_string();
    // A record that points to no fatbin: the file lies about itself.
    auto none =
        read_memory(elf_with({{".rodata.x", 1, std::vector<std::uint8_t>(64, 0), 2, 0x10000},
                              {".nvFatBinSegment", 1, wrapper_records({0x10000})}},
                             62, 3));
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(mentions(none.error(), "and none is there")) << none.error().to_string();
}

TEST(BinaryHostile, MagicScanWithoutSectionTableAcceptsOnlyConsistentHeaders) {
    auto fb = fatbin_bytes({{.arch = 86}, {.kind = 1, .arch = 86}});
    auto elf = host_elf(".renamed", fb);
    Buf b{elf};
    b.put64(40, 0); // no section table
    b.put16(60, 0);
    auto r = read_memory(b.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].section, "(scan)");
    EXPECT_EQ((*r)[0].fatbin_offset, 64u);
    // A magic with an inconsistent chain (entry runs past fat_size) is not a fatbin.
    b.put64(64 + 16 + 8, 0x1000);
    r = read_memory(b.b);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

} // namespace
} // namespace forge::binary::test
