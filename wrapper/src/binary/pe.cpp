#include "binary/pe.h"

#include <array>
#include <fmt/format.h>
#include <optional>

namespace forge::binary {

using namespace pe; // the PE/COFF field offsets

namespace {

// ANON_OBJECT_HEADER_BIGOBJ's ClassID, {D1BAA1C7-BAEE-4BA9-AF20-FAF66AA4DCB8}, as stored.
constexpr std::array<std::uint8_t, 16> kBigObjClassId = {
    0xc7, 0xa1, 0xba, 0xd1, 0xee, 0xba, 0xa9, 0x4b, 0xaf, 0x20, 0xfa, 0xf6, 0x6a, 0xa4, 0xdc, 0xb8};

bool known_machine(std::uint16_t m) {
    return m == kPeMachineAmd64 || m == kPeMachineArm64 || m == kPeMachineArm64Ec ||
           m == kPeMachineArm64X || m == kPeMachineI386 || m == kPeMachineArmNt;
}

bool is_bigobj(const Bytes& b) {
    if (!b.has(0, kBigHeaderSize) || b.u16(kBigSig1) != 0 || b.u16(kBigSig2) != 0xffff ||
        b.u16(kBigVersion) < 2)
        return false;
    for (std::size_t i = 0; i < kBigObjClassId.size(); ++i)
        if (b.u8(kBigClassId + i) != kBigObjClassId[i]) return false;
    return true;
}

// The decimal of "/N" or the base64 of "//XXXXXX" (the form LLVM and MSVC use for offsets past
// 9,999,999): the offset of a long section name in the string table.
std::optional<std::uint64_t> long_name_offset(std::string_view raw) {
    if (raw.size() < 2 || raw[0] != '/') return std::nullopt;
    std::uint64_t v = 0;
    if (raw[1] == '/') {
        if (raw.size() == 2) return std::nullopt;
        for (char c : raw.substr(2)) {
            int d = -1;
            if (c >= 'A' && c <= 'Z') d = c - 'A';
            if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
            if (c >= '0' && c <= '9') d = c - '0' + 52;
            if (c == '+') d = 62;
            if (c == '/') d = 63;
            if (d < 0) return std::nullopt;
            v = v * 64 + static_cast<std::uint64_t>(d);
        }
        return v;
    }
    for (char c : raw.substr(1)) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
}

struct TableSpec {
    std::uint64_t table_offset = 0;  // first IMAGE_SECTION_HEADER
    std::uint64_t count = 0;         // NumberOfSections
    std::uint64_t count_field = 0;   // where NumberOfSections is stored (for errors)
    std::uint64_t symtab_offset = 0; // PointerToSymbolTable (0: none)
    std::uint64_t symbols = 0;       // NumberOfSymbols
    std::uint64_t symbol_size = kSymbolSize;
    std::uint64_t symtab_field = 0; // where PointerToSymbolTable is stored (for errors)
};

// The COFF string table: after the symbol table, its u32 size counting the size field itself.
// nullopt when the file has none; an error when the header points at one that is not there.
Result<std::optional<Bytes>> string_table(const Bytes& b, const TableSpec& t, const Where& where) {
    if (t.symtab_offset == 0) return std::optional<Bytes>{};
    auto syms = checked_mul(t.symbols, t.symbol_size);
    auto at = syms ? checked_add(t.symtab_offset, *syms) : std::nullopt;
    if (!at || !b.has(*at, kStringTableSizeField))
        return where.error(b.abs(t.symtab_field),
                           fmt::format("symbol table ({} symbols at 0x{:x}) and the string table "
                                       "after it extend past the end of the file (0x{:x} bytes)",
                                       t.symbols, t.symtab_offset, b.size()));
    const std::uint32_t size = b.u32(*at);
    if (size < kStringTableSizeField || !b.has(*at, size))
        return where.error(b.abs(*at), fmt::format("string table size {} at 0x{:x} extends past "
                                                   "the end of the file (0x{:x} bytes)",
                                                   size, *at, b.size()));
    return std::optional<Bytes>{b.sub(*at, size)};
}

Status read_section_table(const Bytes& b, const TableSpec& t, const Where& where, Pe& pe) {
    auto size = checked_mul(t.count, kSectionHeaderSize);
    if (!size || !b.has(t.table_offset, *size))
        return where.error(b.abs(t.count_field),
                           fmt::format("section table ({} sections at 0x{:x}) extends past the "
                                       "end of the file (0x{:x} bytes)",
                                       t.count, t.table_offset, b.size()));
    std::optional<Result<std::optional<Bytes>>> strings; // read on the first long name
    pe.sections.reserve(static_cast<std::size_t>(t.count));
    for (std::uint64_t i = 0; i < t.count; ++i) {
        const std::uint64_t h = t.table_offset + i * kSectionHeaderSize;
        PeSection s;
        s.index = static_cast<std::uint32_t>(i);
        s.header_offset = h;
        std::string_view raw = b.view(h + kSecName, kSecNameSize);
        if (auto nul = raw.find('\0'); nul != std::string_view::npos) raw = raw.substr(0, nul);
        s.virtual_size = b.u32(h + kSecVirtualSize);
        s.virtual_address = b.u32(h + kSecVirtualAddress);
        s.raw_size = b.u32(h + kSecSizeOfRawData);
        s.raw_offset = b.u32(h + kSecPointerToRawData);
        s.characteristics = b.u32(h + kSecCharacteristics);
        if (auto off = long_name_offset(raw)) {
            if (!strings) strings = string_table(b, t, where);
            if (!*strings) return Error(strings->error());
            const std::optional<Bytes>& table = **strings;
            if (!table)
                return where.error(b.abs(h), fmt::format("section {} has the long name '{}' but "
                                                         "the file has no string table",
                                                         i, raw));
            // Offsets below 4 would point into the size field: no name lives there.
            auto name = *off >= kStringTableSizeField ? table->cstr(*off) : std::nullopt;
            if (!name)
                return where.error(b.abs(h), fmt::format("section {} long name offset {} is "
                                                         "outside the string table ({} bytes)",
                                                         i, *off, table->size()));
            s.name = std::string(*name);
        } else {
            s.name = std::string(raw);
        }
        pe.sections.push_back(std::move(s));
    }
    return ok_status();
}

// The optional header's size and layout fields (PE format specification, "Optional Header
// Windows-Specific Fields"), as the checks of the section table need them.
struct ImageLayout {
    std::uint64_t opt = 0;             // offset of the optional header
    std::uint32_t file_alignment = 0;  // FileAlignment
    std::uint32_t size_of_image = 0;   // SizeOfImage
    std::uint32_t size_of_headers = 0; // SizeOfHeaders
};

// Magic, ImageBase, the header's own size against NumberOfRvaAndSizes, the alignments, and
// SizeOfHeaders against the file.
Result<ImageLayout> read_optional_header(const Bytes& b, std::uint64_t coff, const Where& where,
                                         Pe& pe) {
    ImageLayout l;
    l.opt = coff + kFileHeaderSize;
    const std::uint64_t opt = l.opt;
    const std::uint16_t opt_size = b.u16(coff + kSizeOfOptionalHeader);
    if (!b.has(opt, 2))
        return where.error(b.abs(coff + kSizeOfOptionalHeader),
                           fmt::format("optional header at 0x{:x} lies past the end of the file "
                                       "(0x{:x} bytes)",
                                       opt, b.size()));
    pe.optional_magic = b.u16(opt + kOptMagic);
    if (pe.optional_magic != kPeOptMagic64 && pe.optional_magic != kPeOptMagic32)
        return where.error(b.abs(opt + kOptMagic),
                           fmt::format("bad optional header magic 0x{:x} (expected 0x10b PE32 or "
                                       "0x20b PE32+)",
                                       pe.optional_magic));
    const bool plus = pe.optional_magic == kPeOptMagic64;
    const std::uint64_t fixed = plus ? kOptFixedSize64 : kOptFixedSize32;
    if (opt_size < fixed || !b.has(opt, opt_size))
        return where.error(b.abs(coff + kSizeOfOptionalHeader),
                           fmt::format("SizeOfOptionalHeader {} at 0x{:x}: a PE32{} optional "
                                       "header has at least {} bytes and must fit in the file "
                                       "(0x{:x} bytes)",
                                       opt_size, opt, plus ? "+" : "", fixed, b.size()));
    const std::uint64_t nrva_field = opt + (plus ? kNumberOfRvaAndSizes64 : kNumberOfRvaAndSizes32);
    const std::uint32_t nrva = b.u32(nrva_field);
    if (nrva > kMaxDataDirectories)
        return where.error(b.abs(nrva_field), fmt::format("NumberOfRvaAndSizes {} (at most {})",
                                                          nrva, kMaxDataDirectories));
    if (opt_size != fixed + nrva * kDataDirectorySize)
        return where.error(b.abs(coff + kSizeOfOptionalHeader),
                           fmt::format("SizeOfOptionalHeader {} disagrees with "
                                       "NumberOfRvaAndSizes {} ({} + {} x 8 = {} bytes)",
                                       opt_size, nrva, fixed, nrva,
                                       fixed + nrva * kDataDirectorySize));
    pe.image_base = plus ? b.u64(opt + kImageBase64) : b.u32(opt + kImageBase32);
    const std::uint32_t section_alignment = b.u32(opt + kSectionAlignment);
    l.file_alignment = b.u32(opt + kFileAlignment);
    auto power_of_two = [](std::uint32_t v) { return v != 0 && (v & (v - 1)) == 0; };
    if (!power_of_two(l.file_alignment))
        return where.error(
            b.abs(opt + kFileAlignment),
            fmt::format("FileAlignment 0x{:x} is not a power of two", l.file_alignment));
    if (!power_of_two(section_alignment) || section_alignment < l.file_alignment)
        return where.error(b.abs(opt + kSectionAlignment),
                           fmt::format("SectionAlignment 0x{:x} is not a power of two at least "
                                       "FileAlignment (0x{:x})",
                                       section_alignment, l.file_alignment));
    l.size_of_image = b.u32(opt + kSizeOfImage);
    l.size_of_headers = b.u32(opt + kSizeOfHeaders);
    if (l.size_of_headers > b.size())
        return where.error(b.abs(opt + kSizeOfHeaders),
                           fmt::format("SizeOfHeaders 0x{:x} is past the end of the file (0x{:x} "
                                       "bytes)",
                                       l.size_of_headers, b.size()));
    if (l.size_of_image < l.size_of_headers)
        return where.error(b.abs(opt + kSizeOfImage),
                           fmt::format("SizeOfImage 0x{:x} is smaller than SizeOfHeaders 0x{:x}",
                                       l.size_of_image, l.size_of_headers));
    return l;
}

// The section table lies inside the headers the optional header declares (SizeOfHeaders), which
// is what the loader maps: a table that runs past them reads section data as headers.
Status check_table_in_headers(const Bytes& b, const TableSpec& t, const ImageLayout& l,
                              const Where& where) {
    const std::uint64_t end = t.table_offset + t.count * kSectionHeaderSize; // u16 * 40: no wrap
    if (end > l.size_of_headers)
        return where.error(b.abs(t.count_field),
                           fmt::format("NumberOfSections {}: the section table at 0x{:x} ends at "
                                       "0x{:x}, past SizeOfHeaders 0x{:x}",
                                       t.count, t.table_offset, end, l.size_of_headers));
    return ok_status();
}

// A section's raw data lies in the file after the headers (PointerToRawData 0 only without raw
// data); its memory range lies in SizeOfImage, in ascending order without overlap.
Status check_image_sections(const Pe& pe, const ImageLayout& l, const Where& where) {
    const Bytes& b = pe.bytes;
    std::uint64_t mapped_to = 0; // end of the previous section's memory range
    for (const auto& s : pe.sections) {
        const std::uint64_t h = s.header_offset;
        if ((s.characteristics & kPeScnUninitializedData) == 0 && s.raw_size != 0) {
            if (s.raw_offset < l.size_of_headers)
                return where.error(b.abs(h + kSecPointerToRawData),
                                   fmt::format("section '{}': PointerToRawData 0x{:x} lies inside "
                                               "the headers (SizeOfHeaders 0x{:x})",
                                               s.name, s.raw_offset, l.size_of_headers));
            if (!b.has(s.raw_offset, s.raw_size))
                return where.error(b.abs(h + kSecSizeOfRawData),
                                   fmt::format("section '{}': raw data (0x{:x} bytes at 0x{:x}) "
                                               "extends past the end of the file (0x{:x} bytes)",
                                               s.name, s.raw_size, s.raw_offset, b.size()));
        }
        const std::uint64_t vsize = s.virtual_size != 0 ? s.virtual_size : s.raw_size;
        if (s.virtual_address < mapped_to)
            return where.error(b.abs(h + kSecVirtualAddress),
                               fmt::format("section '{}': VirtualAddress 0x{:x} overlaps the "
                                           "section before it (which ends at 0x{:x})",
                                           s.name, s.virtual_address, mapped_to));
        mapped_to = std::uint64_t{s.virtual_address} + vsize; // u32 + u32: no wrap
        if (mapped_to > l.size_of_image)
            return where.error(
                b.abs(h + (s.virtual_size != 0 ? kSecVirtualSize : kSecSizeOfRawData)),
                fmt::format("section '{}' (0x{:x} bytes at 0x{:x}) extends past "
                            "SizeOfImage 0x{:x}",
                            s.name, vsize, s.virtual_address, l.size_of_image));
    }
    return ok_status();
}

// An object's sections: raw data after the section table and inside the object (uninitialised
// sections give SizeOfRawData as their size and have no data).
Status check_object_sections(const Pe& pe, const TableSpec& t, const Where& where) {
    const Bytes& b = pe.bytes;
    const std::uint64_t table_end = t.table_offset + t.count * kSectionHeaderSize; // checked
    for (const auto& s : pe.sections) {
        if ((s.characteristics & kPeScnUninitializedData) != 0 || s.raw_size == 0) continue;
        if (s.raw_offset < table_end)
            return where.error(b.abs(s.header_offset + kSecPointerToRawData),
                               fmt::format("section '{}': PointerToRawData 0x{:x} lies inside "
                                           "the headers (the section table ends at 0x{:x})",
                                           s.name, s.raw_offset, table_end));
        if (!b.has(s.raw_offset, s.raw_size))
            return where.error(b.abs(s.header_offset + kSecSizeOfRawData),
                               fmt::format("section '{}': raw data (0x{:x} bytes at 0x{:x}) "
                                           "extends past the end of the object (0x{:x} bytes)",
                                           s.name, s.raw_size, s.raw_offset, b.size()));
    }
    return ok_status();
}

} // namespace

bool has_pe_magic(const Bytes& b) {
    return b.starts_with("MZ");
}

bool is_coff_import_member(const Bytes& b) {
    return b.has(0, 6) && b.u16(kBigSig1) == 0 && b.u16(kBigSig2) == 0xffff &&
           b.u16(kBigVersion) == 0;
}

bool starts_like_coff_object(const Bytes& b) {
    if (is_bigobj(b)) return true;
    return b.has(0, kFileHeaderSize) && known_machine(b.u16(kMachine)) &&
           b.u16(kSizeOfOptionalHeader) == 0;
}

bool looks_like_coff_object(const Bytes& b) {
    if (is_bigobj(b)) return true;
    if (!starts_like_coff_object(b)) return false;
    const std::uint64_t table = std::uint64_t{b.u16(kNumberOfSections)} * kSectionHeaderSize;
    const std::uint64_t symtab = b.u32(kPointerToSymbolTable);
    return b.has(kFileHeaderSize, table) && symtab <= b.size();
}

bool has_macho_magic(const Bytes& b) {
    if (!b.has(0, 8)) return false;
    const std::uint32_t m = b.u32(0);
    if (m == 0xfeedface || m == 0xfeedfacf || m == 0xcefaedfe || m == 0xcffaedfe) return true;
    // Universal binaries share 0xcafebabe with Java class files; a class file's next word is
    // its version (major >= 45), a universal binary's the (small) number of architectures.
    if (m == 0xbebafeca || m == 0xbfbafeca) {
        const std::uint32_t n = __builtin_bswap32(b.u32(macho::kFatNfatArch));
        return n > 0 && n < 45;
    }
    return false;
}

const PeSection* Pe::find(std::string_view name) const {
    for (const auto& s : sections)
        if (s.name == name) return &s;
    return nullptr;
}

Result<Bytes> Pe::section_bytes(const PeSection& s, const Where& where) const {
    if ((s.characteristics & kPeScnUninitializedData) != 0 || s.raw_offset == 0)
        return bytes.sub(0, 0);
    std::uint64_t size = s.raw_size;
    if (image && s.virtual_size != 0 && s.virtual_size < size) size = s.virtual_size;
    if (!bytes.has(s.raw_offset, size))
        return where.error(bytes.abs(s.header_offset),
                           fmt::format("section '{}' (raw data at 0x{:x}, size 0x{:x}) extends "
                                       "past the end of the file (0x{:x} bytes)",
                                       s.name, s.raw_offset, size, bytes.size()));
    return bytes.sub(s.raw_offset, size);
}

Result<Pe> parse_pe(const Bytes& b, const Where& where) {
    if (!has_pe_magic(b)) return where.error(b.abs(0), "not a PE image (no \"MZ\" DOS header)");
    if (!b.has(0, kDosHeaderSize))
        return where.error(b.abs(0), fmt::format("truncated DOS header: {} bytes needed, 0x{:x} "
                                                 "in the file",
                                                 kDosHeaderSize, b.size()));
    const std::uint64_t sig = b.u32(kDosLfanew);
    if (!b.has(sig, kSignatureSize + kFileHeaderSize))
        return where.error(b.abs(kDosLfanew),
                           fmt::format("e_lfanew 0x{:x}: the PE signature and COFF header do not "
                                       "fit in the file (0x{:x} bytes)",
                                       sig, b.size()));
    if (b.view(sig, kSignatureSize) != std::string_view("PE\0\0", 4))
        return where.error(b.abs(sig), "bad PE signature (expected \"PE\\0\\0\"): an MZ file "
                                       "that is not a PE image (DOS or NE/LE executable)");
    const std::uint64_t coff = sig + kSignatureSize;
    Pe pe;
    pe.bytes = b;
    pe.image = true;
    pe.machine = b.u16(coff + kMachine);
    if (!known_machine(pe.machine))
        return where.error(b.abs(coff + kMachine),
                           fmt::format("unsupported PE machine 0x{:04x} (read: x86, x86-64, ARM, "
                                       "ARM64, ARM64EC, ARM64X)",
                                       pe.machine));
    const std::uint64_t opt = coff + kFileHeaderSize;
    auto layout = read_optional_header(b, coff, where, pe);
    if (!layout) return std::move(layout).error();
    TableSpec t;
    t.table_offset = opt + b.u16(coff + kSizeOfOptionalHeader);
    t.count = b.u16(coff + kNumberOfSections);
    t.count_field = coff + kNumberOfSections;
    t.symtab_offset = b.u32(coff + kPointerToSymbolTable);
    t.symbols = b.u32(coff + kNumberOfSymbols);
    t.symtab_field = coff + kPointerToSymbolTable;
    if (t.count == 0)
        return where.error(b.abs(t.count_field), "NumberOfSections is 0: an image without "
                                                 "sections has no code or data to read");
    FORGE_TRY_STATUS(check_table_in_headers(b, t, *layout, where));
    FORGE_TRY_STATUS(read_section_table(b, t, where, pe));
    FORGE_TRY_STATUS(check_image_sections(pe, *layout, where));
    return pe;
}

Result<Pe> parse_coff_object(const Bytes& b, const Where& where) {
    Pe pe;
    pe.bytes = b;
    TableSpec t;
    if (is_bigobj(b)) {
        pe.bigobj = true;
        pe.machine = b.u16(kBigMachine);
        t.table_offset = kBigHeaderSize;
        t.count = b.u32(kBigNumberOfSections);
        t.count_field = kBigNumberOfSections;
        t.symtab_offset = b.u32(kBigPointerToSymbolTable);
        t.symbols = b.u32(kBigNumberOfSymbols);
        t.symbol_size = kBigSymbolSize;
        t.symtab_field = kBigPointerToSymbolTable;
    } else {
        if (!b.has(0, kFileHeaderSize))
            return where.error(b.abs(0), fmt::format("truncated COFF header: {} bytes needed, "
                                                     "0x{:x} in the object",
                                                     kFileHeaderSize, b.size()));
        pe.machine = b.u16(kMachine);
        if (b.u16(kSizeOfOptionalHeader) != 0)
            return where.error(b.abs(kSizeOfOptionalHeader),
                               "a COFF object with an optional header (a stripped image?)");
        t.table_offset = kFileHeaderSize;
        t.count = b.u16(kNumberOfSections);
        t.count_field = kNumberOfSections;
        t.symtab_offset = b.u32(kPointerToSymbolTable);
        t.symbols = b.u32(kNumberOfSymbols);
        t.symtab_field = kPointerToSymbolTable;
    }
    if (!known_machine(pe.machine))
        return where.error(b.abs(pe.bigobj ? kBigMachine : kMachine),
                           fmt::format("unsupported COFF machine 0x{:04x}", pe.machine));
    FORGE_TRY_STATUS(read_section_table(b, t, where, pe));
    FORGE_TRY_STATUS(check_object_sections(pe, t, where));
    return pe;
}

} // namespace forge::binary
