// Host ELF files (.so, executables, .o): the fatbin sections, the wrapper records that say which
// fatbins are registered and which are nvlink's stubs, and the sections the embedded scan searches.
#include "binary/read_context.h"

#include "core/plan_marker.h"

#include <fmt/format.h>

namespace forge::binary::detail {

namespace {

// Section names that hold fatbins: ELF executable and relocatable fatbins, and the Mach-O style
// name some toolchains use.
constexpr std::string_view kFatbinSections[] = {".nv_fatbin", "__nv_relfatbin", "__nv_fatbin"};

} // namespace

Status Reader::read_elf(const Bytes& b, const Where& where, std::optional<std::size_t> into) {
    auto elf = parse_elf(b, where);
    if (!elf) return std::move(elf).error();
    if (elf->is_cubin()) return read_standalone_cubin(*elf, where, into);
    const std::size_t ext = extension_for(where, into);
    if (elf->find(kPlanMarkerSection) != nullptr) out_[ext].plan_product = true;
    if (elf->sections.empty()) { // stripped section table: consistent headers only
        auto scanned = scan_fatbins(b, where, budget_, 0, worker_threads());
        if (!scanned) return std::move(scanned).error();
        return add_fatbins(*scanned, "(scan)", where, ext, {}, Found::Unsectioned);
    }
    const bool has_relfatbin = elf->find("__nv_relfatbin") != nullptr;
    const std::set<std::uint64_t> device_link = device_link_fatbins(*elf, where);
    std::vector<const ElfSection*> fatbin_sections;
    for (const auto& s : elf->sections)
        if (std::find(std::begin(kFatbinSections), std::end(kFatbinSections), s.name) !=
            std::end(kFatbinSections))
            fatbin_sections.push_back(&s);
    auto covered = covered_sections(*elf, fatbin_sections, where);
    if (!covered) return std::move(covered).error();
    // In a linked file the wrapper records say which fatbins the program registers.
    const WrapperPointers pointers = wrapper_pointers(*elf, where);
    auto hidden = hidden_fatbins(*elf, fatbin_sections, pointers, where);
    if (!hidden) return std::move(hidden).error();
    // The search for embedded fatbins runs while the registered ones are read (beside_search);
    // what it finds is added after them, and an error of its sections only after theirs.
    std::optional<EmbeddedScan> scan;
    Status scan_setup = ok_status();
    const std::shared_ptr<ResultCache::Pack> pack = scan_pack(where);
    if (opts_.scan_embedded) {
        auto others = embedded_candidates(*elf, where);
        if (others) {
            std::vector<Range> registered;
            for (const auto* s : fatbin_sections)
                registered.push_back(
                    {elf->bytes.abs(s->offset), elf->bytes.abs(s->offset + s->size)});
            for (const auto& [name, fb] : *hidden)
                registered.push_back({fb.offset, fb.offset + fb.size});
            scan.emplace(b, std::move(*others), std::move(registered), worker_threads(),
                         known_magic(pack.get()));
        } else {
            scan_setup = std::move(others).error();
        }
    }
    const auto read_registered = [&]() -> Status {
        for (std::size_t i = 0; i < fatbin_sections.size(); ++i) {
            const ElfSection& s = *fatbin_sections[i];
            if ((*covered)[i]) continue; // its bytes were read through another section
            auto data = elf->section_bytes(s, where);
            if (!data) return std::move(data).error();
            // Zero padding up to the section's alignment (the linker's, for each input section).
            auto fatbins = parse_fatbins(*data, where, budget_, s.addralign);
            if (!fatbins) return std::move(fatbins).error();
            if (fatbins->empty())
                return holds_no_fatbin(
                    s.name, s.type == kShtNobits, *data,
                    elf->bytes.abs(elf->shoff + std::uint64_t{s.index} * elf64::kShdrSize), where);
            // Fatbins named by a version-2 wrapper come from nvcc's nvlink step. Without rdc
            // objects in the link they are kernel-less stubs; with them they hold the kernels.
            std::set<std::uint64_t> stubs;
            if (!has_relfatbin)
                for (const auto& fb : *fatbins)
                    if (device_link.count(fb.offset)) stubs.insert(fb.offset);
            FORGE_TRY_STATUS(
                add_fatbins(*fatbins, std::string(s.name), where, ext, stubs,
                            pointers.registers(s) ? Found::Registered : Found::Embedded));
        }
        for (const auto& [name, fb] : *hidden) {
            const std::set<std::uint64_t> stubs = !has_relfatbin && device_link.count(fb.offset)
                                                      ? std::set{fb.offset}
                                                      : std::set<std::uint64_t>{};
            FORGE_TRY_STATUS(add_fatbins({fb}, name, where, ext, stubs, Found::Registered));
        }
        return ok_status();
    };
    FORGE_TRY_STATUS(beside_search(scan, read_registered));
    FORGE_TRY_STATUS(std::move(scan_setup));
    return scan ? add_embedded(*scan, where, ext, pack.get()) : ok_status();
}

// The sections of a host ELF file the embedded scan searches: every allocated one with
// contents in the file, but the fatbin sections.
Result<std::vector<ScanSection>> Reader::embedded_candidates(const Elf& elf, const Where& where) {
    std::vector<ScanSection> others;
    for (const auto& s : elf.sections) {
        if ((s.flags & kShfAlloc) == 0 || s.type == kShtNull || s.type == kShtNobits ||
            s.size == 0 || named(s.name, kFatbinSections))
            continue;
        auto data = elf.section_bytes(s, where);
        if (!data) return std::move(data).error();
        // Linked files load a section at sh_addr (sh_addr = sh_offset mod the page size);
        // an object's section is placed at an aligned address at link time.
        others.push_back({std::string(s.name), *data, elf.type == kEtRel ? 0 : s.addr});
    }
    return others;
}

// A section named as one the toolchain registers fatbins in must hold one: an empty or
// zeroed one is a file that lies about itself, never "no device code".
Error Reader::holds_no_fatbin(std::string_view name, bool no_data, const Bytes& data,
                              std::uint64_t header, const Where& where) {
    return where.error(header, fmt::format("section '{}' is named as a fatbin section but holds no "
                                           "fatbin ({})",
                                           name,
                                           no_data || data.empty()
                                               ? std::string("no file contents")
                                               : fmt::format("0x{:x} zero bytes", data.size())));
}

// Which of the fatbin sections lie inside another one read before them (in file order), so
// that each fatbin is read once however many section headers name it. Sections that overlap
// only partly cannot both be fatbin streams: an error. Sorted by offset, a section overlaps
// an earlier one only if it starts before the furthest end seen, and then it lies inside the
// section that reached that end or sticks out of it.
Result<std::vector<bool>> Reader::covered_sections(const Elf& elf,
                                                   const std::vector<const ElfSection*>& secs,
                                                   const Where& where) {
    std::vector<bool> covered(secs.size(), false);
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < secs.size(); ++i)
        if (secs[i]->type != kShtNobits && secs[i]->size != 0 &&
            elf.bytes.has(secs[i]->offset, secs[i]->size)) // else section_bytes reports it
            order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (secs[a]->offset != secs[b]->offset) return secs[a]->offset < secs[b]->offset;
        return secs[a]->size > secs[b]->size;
    });
    const ElfSection* furthest = nullptr;
    for (std::size_t i : order) {
        const ElfSection& s = *secs[i];
        const std::uint64_t end = s.offset + s.size; // inside the file: no overflow
        const std::uint64_t furthest_end = furthest ? furthest->offset + furthest->size : 0;
        if (furthest && s.offset < furthest_end) {
            if (end <= furthest_end) {
                covered[i] = true;
                continue;
            }
            return where.error(
                elf.bytes.abs(elf.shoff + std::uint64_t{s.index} * elf64::kShdrSize),
                fmt::format("fatbin sections '{}' (0x{:x}..0x{:x}) and '{}' (0x{:x}..0x{:x}) "
                            "overlap partly",
                            furthest->name, furthest->offset, furthest_end, s.name, s.offset, end));
        }
        furthest = &s;
    }
    return covered;
}

