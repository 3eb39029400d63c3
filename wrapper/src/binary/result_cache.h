// `--toolkit`'s answers kept across runs: what reading one compressed image (a cubin's kernels,
// toolkit, `a` and stub, a PTX's kernels) gave, keyed by a hash of the image's compressed bytes,
// so that listing an unchanged file again decodes nothing (docs/fatbin-format.md, "The per-image
// result cache"). Lives in `$NVCC_FORGE_CACHE_DIR/toolkit` (core/paths.h: cache_root()).
//
// An answer is found only for the same bytes: the key is XXH3-128 of every compressed byte with
// the compressed and declared sizes, the compression and the entry kind. A changed image has
// another key, so it is read again (and reports its own answer or error). The hash detects
// change, not an adversary: it is not cryptographic, and one who can write the cache directory
// can write any answer into it. A file of the cache that does not read back whole (its
// checksum, its layout) is named in a warning, not used, and written anew; one written by another
// release or reader version is quietly replaced. Files are written to a temporary name and
// renamed into place, so a concurrent run reads the old file or the new one, never a torn one.
#pragma once

#include "binary/bytes.h"
#include "binary/reader.h"
#include "core/env.h"
#include "core/file_stamp.h"
#include "core/paths.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace forge::binary {

struct ImageKey {
    std::array<std::uint64_t, 2> hash{}; // XXH3-128 of the compressed bytes (low, high)
    std::uint64_t compressed_size = 0;
    std::uint64_t uncompressed_size = 0;
    std::uint8_t compression = 0; // Compression
    std::uint8_t kind = 0;        // the fatbin entry kind (kKindElf, kKindPtx)
    auto operator<=>(const ImageKey&) const = default;
};

// What one image read gave (Entry's fields of the same names); for PTX only `kernels`.
struct ImageResult {
    int kernels = 0;
    bool stub = false; // kernel-less: nvlink's device-link stub, or no `.text.*` section
    std::optional<bool> arch_specific;
    std::optional<std::string> toolkit;
    bool operator==(const ImageResult&) const = default;
};

// The key of `stream` (the compressed bytes of an entry; read with copy_bytes(), so a mapped
// file's pages are not faulted in). `buffer` is the caller's scratch, reused between calls.
ImageKey image_key(const Bytes& stream, Compression c, std::uint64_t uncompressed_size,
                   std::uint16_t kind, std::vector<std::uint8_t>& buffer);
// The same key of bytes already copied out (`data`: the stream's `size` bytes).
ImageKey image_key_of(const std::uint8_t* data, std::uint64_t size, Compression c,
                      std::uint64_t uncompressed_size, std::uint16_t kind);

// The index is kept with the file's stamp (core/file_stamp.h: FileStamp, file_stamp).

// `toolkit/` under the cache root (NVCC_FORGE_CACHE_DIR, else the XDG/HOME default); empty
// when there is none.
inline std::filesystem::path default_result_cache_dir() {
    const std::filesystem::path root = cache_root(getenv_str("NVCC_FORGE_CACHE_DIR"));
    return root.empty() ? root : root / "toolkit";
}

class ResultCache {
  public:
    // `dir` is the cache's own folder (made on the first write); empty: nothing is kept.
    explicit ResultCache(std::filesystem::path dir);
    ResultCache(const ResultCache&) = delete;
    ResultCache& operator=(const ResultCache&) = delete;

    // The answers kept for the images of one ELF (a file, or a member of a wheel or archive),
    // loaded on first use. `stamp`: the file's, for a file read whole (not a member), taken
    // before it was read. Lookups and additions are thread-safe.
    class Pack;
    std::shared_ptr<Pack> pack(const std::string& file, const std::optional<std::string>& member,
                               const std::optional<std::pair<FileStamp, bool>>& stamp);
    // The key of the image at `entry_offset`, recorded with a stamp equal to this file's: its
    // bytes are unchanged, no need to hash them again. nullopt: hash them.
    static std::optional<ImageKey> known_key(Pack& pack, std::uint64_t entry_offset);
    static std::optional<ImageResult> find(Pack& pack, std::uint64_t entry_offset,
                                           const ImageKey& key);
    // known_key and find at once, for an image of an unchanged file: nullopt when either has no
    // answer. What it confirms is kept without a copy (a cached run of libtorch_cuda.so confirms
    // 2,789 images and changes nothing).
    static std::optional<ImageResult> find_known(Pack& pack, std::uint64_t entry_offset);
    static void put(Pack& pack, std::uint64_t entry_offset, const ImageKey& key,
                    const ImageResult& result);
    // The file offsets where the embedded scan found the fatbin magic (its candidates, before
    // they were checked), recorded with a stamp equal to this file's: the file is unchanged, the
    // search need not run again. nullopt: search, then put_magic what it found.
    static std::optional<std::vector<std::uint64_t>> known_magic(Pack& pack);
    static void put_magic(Pack& pack, std::vector<std::uint64_t> offsets);
    // Writes the pack when what this read saw differs from what was on disk: the answers of the
    // images seen, and no other (an image no longer in the file leaves the cache with it), with
    // the index of entry offsets when the file's stamp is stable.
    void save(Pack& pack);

    // Warnings (a corrupt cache file, named) since the last call, for the command to print.
    std::vector<std::string> take_warnings();
    [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

  private:
    void warn(std::string message);
    std::filesystem::path dir_;
    std::mutex mutex_;
    std::vector<std::string> warnings_;
};

class ResultCache::Pack {
  public:
    Pack(std::filesystem::path path, std::uint64_t identity)
        : path_(std::move(path)), identity_(identity) {}

  private:
    friend class ResultCache;
    std::filesystem::path path_;
    std::uint64_t identity_ = 0; // hash of file + member, stored inside against a name clash
    std::mutex mutex_;
    std::map<ImageKey, ImageResult> stored_; // what the file held
    std::optional<FileStamp> stored_stamp_;
    std::map<std::uint64_t, ImageKey> stored_index_;
    bool index_valid_ = false;             // stored_stamp_ is this read's stamp
    std::optional<FileStamp> stamp_;       // this read's, when stable (to be recorded)
    std::map<ImageKey, ImageResult> seen_; // what this read found or computed
    std::map<std::uint64_t, ImageKey> seen_index_;
    // Entry offsets find_known answered from the index: seen, as find's are, without the copy
    // (merged into seen_ and seen_index_ only when the pack is written).
    std::vector<std::uint64_t> confirmed_;
    std::optional<std::vector<std::uint64_t>> stored_magic_; // the scan's, with the index
    std::optional<std::vector<std::uint64_t>> seen_magic_;
    bool rewrite_ = false; // the file on disk is corrupt: replace it
};

} // namespace forge::binary
