#include "binary/elf.h"

#include <fmt/format.h>

namespace forge::binary {

using namespace elf64; // the Elf64_Ehdr / Elf64_Shdr field offsets

namespace {
constexpr std::uint16_t kShnXindex = 0xffff; // e_shstrndx: the real index is in section 0
constexpr std::uint16_t kShnUndef = 0;       // e_shstrndx: no section name table
constexpr std::uint8_t kElfClass64 = 2;
constexpr std::uint8_t kElfData2Lsb = 1;
} // namespace

bool occupies_file_bytes(const ElfSection& s) {
    return s.index != 0 && s.type != kShtNull && s.type != kShtNobits && s.size != 0 &&
           s.type < kShtLoos;
}

Status Elf::check_sections(const Where& where) const {
    for (const auto& s : sections) {
        if (!occupies_file_bytes(s)) continue;
        auto data = section_bytes(s, where);
        if (!data) return std::move(data).error();
    }
    return ok_status();
}

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
    if (s.type == kShtNobits || s.size == 0) return bytes.sub(0, 0);
    if (!bytes.has(s.offset, s.size))
        return where.error(bytes.abs(shoff + std::uint64_t{s.index} * kShdrSize),
                           fmt::format("section '{}' (offset 0x{:x}, size 0x{:x}) extends past the "
                                       "end of the ELF file (0x{:x} bytes)",
                                       s.name, s.offset, s.size, bytes.size()));
    return bytes.sub(s.offset, s.size);
}

Result<Elf> parse_elf(const Bytes& b, const Where& where) {
    if (!has_elf_magic(b)) return where.error(b.abs(0), "not an ELF file (bad magic)");
    if (!b.has(0, kEiNident)) return where.error(b.abs(0), "truncated ELF identification");
    const std::uint8_t cls = b.u8(kEiClass), data = b.u8(kEiData);
    if (cls != kElfClass64 || data != kElfData2Lsb)
        return where.error(b.abs(kEiClass),
                           fmt::format("unsupported ELF {} {}: only ELF64 little-endian "
                                       "files are read",
                                       cls == 1   ? "32-bit"
                                       : cls == 2 ? "64-bit"
                                                  : "class " + std::to_string(cls),
                                       data == 1   ? "little-endian"
                                       : data == 2 ? "big-endian"
                                                   : "data " + std::to_string(data)));
    if (!b.has(0, kEhdrSize)) return where.error(b.abs(0), "truncated ELF header");
    if (b.u16(kEEhsize) != kEhdrSize)
        return where.error(b.abs(kEEhsize), fmt::format("bad e_ehsize {} (an ELF64 header has 64 "
                                                        "bytes)",
                                                        b.u16(kEEhsize)));
    Elf elf;
    elf.bytes = b;
    elf.osabi = b.u8(kEiOsabi);
    elf.abiversion = b.u8(kEiAbiversion);
    elf.type = b.u16(kEType);
    elf.machine = b.u16(kEMachine);
    elf.flags = b.u32(kEFlags);
    elf.shoff = b.u64(kEShoff);
    const std::uint16_t shentsize = b.u16(kEShentsize);
    std::uint64_t shnum = b.u16(kEShnum);
    std::uint32_t shstrndx = b.u16(kEShstrndx);
    // The program header table must lie inside the file too: a cubin ends with it, so this is
    // what catches a truncated cubin.
    const std::uint64_t phoff = b.u64(kEPhoff);
    const std::uint16_t phentsize = b.u16(kEPhentsize);
    std::uint64_t phnum = b.u16(kEPhnum);
    // Extended numbering (PN_XNUM): the count is in section 0's sh_info, when there is one.
    if (phnum == kPnXnum && elf.shoff >= kEhdrSize && b.has(elf.shoff, kShdrSize))
        phnum = b.u32(elf.shoff + kShInfo);
    if (phnum != 0) {
        auto table = checked_mul(phnum, phentsize);
        if (phentsize < kPhdrSize || !table || !b.has(phoff, *table))
            return where.error(b.abs(kEPhoff),
                               fmt::format("program header table ({} entries of {} bytes "
                                           "at 0x{:x}) extends past the end of the file "
                                           "(0x{:x} bytes)",
                                           phnum, phentsize, phoff, b.size()));
    }
    if (elf.shoff == 0) return elf; // no section table: caller falls back to a magic scan
    if (elf.shoff < kEhdrSize)
        return where.error(
            b.abs(kEShoff),
            fmt::format("section table offset 0x{:x} lies inside the ELF header", elf.shoff));
    if (shentsize != kShdrSize)
        return where.error(b.abs(kEShentsize),
                           fmt::format("bad e_shentsize {} (expected 64)", shentsize));
    if (!b.has(elf.shoff, kShdrSize))
        return where.error(b.abs(kEShoff),
                           fmt::format("section table offset 0x{:x} is past the end of "
                                       "the file (0x{:x} bytes)",
                                       elf.shoff, b.size()));
    // Extended numbering: section 0 holds the real count / string table index.
    if (shnum == 0) shnum = b.u64(elf.shoff + kShSize);
    if (shstrndx == kShnXindex) shstrndx = b.u32(elf.shoff + kShLink);
    if (shnum == 0) return elf;
    auto table = checked_mul(shnum, kShdrSize);
    if (!table || !b.has(elf.shoff, *table))
        return where.error(b.abs(kEShoff),
                           fmt::format("section table ({} entries at 0x{:x}) extends "
                                       "past the end of the file (0x{:x} bytes)",
                                       shnum, elf.shoff, b.size()));
    // The table fits in the file, but a sparse file can hold millions of zero headers at no
    // cost on disk, and each decoded one costs memory: no real ELF comes near this many.
    if (shnum > kMaxSections)
        return where.error(b.abs(kEShnum),
                           fmt::format("section table claims {} sections, over the limit of {}",
                                       shnum, kMaxSections));
    elf.sections.reserve(static_cast<std::size_t>(shnum));
    for (std::uint64_t i = 0; i < shnum; ++i) {
        const std::uint64_t h = elf.shoff + i * kShdrSize;
        ElfSection s;
        s.index = static_cast<std::uint32_t>(i);
        s.type = b.u32(h + kShType);
        s.flags = b.u64(h + kShFlags);
        s.addr = b.u64(h + kShAddr);
        s.offset = b.u64(h + kShOffset);
        s.size = b.u64(h + kShSize);
        s.link = b.u32(h + kShLink);
        s.info = b.u32(h + kShInfo);
        s.addralign = b.u64(h + kShAddralign);
        s.entsize = b.u64(h + kShEntsize);
        elf.sections.push_back(s);
    }
    if (shstrndx == kShnUndef) return elf; // no names: nothing can be found by name
    if (shstrndx >= shnum)
        return where.error(b.abs(kEShstrndx),
                           fmt::format("section name table index {} out of range ({} "
                                       "sections)",
                                       shstrndx, shnum));
    const ElfSection& strsec = elf.sections[shstrndx];
    if (strsec.type == kShtNobits || !b.has(strsec.offset, strsec.size))
        return where.error(b.abs(elf.shoff + std::uint64_t{shstrndx} * kShdrSize),
                           "section name table extends past the end of the file");
    Bytes strtab = b.sub(strsec.offset, strsec.size);
    for (auto& s : elf.sections) {
        const std::uint32_t name_off =
            b.u32(elf.shoff + std::uint64_t{s.index} * kShdrSize + kShName);
        // An empty name table is allowed; index 0 in it is the empty name (gABI).
        auto name = strtab.empty() && name_off == 0 ? std::optional<std::string_view>("")
                                                    : strtab.cstr(name_off);
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
