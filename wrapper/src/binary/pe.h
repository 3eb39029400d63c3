// PE/COFF: Windows images (.dll, .pyd, .exe: DOS header -> "PE\0\0" -> COFF header -> optional
// header -> section table) and COFF objects (.obj, the members of an MSVC .lib), including the
// /bigobj object header. Only what the fatbin readers need; every field is bounds-checked.
// Layout and the section names nvcc's Windows host compilation uses: docs/fatbin-format.md,
// "PE/COFF (Windows)". Specification: https://learn.microsoft.com/windows/win32/debug/pe-format
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace forge::binary {

// Byte offsets of the PE/COFF fields this module reads, named as in the PE format specification
// (IMAGE_DOS_HEADER, IMAGE_FILE_HEADER, IMAGE_OPTIONAL_HEADER{32,64}, IMAGE_SECTION_HEADER,
// ANON_OBJECT_HEADER_BIGOBJ). COFF header fields are relative to the COFF header, section fields
// to their section header.
namespace pe {
// IMAGE_DOS_HEADER.
inline constexpr std::uint64_t kDosMagic = 0;       // u16 e_magic "MZ"
inline constexpr std::uint64_t kDosLfanew = 0x3c;   // u32 e_lfanew: offset of "PE\0\0"
inline constexpr std::uint64_t kDosHeaderSize = 64; // sizeof(IMAGE_DOS_HEADER)
inline constexpr std::uint64_t kSignatureSize = 4;  // "PE\0\0"
// IMAGE_FILE_HEADER (the COFF header; an object file starts with it).
inline constexpr std::uint64_t kMachine = 0;               // u16 Machine
inline constexpr std::uint64_t kNumberOfSections = 2;      // u16 NumberOfSections
inline constexpr std::uint64_t kPointerToSymbolTable = 8;  // u32 PointerToSymbolTable
inline constexpr std::uint64_t kNumberOfSymbols = 12;      // u32 NumberOfSymbols
inline constexpr std::uint64_t kSizeOfOptionalHeader = 16; // u16 SizeOfOptionalHeader
inline constexpr std::uint64_t kCharacteristics = 18;      // u16 Characteristics
inline constexpr std::uint64_t kFileHeaderSize = 20;       // sizeof(IMAGE_FILE_HEADER)
// IMAGE_OPTIONAL_HEADER32 / IMAGE_OPTIONAL_HEADER64 (images only).
inline constexpr std::uint64_t kOptMagic = 0;                // u16 Magic: 0x10b PE32, 0x20b PE32+
inline constexpr std::uint64_t kImageBase32 = 28;            // u32 ImageBase (PE32)
inline constexpr std::uint64_t kImageBase64 = 24;            // u64 ImageBase (PE32+)
inline constexpr std::uint64_t kSectionAlignment = 32;       // u32 SectionAlignment (both forms)
inline constexpr std::uint64_t kFileAlignment = 36;          // u32 FileAlignment
inline constexpr std::uint64_t kSizeOfImage = 56;            // u32 SizeOfImage
inline constexpr std::uint64_t kSizeOfHeaders = 60;          // u32 SizeOfHeaders
inline constexpr std::uint64_t kNumberOfRvaAndSizes32 = 92;  // u32 NumberOfRvaAndSizes (PE32)
inline constexpr std::uint64_t kNumberOfRvaAndSizes64 = 108; // u32 NumberOfRvaAndSizes (PE32+)
inline constexpr std::uint64_t kOptFixedSize32 = 96;   // PE32: the fields before the directories
inline constexpr std::uint64_t kOptFixedSize64 = 112;  // PE32+
inline constexpr std::uint64_t kDataDirectorySize = 8; // IMAGE_DATA_DIRECTORY
inline constexpr std::uint64_t kMaxDataDirectories = 16;
// ANON_OBJECT_HEADER_BIGOBJ (objects built with /bigobj).
inline constexpr std::uint64_t kBigSig1 = 0;                  // u16 Sig1 = 0
inline constexpr std::uint64_t kBigSig2 = 2;                  // u16 Sig2 = 0xffff
inline constexpr std::uint64_t kBigVersion = 4;               // u16 Version >= 2
inline constexpr std::uint64_t kBigMachine = 6;               // u16 Machine
inline constexpr std::uint64_t kBigClassId = 12;              // 16-byte ClassID
inline constexpr std::uint64_t kBigNumberOfSections = 44;     // u32 NumberOfSections
inline constexpr std::uint64_t kBigPointerToSymbolTable = 48; // u32 PointerToSymbolTable
inline constexpr std::uint64_t kBigNumberOfSymbols = 52;      // u32 NumberOfSymbols
inline constexpr std::uint64_t kBigHeaderSize = 56;           // sizeof(ANON_OBJECT_HEADER_BIGOBJ)
// IMAGE_SECTION_HEADER.
inline constexpr std::uint64_t kSecName = 0;              // 8 bytes Name (or "/N" in objects)
inline constexpr std::uint64_t kSecNameSize = 8;          // IMAGE_SIZEOF_SHORT_NAME
inline constexpr std::uint64_t kSecVirtualSize = 8;       // u32 VirtualSize (0 in objects)
inline constexpr std::uint64_t kSecVirtualAddress = 12;   // u32 VirtualAddress (an RVA)
inline constexpr std::uint64_t kSecSizeOfRawData = 16;    // u32 SizeOfRawData
inline constexpr std::uint64_t kSecPointerToRawData = 20; // u32 PointerToRawData
inline constexpr std::uint64_t kSecCharacteristics = 36;  // u32 Characteristics
inline constexpr std::uint64_t kSectionHeaderSize = 40;   // sizeof(IMAGE_SECTION_HEADER)
inline constexpr std::uint64_t kSymbolSize = 18;          // sizeof(IMAGE_SYMBOL)
inline constexpr std::uint64_t kBigSymbolSize = 20;       // sizeof(IMAGE_SYMBOL_EX)
inline constexpr std::uint64_t kStringTableSizeField = 4; // u32 size, counting itself
} // namespace pe

// The universal (fat) Mach-O header that has_macho_magic() looks into (<mach-o/fat.h>, big-endian).
namespace macho {
inline constexpr std::uint64_t kFatNfatArch = 4; // u32 nfat_arch, after the u32 magic 0xcafebabe
} // namespace macho

// IMAGE_FILE_MACHINE_* values read (others are rejected as unsupported).
inline constexpr std::uint16_t kPeMachineI386 = 0x14c;
inline constexpr std::uint16_t kPeMachineArmNt = 0x1c4;
inline constexpr std::uint16_t kPeMachineAmd64 = 0x8664;
inline constexpr std::uint16_t kPeMachineArm64 = 0xaa64;
inline constexpr std::uint16_t kPeMachineArm64Ec = 0xa641;
inline constexpr std::uint16_t kPeMachineArm64X = 0xa64e;
inline constexpr std::uint16_t kPeOptMagic32 = 0x10b;
inline constexpr std::uint16_t kPeOptMagic64 = 0x20b;
inline constexpr std::uint32_t kPeScnUninitializedData = 0x80; // IMAGE_SCN_CNT_UNINITIALIZED_DATA
// IMAGE_SCN_LNK_INFO | IMAGE_SCN_LNK_REMOVE | IMAGE_SCN_MEM_DISCARDABLE: never in the running
// program (linker directives, debug info, .reloc).
inline constexpr std::uint32_t kPeScnNotLoaded = 0x200 | 0x800 | 0x02000000;

// One IMAGE_SECTION_HEADER, decoded; `name` is the long name for "/N" sections.
struct PeSection {
    std::uint32_t index = 0;
    std::string name;
    std::uint32_t virtual_size = 0;
    std::uint32_t virtual_address = 0;
    std::uint32_t raw_size = 0;
    std::uint32_t raw_offset = 0;
    std::uint32_t characteristics = 0;
    std::uint64_t header_offset = 0; // of the section header, in the Pe's bytes
};

struct Pe {
    Bytes bytes;
    bool image = false;  // a linked image (DOS stub, "PE\0\0"); false: a COFF object
    bool bigobj = false; // an object with the /bigobj header
    std::uint16_t machine = 0;
    std::uint16_t optional_magic = 0; // images: kPeOptMagic32 / kPeOptMagic64
    std::uint64_t image_base = 0;     // images: the preferred load address
    std::vector<PeSection> sections;

    [[nodiscard]] const PeSection* find(std::string_view name) const;
    // The bytes a section holds in the file (an image's section ends at VirtualSize: the rest
    // of SizeOfRawData is alignment padding), or an error naming the section header's offset.
    [[nodiscard]] Result<Bytes> section_bytes(const PeSection& s, const Where& where) const;
};

// "MZ" at offset 0: a DOS header, which every PE image starts with.
bool has_pe_magic(const Bytes& b);
// A COFF object by content (no magic exists): a machine this reader knows, no optional header,
// and a section table inside the buffer; or the /bigobj header with its class id.
bool looks_like_coff_object(const Bytes& b);
// The looser test the dispatch uses once a file or archive member is in hand: a COFF header
// with a known machine and no optional header, or the /bigobj header, whatever follows. A
// truncated or broken object is then reported, not skipped.
bool starts_like_coff_object(const Bytes& b);
// The short import-library member (IMPORT_OBJECT_HEADER: Sig1 0, Sig2 0xffff, Version 0) that
// MSVC .lib files hold for every DLL export: no code, nothing to read.
bool is_coff_import_member(const Bytes& b);
// Mach-O (thin, either byte order) or a universal (fat) Mach-O: a host format not read here.
bool has_macho_magic(const Bytes& b);

// A PE image: DOS header, signature, COFF and optional headers, section table (long names from
// the COFF string table when the image has one). PE32 and PE32+. Each header field is checked
// against the file and against the others (docs/fatbin-format.md, "What the PE reader checks"):
// an error names the field's byte offset.
Result<Pe> parse_pe(const Bytes& b, const Where& where);
// A COFF object (plain or /bigobj), section names resolved through the string table.
Result<Pe> parse_coff_object(const Bytes& b, const Where& where);

} // namespace forge::binary
