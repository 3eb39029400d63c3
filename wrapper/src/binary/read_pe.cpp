// PE/COFF files (.dll, .pyd, .exe, .obj): the fatbin sections under link.exe's cut names, the
// wrapper records of a PE32+ image, and the sections the embedded scan searches.
#include "binary/read_context.h"

namespace forge::binary::detail {

namespace {

// The same in PE/COFF (docs/fatbin-format.md, "PE/COFF (Windows)"): objects keep the full
// names through the COFF string table; link.exe cuts an image's section names to eight bytes.
constexpr std::string_view kPeFatbinSections[] = {".nv_fatbin", ".nv_fatb", "__nv_relfatbin",
                                                  "__nv_rel"};
// link.exe starts each object's contribution to a section at a 16-byte boundary (the objects'
// IMAGE_SCN_ALIGN_16BYTES): curand64_10.dll has 8 zero bytes between some of its fatbins.
constexpr std::uint64_t kPeFatbinAlign = 16;
constexpr std::string_view kPeRelfatbinSections[] = {"__nv_relfatbin", "__nv_rel"};
constexpr std::string_view kPeControlSections[] = {".nvFatBinSegment", ".nvFatBi"};

} // namespace

Status Reader::read_pe_image(const Bytes& b, const Where& where, std::optional<std::size_t> into) {
    auto pe = parse_pe(b, where);
    if (!pe) return std::move(pe).error();
    return read_pe_sections(*pe, where, into);
}

Status Reader::read_coff_object(const Bytes& b, const Where& where,
                                std::optional<std::size_t> into) {
    auto obj = parse_coff_object(b, where);
    if (!obj) return std::move(obj).error();
    return read_pe_sections(*obj, where, into);
}

// As read_elf: every fatbin section, with nvlink's stubs marked in images without
// relocatable fatbins.
Status Reader::read_pe_sections(const Pe& pe, const Where& where, std::optional<std::size_t> into) {
    const std::size_t ext = extension_for(where, into);
    bool has_relfatbin = false;
    for (const auto& s : pe.sections)
        has_relfatbin = has_relfatbin || named(s.name, kPeRelfatbinSections);
    const std::set<std::uint64_t> device_link =
        has_relfatbin ? std::set<std::uint64_t>{} : device_link_fatbins(pe, where);
    // As in read_elf, the embedded scan runs beside the reading of the registered fatbins.
    std::optional<EmbeddedScan> scan;
    Status scan_setup = ok_status();
    const std::shared_ptr<ResultCache::Pack> pack = scan_pack(where);
    if (opts_.scan_embedded) {
        auto others = embedded_candidates(pe, where);
        auto registered = registered_ranges(pe, where);
        if (others && registered)
            scan.emplace(pe.bytes, std::move(*others), std::move(*registered), worker_threads(),
                         known_magic(pack.get()));
        else
            scan_setup = !registered ? std::move(registered).error() : std::move(others).error();
    }
    const auto read_registered = [&]() -> Status {
        for (const auto& s : pe.sections) {
            if (!named(s.name, kPeFatbinSections)) continue;
            auto data = pe.section_bytes(s, where);
            if (!data) return std::move(data).error();
            auto fatbins = parse_fatbins(*data, where, budget_, kPeFatbinAlign);
            if (!fatbins) return std::move(fatbins).error();
            if (fatbins->empty())
                return holds_no_fatbin(s.name, !pe_has_data(s), *data,
                                       pe.bytes.abs(s.header_offset), where);
            std::set<std::uint64_t> stubs;
            for (const auto& fb : *fatbins)
                if (device_link.count(fb.offset)) stubs.insert(fb.offset);
            FORGE_TRY_STATUS(add_fatbins(*fatbins, s.name, where, ext, stubs, Found::Registered));
        }
        return ok_status();
    };
    FORGE_TRY_STATUS(beside_search(scan, read_registered));
    FORGE_TRY_STATUS(std::move(scan_setup));
    return scan ? add_embedded(*scan, where, ext, pack.get()) : ok_status();
}

// The byte ranges of a PE file's fatbin sections (Bytes::abs offsets).
Result<std::vector<Range>> Reader::registered_ranges(const Pe& pe, const Where& where) {
    std::vector<Range> registered;
    for (const auto& s : pe.sections) {
        if (!named(s.name, kPeFatbinSections)) continue;
        auto data = pe.section_bytes(s, where);
        if (!data) return std::move(data).error();
        registered.push_back({data->base(), data->base() + data->size()});
    }
    return registered;
}

// The sections of a PE file the embedded scan searches: every one the loader maps with
// contents in the file, but the fatbin sections.
Result<std::vector<ScanSection>> Reader::embedded_candidates(const Pe& pe, const Where& where) {
    std::vector<ScanSection> others;
    for (const auto& s : pe.sections) {
        // Sections the loader or linker discards (.reloc, an object's .debug$S, directives)
        // never reach the program; uninitialised ones have no contents.
        if (named(s.name, kPeFatbinSections) || !pe_has_data(s) ||
            (s.characteristics & kPeScnNotLoaded) != 0)
            continue;
        auto data = pe.section_bytes(s, where);
        if (!data) return std::move(data).error();
        if (!data->empty()) others.push_back({s.name, *data, pe.image ? s.virtual_address : 0});
    }
    return others;
}

bool Reader::pe_has_data(const PeSection& s) {
    return (s.characteristics & kPeScnUninitializedData) == 0 && s.raw_offset != 0 &&
           s.raw_size != 0;
}

// The PE form of the ELF hint below: in a PE32+ image a wrapper record's data pointer is a
// virtual address, ImageBase + the RVA of the fatbin. Objects and PE32 images give none.
std::set<std::uint64_t> Reader::device_link_fatbins(const Pe& pe, const Where& where) {
    std::set<std::uint64_t> out;
    if (!pe.image || pe.optional_magic != kPeOptMagic64) return out;
    namespace wr = wrapper_record;
    for (const auto& seg : pe.sections) {
        if (!named(seg.name, kPeControlSections)) continue;
        auto bytes = pe.section_bytes(seg, where);
        if (!bytes) continue; // only a hint: a bad control section changes no entry
        for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
            if (bytes->u32(off + wr::kMagic) != kWrapperMagic ||
                bytes->u32(off + wr::kVersion) != kWrapperVersionLinked)
                continue;
            const std::uint64_t va = bytes->u64(off + wr::kData);
            if (va < pe.image_base) continue;
            const std::uint64_t rva = va - pe.image_base;
            for (const auto& s : pe.sections)
                if (rva >= s.virtual_address && rva - s.virtual_address < s.raw_size &&
                    rva - s.virtual_address < s.virtual_size)
                    out.insert(
                        pe.bytes.abs(std::uint64_t{s.raw_offset} + (rva - s.virtual_address)));
        }
    }
    return out;
}

} // namespace forge::binary::detail
