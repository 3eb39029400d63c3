// ELF64 little-endian: header and section table, for host objects (.so, executables, .o) and
// for CUDA cubins (e_machine 190). Only what the fatbin readers need; every field is checked.
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace forge::binary {

inline constexpr std::uint16_t kEmCuda = 190;
inline constexpr std::uint32_t kShtNobits = 8;
inline constexpr std::uint32_t kShtNote = 7;
inline constexpr std::uint32_t kShtRela = 4;
inline constexpr std::uint32_t kShtSymtab = 2;

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
    std::uint64_t entsize = 0;
};

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
    // The bytes of a section (empty for SHT_NOBITS), or an error naming the section's offset.
    [[nodiscard]] Result<Bytes> section_bytes(const ElfSection& s, const Where& where) const;
};

// "\x7f" "ELF" at offset 0.
bool has_elf_magic(const Bytes& b);

// Parses the ELF header and section table. Non-ELF64-LE input is rejected with a clear error.
// A file without a section table parses with no sections (the caller may magic-scan).
Result<Elf> parse_elf(const Bytes& b, const Where& where);

} // namespace forge::binary
