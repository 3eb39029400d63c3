#include "binary/fatbin.h"

#include "binary/mapped_file.h"
#include "core/workers.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <fmt/format.h>
#include <thread>

namespace forge::binary {

namespace {

namespace fh = fatbin_header;
namespace eh = entry_header;

// SM numbers are major*10+minor; anything beyond CC 99.9 is a corrupt header, not a GPU.
constexpr std::uint32_t kMaxArch = 999;

// Entry walks the magic scan allows beyond twice the most a file could hold (false candidates:
// the magic constant in host code or data).
constexpr std::uint64_t kScanSlack = 4096;

// Small reads of a region through one buffer: copies of the headers (copy_bytes: pread when the
// region is a mapped file, so listing touches none of its pages), each refill a block, so that
// consecutive small entries share one read.
class HeaderWindow {
  public:
    explicit HeaderWindow(const Bytes& r) : r_(r) {}
    // [off, off + n) of the region as a copy that reports the region's offsets; an empty view
    // when the region does not hold it (callers check has() on the region first).
    Bytes at(std::uint64_t off, std::uint64_t n) {
        if (!r_.has(off, n) || n > kBlock) return r_.sub(off, n);
        if (len_ == 0 || off < lo_ || off - lo_ > len_ || n > len_ - (off - lo_)) {
            // After a jump past a block (the payload between two headers was larger), the next
            // header is likely alone in its block too: read a short window, not a page.
            const bool far = len_ != 0 && off > lo_ && off - lo_ >= kBlock;
            len_ = std::min<std::uint64_t>(far ? std::max(kShort, n) : kBlock, r_.size() - off);
            lo_ = off;
            copy_bytes(r_.data() + off, len_, buf_.data());
        }
        return Bytes{buf_.data() + (off - lo_), n, r_.abs(off)};
    }

