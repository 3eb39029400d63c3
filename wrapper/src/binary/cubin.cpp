#include "binary/cubin.h"

#include "binary/cubin_layout.h"
#include "binary/mapped_file.h"
#include "core/version.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <lz4.h>
#include <new>
#include <vector>
#define ZSTD_STATIC_LINKING_ONLY // ZSTD_getFrameHeader, ZSTD_decodingBufferSize_min
#include <zstd.h>

namespace forge::binary {

namespace {

std::string toolkit_from_number(std::uint32_t v) {
    return fmt::format("{}.{}", v / 10, v % 10);
}

// "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0"
std::optional<std::string> release_from_tool_version(std::string_view s) {
    auto pos = s.find("release ");
    if (pos == std::string_view::npos) return std::nullopt;
    s = s.substr(pos + 8);
    const auto v = leading_cuda_version(s);
    if (!v) return std::nullopt;
    return fmt::format("{}.{}", v->version.major, v->version.minor);
}

// "-arch sm_100f -m 64 " -> "sm_100f"
std::optional<std::string> arch_option(std::string_view opts) {
    auto pos = opts.find("-arch ");
    if (pos == std::string_view::npos) return std::nullopt;
    opts = opts.substr(pos + 6);
    auto end = opts.find(' ');
    std::string_view a = opts.substr(0, end);
    if (!a.starts_with("sm_") || a.size() < 5) return std::nullopt;
    return std::string(a);
}

// .nv.info / .nv.compat records: u8 format, u8 attribute, then a payload whose size depends on
// the format. Calls fn(attr, payload) until fn returns true or the records end/are malformed.
template <class Fn> void walk_attributes(const Bytes& sec, Fn&& fn) {
    std::uint64_t off = 0;
    while (sec.has(off, nv_attr::kFixedSize)) {
        const std::uint8_t fmt_code = sec.u8(off + nv_attr::kFormat),
                           attr = sec.u8(off + nv_attr::kId);
        std::uint64_t next = 0;
        Bytes payload;
        switch (fmt_code) {
        case nv_attr::kNval:
        case nv_attr::kBval:
        case nv_attr::kHval:
            payload = sec.sub(off + nv_attr::kPayload, 2);
            next = off + nv_attr::kFixedSize;
            break;
        case nv_attr::kSval: { // u16 size, then size bytes
            const std::uint16_t size = sec.u16(off + nv_attr::kPayload);
            if (!sec.has(off + nv_attr::kFixedSize, size)) return;
            payload = sec.sub(off + nv_attr::kFixedSize, size);
            next = off + nv_attr::kFixedSize + size;
            break;
        }
        default:
            return;
        }
        if (fn(attr, fmt_code, payload)) return;
        off = next;
    }
}

// Standard ELF notes; fn(type, name, desc) for each well-formed note.
template <class Fn> void walk_notes(const Bytes& sec, Fn&& fn) {
    std::uint64_t off = 0;
    while (sec.has(off, nhdr::kSize)) {
        const std::uint32_t namesz = sec.u32(off + nhdr::kNamesz),
                            descsz = sec.u32(off + nhdr::kDescsz),
                            type = sec.u32(off + nhdr::kType);
        const std::uint64_t name_off = off + nhdr::kSize;
        const std::uint64_t desc_off = name_off + ((std::uint64_t{namesz} + 3) & ~std::uint64_t{3});
        if (!sec.has(name_off, namesz) || !sec.has(desc_off, descsz)) return;
        fn(type, sec.view(name_off, namesz), sec.sub(desc_off, descsz));
        off = desc_off + ((std::uint64_t{descsz} + 3) & ~std::uint64_t{3});
    }
}

// The most `compressed` bytes can expand to. LZ4 block format
// (https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md): a length grows by at most 255
// per extension byte, so no block expands more than 255-fold. Zstandard
// (https://www.rfc-editor.org/rfc/rfc8878): every block has a 3-byte header and yields at most
// 128 KiB (an RLE block: header plus one byte).
constexpr std::uint64_t kLz4MaxRatio = 255;
constexpr std::uint64_t kLz4Slack = 64; // the last literals of a tiny block
constexpr std::uint64_t kZstdMinBlock = 4;
constexpr std::uint64_t kZstdMaxBlockOutput = std::uint64_t{128} << 10;

std::uint64_t most_decompressed(std::uint64_t compressed, Compression c) {
    switch (c) {
    case Compression::Lz4:
        return compressed * kLz4MaxRatio + kLz4Slack; // compressed < 2^32 (a u32 field)
    case Compression::Zstd:
        return (compressed / kZstdMinBlock + 1) * kZstdMaxBlockOutput;
    case Compression::None:
        break;
    }
    return compressed;
}

} // namespace

Result<CubinInfo> inspect_cubin_headers(const Bytes& cubin, const Where& where) {
    auto elf = parse_elf(cubin, where);
    if (!elf) return std::move(elf).error();
    if (!elf->is_cubin())
        return where.error(cubin.abs(elf64::kEMachine),
                           fmt::format("ELF image with e_machine {} is not a CUDA "
                                       "cubin (expected 190)",
                                       elf->machine));
    // Kernels are counted by section name: a section that points outside the image must not
    // count, nor let a corrupt cubin through as a well-formed one.
    FORGE_TRY_STATUS(elf->check_sections(where));
    CubinInfo info;
    const bool new_abi = elf->abiversion >= cuda_eflags::kAbiV8;
    info.sm =
        static_cast<int>(new_abi ? (elf->flags >> cuda_eflags::kSmShiftV8) & cuda_eflags::kSmMask
                                 : elf->flags & cuda_eflags::kSmMask);
    info.nvlink_stub =
        new_abi && (elf->flags >> cuda_eflags::kLayoutShiftV8) == cuda_eflags::kLayoutStub;
    if ((new_abi && (elf->flags & cuda_eflags::kAcceleratorsV8)) ||
        (!new_abi && (elf->flags & cuda_eflags::kAcceleratorsV7)))
        info.arch_specific = true;
    for (const auto& s : elf->sections) {
        if (s.name.starts_with(".text.")) ++info.kernels;
        if (s.type == kShtNvCompat || s.name == ".nv.compat") {
            auto data = elf->section_bytes(s, where);
            if (!data) return std::move(data).error();
            walk_attributes(*data, [&](std::uint8_t attr, std::uint8_t, const Bytes& payload) {
                if (attr != nv_attr::kCompatArchSpecific) return false;
                info.arch_specific = payload.u8(0) != 0;
                return true;
            });
        }
    }
    return info;
}

Result<CubinInfo> inspect_cubin(const Bytes& cubin, const Where& where) {
    auto info = inspect_cubin_headers(cubin, where);
    if (!info) return info;
    auto elf = parse_elf(cubin, where);
    if (!elf) return std::move(elf).error();
    std::optional<std::string> tkinfo, cuinfo, api;
    for (const auto& s : elf->sections) {
        const bool note = s.type == kShtNote;
        const bool nvinfo = s.name == ".nv.info" || s.name.starts_with(".nv.info.");
        if (!note && !nvinfo) continue;
        auto data = elf->section_bytes(s, where);
        if (!data) return std::move(data).error();
        if (note) {
            walk_notes(*data, [&](std::uint32_t type, std::string_view name, const Bytes& desc) {
                if (!name.starts_with("NVIDIA Corp")) return;
                if (type == kNoteTkinfo && !tkinfo && desc.has(0, tkinfo::kPool)) {
                    const Bytes pool = desc.from(tkinfo::kPool);
                    if (auto ver = pool.cstr(desc.u32(tkinfo::kToolVersion)))
                        tkinfo = release_from_tool_version(*ver);
                    if (auto opts = pool.cstr(desc.u32(tkinfo::kToolOptions)))
                        info->tool_arch = arch_option(*opts);
                } else if (type == kNoteCuinfo && !cuinfo && desc.has(0, cuinfo::kSize)) {
                    if (std::uint32_t v = desc.u32(cuinfo::kToolVersion); v != 0)
                        cuinfo = toolkit_from_number(v);
                }
            });
        } else if (!api) {
            walk_attributes(*data,
                            [&](std::uint8_t attr, std::uint8_t fmt_code, const Bytes& payload) {
                                if (attr != nv_attr::kCudaApiVersion ||
                                    fmt_code != nv_attr::kSval || payload.size() < 4)
                                    return false;
                                if (std::uint32_t v = payload.u32(0); v != 0)
                                    api = toolkit_from_number(v);
                                return true;
                            });
        }
    }
    info->toolkit = tkinfo ? tkinfo : cuinfo ? cuinfo : api;
    return info;
}

std::optional<Error> declared_size_error(const Bytes& stream, Compression c,
                                         std::uint64_t uncompressed_size, std::uint64_t limit,
                                         const Where& where) {
    if (uncompressed_size > limit)
        return where.error(stream.abs(0), fmt::format("entry declares {} bytes uncompressed, over "
                                                      "the limit of {}",
                                                      uncompressed_size, limit));
    // The declared size is the file's word; what the stored bytes can expand to is not.
    if (const std::uint64_t most = most_decompressed(stream.size(), c);
        c != Compression::None && uncompressed_size > most)
        return where.error(stream.abs(0),
                           fmt::format("entry declares {} bytes uncompressed, but {} {} bytes "
                                       "expand to at most {}",
                                       uncompressed_size, stream.size(), compression_string(c),
                                       most));
    return std::nullopt;
}

Result<std::vector<std::uint8_t>> decompress_payload(const Bytes& stream, Compression c,
                                                     std::uint64_t uncompressed_size,
                                                     std::uint64_t limit, const Where& where) {
    if (auto err = declared_size_error(stream, c, uncompressed_size, limit, where))
        return std::move(*err);
    std::vector<std::uint8_t> out;
    try {
        out.resize(static_cast<std::size_t>(uncompressed_size));
    } catch (const std::bad_alloc&) {
        return where.error(stream.abs(0), fmt::format("out of memory: cannot hold the {} bytes "
                                                      "the entry decompresses to",
                                                      uncompressed_size));
    }
    if (c == Compression::Lz4) {
        if (stream.size() > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE) ||
            uncompressed_size > static_cast<std::uint64_t>(INT32_MAX))
            return where.error(stream.abs(0), "LZ4 entry too large");
        const int n = LZ4_decompress_safe(
            reinterpret_cast<const char*>(stream.data()), reinterpret_cast<char*>(out.data()),
            static_cast<int>(stream.size()), static_cast<int>(out.size()));
        if (n < 0)
            return where.error(stream.abs(0), fmt::format("corrupt LZ4 payload (error {})", n));
        if (static_cast<std::uint64_t>(n) != uncompressed_size)
            return where.error(stream.abs(0), fmt::format("LZ4 payload decompresses to {} bytes, "
                                                          "header says {}",
                                                          n, uncompressed_size));
        return out;
    }
    if (c == Compression::Zstd) {
        const unsigned long long declared = ZSTD_getFrameContentSize(stream.data(), stream.size());
        if (declared == ZSTD_CONTENTSIZE_ERROR)
            return where.error(stream.abs(0), "payload is not a zstd frame");
        if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != uncompressed_size)
            return where.error(stream.abs(0), fmt::format("zstd frame declares {} bytes, header "
                                                          "says {}",
                                                          declared, uncompressed_size));
        const std::size_t n = ZSTD_decompress(out.data(), out.size(), stream.data(), stream.size());
        if (ZSTD_isError(n))
            return where.error(stream.abs(0),
                               fmt::format("corrupt zstd payload: {}", ZSTD_getErrorName(n)));
        if (n != uncompressed_size)
            return where.error(stream.abs(0), fmt::format("zstd payload decompresses to {} bytes, "
                                                          "header says {}",
                                                          n, uncompressed_size));
        return out;
    }
    out.assign(stream.data(), stream.data() + stream.size());
    return out;
}

