// ELF64 little-endian: header and section table, for host objects (.so, executables, .o) and
// for CUDA cubins (e_machine 190). Only what the fatbin readers need; every field is checked.
// Layout and what this project relies on: docs/fatbin-format.md, "Host ELF" and "The cubin".
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace forge::binary {

// Byte offsets of the ELF64 fields this module reads, named as in the ELF specification (and
// LLVM's Elf64_Ehdr / Elf64_Shdr). Every read through them goes through Bytes (bounds-checked).
namespace elf64 {
// Elf64_Ehdr: e_ident bytes, then the fixed fields.
inline constexpr std::uint64_t kEiClass = 4;      // e_ident[EI_CLASS]: 2 = ELF64
inline constexpr std::uint64_t kEiData = 5;       // e_ident[EI_DATA]: 1 = little-endian
inline constexpr std::uint64_t kEiOsabi = 7;      // e_ident[EI_OSABI]
inline constexpr std::uint64_t kEiAbiversion = 8; // e_ident[EI_ABIVERSION]
inline constexpr std::uint64_t kEiNident = 16;    // size of e_ident
inline constexpr std::uint64_t kEType = 16;       // u16 e_type
inline constexpr std::uint64_t kEMachine = 18;    // u16 e_machine
inline constexpr std::uint64_t kEPhoff = 32;      // u64 e_phoff
inline constexpr std::uint64_t kEShoff = 40;      // u64 e_shoff
inline constexpr std::uint64_t kEFlags = 48;      // u32 e_flags
inline constexpr std::uint64_t kEEhsize = 52;     // u16 e_ehsize: 64 for ELF64
inline constexpr std::uint64_t kEPhentsize = 54;  // u16 e_phentsize
inline constexpr std::uint64_t kEPhnum = 56;      // u16 e_phnum
inline constexpr std::uint64_t kEShentsize = 58;  // u16 e_shentsize
inline constexpr std::uint64_t kEShnum = 60;      // u16 e_shnum
inline constexpr std::uint64_t kEShstrndx = 62;   // u16 e_shstrndx
inline constexpr std::uint64_t kEhdrSize = 64;    // sizeof(Elf64_Ehdr)
// Elf64_Phdr: only its size is checked (a cubin ends with its program headers).
inline constexpr std::uint64_t kPhdrSize = 56; // sizeof(Elf64_Phdr)
// Elf64_Shdr.
inline constexpr std::uint64_t kShName = 0;       // u32 sh_name (offset in the name table)
inline constexpr std::uint64_t kShType = 4;       // u32 sh_type
inline constexpr std::uint64_t kShFlags = 8;      // u64 sh_flags
inline constexpr std::uint64_t kShAddr = 16;      // u64 sh_addr
inline constexpr std::uint64_t kShOffset = 24;    // u64 sh_offset
inline constexpr std::uint64_t kShSize = 32;      // u64 sh_size (section 0: e_shnum overflow)
inline constexpr std::uint64_t kShLink = 40;      // u32 sh_link (section 0: e_shstrndx overflow)
inline constexpr std::uint64_t kShInfo = 44;      // u32 sh_info
inline constexpr std::uint64_t kShAddralign = 48; // u64 sh_addralign
inline constexpr std::uint64_t kShEntsize = 56;   // u64 sh_entsize
inline constexpr std::uint64_t kShdrSize = 64;    // sizeof(Elf64_Shdr)
} // namespace elf64

inline constexpr std::uint16_t kEtRel = 1;    // e_type ET_REL: a relocatable object
inline constexpr std::uint16_t kEmCuda = 190; // e_machine EM_CUDA: a cubin
inline constexpr std::uint32_t kShtNull = 0;
inline constexpr std::uint32_t kShtNote = 7;
inline constexpr std::uint32_t kShtNobits = 8;
// The first type the gABI leaves to others (SHT_LOOS): OS-, processor- and user-specific types
// up to 0xffffffff, whose meaning (file contents or none) the gABI does not define.
inline constexpr std::uint32_t kShtLoos = 0x60000000;
inline constexpr std::uint64_t kShfAlloc = 0x2; // sh_flags SHF_ALLOC: in memory at run time

// More sections than any linker or ptxas writes (a -ffunction-sections object with a hundred
// thousand functions stays well below); the decoded table stays under ~100 MB.
inline constexpr std::uint64_t kMaxSections = 1u << 20;

// e_phnum PN_XNUM: the program header count is in section 0's sh_info.
inline constexpr std::uint16_t kPnXnum = 0xffff;

// One Elf64_Shdr, decoded.
struct ElfSection {
    std::uint32_t index = 0;
    std::string_view name;
    std::uint32_t type = 0;
    std::uint64_t flags = 0;
    std::uint64_t addr = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::uint32_t link = 0;
    std::uint32_t info = 0;
    std::uint64_t addralign = 0;
    std::uint64_t entsize = 0;
};

// Whether the format promises that the section's bytes are in the file (docs/fatbin-format.md,
// "What the ELF readers rely on"): not for SHT_NULL, SHT_NOBITS or an empty section, and not for
// a type the gABI leaves to the OS, the processor or the user (a cubin's `.nv.shared.<kernel>`
// in a relocatable cubin is SHT_LOPROC + 0xa: a size, no bytes). Those are bounds-checked only
// where a reader reads them (section_bytes).
bool occupies_file_bytes(const ElfSection& s);

// The Elf64_Ehdr fields the readers use, decoded, and the section table.
struct Elf {
    Bytes bytes;
    std::uint8_t osabi = 0;
    std::uint8_t abiversion = 0;
    std::uint16_t type = 0;
    std::uint16_t machine = 0;
    std::uint32_t flags = 0;
    std::uint64_t shoff = 0;
    std::vector<ElfSection> sections; // empty when the file has no section table

    [[nodiscard]] bool is_cubin() const { return machine == kEmCuda; }
    [[nodiscard]] const ElfSection* find(std::string_view name) const;
    // The bytes of a section (empty for SHT_NOBITS and an empty section, wherever its sh_offset
    // points), or an error naming the section's offset.
    [[nodiscard]] Result<Bytes> section_bytes(const ElfSection& s, const Where& where) const;
    // Every section the format promises file bytes for (occupies_file_bytes) lies inside the
    // file (the first error, if not).
    [[nodiscard]] Status check_sections(const Where& where) const;
};

// "\x7f" "ELF" at offset 0.
bool has_elf_magic(const Bytes& b);

// Parses the ELF header and section table. Non-ELF64-LE input is rejected with a clear error.
// A file without a section table parses with no sections (the caller may magic-scan).
Result<Elf> parse_elf(const Bytes& b, const Where& where);

} // namespace forge::binary
