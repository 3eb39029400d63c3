// Dispatch by content: zip -> members, ar -> members, fatbin, cubin, host ELF or PE/COFF ->
// fatbin sections; Mach-O is named as a host format not read.
#include "binary/reader.h"

#include "binary/ar.h"
#include "binary/mapped_file.h"
#include "binary/read_context.h"
#include "binary/zip.h"

#include <fmt/format.h>
#include <new>

namespace forge::binary {

std::string_view compression_string(Compression c) {
    switch (c) {
    case Compression::Lz4:
        return "lz4";
    case Compression::Zstd:
        return "zstd";
    case Compression::None:
        break;
    }
    return "none";
}

std::string_view found_string(Found f) {
    switch (f) {
    case Found::Embedded:
        return "embedded";
    case Found::Unsectioned:
        return "unsectioned";
    case Found::Registered:
        break;
    }
    return "registered";
}

namespace detail {

Error out_of_memory(const Where& where, std::uint64_t offset, std::string_view what) {
    return where.error(offset, fmt::format("out of memory while reading {}", what));
}

Status Reader::read(const Bytes& b, const std::optional<std::string>& member, int depth,
                    std::optional<std::size_t> into) {
    Where where{file_, member};
    if (depth > opts_.max_nesting)
        return where.error(
            b.abs(0), fmt::format("containers nested deeper than {} levels", opts_.max_nesting));
    if (has_zip_magic(b)) return read_zip(b, where, depth);
    if (has_ar_magic(b) || has_thin_ar_magic(b)) return read_ar(b, where, depth, into);
    if (has_fatbin_magic(b)) return read_standalone_fatbin(b, where, into);
    if (has_elf_magic(b)) return read_elf(b, where, into);
    if (has_pe_magic(b)) return read_pe_image(b, where, into);
    if (has_macho_magic(b))
        return where.error(b.abs(0), "a Mach-O file (a macOS host binary): Mach-O is not a "
                                     "host format this reader reads (ELF and PE/COFF are)");
    if (is_coff_import_member(b)) return ok_status(); // an MSVC .lib's DLL import stub
    if (starts_like_coff_object(b)) return read_coff_object(b, where, into);
    if (b.has(0, 4) && b.u16(pe::kBigSig1) == 0 && b.u16(pe::kBigSig2) == 0xffff)
        return where.error(b.abs(0), "an anonymous COFF object (MSVC /GL link-time code or "
                                     "CLR): not a COFF object this reader can read");
    if (depth == 0)
        return where.error(b.abs(0), "not a recognised binary: no ELF, PE, COFF, ar, zip or "
                                     "fatbin magic");
    return ok_status(); // a wheel's .py files, an archive's odd members
}

// The cache's packs of this read, written once the whole read succeeded (a failed read saw
// only some of a file's images).
void Reader::save_cache() {
    for (auto& [name, pack] : packs_)
        opts_.cache->save(*pack);
}

std::size_t Reader::extension_for(const Where& where, std::optional<std::size_t> into) {
    if (into) return *into;
    out_.push_back(Extension{where.file, where.member, {}});
    return out_.size() - 1;
}

} // namespace detail

namespace {

using detail::out_of_memory;
using detail::Reader;

std::vector<Entry> flatten(std::vector<Extension>&& exts) {
    if (exts.size() == 1) return std::move(exts.front().entries); // a plain file: no copy
    std::vector<Entry> out;
    std::size_t n = 0;
    for (const auto& x : exts)
        n += x.entries.size();
    out.reserve(n);
    for (auto& x : exts)
        for (auto& e : x.entries)
            out.push_back(std::move(e));
    return out;
}

} // namespace

std::optional<bool> stub_known(const Entry& e) {
    if (e.target.kind != arch::Kind::Sass) return false;
    if (!e.stub && !e.kernels && e.compression != Compression::None) return std::nullopt;
    return e.stub;
}

namespace {

Result<std::vector<Extension>> read_bytes(const std::uint8_t* data, std::uint64_t size,
                                          const std::string& name, const ReadOptions& opts,
                                          const std::optional<std::pair<FileStamp, bool>>& stamp) {
    // Said as it is: "no ELF, PE, COFF, ar, zip or fatbin magic" would send the user looking
    // for a format.
    if (size == 0) return Where{name, std::nullopt}.error(0, "an empty file (0 bytes)");
    try {
        Reader reader(name, opts);
        reader.file_stamp_ = stamp;
        FORGE_TRY_STATUS(reader.read(Bytes{data, size, 0}, std::nullopt, 0, std::nullopt));
        reader.save_cache();
        return std::move(reader).take();
    } catch (const std::bad_alloc&) {
        // The allocations that follow a file's word are checked where they happen; this is the
        // backstop for what the bookkeeping itself may need on a nearly full address space.
        return out_of_memory(Where{name, std::nullopt}, 0, "the file");
    }
}

} // namespace

Result<std::vector<Extension>> read_extensions_from_memory(const std::uint8_t* data,
                                                           std::uint64_t size,
                                                           const std::string& name,
                                                           const ReadOptions& opts) {
    return read_bytes(data, size, name, opts, std::nullopt);
}

Result<std::vector<Extension>> read_extensions(const std::string& path, const ReadOptions& opts) {
    auto file = MappedFile::open(path);
    if (!file) return std::move(file).error();
    // Stat'ed (the descriptor read, not the name again) before it is read: a change after this
    // changes the stamp (result_cache.h).
    std::optional<std::pair<FileStamp, bool>> stamp;
    if (opts.cache != nullptr && opts.inspect_payloads) stamp = file_stamp(file->opened());
    const Bytes b = file->bytes();
    return read_bytes(b.data(), b.size(), path, opts, stamp);
}

Result<std::vector<Entry>> read_entries(const std::string& path, const ReadOptions& opts) {
    auto exts = read_extensions(path, opts);
    if (!exts) return std::move(exts).error();
    return flatten(std::move(exts).value());
}

} // namespace forge::binary