struct StreamScratch::Impl {
    ZSTD_DCtx* dctx = nullptr;
    std::vector<std::uint8_t> chunk;
    SparseImage image;
    std::uint64_t written = 0; // the image's bytes from 0 that may be resident
    // Compressed bytes are copied here (pread from a mapped file) rather than read through the
    // mapping: a page fault maps up to 15 neighbouring pages of other entries with each page
    // read, which then stay in the resident set (16 workers: 15 MiB of such pages measured).
    std::unique_ptr<std::uint8_t[]> in;
    std::uint64_t in_size = 0;
    // Which compressed stream `in` holds whole (load_input), so that the decoder does not copy
    // it again after the cache key was hashed from it; any other use of `in` forgets it.
    const std::uint8_t* holds = nullptr;
    std::uint64_t holds_size = 0;
    std::uint8_t* input(std::uint64_t n) {
        holds = nullptr;
        if (n > in_size) {
            in.reset(new (std::nothrow) std::uint8_t[n]); // no zero fill: copied over at once
            in_size = in ? n : 0;
        }
        return in.get();
    }
    ~Impl() { ZSTD_freeDCtx(dctx); }
};

StreamScratch::StreamScratch() : impl_(std::make_unique<Impl>()) {}

const std::uint8_t* StreamScratch::load_input(const Bytes& stream) {
    Impl& s = *impl_;
    if (s.holds == stream.data() && s.holds_size == stream.size() && s.in) return s.in.get();
    std::uint8_t* in = s.input(stream.size());
    if (in == nullptr) return nullptr;
    copy_bytes(stream.data(), stream.size(), in);
    s.holds = stream.data();
    s.holds_size = stream.size();
    return in;
}
StreamScratch::~StreamScratch() = default;

