#include "binary/elf.h"

#include <fmt/format.h>

namespace forge::binary {

namespace {
constexpr std::uint64_t kEhdrSize = 64;
constexpr std::uint64_t kShdrSize = 64;
constexpr std::uint16_t kShnXindex = 0xffff;
constexpr std::uint16_t kShnUndef = 0;
} // namespace

bool has_elf_magic(const Bytes& b) {
    return b.starts_with("\x7f"
                         "ELF");
}

const ElfSection* Elf::find(std::string_view name) const {
    for (const auto& s : sections)
        if (s.name == name) return &s;
    return nullptr;
}

Result<Bytes> Elf::section_bytes(const ElfSection& s, const Where& where) const {
    if (s.type == kShtNobits) return bytes.sub(0, 0);
    if (!bytes.has(s.offset, s.size))
        return where.error(bytes.abs(shoff + std::uint64_t{s.index} * kShdrSize),
                           fmt::format("section '{}' (offset 0x{:x}, size 0x{:x}) extends past the "
                                       "end of the ELF file (0x{:x} bytes)",
                                       s.name, s.offset, s.size, bytes.size()));
    return bytes.sub(s.offset, s.size);
}

Result<Elf> parse_elf(const Bytes& b, const Where& where) {
    if (!has_elf_magic(b)) return where.error(b.abs(0), "not an ELF file (bad magic)");
    if (!b.has(0, 16)) return where.error(b.abs(0), "truncated ELF identification");
    const std::uint8_t cls = b.u8(4), data = b.u8(5);
    if (cls != 2 || data != 1)
        return where.error(b.abs(4), fmt::format("unsupported ELF {} {}: only ELF64 little-endian "
                                                 "files are read",
                                                 cls == 1   ? "32-bit"
                                                 : cls == 2 ? "64-bit"
                                                            : "class " + std::to_string(cls),
                                                 data == 1   ? "little-endian"
                                                 : data == 2 ? "big-endian"
                                                             : "data " + std::to_string(data)));
    if (!b.has(0, kEhdrSize)) return where.error(b.abs(0), "truncated ELF header");
    Elf elf;
    elf.bytes = b;
    elf.osabi = b.u8(7);
    elf.abiversion = b.u8(8);
    elf.type = b.u16(16);
    elf.machine = b.u16(18);
    elf.flags = b.u32(48);
    elf.shoff = b.u64(40);
    const std::uint16_t shentsize = b.u16(58);
    std::uint64_t shnum = b.u16(60);
    std::uint32_t shstrndx = b.u16(62);
    // The program header table must lie inside the file too: a cubin ends with it, so this is
    // what catches a truncated cubin.
    const std::uint64_t phoff = b.u64(32);
    const std::uint16_t phentsize = b.u16(54), phnum = b.u16(56);
    if (phnum != 0) {
        auto table = checked_mul(phnum, phentsize);
        if (phentsize < 56 || !table || !b.has(phoff, *table))
            return where.error(b.abs(32),
                               fmt::format("program header table ({} entries of {} bytes "
                                           "at 0x{:x}) extends past the end of the file "
                                           "(0x{:x} bytes)",
                                           phnum, phentsize, phoff, b.size()));
    }
    if (elf.shoff == 0) return elf; // no section table: caller falls back to a magic scan
    if (shentsize != kShdrSize)
        return where.error(b.abs(58), fmt::format("bad e_shentsize {} (expected 64)", shentsize));
    if (!b.has(elf.shoff, kShdrSize))
        return where.error(b.abs(40), fmt::format("section table offset 0x{:x} is past the end of "
                                                  "the file (0x{:x} bytes)",
                                                  elf.shoff, b.size()));
    // Extended numbering: section 0 holds the real count / string table index.
    if (shnum == 0) shnum = b.u64(elf.shoff + 32);
    if (shstrndx == kShnXindex) shstrndx = b.u32(elf.shoff + 40);
    if (shnum == 0) return elf;
    auto table = checked_mul(shnum, kShdrSize);
    if (!table || !b.has(elf.shoff, *table))
        return where.error(b.abs(40), fmt::format("section table ({} entries at 0x{:x}) extends "
                                                  "past the end of the file (0x{:x} bytes)",
                                                  shnum, elf.shoff, b.size()));
    elf.sections.reserve(static_cast<std::size_t>(shnum));
    for (std::uint64_t i = 0; i < shnum; ++i) {
        const std::uint64_t h = elf.shoff + i * kShdrSize;
        ElfSection s;
        s.index = static_cast<std::uint32_t>(i);
        s.type = b.u32(h + 4);
        s.flags = b.u64(h + 8);
        s.addr = b.u64(h + 16);
        s.offset = b.u64(h + 24);
        s.size = b.u64(h + 32);
        s.link = b.u32(h + 40);
        s.info = b.u32(h + 44);
        s.entsize = b.u64(h + 56);
        elf.sections.push_back(s);
    }
    if (shstrndx == kShnUndef) return elf; // no names: nothing can be found by name
    if (shstrndx >= shnum)
        return where.error(b.abs(62), fmt::format("section name table index {} out of range ({} "
                                                  "sections)",
                                                  shstrndx, shnum));
    const ElfSection& strsec = elf.sections[shstrndx];
    if (strsec.type == kShtNobits || !b.has(strsec.offset, strsec.size))
        return where.error(b.abs(elf.shoff + std::uint64_t{shstrndx} * kShdrSize),
                           "section name table extends past the end of the file");
    Bytes strtab = b.sub(strsec.offset, strsec.size);
    for (auto& s : elf.sections) {
        const std::uint32_t name_off = b.u32(elf.shoff + std::uint64_t{s.index} * kShdrSize);
        auto name = strtab.cstr(name_off);
        if (!name)
            return where.error(b.abs(elf.shoff + std::uint64_t{s.index} * kShdrSize),
                               fmt::format("section {} name offset 0x{:x} is outside the name "
                                           "table",
                                           s.index, name_off));
        s.name = *name;
    }
    return elf;
}

} // namespace forge::binary