// Offsets (in the reported buffer) of the fatbins that version-2 wrappers point at, in a
// linked file (.so, executable), where the pointer holds the link-time address
// (docs/fatbin-format.md, "The wrapper records in .nvFatBinSegment"). Objects are
// skipped on purpose: a version-2 wrapper in a .o comes from `nvcc -dlink`, whose fatbin
// holds the linked rdc kernels, not a stub.
std::set<std::uint64_t> Reader::device_link_fatbins(const Elf& elf, const Where& where) {
    std::set<std::uint64_t> out;
    const ElfSection* seg = elf.find(".nvFatBinSegment");
    if (!seg || elf.type == kEtRel) return out;
    auto bytes = elf.section_bytes(*seg, where);
    if (!bytes) return out; // only a hint: a bad control section changes no entry
    namespace wr = wrapper_record;
    for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
        if (bytes->u32(off + wr::kMagic) != kWrapperMagic ||
            bytes->u32(off + wr::kVersion) != kWrapperVersionLinked)
            continue;
        const std::uint64_t va = bytes->u64(off + wr::kData);
        for (const auto& s : elf.sections)
            if (s.addr != 0 && s.type != kShtNobits && va >= s.addr && va - s.addr < s.size)
                out.insert(elf.bytes.abs(s.offset + (va - s.addr)));
    }
    return out;
}