std::uint64_t StreamScratch::release(std::uint64_t keep) {
    Impl& s = *impl_;
    std::uint64_t held = 0;
    if (s.dctx != nullptr && keep != 0 && ZSTD_sizeof_DCtx(s.dctx) <= keep / 2) {
        held += ZSTD_sizeof_DCtx(s.dctx); // no window and stream buffers in it
    } else {
        ZSTD_freeDCtx(s.dctx);
        s.dctx = nullptr;
    }
    if (s.in_size != 0 && s.in_size <= keep / 4) {
        held += s.in_size;
    } else {
        s.in.reset();
        s.in_size = 0;
        s.holds = nullptr;
    }
    const std::uint64_t image = std::min(s.written, keep);
    s.image.forget(image, s.written - image);
    s.written = image;
    return held + image;
}

std::uint64_t decode_footprint(const Bytes& stream, std::uint64_t uncompressed_size) {
    return uncompressed_size + ZSTD_estimateDCtxSize() + stream.size();
}

std::optional<Bytes> decode_to_scratch(const Bytes& stream, Compression c,
                                       std::uint64_t uncompressed_size, std::uint64_t limit,
                                       const Where& where, StreamScratch& scratch,
                                       std::uint64_t base) {
    if (c == Compression::None || uncompressed_size == 0) return std::nullopt;
    if (declared_size_error(stream, c, uncompressed_size, limit, where)) return std::nullopt;
    StreamScratch::Impl& s = scratch.impl();
    if (!s.image.reserve(uncompressed_size)) return std::nullopt;
    // The compressed bytes are copied (pread from a mapped file), not read through the mapping.
    const std::uint8_t* src = scratch.load_input(stream);
    if (src == nullptr) return std::nullopt;
    s.written = std::max(s.written, uncompressed_size);
    if (c == Compression::Lz4) {
        if (stream.size() > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE) ||
            uncompressed_size > static_cast<std::uint64_t>(INT32_MAX))
            return std::nullopt;
        const int n = LZ4_decompress_safe(
            reinterpret_cast<const char*>(src), reinterpret_cast<char*>(s.image.data()),
            static_cast<int>(stream.size()), static_cast<int>(uncompressed_size));
        if (n < 0 || static_cast<std::uint64_t>(n) != uncompressed_size) return std::nullopt;
        return Bytes{s.image.data(), uncompressed_size, base};
    }
    const unsigned long long declared = ZSTD_getFrameContentSize(src, stream.size());
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != uncompressed_size) return std::nullopt;
    if (s.dctx == nullptr) s.dctx = ZSTD_createDCtx();
    if (s.dctx == nullptr) return std::nullopt;
    const std::size_t n =
        ZSTD_decompressDCtx(s.dctx, s.image.data(), static_cast<std::size_t>(uncompressed_size),
                            src, static_cast<std::size_t>(stream.size()));
    if (ZSTD_isError(n) || n != uncompressed_size) return std::nullopt;
    return Bytes{s.image.data(), uncompressed_size, base};
}