  private:
    // A page: the headers of entries with payloads up to a few KiB (most cubins of a large
    // library, compressed) come with the read of the one before.
    static constexpr std::uint64_t kBlock = 4096;
    // An entry header and its extension area (0x40-0x48 bytes as nvcc writes them) with room to
    // spare; a copy of a page per header was most of listing's kernel time on libtorch_cuda.so
    // (2,789 entries, most with payloads of tens of KiB).
    static constexpr std::uint64_t kShort = 256;
    Bytes r_;
    std::array<std::uint8_t, kBlock> buf_{};
    std::uint64_t lo_ = 0;
    std::uint64_t len_ = 0;
};

Result<FatbinEntry> parse_entry(const Bytes& r, std::uint64_t e, std::uint64_t end,
                                const Where& where, HeaderWindow& win) {
    if (!r.has(e, eh::kBaseSize) || e + eh::kBaseSize > end)
        return where.error(r.abs(e),
                           fmt::format("truncated fatbin entry header: 0x40 bytes needed, "
                                       "0x{:x} left in the fatbin",
                                       end - e));
    const Bytes h = win.at(e, eh::kBaseSize);
    FatbinEntry x;
    x.offset = r.abs(e);
    x.kind = h.u16(eh::kKind);
    const std::uint16_t version = h.u16(eh::kVersion);
    x.header_size = h.u32(eh::kHeaderSize);
    x.padded_size = h.u64(eh::kPaddedSize);
    x.compressed_size = h.u32(eh::kCompressedSize);
    x.arch = h.u32(eh::kArch);
    x.flags = h.u64(eh::kFlags);
    x.uncompressed_size = h.u64(eh::kUncompressedSize);
    if (version != kEntryVersion)
        return where.error(r.abs(e + eh::kVersion),
                           fmt::format("unsupported fatbin entry version 0x{:x} "
                                       "(expected 0x0101)",
                                       version));
    if (x.header_size < eh::kBaseSize)
        return where.error(r.abs(e + eh::kHeaderSize),
                           fmt::format("fatbin entry header size 0x{:x} is smaller "
                                       "than 0x40",
                                       x.header_size));
    auto payload_start = checked_add(e, x.header_size);
    auto payload_end = payload_start ? checked_add(*payload_start, x.padded_size) : std::nullopt;
    if (!payload_end || *payload_end > end)
        return where.error(r.abs(e + eh::kPaddedSize),
                           fmt::format("fatbin entry (header 0x{:x} + payload 0x{:x} "
                                       "bytes) extends past the end of its fatbin "
                                       "(0x{:x} bytes left)",
                                       x.header_size, x.padded_size, end - e));
    x.payload = r.sub(*payload_start, x.padded_size);

    arch::Kind kind{};
    switch (x.kind) {
    case kKindPtx:
        kind = arch::Kind::Ptx;
        break;
    case kKindElf:
        kind = arch::Kind::Sass;
        break;
    case kKindLto:
        kind = arch::Kind::Lto;
        break;
    default:
        return where.error(r.abs(e + eh::kKind),
                           fmt::format("unknown fatbin entry kind {} (known: 1 PTX, 2 "
                                       "ELF, 8 LTO-IR)",
                                       x.kind));
    }
    if (x.arch < 10 || x.arch > kMaxArch)
        return where.error(r.abs(e + eh::kArch),
                           fmt::format("implausible arch {} in fatbin entry", x.arch));
    const bool a = (x.flags & kFlagArchSpecific) != 0, f = (x.flags & kFlagFamily) != 0;
    if (a && f)
        return where.error(r.abs(e + eh::kFlags),
                           fmt::format("fatbin entry flags 0x{:x} claim both an "
                                       "arch-specific and a family target",
                                       x.flags));
    x.target = arch::Target{kind, static_cast<int>(x.arch),
                            a   ? arch::Suffix::Specific
                            : f ? arch::Suffix::Family
                                : arch::Suffix::None};

    const bool lz4 = (x.flags & kFlagLz4) != 0, zstd = (x.flags & kFlagZstd) != 0;
    if (lz4 && zstd)
        return where.error(r.abs(e + eh::kFlags),
                           fmt::format("fatbin entry flags 0x{:x} claim both LZ4 "
                                       "and ZSTD compression",
                                       x.flags));
    x.compression = lz4 ? Compression::Lz4 : zstd ? Compression::Zstd : Compression::None;
    if (x.compressed_size > x.padded_size)
        return where.error(r.abs(e + eh::kCompressedSize),
                           fmt::format("compressed size 0x{:x} exceeds the stored "
                                       "payload size 0x{:x}",
                                       x.compressed_size, x.padded_size));
    if (x.compression != Compression::None && kind != arch::Kind::Lto &&
        (x.compressed_size == 0 || x.uncompressed_size == 0))
        return where.error(r.abs(e + eh::kCompressedSize),
                           "compressed fatbin entry with a zero compressed or "
                           "uncompressed size");
    return x;
}

} // namespace

namespace {

Result<Fatbin> parse_fatbin_at(const Bytes& r, std::uint64_t off, const Where& where,
                               EntryBudget& budget, HeaderWindow& win) {
    if (!r.has(off, fh::kSize))
        return where.error(r.abs(off),
                           fmt::format("truncated fatbin header: 16 bytes needed, 0x{:x} "
                                       "left",
                                       off <= r.size() ? r.size() - off : 0));
    const Bytes h = win.at(off, fh::kSize);
    const std::uint32_t magic = h.u32(fh::kMagic);
    if (magic != kFatbinMagic)
        return where.error(r.abs(off + fh::kMagic),
                           fmt::format("bad fatbin magic 0x{:08x} (expected 0xba55ed50)", magic));
    const std::uint16_t version = h.u16(fh::kVersion);
    const std::uint16_t header_size = h.u16(fh::kHeaderSize);
    const std::uint64_t fat_size = h.u64(fh::kFatSize);
    if (version != 1)
        return where.error(r.abs(off + fh::kVersion),
                           fmt::format("unsupported fatbin version {}", version));
    if (header_size < fh::kSize)
        return where.error(r.abs(off + fh::kHeaderSize),
                           fmt::format("fatbin header size 0x{:x} is smaller than "
                                       "0x10",
                                       header_size));
    auto entries_start = checked_add(off, header_size);
    auto end = entries_start ? checked_add(*entries_start, fat_size) : std::nullopt;
    if (!end || *end > r.size())
        return where.error(r.abs(off + fh::kFatSize),
                           fmt::format("fatbin size 0x{:x} (+ header 0x{:x}) "
                                       "extends past the end of its container "
                                       "(0x{:x} bytes left)",
                                       fat_size, header_size, r.size() - off));
    Fatbin fb;
    fb.offset = r.abs(off);
    fb.size = *end - off;
    std::uint64_t e = *entries_start;
    while (e < *end) {
        if (budget.left == 0) return budget.exhausted(r.abs(e), where);
        --budget.left;
        auto entry = parse_entry(r, e, *end, where, win);
        if (!entry) return std::move(entry).error();
        e += entry->header_size + entry->padded_size; // checked in parse_entry
        fb.entries.push_back(*entry);
    }
    return fb;
}

} // namespace

Result<Fatbin> parse_fatbin_at(const Bytes& r, std::uint64_t off, const Where& where,
                               EntryBudget& budget) {
    HeaderWindow win(r);
    return parse_fatbin_at(r, off, where, budget, win);
}

Error EntryBudget::exhausted(std::uint64_t offset, const Where& where) {
    hit = true;
    return where.error(
        offset, fmt::format("more than {} fatbin entry headers in one file, {}", limit, what));
}

Result<std::vector<Fatbin>> parse_fatbins(const Bytes& r, const Where& where,
                                          std::uint64_t pad_align) {
    EntryBudget unlimited{UINT64_MAX, ""};
    return parse_fatbins(r, where, unlimited, pad_align);
}

Result<std::vector<Fatbin>> parse_fatbins(const Bytes& r, const Where& where, EntryBudget& budget,
                                          std::uint64_t pad_align) {
    std::vector<Fatbin> out;
    HeaderWindow win(r);
    std::uint64_t off = 0;
    while (off < r.size()) {
        if (r.has(off, 4) && win.at(off, 4).u32(0) == kFatbinMagic) {
            auto fb = parse_fatbin_at(r, off, where, budget, win);
            if (!fb) return std::move(fb).error();
            off += fb->size;
            out.push_back(std::move(*fb));
            continue;
        }
        // The linker aligns each input section (at least to 8): zero padding up to the boundary
        // is fine, and so is a zero tail; other bytes mean the stream is not what we think it
        // is. Capped at the region's size, so that the boundary cannot wrap.
        const std::uint64_t align = std::max<std::uint64_t>(8, std::min(pad_align, r.size()));
        const std::uint64_t up = off / align * align + align; // off < size: cannot wrap
        const std::uint64_t pad_end = std::min<std::uint64_t>(up, r.size());
        if (off % align != 0 && win.at(off, pad_end - off).all_zero(0, pad_end - off)) {
            off = pad_end;
            continue;
        }
        if (r.all_zero(off, r.size() - off)) break;
        return where.error(r.abs(off), fmt::format("expected a fatbin header (magic 0xba55ed50), "
                                                   "found 0x{:08x}",
                                                   r.has(off, 4) ? r.u32(off) : 0u));
    }
    return out;
}

namespace {

// The magic search reads a region in blocks of this size (one buffer per worker, small enough to
// stay in the core's cache while it is searched) and hands a worker at least a task's worth.
constexpr std::uint64_t kScanBlock = std::uint64_t{128} << 10;
constexpr std::uint64_t kScanTask = std::uint64_t{4} << 20;

// Candidate offsets (magic at `first` + 8k) of r in [first, end): `first` is a candidate offset.
void find_magic_in(const Bytes& r, std::uint64_t first, std::uint64_t end,
                   std::vector<std::uint8_t>& buf, std::vector<std::uint64_t>& out) {
    buf.resize(kScanBlock);
    for (std::uint64_t at = first; at < end && r.has(at, 4);) {
        const std::uint64_t n = std::min<std::uint64_t>(kScanBlock, r.size() - at);
        copy_bytes(r.data() + at, n, buf.data());
        const std::uint8_t* p = buf.data();
        auto hit = [p](std::uint64_t k) {
            std::uint32_t w = 0;
            std::memcpy(&w, p + k, 4);
            return w == kFatbinMagic;
        };
        // Candidates i < limit (i + 4 <= n: n is a multiple of 8 except at the region's end).
        // Eight candidates per step with no branch between them: the compiler keeps this to
        // loads and compares, and real regions have one hit in many thousands of steps.
        const std::uint64_t limit = std::min(n, end - at);
        std::uint64_t i = 0;
        for (; i + 64 <= limit && i + 64 <= n; i += 64) {
            bool any = false;
            for (std::uint64_t k = 0; k < 64; k += 8)
                any |= hit(i + k);
            if (!any) continue;
            for (std::uint64_t k = 0; k < 64; k += 8)
                if (hit(i + k)) out.push_back(at + i + k);
        }
        for (; i < limit && i + 4 <= n; i += 8)
            if (hit(i)) out.push_back(at + i);
        at += n; // n is a multiple of 8 unless it reached the end of the region
    }
}

} // namespace

std::vector<std::vector<std::uint64_t>> find_fatbin_magic(const std::vector<ScanRegion>& regions,
                                                          unsigned threads) {
    struct Task {
        std::size_t region;
        std::uint64_t begin, end; // candidate offsets in [begin, end), begin a candidate
    };
    std::vector<Task> tasks;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < regions.size(); ++i) {
        const ScanRegion& g = regions[i];
        for (std::uint64_t b = g.aligned_from; b < g.bytes.size(); b += kScanTask) {
            tasks.push_back({i, b, std::min(g.bytes.size(), b + kScanTask)});
            total += tasks.back().end - b;
        }
    }
    std::vector<std::vector<std::uint64_t>> found(tasks.size());
    threads = static_cast<unsigned>(
        std::clamp<std::uint64_t>(std::min<std::uint64_t>(threads, total / kScanTask), 1, 64));
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        std::vector<std::uint8_t> buf;
        for (std::size_t k = next++; k < tasks.size(); k = next++)
            find_magic_in(regions[tasks[k].region].bytes, tasks[k].begin, tasks[k].end, buf,
                          found[k]);
    };
    run_workers(threads, work);
    std::vector<std::vector<std::uint64_t>> out(regions.size());
    for (std::size_t k = 0; k < tasks.size(); ++k) // tasks are in region and offset order
        out[tasks[k].region].insert(out[tasks[k].region].end(), found[k].begin(), found[k].end());
    return out;
}

