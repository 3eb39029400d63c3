// forge-decode-floor FILE...: the physical floor of `list --toolkit`. Every compressed image
// (cubin or PTX; LTO is never decoded) of the files is decoded, whole, by the same zstd and lz4
// the tools link, on the same number of threads `list --toolkit` uses (NVCC_FORGE_LIST_THREADS,
// else the core count, at most 16), each thread into one reused buffer; nothing is parsed or
// kept. The entries come from the reader's header-only listing (read_entries), the payload from
// the entry header's named fields. Prints one line per file and a total:
//   "FILE images N compressed B decompressed B threads T decode_ms M"
// and, per file, the floor under a bound on resident memory (FORGE_FLOOR_BUDGET_MIB, else the
// payload workers' 52 MiB, ReadOptions::max_stream_bytes):
//   "FILE bounded budget_mib B area_ms A longest_ms L one_thread_ms S bound_ms X"
// An image cannot be decoded holding less than `need` bytes: a ZSTD frame its window and block
// buffers (ZSTD_decodingBufferSize_min, streamed) or its whole content when that is smaller, an
// LZ4 block its whole content (the block format has no streaming decode of one block). Decoding
// it holds `need` for as long as it decodes (t, timed here), so no schedule under the bound B
// ends before sum(need * t) / B ("area_ms"), before its longest image ("longest_ms") or before
// the unbounded floor's own time: "bound_ms" is the largest of the three, what `list --toolkit`
// at that memory could reach at best.
// bench/list/floor.py runs it beside `list --toolkit` in one run. Not installed; built on demand:
//   cmake --build BUILD --target forge-decode-floor
#include "binary/fatbin.h"
#include "binary/mapped_file.h"
#include "binary/reader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <lz4.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#define ZSTD_STATIC_LINKING_ONLY // ZSTD_getFrameHeader, ZSTD_decodingBufferSize_min
#include <zstd.h>