namespace {

// Compressed input is handed to the decoder in slices, each copied into the worker's buffer (a
// 5 MB payload would otherwise stay resident until its end).
constexpr std::uint64_t kInputSlice = std::uint64_t{1} << 20;
// The second pass keeps the sections the first one located, up to this many times the prefix.
constexpr std::uint64_t kSecondPassFactor = 4;

// The byte ranges of the image a pass keeps, [lo, hi) each.
struct Kept {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    [[nodiscard]] bool holds(std::uint64_t off, std::uint64_t len) const {
        if (len == 0) return true;
        const auto end = checked_add(off, len);
        if (!end) return false;
        return std::any_of(ranges.begin(), ranges.end(),
                           [&](const auto& r) { return off >= r.first && *end <= r.second; });
    }
    [[nodiscard]] std::uint64_t bytes() const {
        std::uint64_t n = 0;
        for (const auto& r : ranges)
            n += r.second - r.first;
        return n;
    }
};

// Copies what [from, from + n) (image offsets, bytes at `src`) shares with the kept ranges to
// the same offsets of `dst`.
void keep(std::uint8_t* dst, const std::uint8_t* src, std::uint64_t from, std::uint64_t n,
          const Kept& kept) {
    for (const auto& [lo, hi] : kept.ranges) {
        const std::uint64_t a = std::max(from, lo), b = std::min(from + n, hi);
        if (a < b) std::memcpy(dst + a, src + (a - from), static_cast<std::size_t>(b - a));
    }
}

// One pass of the decoder over the frame. The first pass (`stop_at` = 0) decodes the whole frame
// and succeeds only for one well-formed frame of exactly `size` bytes that uses all of `stream`;
// it adds the section table's range to `kept` once the header (in the first range) has arrived.
// A later pass over the same, already checked frame stops once `stop_at` bytes are out.
bool stream_pass(StreamScratch::Impl& s, const Bytes& stream, std::uint64_t size, Kept& kept,
                 std::uint64_t stop_at) {
    if (s.dctx == nullptr) s.dctx = ZSTD_createDCtx();
    if (s.dctx == nullptr) return false;
    ZSTD_DCtx_reset(s.dctx, ZSTD_reset_session_only);
    std::uint8_t* img = s.image.data();
    bool header_known = stop_at != 0;
    std::uint64_t produced = 0, fed = 0; // fed: compressed bytes handed to the decoder
    std::uint8_t* slice = s.input(std::min(stream.size(), kInputSlice));
    if (slice == nullptr) return false;
    ZSTD_inBuffer in{slice, 0, 0};
    bool ok = false;
    while (true) {
        if (in.pos == in.size && fed < stream.size()) { // the next slice of input
            const std::uint64_t n = std::min(stream.size() - fed, kInputSlice);
            copy_bytes(stream.data() + fed, n, slice);
            fed += n;
            in = ZSTD_inBuffer{slice, static_cast<std::size_t>(n), 0};
        }
        ZSTD_outBuffer out{s.chunk.data(), s.chunk.size(), 0};
        const std::size_t ret = ZSTD_decompressStream(s.dctx, &out, &in);
        if (ZSTD_isError(ret) || out.pos > size - produced) break; // corrupt, or more than said
        keep(img, s.chunk.data(), produced, out.pos, kept);
        if (!header_known && produced + out.pos >= elf64::kEhdrSize) {
            // The header is kept now: where the section table is, from its fields.
            header_known = true;
            const Bytes head{img, elf64::kEhdrSize};
            const std::uint64_t shoff = head.u64(elf64::kEShoff);
            const std::uint16_t shnum = head.u16(elf64::kEShnum);
            const std::uint64_t table = std::uint64_t{shnum == 0 ? 1u : shnum} * elf64::kShdrSize;
            if (shoff != 0 && shoff < size && table <= size - shoff) {
                kept.ranges.emplace_back(shoff, shoff + table);
                // The chunk that brought the header may hold part of the table too.
                const Kept table_only{{kept.ranges.back()}};
                keep(img, s.chunk.data(), produced, out.pos, table_only);
            }
        }
        produced += out.pos;
        if (stop_at != 0 && produced >= stop_at) {
            ok = true;
            break;
        }
        if (ret == 0) { // the frame is complete
            ok = stop_at == 0 && fed == stream.size() && in.pos == in.size && produced == size;
            break;
        }
        if (out.pos == 0 && in.pos == in.size && fed == stream.size()) break; // truncated
    }
    return ok;
}

// A frame's header copied out (copy_bytes: pread from a mapped file). Read through the mapping,
// it would fault in its page and up to 15 neighbours, which are other entries' bytes and stay in
// the resident set after this entry's pages are released.
struct FrameHead {
    std::array<std::uint8_t, ZSTD_FRAMEHEADERSIZE_MAX> bytes{};
    std::size_t size = 0;
};

FrameHead frame_head(const Bytes& stream) {
    FrameHead h;
    h.size = static_cast<std::size_t>(std::min<std::uint64_t>(stream.size(), h.bytes.size()));
    copy_bytes(stream.data(), h.size, h.bytes.data());
    return h;
}

std::uint32_t name_table_index(const Elf& elf, const Bytes& image) {
    std::uint32_t shstrndx = image.u16(elf64::kEShstrndx);
    if (shstrndx == 0xffff) shstrndx = image.u32(elf.shoff + elf64::kShLink);
    return shstrndx;
}

bool read_by_inspect(const ElfSection& s) {
    return s.type == kShtNote || s.type == kShtNvCompat || s.name == ".nv.compat" ||
           s.name == ".nv.info" || s.name.starts_with(".nv.info.");
}

// Every byte inspect_cubin reads lies inside what was kept: the ELF header, the section table,
// the name table and the sections whose contents it walks (checked against the parse of the
// kept bytes, whose table and names are exact once the first checks pass).
bool kept_covers_reads(const Elf& elf, const Bytes& image, const Kept& kept) {
    if (!kept.holds(0, elf64::kEhdrSize)) return false;
    if (elf.shoff == 0 || elf.sections.empty()) return true;
    if (!kept.holds(elf.shoff, elf.sections.size() * elf64::kShdrSize)) return false;
    const std::uint32_t names = name_table_index(elf, image);
    if (names != 0 && names < elf.sections.size() &&
        !kept.holds(elf.sections[names].offset, elf.sections[names].size))
        return false;
    return std::all_of(elf.sections.begin(), elf.sections.end(), [&](const ElfSection& s) {
        return s.type == kShtNobits || !read_by_inspect(s) || kept.holds(s.offset, s.size);
    });
}

} // namespace

