#include "binary/cubin.h"

#include <charconv>
#include <fmt/format.h>
#include <lz4.h>
#include <new>
#include <zstd.h>

namespace forge::binary {

namespace {

// docs/fatbin-format.md, "The cubin": e_flags, the NVIDIA notes, .nv.info and .nv.compat.
constexpr std::uint32_t kShtNvCompat = 0x70000086; // SHT_LOPROC + 0x86

// e_flags. EI_ABIVERSION 8 (every CUDA 13 cubin) keeps the SM in bits 8-15 and a layout id in the
// top byte (0x05: nvlink's kernel-less device-link stub); older ABIs keep the SM in bits 0-7.
constexpr std::uint8_t kCudaAbiV8 = 8;
constexpr std::uint32_t kEfSmShiftV8 = 8;
constexpr std::uint32_t kEfSmMask = 0xff;
constexpr std::uint32_t kEfLayoutShiftV8 = 24;
constexpr std::uint32_t kEfLayoutStub = 0x05;
constexpr std::uint32_t kEfAcceleratorsV8 = 0x8;   // EF_CUDA_ACCELERATORS (never seen set)
constexpr std::uint32_t kEfAcceleratorsV7 = 0x800; // EF_CUDA_ACCELERATORS_V1 (never seen set)

// Standard ELF note header (Elf64_Nhdr): namesz, descsz, type; name and desc 4-byte aligned.
constexpr std::uint64_t kNhdrNamesz = 0;
constexpr std::uint64_t kNhdrDescsz = 4;
constexpr std::uint64_t kNhdrType = 8;
constexpr std::uint64_t kNhdrSize = 12;
constexpr std::uint32_t kNoteTkinfo = 2000; // .note.nv.tkinfo
constexpr std::uint32_t kNoteCuinfo = 1000; // .note.nv.cuinfo
// tkinfo descriptor: u32 string offsets into the pool that starts at kTkinfoPool.
constexpr std::uint64_t kTkinfoToolVersion = 0x0c; // "Cuda compilation tools, release 13.0, ..."
constexpr std::uint64_t kTkinfoToolOptions = 0x14; // "-arch sm_120 -m 64 "
constexpr std::uint64_t kTkinfoPool = 0x18;
// cuinfo descriptor: u16 version, u16 virtual SM, u32 tool version (major*10+minor).
constexpr std::uint64_t kCuinfoToolVersion = 4;
constexpr std::uint64_t kCuinfoSize = 8;

// .nv.info / .nv.compat attribute records: u8 format, u8 attribute, then the payload.
constexpr std::uint64_t kAttrFormat = 0;
constexpr std::uint64_t kAttrId = 1;
constexpr std::uint64_t kAttrPayload = 2;   // NVAL/BVAL/HVAL: 2 bytes; SVAL: u16 size
constexpr std::uint64_t kAttrFixedSize = 4; // a whole NVAL/BVAL/HVAL record; SVAL data start
constexpr std::uint8_t kFmtNval = 1;
constexpr std::uint8_t kFmtBval = 2;
constexpr std::uint8_t kFmtHval = 3;
constexpr std::uint8_t kFmtSval = 4;
constexpr std::uint8_t kEiattrCudaApiVersion = 0x37; // in .nv.info.<kernel>: SVAL u32
constexpr std::uint8_t kCompatArchSpecific = 0x09;   // in .nv.compat: BVAL, 1 for an `a` cubin

std::string toolkit_from_number(std::uint32_t v) {
    return fmt::format("{}.{}", v / 10, v % 10);
}

// "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0"
std::optional<std::string> release_from_tool_version(std::string_view s) {
    auto pos = s.find("release ");
    if (pos == std::string_view::npos) return std::nullopt;
    s = s.substr(pos + 8);
    int major = 0, minor = 0;
    auto [p1, e1] = std::from_chars(s.data(), s.data() + s.size(), major);
    if (e1 != std::errc() || p1 == s.data() + s.size() || *p1 != '.') return std::nullopt;
    auto [p2, e2] = std::from_chars(p1 + 1, s.data() + s.size(), minor);
    if (e2 != std::errc() || p2 == p1 + 1) return std::nullopt;
    return fmt::format("{}.{}", major, minor);
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
    while (sec.has(off, kAttrFixedSize)) {
        const std::uint8_t fmt_code = sec.u8(off + kAttrFormat), attr = sec.u8(off + kAttrId);
        std::uint64_t next = 0;
        Bytes payload;
        switch (fmt_code) {
        case kFmtNval:
        case kFmtBval:
        case kFmtHval:
            payload = sec.sub(off + kAttrPayload, 2);
            next = off + kAttrFixedSize;
            break;
        case kFmtSval: { // u16 size, then size bytes
            const std::uint16_t size = sec.u16(off + kAttrPayload);
            if (!sec.has(off + kAttrFixedSize, size)) return;
            payload = sec.sub(off + kAttrFixedSize, size);
            next = off + kAttrFixedSize + size;
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
    while (sec.has(off, kNhdrSize)) {
        const std::uint32_t namesz = sec.u32(off + kNhdrNamesz),
                            descsz = sec.u32(off + kNhdrDescsz), type = sec.u32(off + kNhdrType);
        const std::uint64_t name_off = off + kNhdrSize;
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
    const bool new_abi = elf->abiversion >= kCudaAbiV8;
    info.sm = static_cast<int>(new_abi ? (elf->flags >> kEfSmShiftV8) & kEfSmMask
                                       : elf->flags & kEfSmMask);
    info.nvlink_stub = new_abi && (elf->flags >> kEfLayoutShiftV8) == kEfLayoutStub;
    if ((new_abi && (elf->flags & kEfAcceleratorsV8)) ||
        (!new_abi && (elf->flags & kEfAcceleratorsV7)))
        info.arch_specific = true;
    for (const auto& s : elf->sections) {
        if (s.name.starts_with(".text.")) ++info.kernels;
        if (s.type == kShtNvCompat || s.name == ".nv.compat") {
            auto data = elf->section_bytes(s, where);
            if (!data) return std::move(data).error();
            walk_attributes(*data, [&](std::uint8_t attr, std::uint8_t, const Bytes& payload) {
                if (attr != kCompatArchSpecific) return false;
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
                if (type == kNoteTkinfo && !tkinfo && desc.has(0, kTkinfoPool)) {
                    const Bytes pool = desc.from(kTkinfoPool);
                    if (auto ver = pool.cstr(desc.u32(kTkinfoToolVersion)))
                        tkinfo = release_from_tool_version(*ver);
                    if (auto opts = pool.cstr(desc.u32(kTkinfoToolOptions)))
                        info->tool_arch = arch_option(*opts);
                } else if (type == kNoteCuinfo && !cuinfo && desc.has(0, kCuinfoSize)) {
                    if (std::uint32_t v = desc.u32(kCuinfoToolVersion); v != 0)
                        cuinfo = toolkit_from_number(v);
                }
            });
        } else if (!api) {
            walk_attributes(
                *data, [&](std::uint8_t attr, std::uint8_t fmt_code, const Bytes& payload) {
                    if (attr != kEiattrCudaApiVersion || fmt_code != kFmtSval || payload.size() < 4)
                        return false;
                    if (std::uint32_t v = payload.u32(0); v != 0) api = toolkit_from_number(v);
                    return true;
                });
        }
    }
    info->toolkit = tkinfo ? tkinfo : cuinfo ? cuinfo : api;
    return info;
}

Result<std::vector<std::uint8_t>> decompress_payload(const Bytes& stream, Compression c,
                                                     std::uint64_t uncompressed_size,
                                                     std::uint64_t limit, const Where& where) {
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

} // namespace forge::binary
