// Reading the GPU code inside a file: host ELF (.so, executable, .o), ar archives, standalone
// .fatbin / .cubin, and wheels (zip) -- recognised by content, not by name. INTERFACE CONTRACT,
// owned by the binary module; `list`, `verify`, `audit` and `verify-bundle` consume it.
// Format, byte by byte, and how each field was checked: docs/fatbin-format.md.
#pragma once

#include "arch/arch.h"
#include "core/result.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace forge::binary {

enum class Compression : std::uint8_t { None, Lz4, Zstd };
std::string_view compression_string(Compression c); // "none", "lz4", "zstd"

// Where an entry's fatbin was found (docs/fatbin-format.md, "Fatbins outside the registered
// sections"): in a section the toolchain registers fatbins in (.nv_fatbin, __nv_relfatbin, a
// standalone .fatbin or .cubin), embedded as data in another section (.data, .rodata, .ldata,
// .rdata: containers a library hands to the driver itself), or by the magic scan of an ELF file
// without a section table (which cannot tell the two apart).
enum class Found : std::uint8_t { Registered, Embedded, Unsectioned };
std::string_view found_string(Found f); // "registered", "embedded", "unsectioned"

struct Entry {
    std::string file;                  // the path given by the user
    std::optional<std::string> member; // wheel or archive member ("pkg/_C.so", "libx.a(k.o)")
    std::string section;               // ".nv_fatbin", "__nv_relfatbin", "fatbin" (standalone
                                       // file), "cubin" (standalone file)
    // Byte offsets are within the file (ar members are slices of it) or, for a wheel member,
    // within the inflated member.
    std::uint64_t fatbin_offset = 0; // offset of the fatbin header within the container
    std::uint64_t entry_offset = 0;  // offset of the entry header within the container
    std::uint32_t fatbin_index = 0;  // which fatbin of the section (0-based)
    arch::Target target;             // sm_90a / compute_120 / lto_80 (a/f from fatbin flags)
    Compression compression = Compression::None;
    std::uint64_t payload_size = 0;      // padded payload bytes stored
    std::uint64_t uncompressed_size = 0; // 0 when not compressed
    // Kernel-less cubin: nvlink device-link stub (e_flags) or no .text.* sections. Compressed
    // cubins without inspect_payloads: true only for the fatbin a version-2 wrapper names in a
    // linked file without relocatable fatbins (nvcc's device-link stub).
    bool stub = false;
    // Number of kernels (.text.* sections) when the cubin was read: always for uncompressed
    // cubins (their section table is a header), for compressed ones with inspect_payloads. For
    // PTX: its `.entry` directives, read the same way (plain text always, compressed when
    // inspected).
    std::optional<int> kernels;
    std::optional<std::string> toolkit; // "13.0": CUDA release that built the cubin (inspected)
    std::uint64_t flags = 0;            // raw fatbin entry flags (0 for a standalone cubin)
    std::uint64_t fatbin_size = 0;      // bytes of the whole fatbin (header + entries)
    // `a` as the cubin itself records it (.nv.compat attribute 9), when the cubin was read; it
    // can disagree with the fatbin flag when someone hand-packs with fatbinary --image3.
    std::optional<bool> cubin_arch_specific;
    Found found = Found::Registered;
};

// Whether a cubin is kernel-less, when that is known: a compressed cubin whose payload was not
// read (list without --toolkit) is unknown unless the device-link wrapper already named it a
// stub. nullopt for unknown; PTX and LTO entries are never stubs.
std::optional<bool> stub_known(const Entry& e);

// How the payloads of one read were inspected (tests and benchmarks look; listing does not).
struct ReadStats {
    std::atomic<std::uint64_t> streamed{0};     // ZSTD cubins read by inspect_zstd_cubin
    std::atomic<std::uint64_t> one_call{0};     // ... of which decoded in one call (ZstdPlan)
    std::atomic<std::uint64_t> second_pass{0};  // ... of which needed the second, shorter pass
    std::atomic<std::uint64_t> decompressed{0}; // cubins decompressed whole
    std::atomic<std::uint64_t> scratch{0};      // ... of which into the worker's reused pages
    std::atomic<std::uint64_t> ptx{0};          // compressed PTX decoded (--toolkit)
    std::atomic<std::uint64_t> cached{0};       // images answered from the ResultCache
    std::atomic<std::uint64_t> hashed{0};       // images whose cache key was computed (not
                                                // taken from the index of an unchanged file)
    std::atomic<std::uint64_t> scans_reused{0}; // embedded scans answered by the ResultCache
};