WrapperPointers Reader::wrapper_pointers(const Elf& elf, const Where& where) {
    WrapperPointers out;
    out.linked = elf.type != kEtRel;
    const ElfSection* seg = elf.find(".nvFatBinSegment");
    if (!out.linked || seg == nullptr || seg->type == kShtNobits) return out;
    auto bytes = elf.section_bytes(*seg, where);
    if (!bytes) return out;
    namespace wr = wrapper_record;
    for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
        if (bytes->u32(off + wr::kMagic) != kWrapperMagic) continue;
        const std::uint64_t v = bytes->u64(off + wr::kData);
        out.va.push_back(v);
        for (const auto& s : elf.sections)
            if (s.addr != 0 && v >= s.addr && v - s.addr < s.size) out.resolved = true;
    }
    return out;
}

// The fatbins the wrapper records point to outside every fatbin-named section (a section
// renamed): read where the records say, under the section's own name. A record that points
// into a section without file contents is a registered fatbin that cannot be read, never
// "no device code".
Result<std::vector<std::pair<std::string, Fatbin>>>
Reader::hidden_fatbins(const Elf& elf, const std::vector<const ElfSection*>& fatbin_sections,
                       const WrapperPointers& pointers, const Where& where) {
    std::vector<std::pair<std::string, Fatbin>> out;
    std::set<std::uint64_t> seen;
    for (const std::uint64_t v : pointers.va) {
        auto inside = [v](const ElfSection& s) {
            return s.addr != 0 && v >= s.addr && v - s.addr < s.size;
        };
        if (std::any_of(fatbin_sections.begin(), fatbin_sections.end(),
                        [&](const ElfSection* s) { return inside(*s); }) ||
            !seen.insert(v).second)
            continue;
        const auto s = std::find_if(elf.sections.begin(), elf.sections.end(), inside);
        if (s == elf.sections.end()) continue;
        const std::uint64_t header =
            elf.bytes.abs(elf.shoff + std::uint64_t{s->index} * elf64::kShdrSize);
        if (s->type == kShtNobits)
            return where.error(header, fmt::format("a wrapper record in .nvFatBinSegment "
                                                   "registers the fatbin at 0x{:x}, in "
                                                   "section '{}', which has no file contents "
                                                   "(SHT_NOBITS): the device code cannot be "
                                                   "read",
                                                   v, s->name));
        auto data = elf.section_bytes(*s, where);
        if (!data) return std::move(data).error();
        auto fb = parse_fatbin_at(*data, v - s->addr, where, budget_);
        if (!fb)
            return where.error(header, fmt::format("a wrapper record in .nvFatBinSegment "
                                                   "registers a fatbin at 0x{:x}, in section "
                                                   "'{}', and none is there: {}",
                                                   v, s->name, fb.error().message));
        out.emplace_back(std::string(s->name), std::move(*fb));
    }
    return out;
}

} // namespace forge::binary::detail
