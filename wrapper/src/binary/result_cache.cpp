#include "binary/result_cache.h"

#include "binary/mapped_file.h"
#include "core/file.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <random>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL // header-only: no library to link, the same code on every lane
#include <xxhash.h>

namespace forge::binary {

namespace fs = std::filesystem;

namespace {

// A pack file: a header, then one record per image, sorted by key (docs/fatbin-format.md, "The
// per-image result cache"). Little-endian, as every host this builds for.
constexpr std::string_view kMagic = "NVFTKC01";
// Bumped whenever what inspect_cubin() or the PTX count reports for the same bytes changes: an
// older pack is then replaced, never read.
// 3: the embedded scan's magic offsets after the index.
constexpr std::uint32_t kReaderVersion = 3;
namespace pack_header {
constexpr std::uint64_t kMagic = 0x00;    // 8 bytes kMagic
constexpr std::uint64_t kVersion = 0x08;  // u32 kReaderVersion
constexpr std::uint64_t kCount = 0x0c;    // u32 records
constexpr std::uint64_t kChecksum = 0x10; // u64 XXH3-64 of the records
constexpr std::uint64_t kIdentity = 0x18; // u64 XXH3-64 of file + member
constexpr std::uint64_t kRelease = 0x20;  // 32 bytes: FORGE_VERSION, zero-padded
constexpr std::uint64_t kReleaseSize = 32;
// The file's stamp when the index below was recorded (FileStamp's fields), and the index's size:
// 0 when there is none (a member of a wheel or archive, or a file changed too recently).
constexpr std::uint64_t kStampDev = 0x40;   // u64
constexpr std::uint64_t kStampIno = 0x48;   // u64
constexpr std::uint64_t kStampSize = 0x50;  // u64
constexpr std::uint64_t kStampMtime = 0x58; // i64 ns
constexpr std::uint64_t kStampCtime = 0x60; // i64 ns
constexpr std::uint64_t kIndexCount = 0x68; // u32
// With the index: whether the offsets of the embedded scan's candidates are recorded (u32, 0 or
// 1), and how many follow the index (u32).
constexpr std::uint64_t kScanned = 0x6c;
constexpr std::uint64_t kMagicCount = 0x70;
constexpr std::uint64_t kSize = 0x80;
} // namespace pack_header
// After the records: which image is at which entry offset of the file, sorted by offset.
namespace pack_index {
constexpr std::uint64_t kEntryOffset = 0x00; // u64
constexpr std::uint64_t kRecord = 0x08;      // u32: the record's position
constexpr std::uint64_t kSize = 0x10;
} // namespace pack_index
// After the index: the file offsets where the embedded scan found the fatbin magic, ascending.
constexpr std::uint64_t kMagicSize = 8; // u64 each
namespace pack_record {
constexpr std::uint64_t kHashLow = 0x00;          // u64
constexpr std::uint64_t kHashHigh = 0x08;         // u64
constexpr std::uint64_t kCompressedSize = 0x10;   // u64
constexpr std::uint64_t kUncompressedSize = 0x18; // u64
constexpr std::uint64_t kKind = 0x20;             // u8
constexpr std::uint64_t kCompression = 0x21;      // u8
constexpr std::uint64_t kFlags = 0x22;            // u8: the kFlag* bits below
constexpr std::uint64_t kToolkitSize = 0x23;      // u8, at most kToolkitMax
constexpr std::uint64_t kKernels = 0x24;          // u32
constexpr std::uint64_t kToolkit = 0x28;          // kToolkitMax bytes
constexpr std::uint64_t kToolkitMax = 24;
constexpr std::uint64_t kSize = 0x40;
} // namespace pack_record
constexpr std::uint8_t kFlagStub = 1;
constexpr std::uint8_t kFlagHasArchSpecific = 2;
constexpr std::uint8_t kFlagArchSpecific = 4;
constexpr std::uint8_t kFlagHasToolkit = 8;
constexpr std::uint8_t kKnownFlags = 15;
// Bytes hashed per read of the compressed stream (copy_bytes: pread from a mapped file).
constexpr std::uint64_t kHashSlice = std::uint64_t{1} << 20;
// Far above any real file's images (libtorch_cuda.so: 2,789), far below what a bad count costs.
constexpr std::uint32_t kMaxRecords = 1u << 20;

template <class T> void put_le(std::string& out, std::uint64_t off, T v) {
    std::memcpy(out.data() + off, &v, sizeof(T));
}

std::string release_string() {
    return std::string(FORGE_VERSION).substr(0, pack_header::kReleaseSize);
}

// What a pack holds (the header's identity aside).
struct PackData {
    std::map<ImageKey, ImageResult> records;
    std::optional<FileStamp> stamp;                  // with the index: the file it describes
    std::map<std::uint64_t, ImageKey> index;         // entry offset -> image
    std::optional<std::vector<std::uint64_t>> magic; // with the index: the scan's candidates
};

std::string encode(const PackData& d, std::uint64_t identity) {
    namespace r = pack_record;
    namespace x = pack_index;
    const std::uint64_t n_index = d.stamp ? d.index.size() : 0;
    const bool scanned = d.stamp && d.magic;
    const std::uint64_t n_magic = scanned ? d.magic->size() : 0;
    std::string body(d.records.size() * r::kSize + n_index * x::kSize + n_magic * kMagicSize, '\0');
    std::map<ImageKey, std::uint32_t> position;
    std::uint64_t off = 0;
    for (const auto& [k, v] : d.records) {
        position.emplace(k, static_cast<std::uint32_t>(off / r::kSize));
        put_le(body, off + r::kHashLow, k.hash[0]);
        put_le(body, off + r::kHashHigh, k.hash[1]);
        put_le(body, off + r::kCompressedSize, k.compressed_size);
        put_le(body, off + r::kUncompressedSize, k.uncompressed_size);
        put_le(body, off + r::kKind, k.kind);
        put_le(body, off + r::kCompression, k.compression);
        std::uint8_t flags = v.stub ? kFlagStub : 0;
        if (v.arch_specific)
            flags |= kFlagHasArchSpecific | (*v.arch_specific ? kFlagArchSpecific : 0);
        if (v.toolkit) {
            flags |= kFlagHasToolkit;
            put_le(body, off + r::kToolkitSize, static_cast<std::uint8_t>(v.toolkit->size()));
            std::memcpy(body.data() + off + r::kToolkit, v.toolkit->data(), v.toolkit->size());
        }
        put_le(body, off + r::kFlags, flags);
        put_le(body, off + r::kKernels, static_cast<std::uint32_t>(v.kernels));
        off += r::kSize;
    }
    if (d.stamp)
        for (const auto& [entry, key] : d.index) {
            put_le(body, off + x::kEntryOffset, entry);
            put_le(body, off + x::kRecord, position.at(key));
            off += x::kSize;
        }
    if (scanned)
        for (const std::uint64_t at : *d.magic) {
            put_le(body, off, at);
            off += kMagicSize;
        }
    namespace h = pack_header;
    std::string out(h::kSize, '\0');
    std::memcpy(out.data() + h::kMagic, kMagic.data(), kMagic.size());
    put_le(out, h::kVersion, kReaderVersion);
    put_le(out, h::kCount, static_cast<std::uint32_t>(d.records.size()));
    put_le(out, h::kChecksum, static_cast<std::uint64_t>(XXH3_64bits(body.data(), body.size())));
    put_le(out, h::kIdentity, identity);
    const std::string release = release_string();
    std::memcpy(out.data() + h::kRelease, release.data(), release.size());
    if (d.stamp) {
        put_le(out, h::kStampDev, d.stamp->dev);
        put_le(out, h::kStampIno, d.stamp->ino);
        put_le(out, h::kStampSize, d.stamp->size);
        put_le(out, h::kStampMtime, d.stamp->mtime_ns);
        put_le(out, h::kStampCtime, d.stamp->ctime_ns);
        put_le(out, h::kIndexCount, static_cast<std::uint32_t>(n_index));
        put_le(out, h::kScanned, static_cast<std::uint32_t>(scanned ? 1 : 0));
        put_le(out, h::kMagicCount, static_cast<std::uint32_t>(n_magic));
    }
    return out + body;
}

// Why a pack's bytes are not a pack ("" when they are); `stale` when they are a well-formed pack
// of another reader version or release, which is replaced without a word.
std::string decode(const std::string& text, std::uint64_t identity, PackData& out, bool& stale) {
    namespace h = pack_header;
    namespace r = pack_record;
    namespace x = pack_index;
    const Bytes b{reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
    if (!b.has(0, h::kSize) || b.view(h::kMagic, kMagic.size()) != kMagic)
        return fmt::format("no pack header ({} bytes)", text.size());
    const std::uint32_t count = b.u32(h::kCount), n_index = b.u32(h::kIndexCount);
    const std::uint32_t scanned = b.u32(h::kScanned), n_magic = b.u32(h::kMagicCount);
    if (count > kMaxRecords || n_index > kMaxRecords || n_magic > kMaxRecords || scanned > 1 ||
        (n_index == 0 && (scanned != 0 || n_magic != 0)) || (scanned == 0 && n_magic != 0) ||
        b.size() != h::kSize + std::uint64_t{count} * r::kSize + std::uint64_t{n_index} * x::kSize +
                        std::uint64_t{n_magic} * kMagicSize)
        return fmt::format("{} bytes for {} records, {} index entries and {} scan offsets",
                           text.size(), count, n_index, n_magic);
    const Bytes body = b.from(h::kSize);
    if (XXH3_64bits(body.data(), body.size()) != b.u64(h::kChecksum)) return "checksum mismatch";
    if (b.u64(h::kIdentity) != identity) return "written for another file";
    std::string release = release_string();
    release.resize(h::kReleaseSize, '\0');
    if (b.u32(h::kVersion) != kReaderVersion || b.view(h::kRelease, h::kReleaseSize) != release) {
        stale = true;
        return "";
    }
    std::vector<ImageKey> keys;
    std::uint64_t off = 0;
    for (; off < std::uint64_t{count} * r::kSize; off += r::kSize) {
        ImageKey k;
        k.hash = {body.u64(off + r::kHashLow), body.u64(off + r::kHashHigh)};
        k.compressed_size = body.u64(off + r::kCompressedSize);
        k.uncompressed_size = body.u64(off + r::kUncompressedSize);
        k.kind = body.u8(off + r::kKind);
        k.compression = body.u8(off + r::kCompression);
        const std::uint8_t flags = body.u8(off + r::kFlags);
        const std::uint8_t tk_size = body.u8(off + r::kToolkitSize);
        const std::uint32_t kernels = body.u32(off + r::kKernels);
        if ((flags & ~kKnownFlags) != 0 || tk_size > r::kToolkitMax ||
            kernels > static_cast<std::uint32_t>(INT32_MAX) ||
            (!keys.empty() && !(keys.back() < k)))
            return fmt::format("record {} is malformed", off / r::kSize);
        ImageResult v;
        v.kernels = static_cast<int>(kernels);
        v.stub = (flags & kFlagStub) != 0;
        if ((flags & kFlagHasArchSpecific) != 0) v.arch_specific = (flags & kFlagArchSpecific) != 0;
        if ((flags & kFlagHasToolkit) != 0)
            v.toolkit = std::string(body.view(off + r::kToolkit, tk_size));
        out.records.emplace_hint(out.records.end(), k, std::move(v));
        keys.push_back(k);
    }
    std::optional<std::uint64_t> previous;
    for (std::uint32_t i = 0; i < n_index; ++i, off += x::kSize) {
        const std::uint64_t entry = body.u64(off + x::kEntryOffset);
        const std::uint32_t record = body.u32(off + x::kRecord);
        if (record >= keys.size() || (previous && entry <= *previous))
            return fmt::format("index entry {} is malformed", i);
        out.index.emplace_hint(out.index.end(), entry, keys[record]);
        previous = entry;
    }
    if (scanned != 0) {
        out.magic.emplace();
        for (std::uint32_t i = 0; i < n_magic; ++i, off += kMagicSize) {
            const std::uint64_t at = body.u64(off);
            if (!out.magic->empty() && at <= out.magic->back())
                return fmt::format("scan offset {} is malformed", i);
            out.magic->push_back(at);
        }
    }
    if (n_index != 0)
        out.stamp = FileStamp{b.u64(h::kStampDev), b.u64(h::kStampIno), b.u64(h::kStampSize),
                              static_cast<std::int64_t>(b.u64(h::kStampMtime)),
                              static_cast<std::int64_t>(b.u64(h::kStampCtime))};
    return "";
}

// `untrusted` gets why the pack may not be believed (core/file.h's untrusted_record): its
// checksum proves nothing when someone else could have written it, checksum and all.
std::optional<std::string> read_whole(const fs::path& path, bool& absent, std::string& untrusted) {
    // core/file.h: no symbolic link followed, a FIFO in the pack's place never blocks the read.
    struct stat st {};
    auto opened = open_file(path, O_RDONLY, FileKind::Regular, &st);
    if (!opened) {
        struct stat link {};
        absent = ::lstat(path.c_str(), &link) != 0 && errno == ENOENT;
        return std::nullopt;
    }
    untrusted = untrusted_record(st);
    if (!untrusted.empty()) return std::nullopt;
    const int fd = opened->get();
    std::string text;
    bool ok = static_cast<std::uint64_t>(st.st_size) <=
              pack_header::kSize + std::uint64_t{kMaxRecords} * pack_record::kSize;
    if (ok) {
        text.resize(static_cast<std::size_t>(st.st_size));
        std::size_t done = 0;
        while (ok && done < text.size()) {
            const ssize_t got = ::read(fd, text.data() + done, text.size() - done);
            if (got < 0 && errno == EINTR) continue;
            ok = got > 0;
            if (ok) done += static_cast<std::size_t>(got);
        }
    }
    if (!ok) return std::nullopt;
    return text;
}

} // namespace

ImageKey image_key(const Bytes& stream, Compression c, std::uint64_t uncompressed_size,
                   std::uint16_t kind, std::vector<std::uint8_t>& buffer) {
    ImageKey k;
    k.compressed_size = stream.size();
    k.uncompressed_size = uncompressed_size;
    k.compression = static_cast<std::uint8_t>(c);
    k.kind = static_cast<std::uint8_t>(kind);
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    if (buffer.size() < std::min(stream.size(), kHashSlice))
        buffer.resize(static_cast<std::size_t>(std::min(stream.size(), kHashSlice)));
    for (std::uint64_t off = 0; off < stream.size(); off += kHashSlice) {
        const std::uint64_t n = std::min(kHashSlice, stream.size() - off);
        copy_bytes(stream.data() + off, n, buffer.data());
        XXH3_128bits_update(&state, buffer.data(), static_cast<std::size_t>(n));
    }
    const XXH128_hash_t h = XXH3_128bits_digest(&state);
    k.hash = {h.low64, h.high64};
    return k;
}

ImageKey image_key_of(const std::uint8_t* data, std::uint64_t size, Compression c,
                      std::uint64_t uncompressed_size, std::uint16_t kind) {
    ImageKey k;
    k.compressed_size = size;
    k.uncompressed_size = uncompressed_size;
    k.compression = static_cast<std::uint8_t>(c);
    k.kind = static_cast<std::uint8_t>(kind);
    const XXH128_hash_t h = XXH3_128bits(data, static_cast<std::size_t>(size));
    k.hash = {h.low64, h.high64};
    return k;
}

ResultCache::ResultCache(fs::path dir) : dir_(std::move(dir)) {}

std::shared_ptr<ResultCache::Pack>
ResultCache::pack(const std::string& file, const std::optional<std::string>& member,
                  const std::optional<std::pair<FileStamp, bool>>& stamp) {
    std::error_code ec;
    fs::path abs = fs::absolute(file, ec);
    if (ec) abs = file;
    std::string identity_text = abs.lexically_normal().string();
    identity_text += '\0';
    identity_text += member.value_or("");
    const std::uint64_t identity = XXH3_64bits(identity_text.data(), identity_text.size());
    auto p = std::make_shared<Pack>(dir_ / fmt::format("{:016x}.pack", identity), identity);
    if (stamp && stamp->second) p->stamp_ = stamp->first;
    if (dir_.empty()) return p;
    bool absent = false;
    std::string untrusted;
    auto text = read_whole(p->path_, absent, untrusted);
    if (!text) {
        if (!untrusted.empty()) {
            p->rewrite_ = true;
            warn(fmt::format("the --toolkit cache file {} is not trusted ({}): not used, rebuilt",
                             p->path_.string(), untrusted));
        } else if (!absent) {
            p->rewrite_ = true;
            warn(fmt::format("cannot read the --toolkit cache file {}: not used, rebuilt",
                             p->path_.string()));
        }
        return p;
    }
    bool stale = false;
    PackData data;
    const std::string why = decode(*text, identity, data, stale);
    if (!why.empty()) {
        p->rewrite_ = true;
        warn(fmt::format("the --toolkit cache file {} is corrupt ({}): not used, rebuilt",
                         p->path_.string(), why));
        return p;
    }
    p->stored_ = std::move(data.records);
    p->stored_stamp_ = data.stamp;
    p->stored_index_ = std::move(data.index);
    p->stored_magic_ = std::move(data.magic);
    p->index_valid_ = stamp && data.stamp && *data.stamp == stamp->first;
    return p;
}

std::optional<std::vector<std::uint64_t>> ResultCache::known_magic(Pack& pack) {
    std::lock_guard lock(pack.mutex_);
    if (!pack.index_valid_ || !pack.stored_magic_) return std::nullopt;
    pack.seen_magic_ = pack.stored_magic_;
    return pack.stored_magic_;
}

void ResultCache::put_magic(Pack& pack, std::vector<std::uint64_t> offsets) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    if (offsets.size() > kMaxRecords) return; // not kept: the next read searches again
    std::lock_guard lock(pack.mutex_);
    pack.seen_magic_ = std::move(offsets);
}

std::optional<ImageKey> ResultCache::known_key(Pack& pack, std::uint64_t entry_offset) {
    std::lock_guard lock(pack.mutex_);
    if (!pack.index_valid_) return std::nullopt;
    auto it = pack.stored_index_.find(entry_offset);
    if (it == pack.stored_index_.end()) return std::nullopt;
    return it->second;
}

std::optional<ImageResult> ResultCache::find(Pack& pack, std::uint64_t entry_offset,
                                             const ImageKey& key) {
    std::lock_guard lock(pack.mutex_);
    auto it = pack.stored_.find(key);
    if (it == pack.stored_.end()) return std::nullopt;
    pack.seen_.insert_or_assign(key, it->second);
    pack.seen_index_.insert_or_assign(entry_offset, key);
    return it->second;
}

std::optional<ImageResult> ResultCache::find_known(Pack& pack, std::uint64_t entry_offset) {
    std::lock_guard lock(pack.mutex_);
    if (!pack.index_valid_) return std::nullopt;
    const auto at = pack.stored_index_.find(entry_offset);
    if (at == pack.stored_index_.end()) return std::nullopt;
    const auto it = pack.stored_.find(at->second);
    if (it == pack.stored_.end()) return std::nullopt;
    pack.confirmed_.push_back(entry_offset);
    return it->second;
}

void ResultCache::put(Pack& pack, std::uint64_t entry_offset, const ImageKey& key,
                      const ImageResult& result) {
    if (result.toolkit && result.toolkit->size() > pack_record::kToolkitMax) return;
    if (result.kernels < 0) return;
    std::lock_guard lock(pack.mutex_);
    pack.seen_.insert_or_assign(key, result);
    pack.seen_index_.insert_or_assign(entry_offset, key);
}

void ResultCache::save(Pack& pack) {
    if (dir_.empty()) return;
    std::lock_guard lock(pack.mutex_);
    // Every image of the index confirmed and nothing else seen: the pack on disk says what this
    // read would write (the common second run).
    std::sort(pack.confirmed_.begin(), pack.confirmed_.end());
    pack.confirmed_.erase(std::unique(pack.confirmed_.begin(), pack.confirmed_.end()),
                          pack.confirmed_.end());
    const bool magic_kept = !pack.seen_magic_ || pack.seen_magic_ == pack.stored_magic_;
    if (pack.seen_.empty() && pack.seen_index_.empty() && !pack.rewrite_ && magic_kept &&
        pack.index_valid_ && pack.confirmed_.size() == pack.stored_index_.size() &&
        (!pack.stamp_ || pack.stamp_ == pack.stored_stamp_)) {
        pack.confirmed_.clear();
        return;
    }
    for (const std::uint64_t entry : pack.confirmed_) { // seen, as find() records it
        const ImageKey& key = pack.stored_index_.at(entry);
        pack.seen_.insert_or_assign(key, pack.stored_.at(key));
        pack.seen_index_.insert_or_assign(entry, key);
    }
    pack.confirmed_.clear();
    // The index is kept with the stamp it was recorded under: a stable stamp of this read, or the
    // stored one when this read confirmed it.
    std::optional<FileStamp> stamp = pack.stamp_;
    if (!stamp && pack.index_valid_) stamp = pack.stored_stamp_;
    auto index = stamp ? pack.seen_index_ : std::map<std::uint64_t, ImageKey>{};
    if (!stamp || index.empty()) stamp.reset();
    // A read that did not scan (a caller that asked for no embedded fatbins) keeps what an earlier
    // one recorded for the same, unchanged file.
    auto magic =
        stamp ? (pack.seen_magic_ || !pack.index_valid_ ? pack.seen_magic_ : pack.stored_magic_)
              : std::nullopt;
    if (pack.seen_ == pack.stored_ && stamp == pack.stored_stamp_ &&
        (!stamp || (index == pack.stored_index_ && magic == pack.stored_magic_)) && !pack.rewrite_)
        return;
    std::error_code ec;
    if (pack.seen_.empty()) {
        fs::remove(pack.path_, ec); // nothing to keep for this file (or only a corrupt copy)
    } else {
        fs::create_directories(dir_, ec);
        // Readers see the old pack or the new one; a failure only costs the next run its speed.
        (void)replace_file(pack.path_,
                           encode(PackData{pack.seen_, stamp, index, magic}, pack.identity_));
    }
    pack.stored_ = pack.seen_;
    pack.stored_stamp_ = stamp;
    pack.stored_index_ = std::move(index);
    pack.stored_magic_ = std::move(magic);
    pack.rewrite_ = false;
}

void ResultCache::warn(std::string message) {
    std::lock_guard lock(mutex_);
    warnings_.push_back(std::move(message));
}

std::vector<std::string> ResultCache::take_warnings() {
    std::lock_guard lock(mutex_);
    return std::exchange(warnings_, {});
}

} // namespace forge::binary