class ResultCache; // binary/result_cache.h

struct ReadOptions {
    // Decompress ELF payloads (sizes checked) to report toolkit, kernels, `a` from .nv.compat.
    // Listing without it reads headers only and never decompresses a payload.
    bool inspect_payloads = false;
    // Limits against hostile input (zip bombs, absurd sizes).
    std::uint64_t max_member_bytes = 4ull << 30;
    std::uint64_t max_total_inflated = 16ull << 30;
    // Rows one read may yield (each costs a few hundred bytes): far above the largest real
    // library (libtorch_cuda.so: under 10,000), far below what an amplifying file could make.
    std::uint64_t max_entries = 1u << 18;
    // Decompressed cubins the payload workers may hold at once.
    std::uint64_t max_inflight_bytes = 1ull << 30;
    int max_nesting = 4; // wheel -> ar -> object
    // A wheel member inflated to more than this is written to an unnamed temporary file and
    // mapped, not held in memory (zip.h): `list` and `verify` of a wheel then stay in bounded
    // memory whatever its members' sizes (docs/wheels.md).
    std::uint64_t spill_member_bytes = std::uint64_t{64} << 20;
    // A wheel's members against its RECORD (every file listed, sizes, sha256): `verify` and
    // `stamp` ask for it; each member is then inflated whole once (zip.h, ZipOptions).
    bool check_record = false;
    // Inspecting a ZSTD cubin streams it and keeps only its first `stream_prefix_bytes` and its
    // section table (inspect_zstd_cubin in cubin.h); 0 turns the streaming off. An image whose
    // read parts lie further in is decompressed whole, which stays exact.
    std::uint64_t stream_prefix_bytes = 256u << 10;
    // What the payload workers may keep resident at once (their decoders, windows and images;
    // ZstdPlan::footprint each): with the process itself, `list --toolkit` stays under 64 MiB.
    // A ZSTD decoder needs its frame's whole window resident (8 MiB for nvcc's large cubins, the
    // whole image for the rest), so this, not the core count, bounds how many large cubins are
    // decoded at once (bench/RESULTS.md, "Speed of the readers").
    std::uint64_t max_stream_bytes = 52u << 20;
    // Payload workers: `threads`, or hardware_concurrency when 0; at most `max_threads`.
    unsigned threads = 0;
    unsigned max_threads = 16;
    ReadStats* stats = nullptr; // counts how each inspected cubin was read, when set
    // With inspect_payloads: answers of images read before, by a hash of their compressed bytes
    // (binary/result_cache.h); the answers of this read are added. Saved once the read succeeds.
    ResultCache* cache = nullptr;
    // Fatbin containers outside the registered sections: every allocated section with file
    // contents of a host ELF or PE/COFF file is searched for them (Entry::found == Embedded).
    bool scan_embedded = true;
    // Whether embedded entries are described as the registered ones are (cubin headers, PTX
    // kernels, and with inspect_payloads their payloads); false lists their headers only (a gate
    // that does not judge them need not decompress them).
    bool inspect_embedded = true;
};

// All entries of every fatbin in `path` (every section, every fatbin, every entry), in file
// order. A file with no GPU code yields an empty vector, not an error. Unreadable or malformed
// input: an Error with the file, the member and the byte offset.
Result<std::vector<Entry>> read_entries(const std::string& path, const ReadOptions& opts = {});

// The "extensions" of a file for the gate: each host ELF that verify judges on its own (each
// .so in a wheel, or the file itself), with its entries.
struct Extension {
    std::string file;
    std::optional<std::string> member;
    std::vector<Entry> entries;
    // Built by `nvcc-forge plan`'s stub (an ELF section core/plan_marker.h names, in the file or
    // one of its archive members): its device code stands in for code never compiled.
    bool plan_product = false;
};
Result<std::vector<Extension>> read_extensions(const std::string& path,
                                               const ReadOptions& opts = {});

// The same over bytes already in memory (fuzzers, tests); `name` stands in for the path.
Result<std::vector<Extension>> read_extensions_from_memory(const std::uint8_t* data,
                                                           std::uint64_t size,
                                                           const std::string& name,
                                                           const ReadOptions& opts = {});

} // namespace forge::binary
