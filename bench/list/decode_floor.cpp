// forge-decode-floor FILE...: the physical floor of `list --toolkit`. Every compressed image
// (cubin or PTX; LTO is never decoded) of the files is decoded, whole, by the same zstd and lz4
// the tools link, on the same number of threads `list --toolkit` uses (NVCC_FORGE_LIST_THREADS,
// else the core count, at most 16), each thread into one reused buffer; nothing is parsed or
// kept. The entries come from the reader's header-only listing (read_entries), the payload from
// the entry header's named fields. Prints one line per file and a total:
//   "FILE images N compressed B decompressed B threads T decode_ms M"
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
#include <zstd.h>

namespace {

using forge::binary::Bytes;
using forge::binary::Compression;

struct Image {
    Bytes stream;
    Compression compression = Compression::None;
    std::uint64_t size = 0;
};

unsigned threads_like_list() {
    constexpr unsigned kMaxThreads = 16; // ReadOptions::max_threads
    if (const char* v = std::getenv("NVCC_FORGE_LIST_THREADS"); v != nullptr && *v != '\0')
        return std::clamp<unsigned>(static_cast<unsigned>(std::atoi(v)), 1, kMaxThreads);
    return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
}

// One thread's share: the next image in file order, as the reader's workers take them.
bool decode_all(const std::vector<Image>& images, std::atomic<std::size_t>& next) {
    std::unique_ptr<std::uint8_t[]> in, out;
    std::uint64_t in_cap = 0, out_cap = 0;
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    bool ok = dctx != nullptr;
    for (std::size_t k = next++; ok && k < images.size(); k = next++) {
        const Image& im = images[k];
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
            images.push_back({stream, e.compression, e.uncompressed_size});
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