namespace {

using forge::binary::Bytes;
using forge::binary::Compression;

struct Image {
    Bytes stream;
    Compression compression = Compression::None;
    std::uint64_t size = 0;
    std::uint64_t need = 0; // the least resident memory that decodes it (see above)
    double seconds = 0;     // how long its decode took, in the run
};

// See the file's comment: the least a decoder of `im` must hold resident.
std::uint64_t least_resident(const Image& im) {
    if (im.compression != Compression::Zstd) return im.size;
    std::uint8_t head[ZSTD_FRAMEHEADERSIZE_MAX] = {};
    const std::size_t n = std::min<std::size_t>(sizeof head, im.stream.size());
    forge::binary::copy_bytes(im.stream.data(), n, head);
    ZSTD_frameHeader fh{};
    if (ZSTD_getFrameHeader(&fh, head, n) != 0) return im.size;
    const std::size_t buffers = ZSTD_decodingBufferSize_min(fh.windowSize, fh.frameContentSize);
    if (ZSTD_isError(buffers)) return im.size;
    const std::uint64_t streamed = buffers + ZSTD_DStreamInSize() + ZSTD_DStreamOutSize();
    return std::min<std::uint64_t>(streamed, im.size) + ZSTD_estimateDCtxSize();
}

unsigned threads_like_list() {
    constexpr unsigned kMaxThreads = 16; // ReadOptions::max_threads
    if (const char* v = std::getenv("NVCC_FORGE_LIST_THREADS"); v != nullptr && *v != '\0')
        return std::clamp<unsigned>(static_cast<unsigned>(std::atoi(v)), 1, kMaxThreads);
    return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
}

// One thread's share: the next image in file order, as the reader's workers take them.
bool decode_all(std::vector<Image>& images, std::atomic<std::size_t>& next) {
    std::unique_ptr<std::uint8_t[]> in, out;
    std::uint64_t in_cap = 0, out_cap = 0;
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    bool ok = dctx != nullptr;
    for (std::size_t k = next++; ok && k < images.size(); k = next++) {
        Image& im = images[k];
        const auto started = std::chrono::steady_clock::now();
        if (im.stream.size() > in_cap) {
            in = std::make_unique_for_overwrite<std::uint8_t[]>(im.stream.size());
            in_cap = im.stream.size();
        }
        if (im.size > out_cap) {
            out = std::make_unique_for_overwrite<std::uint8_t[]>(im.size);
            out_cap = im.size;
        }
        forge::binary::copy_bytes(im.stream.data(), im.stream.size(), in.get());
        if (im.compression == Compression::Zstd) {
            const std::size_t n =
                ZSTD_decompressDCtx(dctx, out.get(), im.size, in.get(), im.stream.size());
            ok = !ZSTD_isError(n) && n == im.size;
        } else {
            const int n = LZ4_decompress_safe(
                reinterpret_cast<const char*>(in.get()), reinterpret_cast<char*>(out.get()),
                static_cast<int>(im.stream.size()), static_cast<int>(im.size));
            ok = n >= 0 && static_cast<std::uint64_t>(n) == im.size;
        }
        im.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    ZSTD_freeDCtx(dctx);
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: forge-decode-floor FILE...\n");
        return 2;
    }
    namespace eh = forge::binary::entry_header;
    const unsigned threads = threads_like_list();
    std::uint64_t budget = std::uint64_t{52} << 20; // ReadOptions::max_stream_bytes
    if (const char* v = std::getenv("FORGE_FLOOR_BUDGET_MIB"); v != nullptr && std::atoi(v) > 0)
        budget = static_cast<std::uint64_t>(std::atoi(v)) << 20;
    std::uint64_t all_images = 0, all_in = 0, all_out = 0;
    double all_ms = 0;
    for (int a = 1; a < argc; ++a) {
        const std::string path = argv[a];
        auto entries = forge::binary::read_entries(path);
        auto file = forge::binary::MappedFile::open(path);
        if (!entries || !file) {
            std::fprintf(stderr, "%s: %s\n", path.c_str(),
                         (!entries ? entries.error() : file.error()).to_string().c_str());
            return 2;
        }
        const Bytes bytes = file->bytes();
        std::vector<Image> images;
        std::uint64_t in_bytes = 0, out_bytes = 0;
        for (const auto& e : *entries) {
            if (e.compression == Compression::None || e.target.kind == forge::arch::Kind::Lto)
                continue;
            if (e.member) {
                std::fprintf(stderr, "%s: members of wheels and archives are not measured\n",
                             path.c_str());
                return 2;
            }
            std::uint8_t head[eh::kBaseSize];
            if (!bytes.has(e.entry_offset, eh::kBaseSize)) return 2;
            forge::binary::copy_bytes(bytes.data() + e.entry_offset, eh::kBaseSize, head);
            const Bytes h{head, eh::kBaseSize};
            const Bytes stream =
                bytes.sub(e.entry_offset + h.u32(eh::kHeaderSize), h.u32(eh::kCompressedSize));
            images.push_back({stream, e.compression, e.uncompressed_size, 0, 0});
            images.back().need = least_resident(images.back());
            in_bytes += stream.size();
            out_bytes += e.uncompressed_size;
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::atomic<std::size_t> next{0};
        std::atomic<bool> ok{true};
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                if (!decode_all(images, next)) ok = false;
            });
        for (auto& th : pool)
            th.join();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (!ok) {
            std::fprintf(stderr, "%s: an image did not decode to its declared size\n",
                         path.c_str());
            return 2;
        }
        std::printf("%s images %zu compressed %llu decompressed %llu threads %u decode_ms %.1f\n",
                    path.c_str(), images.size(), static_cast<unsigned long long>(in_bytes),
                    static_cast<unsigned long long>(out_bytes), threads, ms);
        double area = 0, longest = 0, serial = 0; // byte-seconds, seconds, seconds
        for (const Image& im : images) {
            area += static_cast<double>(im.need) * im.seconds;
            longest = std::max(longest, im.seconds);
            serial += im.seconds;
        }
        const double area_ms = area / static_cast<double>(budget) * 1e3;
        std::printf("%s bounded budget_mib %.1f area_ms %.1f longest_ms %.1f one_thread_ms %.1f "
                    "bound_ms %.1f\n",
                    path.c_str(), static_cast<double>(budget) / (1 << 20), area_ms, longest * 1e3,
                    serial * 1e3, std::max({area_ms, longest * 1e3, ms}));
        all_images += images.size();
        all_in += in_bytes;
        all_out += out_bytes;
        all_ms += ms;
    }
    std::printf("total images %llu compressed %llu decompressed %llu threads %u decode_ms %.1f\n",
                static_cast<unsigned long long>(all_images),
                static_cast<unsigned long long>(all_in), static_cast<unsigned long long>(all_out),
                threads, all_ms);
    return 0;
}
