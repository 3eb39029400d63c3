// The fatbin container (notes/fatbin-format.md sections 2-4): a 16-byte header followed by
// entries, each a variable-size header plus a payload. Sections hold fatbins end to end.
#pragma once

#include "arch/arch.h"
#include "binary/bytes.h"
#include "binary/reader.h"
#include "core/result.h"

#include <cstdint>
#include <vector>

namespace forge::binary {

inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr std::uint32_t kWrapperMagic = 0x466243B1;

inline constexpr std::uint16_t kKindPtx = 1;
inline constexpr std::uint16_t kKindElf = 2;
inline constexpr std::uint16_t kKindLto = 8;

inline constexpr std::uint64_t kFlagLz4 = 0x2000;
inline constexpr std::uint64_t kFlagZstd = 0x8000;
inline constexpr std::uint64_t kFlagLto = 0x10000;
inline constexpr std::uint64_t kFlagArchSpecific = 0x100000;
inline constexpr std::uint64_t kFlagFamily = 0x200000;

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

// Every fatbin in a section (or a whole standalone .fatbin file), end to end; zero padding to
// the next 8-byte boundary and trailing zero bytes are tolerated, anything else is an error.
Result<std::vector<Fatbin>> parse_fatbins(const Bytes& region, const Where& where);

// One fatbin at `off` of `region` (strict).
Result<Fatbin> parse_fatbin_at(const Bytes& region, std::uint64_t off, const Where& where);

// Fallback when section headers are unusable: fatbins found by magic at 8-byte aligned offsets,
// accepted only when the whole header chain is consistent (notes section 1.5).
std::vector<Fatbin> scan_fatbins(const Bytes& region, const Where& where);

} // namespace forge::binary