Result<std::vector<Fatbin>> accept_fatbins(const Bytes& r,
                                           const std::vector<std::uint64_t>& candidates,
                                           const Where& where, EntryBudget& budget) {
    // Every candidate header costs a walk of its entry chain, and a hostile file can point many
    // headers into one long chain: the walks of rejected candidates share one budget, so the
    // scan stays linear in the region's size. Accepted fatbins are disjoint, so their entries
    // alone never exceed region/0x40; the budget allows that twice over, plus a margin for the
    // odd false candidate.
    EntryBudget walks{r.size() / eh::kBaseSize * 2 + kScanSlack,
                      "examined by the magic scan (fatbin header chains that overlap: not what a "
                      "linker writes)"};
    HeaderWindow win(r);
    std::vector<Fatbin> out;
    std::uint64_t free_from = 0; // candidates before this lie inside an accepted fatbin
    for (const std::uint64_t off : candidates) {
        if (off < free_from || !r.has(off, fh::kSize + eh::kBaseSize)) continue;
        // The cheap tests first (header and first entry), on a copy of the header bytes.
        const Bytes h = win.at(off, fh::kSize + eh::kBaseSize);
        const std::uint16_t kind = h.u16(fh::kSize + eh::kKind);
        if (h.u32(fh::kMagic) != kFatbinMagic || h.u16(fh::kVersion) != 1 ||
            h.u16(fh::kHeaderSize) != fh::kSize ||
            h.u16(fh::kSize + eh::kVersion) != kEntryVersion ||
            h.u32(fh::kSize + eh::kHeaderSize) < eh::kBaseSize ||
            (kind != kKindPtx && kind != kKindElf && kind != kKindLto))
            continue;
        auto fb = parse_fatbin_at(r, off, where, walks, win);
        if (!fb && walks.hit) return std::move(fb).error();
        if (!fb || fb->entries.empty()) continue;
        if (fb->entries.size() > budget.left)
            return budget.exhausted(fb->entries.back().offset, where);
        budget.left -= fb->entries.size();
        free_from = off + fb->size; // inside the region: parse_fatbin_at checked it
        out.push_back(std::move(*fb));
    }
    return out;
}

Result<std::vector<Fatbin>> scan_fatbins(const Bytes& r, const Where& where, EntryBudget& budget,
                                         std::uint64_t aligned_from, unsigned threads) {
    auto candidates = find_fatbin_magic({ScanRegion{r, aligned_from}}, threads);
    return accept_fatbins(r, candidates.front(), where, budget);
}

} // namespace forge::binary
