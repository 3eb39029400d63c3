// What a cubin (CUDA device ELF) says about itself: SM, kernels, the toolkit that built it, the
// arch-specific `a` flag, and whether it is a kernel-less stub (docs/fatbin-format.md, "The
// cubin").
#pragma once

#include "binary/bytes.h"
#include "binary/elf.h"
#include "binary/reader.h"
#include "core/result.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace forge::binary {

struct CubinInfo {
    int sm = 0;                         // from e_flags (layout by EI_ABIVERSION)
    bool nvlink_stub = false;           // e_flags top byte 0x05 (new ABI): nvlink device-link stub
    int kernels = 0;                    // `.text.*` sections
    std::optional<bool> arch_specific;  // `.nv.compat` attribute 9 (or the old-ABI e_flags bit)
    std::optional<std::string> toolkit; // "13.0": tkinfo release, else cuinfo, else API version
    // The target the last tool was asked for, from the tkinfo options ("-arch sm_100f"): the only
    // place a bare cubin records a family `f` target.
    std::optional<std::string> tool_arch;
    [[nodiscard]] bool stub() const { return nvlink_stub || kernels == 0; }
};

// Header-level facts only (ELF header and section table, no note parsing).
Result<CubinInfo> inspect_cubin_headers(const Bytes& cubin, const Where& where);
// Everything, including the toolkit notes; `cubin` must be the whole (decompressed) image.
Result<CubinInfo> inspect_cubin(const Bytes& cubin, const Where& where);

// Decompresses a fatbin payload; the result must be exactly `uncompressed_size` bytes.
Result<std::vector<std::uint8_t>> decompress_payload(const Bytes& stream, Compression c,
                                                     std::uint64_t uncompressed_size,
                                                     std::uint64_t limit, const Where& where);

// The size checks decompress_payload makes before it allocates anything: the declared size
// against `limit` and against what the stored bytes can expand to. The error, or nullopt.
std::optional<Error> declared_size_error(const Bytes& stream, Compression c,
                                         std::uint64_t uncompressed_size, std::uint64_t limit,
                                         const Where& where);

// What one worker keeps from one ZSTD cubin to the next (never shared between threads): the
// decoder, its output chunk and the image pages. They stay resident between cubins, so that the
// next one is decoded into pages already faulted in. release() gives them back to the system
// but for the first `keep` bytes of the image and a decoder and input buffer small against it,
// and returns the most that stays resident.
class StreamScratch {
  public:
    StreamScratch();
    StreamScratch(const StreamScratch&) = delete;
    StreamScratch& operator=(const StreamScratch&) = delete;
    ~StreamScratch();
    std::uint64_t release(std::uint64_t keep = 0);
    // `stream` copied whole into the worker's input buffer (pread from a mapped file), or the
    // copy it already holds; nullptr when it cannot be allocated. The cache key is hashed from
    // it, and decode_to_scratch() decodes from it without a second copy.
    const std::uint8_t* load_input(const Bytes& stream);
    struct Impl;
    [[nodiscard]] Impl& impl() const { return *impl_; }

  private:
    std::unique_ptr<Impl> impl_;
};

// One compressed payload (LZ4 block or ZSTD frame) decoded whole, in one call, into the worker's
// reused pages: exactly `uncompressed_size` bytes, valid until the scratch's next use, reported
// at `base` (the entry's offset: offsets inside a decompressed image cannot be shown in the
// file). nullopt when it does not decode to exactly that (decompress_payload then names the
// error). What it holds resident: decode_footprint().
std::optional<Bytes> decode_to_scratch(const Bytes& stream, Compression c,
                                       std::uint64_t uncompressed_size, std::uint64_t limit,
                                       const Where& where, StreamScratch& scratch,
                                       std::uint64_t base);
std::uint64_t decode_footprint(const Bytes& stream, std::uint64_t uncompressed_size);

// How inspect_zstd_cubin reads one ZSTD frame, and the most it holds resident meanwhile.
// `one_call`: the whole image is decoded in one call into the worker's pages, when that holds no
// more than streaming would (an image no larger than the prefix, or a frame whose window is the
// whole image: a single-segment frame, most of nvcc's, makes the streaming decoder buffer the
// whole image anyway). Otherwise it is streamed: the decoder's window, its buffers, the prefix
// and the section table. nullopt when the frame header cannot be read or the footprint is over
// `limit`: then only the full decompression can decide.
// A streamed frame's second pass may keep `second_pass` bytes (`second_pass_bytes`, else four
// times the prefix); one that needs more (a name table of megabytes: thousands of sections) sets
// `wanted`, and a plan made with that much more room decides it.
struct ZstdPlan {
    bool one_call = false;
    std::uint64_t footprint = 0;
    std::uint64_t second_pass = 0;
    std::uint64_t wanted = 0; // set by inspect_zstd_cubin
};
std::optional<ZstdPlan> zstd_read_plan(const Bytes& stream, std::uint64_t uncompressed_size,
                                       std::uint64_t prefix_bytes, std::uint64_t limit,
                                       std::uint64_t second_pass_bytes = 0);

// inspect_cubin() of a ZSTD-compressed cubin, as `plan` says: decoded in one call into the
// worker's reused pages, or in one streaming pass without holding the image: the decompressed
// bytes flow through a small chunk and only the first `prefix_bytes` and the section header table
// (its place is in the ELF header) are kept, at their own offsets of a sparse image. When the
// parts read lie past the prefix, a second pass keeps just them (the table says where) and stops
// after the last one. An nvcc cubin keeps what inspect_cubin reads (.shstrtab, the notes,
// .nv.info, .nv.compat) at its start and the section table at its end, past the kernels' code
// (docs/fatbin-format.md, "Where a cubin keeps what --toolkit reads"). Exact or nothing: nullopt
// when the kept bytes do not hold every part inspect_cubin reads, or when the payload is anything
// but one well-formed frame of exactly `uncompressed_size` bytes (the declared-size checks
// included); the caller then decompresses the whole image with decompress_payload, whose answer
// (or error, with its offset) stands.
std::optional<CubinInfo> inspect_zstd_cubin(const Bytes& stream, std::uint64_t uncompressed_size,
                                            std::uint64_t limit, std::uint64_t prefix_bytes,
                                            ZstdPlan& plan, const Where& where,
                                            StreamScratch& scratch, ReadStats* stats = nullptr);

} // namespace forge::binary