std::optional<ZstdPlan> zstd_read_plan(const Bytes& stream, std::uint64_t uncompressed_size,
                                       std::uint64_t prefix_bytes, std::uint64_t limit,
                                       std::uint64_t second_pass_bytes) {
    ZSTD_frameHeader fh{};
    const FrameHead head = frame_head(stream);
    if (ZSTD_getFrameHeader(&fh, head.bytes.data(), head.size) != 0) return std::nullopt;
    if (fh.frameType != ZSTD_frame) return std::nullopt;
    const std::size_t buffers = ZSTD_decodingBufferSize_min(fh.windowSize, fh.frameContentSize);
    if (ZSTD_isError(buffers)) return std::nullopt;
    ZstdPlan plan;
    plan.one_call = uncompressed_size <= prefix_bytes || uncompressed_size <= buffers;
    // The compressed bytes count too: they are copied to the worker (all of them for one call, a
    // slice at a time when streamed).
    if (plan.one_call) {
        plan.footprint = decode_footprint(stream, uncompressed_size);
    } else {
        plan.second_pass =
            second_pass_bytes != 0 ? second_pass_bytes : kSecondPassFactor * prefix_bytes;
        const std::uint64_t kept = prefix_bytes + plan.second_pass;
        plan.footprint = buffers + ZSTD_DStreamInSize() + ZSTD_DStreamOutSize() + kept +
                         ZSTD_estimateDCtxSize() + std::min(stream.size(), kInputSlice);
    }
    if (plan.footprint > limit) return std::nullopt;
    return plan;
}

