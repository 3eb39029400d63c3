// The fatbin container (docs/fatbin-format.md, "The fatbin header" to "Naming an entry"): a
// 16-byte header followed by entries, each a variable-size header plus a payload. Sections hold
// fatbins end to end.
#pragma once

#include "arch/arch.h"
#include "binary/bytes.h"
#include "binary/reader.h"
#include "core/result.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace forge::binary {

inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

// The fatbin header (docs/fatbin-format.md, "The fatbin header"): byte offsets of its fields.
namespace fatbin_header {
inline constexpr std::uint64_t kMagic = 0x00;      // u32 kFatbinMagic
inline constexpr std::uint64_t kVersion = 0x04;    // u16, 1
inline constexpr std::uint64_t kHeaderSize = 0x06; // u16, 0x10: entries start here
inline constexpr std::uint64_t kFatSize = 0x08;    // u64: bytes of entries after the header
inline constexpr std::uint64_t kSize = 0x10;       // the header as nvcc writes it
} // namespace fatbin_header

// An entry header (docs/fatbin-format.md, "Entry header"): byte offsets of the fields read here.
// The fields between them (options, code version, identifier) are not needed to list an entry.
namespace entry_header {
inline constexpr std::uint64_t kKind = 0x00;             // u16 kKindPtx / kKindElf / kKindLto
inline constexpr std::uint64_t kVersion = 0x02;          // u16, always kEntryVersion
inline constexpr std::uint64_t kHeaderSize = 0x04;       // u32, >= kBaseSize; payload follows
inline constexpr std::uint64_t kPaddedSize = 0x08;       // u64: payload bytes stored
inline constexpr std::uint64_t kCompressedSize = 0x10;   // u32: 0 unless compressed
inline constexpr std::uint64_t kArch = 0x1c;             // u32: SM number, major*10+minor
inline constexpr std::uint64_t kFlags = 0x28;            // u64: the kFlag* bits
inline constexpr std::uint64_t kUncompressedSize = 0x38; // u64: 0 unless compressed
inline constexpr std::uint64_t kBaseSize = 0x40;         // smallest header (no extension area)
} // namespace entry_header
inline constexpr std::uint16_t kEntryVersion = 0x0101;

inline constexpr std::uint16_t kKindPtx = 1;
inline constexpr std::uint16_t kKindElf = 2;
inline constexpr std::uint16_t kKindLto = 8;

// Entry flags ("Entry flags" in docs/fatbin-format.md).
inline constexpr std::uint64_t kFlagLz4 = 0x2000;
inline constexpr std::uint64_t kFlagZstd = 0x8000;
inline constexpr std::uint64_t kFlagArchSpecific = 0x100000;
inline constexpr std::uint64_t kFlagFamily = 0x200000;

// The registration wrapper in .nvFatBinSegment (__fatBinC_Wrapper_t; docs/fatbin-format.md,
// "The wrapper records in .nvFatBinSegment"): byte offsets of its fields.
inline constexpr std::uint32_t kWrapperMagic = 0x466243B1;
namespace wrapper_record {
inline constexpr std::uint64_t kMagic = 0x00;   // u32 kWrapperMagic
inline constexpr std::uint64_t kVersion = 0x04; // u32: 1 per-TU fatbin, 2 from nvcc's nvlink step
inline constexpr std::uint64_t kData = 0x08;    // u64: link-time address of the fatbin header
inline constexpr std::uint64_t kSize = 0x18;    // one record
} // namespace wrapper_record
inline constexpr std::uint32_t kWrapperVersionLinked = 2;

struct FatbinEntry {
    std::uint64_t offset = 0; // of the entry header, in the reported buffer
    std::uint16_t kind = 0;
    std::uint32_t header_size = 0;
    std::uint64_t padded_size = 0;
    std::uint32_t compressed_size = 0;
    std::uint32_t arch = 0;
    std::uint64_t flags = 0;
    std::uint64_t uncompressed_size = 0;
    arch::Target target;
    Compression compression = Compression::None;
    Bytes payload; // padded payload (headers only are read while listing; never dereferenced)
};

struct Fatbin {
    std::uint64_t offset = 0; // of the fatbin header, in the reported buffer
    std::uint64_t size = 0;   // header + entries
    std::vector<FatbinEntry> entries;
};

// How many more entry headers a read may parse. Every entry header is at least 0x40 bytes of the
// buffer, so no buffer holds more than size/0x40 of them; the budget bounds what amplification
// (one fatbin reached through many headers or sections) could make of that.
struct EntryBudget {
    EntryBudget(std::uint64_t n, std::string_view why) : limit(n), left(n), what(why) {}
    std::uint64_t limit;
    std::uint64_t left;
    std::string_view what; // ends the error message: "more than N fatbin entry headers ..., <what>"
    bool hit = false;      // exhausted() was called
    Error exhausted(std::uint64_t offset, const Where& where);
};

// Every fatbin in a section (or a whole standalone .fatbin file), end to end; zero padding to
// the next `pad_align`-byte boundary (at least 8; an ELF fatbin section's sh_addralign, since a
// linker aligns each input section to its own alignment: 256 in NVIDIA's aarch64 libraries; 16
// for link.exe's PE sections; never more than the region) and
// trailing zero bytes are tolerated, anything else is an error. Each entry parsed takes one from
// `budget`; the error when it runs out names the entry.
Result<std::vector<Fatbin>> parse_fatbins(const Bytes& region, const Where& where,
                                          EntryBudget& budget, std::uint64_t pad_align = 8);
Result<std::vector<Fatbin>> parse_fatbins(const Bytes& region, const Where& where,
                                          std::uint64_t pad_align = 8);

// One fatbin at `off` of `region` (strict).
Result<Fatbin> parse_fatbin_at(const Bytes& region, std::uint64_t off, const Where& where,
                               EntryBudget& budget);

// Where the magic scan looks: a region (a section, a file) and the first offset in it that is
// 8-byte aligned in the address space the bytes are loaded at (docs/fatbin-format.md, "Fatbins
// outside the registered sections"): candidates are that offset plus multiples of 8.
struct ScanRegion {
    Bytes bytes;
    std::uint64_t aligned_from = 0;
};

// The offsets in each region where the fatbin magic sits at a candidate offset, in order. The
// bytes are copied in blocks (copy_bytes: pread for a mapped file, so the scan leaves no page of
// the mapping resident) and searched by `threads` workers when there is enough to share.
std::vector<std::vector<std::uint64_t>> find_fatbin_magic(const std::vector<ScanRegion>& regions,
                                                          unsigned threads);

// The fatbins of `region` that start at `candidates` (ascending, from find_fatbin_magic): a
// candidate counts only when its header, every entry header and every entry's payload bounds
// parse (parse_fatbin_at, strict) with at least one entry; candidates inside an accepted fatbin
// are skipped. Linear in the region's size: header chains that overlap beyond what a file can
// hold end the scan with an error, as does running out of `budget` (accepted entries).
Result<std::vector<Fatbin>> accept_fatbins(const Bytes& region,
                                           const std::vector<std::uint64_t>& candidates,
                                           const Where& where, EntryBudget& budget);

// Both, over one region: the fallback when section headers are unusable (docs/fatbin-format.md,
// "Files without a section table").
Result<std::vector<Fatbin>> scan_fatbins(const Bytes& region, const Where& where,
                                         EntryBudget& budget, std::uint64_t aligned_from = 0,
                                         unsigned threads = 1);

} // namespace forge::binary