std::optional<CubinInfo> inspect_zstd_cubin(const Bytes& stream, std::uint64_t uncompressed_size,
                                            std::uint64_t limit, std::uint64_t prefix_bytes,
                                            ZstdPlan& plan, const Where& where,
                                            StreamScratch& scratch, ReadStats* stats) {
    if (declared_size_error(stream, Compression::Zstd, uncompressed_size, limit, where))
        return std::nullopt;
    if (uncompressed_size < elf64::kEhdrSize) return std::nullopt;
    const FrameHead head = frame_head(stream);
    const unsigned long long declared = ZSTD_getFrameContentSize(head.bytes.data(), head.size);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != uncompressed_size) return std::nullopt;
    StreamScratch::Impl& s = scratch.impl();
    if (!s.image.reserve(uncompressed_size)) return std::nullopt;
    const Bytes image{s.image.data(), uncompressed_size, 0};
    if (plan.one_call) {
        // One call decodes the image straight into the worker's pages (reused from cubin to
        // cubin: no fresh page is faulted in for most), with the semantics of
        // decompress_payload's ZSTD_decompress, and inspect_cubin reads it as a whole.
        auto whole = decode_to_scratch(stream, Compression::Zstd, uncompressed_size, limit, where,
                                       scratch, 0);
        if (!whole) return std::nullopt;
        if (stats) ++stats->one_call;
        auto info = inspect_cubin(*whole, where);
        if (!info) return std::nullopt;
        return std::move(*info);
    }

    if (s.chunk.empty()) s.chunk.resize(ZSTD_DStreamOutSize());
    Kept kept;
    kept.ranges.emplace_back(0,
                             std::max(std::min(prefix_bytes, uncompressed_size), elf64::kEhdrSize));
    // Past the prefix the image must read as zeros where nothing was kept, not as what an image
    // decoded in one call left there: the first parse reads names before the name table is kept.
    if (s.written > kept.ranges.front().second) {
        s.image.forget(kept.ranges.front().second, s.written - kept.ranges.front().second);
        s.written = kept.ranges.front().second;
    }
    std::optional<CubinInfo> result;
    if (stream_pass(s, stream, uncompressed_size, kept, 0)) {
        auto elf = parse_elf(image, where);
        bool usable = elf.ok();
        if (usable && !kept_covers_reads(*elf, image, kept) && uncompressed_size > prefix_bytes) {
            // The first pass found the table; the parts inspect_cubin reads (nvcc puts them
            // first, after .strtab, .symtab and .debug_frame, which can take a few hundred KiB
            // in a large cubin) are kept by a second pass that stops after the last of them.
            // Section types pick them (names need the name table, which this pass brings).
            Kept fresh;
            const std::uint32_t names = name_table_index(*elf, image);
            if (names != 0 && names < elf->sections.size())
                fresh.ranges.emplace_back(elf->sections[names].offset,
                                          elf->sections[names].offset + elf->sections[names].size);
            for (const auto& sec : elf->sections)
                if (sec.type != kShtNobits && (sec.type == kShtNvInfo || read_by_inspect(sec)) &&
                    image.has(sec.offset, sec.size))
                    fresh.ranges.emplace_back(sec.offset, sec.offset + sec.size);
            std::uint64_t stop_at = 0;
            for (const auto& r : fresh.ranges)
                stop_at = std::max(stop_at, r.second);
            if (stop_at != 0 && fresh.bytes() > plan.second_pass) plan.wanted = fresh.bytes();
            if (stop_at != 0 && fresh.bytes() <= plan.second_pass) {
                const bool second = stream_pass(s, stream, uncompressed_size, fresh, stop_at);
                kept.ranges.insert(kept.ranges.end(), fresh.ranges.begin(), fresh.ranges.end());
                usable = second;
                if (second) {
                    if (stats) ++stats->second_pass;
                    elf = parse_elf(image, where); // the names are the real ones now
                    usable = elf.ok();
                }
            }
        }
        if (usable && kept_covers_reads(*elf, image, kept))
            if (auto info = inspect_cubin(image, where)) result = std::move(*info);
    }
    // The pages kept past the prefix differ from cubin to cubin: give them back, the table's and
    // the second pass's each as one span (the prefix is rewritten by the next entry).
    const std::uint64_t prefix_end = kept.ranges.front().second;
    auto forget_span = [&](std::size_t from, std::size_t to) {
        std::uint64_t lo = UINT64_MAX, hi = 0;
        for (std::size_t i = from; i < to; ++i) {
            lo = std::min(lo, std::max(kept.ranges[i].first, prefix_end));
            hi = std::max(hi, kept.ranges[i].second);
        }
        if (lo < hi) s.image.forget(lo, hi - lo);
    };
    const std::size_t table_end = std::min<std::size_t>(kept.ranges.size(), 2);
    forget_span(1, table_end);
    forget_span(table_end, kept.ranges.size());
    s.written = std::max(s.written, prefix_end);
    return result;
}

} // namespace forge::binary
