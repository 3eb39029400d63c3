#include "binary/zip_io.h"

#include "binary/mapped_file.h"
#include "core/file.h"
#include "core/text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <initializer_list>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace forge::binary::zipio {

// Where the zip's bytes are: memory (copy_bytes: pread when it is a mapped file, so reading a
// 366 MB wheel does not keep its pages resident) or a file of our own (pread).
class ZipSource {
  public:
    ZipSource(const std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}
    ZipSource(int fd, std::uint64_t size) : size_(size), fd_(fd) {}
    ZipSource(const ZipSource&) = delete;
    ZipSource& operator=(const ZipSource&) = delete;
    ~ZipSource() {
        if (fd_ >= 0) ::close(fd_);
    }
    [[nodiscard]] std::uint64_t size() const { return size_; }
    bool read(std::uint64_t off, std::uint64_t n, std::uint8_t* out) const {
        if (off > size_ || n > size_ - off) return false;
        if (n == 0) return true;
        if (fd_ < 0) {
            copy_bytes(data_ + off, n, out);
            return true;
        }
        std::uint64_t done = 0;
        while (done < n) {
            const ssize_t got = ::pread(fd_, out + done, static_cast<std::size_t>(n - done),
                                        static_cast<off_t>(off + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            done += static_cast<std::uint64_t>(got);
        }
        return true;
    }

  private:
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    int fd_ = -1;
};

namespace {

constexpr std::uint64_t kInChunk = 64u << 10;
constexpr std::size_t kWriteBuffer = 1u << 20;
constexpr std::uint64_t kMax32 = 0xFFFFFFFFu;
constexpr std::uint64_t kMax16 = 0xFFFFu;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint16_t kUnicodePathExtraId = 0x7075;
constexpr std::uint32_t kSigLocal = 0x04034b50;
constexpr std::uint32_t kSigCentral = 0x02014b50;
constexpr std::uint32_t kSigEnd = 0x06054b50;
constexpr std::uint32_t kSigEnd64 = 0x06064b50;
constexpr std::uint32_t kSigLocator64 = 0x07064b50;
constexpr std::uint64_t kLocalSize = 30;      // the local header without name and extra field
constexpr std::uint64_t kCentralSize = 46;    // a central header without name, extra, comment
constexpr std::uint64_t kEndSize = 22;        // the end record without its comment
constexpr std::uint64_t kLocator64Size = 20;  // the zip64 end locator
constexpr std::uint64_t kEnd64Size = 56;      // the zip64 end record, no extensible data
constexpr std::uint16_t kVersionZip64 = 45;   // "version needed" of a zip64 record
constexpr std::uint16_t kVersionDefault = 20; // deflate, directories
constexpr std::uint32_t kUnixMadeBy = (3u << 8) | kVersionZip64; // made on Unix, zip 4.5
constexpr std::uint32_t kRegularFile0644 = 0100644u << 16;
constexpr std::uint32_t kFlagEncrypted = 1u << 0;
constexpr std::uint32_t kFlagDataDescriptor = 1u << 3;
constexpr std::uint32_t kFlagUtf8 = 1u << 11;
constexpr std::uint32_t kFlagPatched = 1u << 5;
constexpr std::uint32_t kFlagStrongEncryption = 1u << 6;
constexpr std::uint32_t kVersionMaxRead = 63; // zipfile's MAX_EXTRACT_VERSION
constexpr std::uint32_t kHostUnix = 3;
constexpr std::uint32_t kHostMacOs = 19;
constexpr std::int64_t kDosEpoch = 315532800; // 1980-01-01T00:00:00Z
constexpr int kDeflateMemLevel = 8;           // zlib's default

// Little-endian fields appended to a header.
struct Le {
    std::string s;
    Le& u16(std::uint64_t v) {
        for (int i = 0; i < 2; ++i)
            s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        return *this;
    }
    Le& u32(std::uint64_t v) {
        for (int i = 0; i < 4; ++i)
            s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        return *this;
    }
    Le& u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i)
            s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        return *this;
    }
    Le& str(std::string_view v) {
        s.append(v);
        return *this;
    }
};

bool has_high_bytes(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return (c & 0x80) != 0; });
}

std::uint64_t le_at(const std::uint8_t* p, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

// The extra-field blocks other than the zip64 one: the writer adds its own where a size or offset
// needs it, so a copied one would be a second, stale copy. Bytes that are not blocks are kept.
std::string without_zip64(const std::string& extra) {
    std::string out;
    std::size_t at = 0;
    while (at + 4 <= extra.size()) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(extra.data()) + at;
        const auto id = static_cast<std::uint16_t>(le_at(p, 2));
        const std::size_t len = le_at(p + 2, 2);
        if (len > extra.size() - at - 4) return extra;
        if (id != kZip64ExtraId) out.append(extra, at, 4 + len);
        at += 4 + len;
    }
    return at == extra.size() ? out : extra;
}

Error zip_error(std::uint64_t offset, std::string message) {
    Error e{std::move(message)};
    e.offset = offset;
    return e;
}

// The end of central directory record (APPNOTE 4.3.16) and, where it defers to them, the zip64
// end record and its locator (4.3.14, 4.3.15): where the central directory is and what it holds.
struct EndRecords {
    std::uint64_t count = 0;
    std::uint64_t cd_size = 0;
    std::uint64_t cd_offset = 0; // as declared: relative to the zip proper
    std::uint64_t cd_end = 0;    // where the central directory ends in the file
    std::string comment;
    std::string note; // said with every error about the directory: why its values may be off
};

// The end record is searched as Python's zipfile (pip's reader) searches it: the last 22 bytes
// when they are a record without a comment, else the last signature in the last 22 + 65,536
// bytes; one with fewer than 22 bytes after it ends the search (zipfile takes no earlier one, so
// neither may we: a comment ending in "PK\5\6" would make the two readers see two zips).
Result<std::uint64_t> find_end_record(const ZipSource& src, std::vector<std::uint8_t>& tail,
                                      std::uint64_t& from) {
    const std::uint64_t window = std::min<std::uint64_t>(src.size(), kEndSize + kMax16 + 1);
    from = src.size() - window;
    tail.resize(window);
    if (window == 0) return zip_error(0, "an empty file, not a zip");
    if (!src.read(from, window, tail.data())) return zip_error(from, "cannot read the zip's end");
    if (window >= kEndSize && le_at(tail.data() + window - kEndSize, 4) == kSigEnd &&
        le_at(tail.data() + window - 2, 2) == 0)
        return window - kEndSize;
    for (std::uint64_t k = window; k >= 4; --k) {
        if (le_at(tail.data() + k - 4, 4) != kSigEnd) continue;
        if (window - (k - 4) < kEndSize)
            return zip_error(from + k - 4,
                             fmt::format("the last end of central directory signature, at "
                                         "0x{:x}, has fewer than {} bytes after it: Python's "
                                         "zipfile (and pip) take the file for no zip",
                                         from + k - 4, kEndSize));
        return k - 4;
    }
    return zip_error(from, fmt::format("no end of central directory record: its signature "
                                       "PK\\5\\6 is in none of the last {} bytes "
                                       "(0x{:x}..0x{:x}), where a zip ends; the file is not a "
                                       "zip or was cut short",
                                       window, from, src.size()));
}

// The zip64 end record the locator before the end record points to.
Status read_zip64_end(const ZipSource& src, std::uint64_t end_at, EndRecords& r) {
    std::uint8_t loc[kLocator64Size];
    const std::uint64_t loc_at = end_at - kLocator64Size;
    if (!src.read(loc_at, kLocator64Size, loc)) return zip_error(loc_at, "cannot read");
    if (le_at(loc + 4, 4) != 0 || le_at(loc + 16, 4) > 1)
        return zip_error(loc_at, "a zip64 locator for a zip split over several disks: not read");
    const std::uint64_t rec_at = le_at(loc + 8, 8);
    std::uint8_t rec[kEnd64Size];
    if (rec_at > loc_at || loc_at - rec_at < kEnd64Size || !src.read(rec_at, kEnd64Size, rec) ||
        le_at(rec, 4) != kSigEnd64)
        return zip_error(loc_at, fmt::format("the zip64 locator at 0x{:x} points to 0x{:x}, "
                                             "where no zip64 end record is",
                                             loc_at, rec_at));
    // Python's zipfile (pip's reader) ignores the locator's offset and reads the record right
    // before the locator (a record with extensible data it does not find, and falls back to the
    // 32-bit values): a record anywhere else would make the two readers see two directories.
    if (loc_at - rec_at != kEnd64Size)
        return zip_error(loc_at, fmt::format("the zip64 locator at 0x{:x} points to a zip64 end "
                                             "record at 0x{:x}, not to the {} bytes right before "
                                             "it (0x{:x}), where Python's zipfile and pip read "
                                             "one",
                                             loc_at, rec_at, kEnd64Size, loc_at - kEnd64Size));
    if (le_at(rec + 16, 4) != 0 || le_at(rec + 20, 4) != 0 ||
        le_at(rec + 24, 8) != le_at(rec + 32, 8))
        return zip_error(rec_at, "a zip64 end record for a zip split over several disks: not "
                                 "read");
    r.count = le_at(rec + 32, 8);
    r.cd_size = le_at(rec + 40, 8);
    r.cd_offset = le_at(rec + 48, 8);
    r.cd_end = rec_at;
    return ok_status();
}

Result<EndRecords> read_end_records(const ZipSource& src) {
    std::vector<std::uint8_t> tail;
    std::uint64_t from = 0;
    auto found = find_end_record(src, tail, from);
    if (!found) return std::move(found).error();
    const std::uint64_t end_at = from + *found;
    const std::uint8_t* rec = tail.data() + *found;
    EndRecords r;
    const std::uint64_t comment_len = le_at(rec + 20, 2);
    const std::uint64_t after = tail.size() - *found - kEndSize;
    r.comment.assign(reinterpret_cast<const char*>(rec + kEndSize),
                     static_cast<std::size_t>(std::min(comment_len, after)));
    if (le_at(rec + 4, 2) != 0 || le_at(rec + 6, 2) != 0 || le_at(rec + 8, 2) != le_at(rec + 10, 2))
        return zip_error(end_at, "a zip split over several disks: not read");
    r.count = le_at(rec + 10, 2);
    r.cd_size = le_at(rec + 12, 4);
    r.cd_offset = le_at(rec + 16, 4);
    r.cd_end = end_at;
    const bool deferred = r.count == kMax16 || r.cd_size == kMax32 || r.cd_offset == kMax32;
    std::uint8_t sig[4] = {};
    const bool has_locator = end_at >= kLocator64Size &&
                             src.read(end_at - kLocator64Size, 4, sig) &&
                             le_at(sig, 4) == kSigLocator64;
    // Without a locator the values stand as written: Python's zipfile writes a count of
    // 65,535 so, with no zip64 record. Should they not fit, the marks are named.
    if (has_locator) FORGE_TRY_STATUS(read_zip64_end(src, end_at, r));
    if (deferred && !has_locator)
        r.note = "; the end record's 0xFFFF / 0xFFFFFFFF fields defer to a zip64 end record, and "
                 "no zip64 locator precedes it";
    if (r.cd_size > r.cd_end)
        return zip_error(end_at, fmt::format("the end record at 0x{:x} declares a central "
                                             "directory of {} bytes, more than precede it{}",
                                             end_at, r.cd_size, r.note));
    return r;
}

// The zip64 extra blocks' values for the fields whose 32-bit value is 0xFFFFFFFF, in APPNOTE's
// order (4.5.3): inflated size, stored size, local header offset; every block applied in turn,
// as Python's zipfile does. An error when a block is too short for them or runs past the field
// (zipfile: "Corrupt extra field"); without a block the 32-bit values stand.
std::optional<std::string> apply_zip64_extra(const std::string& extra, Entry& e) {
    std::size_t at = 0;
    while (at + 4 <= extra.size()) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(extra.data()) + at;
        const std::size_t len = le_at(p + 2, 2);
        if (len > extra.size() - at - 4)
            return fmt::format("its extra field's block 0x{:04x} at byte {} declares {} bytes, "
                               "past the field's end: Python's zipfile (and pip) refuse it",
                               le_at(p, 2), at, len);
        if (le_at(p, 2) == kZip64ExtraId) {
            std::size_t k = 0;
            auto take = [&](std::uint64_t& field, bool size) {
                if (field != kMax32 && !(size && field == UINT64_MAX)) return true;
                if (k + 8 > len) return false;
                field = le_at(p + 4 + k, 8);
                k += 8;
                return true;
            };
            if (!take(e.size, true) || !take(e.comp_size, false) || !take(e.local_offset, false))
                return std::string("its zip64 extra field is too short for the sizes and offset "
                                   "it stands for");
        }
        at += 4 + len;
    }
    return std::nullopt;
}

// One central-directory header at `at` of `cd`; `next` past it.
Result<Entry> parse_central(const std::vector<std::uint8_t>& cd, std::uint64_t at,
                            std::uint64_t cd_start, std::uint64_t index, std::uint64_t& next) {
    const std::uint64_t where = cd_start + at;
    if (cd.size() - at < kCentralSize || le_at(cd.data() + at, 4) != kSigCentral)
        return zip_error(where, fmt::format("central directory entry {}: no central header at "
                                            "0x{:x}",
                                            index, where));
    const std::uint8_t* h = cd.data() + at;
    const std::uint64_t name_len = le_at(h + 28, 2);
    const std::uint64_t extra_len = le_at(h + 30, 2);
    const std::uint64_t comment_len = le_at(h + 32, 2);
    if (cd.size() - at - kCentralSize < name_len + extra_len + comment_len)
        return zip_error(where, fmt::format("central directory entry {}: its name, extra field "
                                            "and comment run past the central directory",
                                            index));
    Entry e;
    e.version_made_by = static_cast<std::uint32_t>(le_at(h + 4, 2));
    e.version_needed = static_cast<std::uint32_t>(le_at(h + 6, 2));
    e.flags = static_cast<std::uint32_t>(le_at(h + 8, 2));
    e.method = static_cast<int>(le_at(h + 10, 2));
    e.dos_time = static_cast<std::uint32_t>((le_at(h + 14, 2) << 16) | le_at(h + 12, 2));
    e.crc = static_cast<std::uint32_t>(le_at(h + 16, 4));
    e.comp_size = le_at(h + 20, 4);
    e.size = le_at(h + 24, 4);
    e.internal_attributes = static_cast<std::uint32_t>(le_at(h + 36, 2));
    e.external_attributes = static_cast<std::uint32_t>(le_at(h + 38, 4));
    e.local_offset = le_at(h + 42, 4);
    const char* text = reinterpret_cast<const char*>(h + kCentralSize);
    e.name.assign(text, name_len);
    e.extra.assign(text + name_len, extra_len);
    e.comment.assign(text + name_len + extra_len, comment_len);
    e.encrypted = (e.flags & kFlagEncrypted) != 0;
    e.index = index;
    e.header_offset = where;
    if (auto bad = apply_zip64_extra(e.extra, e))
        return zip_error(where,
                         fmt::format("central directory entry {} ('{}'): {}", index, e.name, *bad));
    // Python's zipfile refuses a zip with a member needing a later zip version than 6.3 (the low
    // byte of "version needed"), a directory included.
    if ((e.version_needed & 0xFF) > kVersionMaxRead)
        return zip_error(where, fmt::format("central directory entry {} ('{}') needs zip version "
                                            "{}.{}, past 6.3: Python's zipfile (and pip) refuse "
                                            "it",
                                            index, e.name, (e.version_needed & 0xFF) / 10,
                                            (e.version_needed & 0xFF) % 10));

    next = at + kCentralSize + name_len + extra_len + comment_len;
    return e;
}

// Bytes 0x80-0xFF of code page 437, the name encoding of a member without the UTF-8 flag
// (APPNOTE appendix D), as Python's zipfile decodes it.
constexpr std::uint16_t kCp437High[128] = {
    0x00C7, 0x00FC, 0x00E9, 0x00E2, 0x00E4, 0x00E0, 0x00E5, 0x00E7, 0x00EA, 0x00EB, 0x00E8, 0x00EF,
    0x00EE, 0x00EC, 0x00C4, 0x00C5, 0x00C9, 0x00E6, 0x00C6, 0x00F4, 0x00F6, 0x00F2, 0x00FB, 0x00F9,
    0x00FF, 0x00D6, 0x00DC, 0x00A2, 0x00A3, 0x00A5, 0x20A7, 0x0192, 0x00E1, 0x00ED, 0x00F3, 0x00FA,
    0x00F1, 0x00D1, 0x00AA, 0x00BA, 0x00BF, 0x2310, 0x00AC, 0x00BD, 0x00BC, 0x00A1, 0x00AB, 0x00BB,
    0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x2561, 0x2562, 0x2556, 0x2555, 0x2563, 0x2551, 0x2557,
    0x255D, 0x255C, 0x255B, 0x2510, 0x2514, 0x2534, 0x252C, 0x251C, 0x2500, 0x253C, 0x255E, 0x255F,
    0x255A, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256C, 0x2567, 0x2568, 0x2564, 0x2565, 0x2559,
    0x2558, 0x2552, 0x2553, 0x256B, 0x256A, 0x2518, 0x250C, 0x2588, 0x2584, 0x258C, 0x2590, 0x2580,
    0x03B1, 0x00DF, 0x0393, 0x03C0, 0x03A3, 0x03C3, 0x00B5, 0x03C4, 0x03A6, 0x0398, 0x03A9, 0x03B4,
    0x221E, 0x03C6, 0x03B5, 0x2229, 0x2261, 0x00B1, 0x2265, 0x2264, 0x2320, 0x2321, 0x00F7, 0x2248,
    0x00B0, 0x2219, 0x00B7, 0x221A, 0x207F, 0x00B2, 0x25A0, 0x00A0,
};

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// The name an Info-ZIP Unicode Path extra field (0x7075: version 1, the CRC-32 of the name as
// stored, the name in UTF-8) gives the member, when it applies; Python's zipfile reads it as the
// member's name from 3.12 on.
std::optional<std::string> unicode_path(const Entry& e) {
    std::size_t at = 0;
    while (at + 4 <= e.extra.size()) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(e.extra.data()) + at;
        const std::size_t len = le_at(p + 2, 2);
        if (len > e.extra.size() - at - 4) break;
        const auto crc = crc32_z(0, reinterpret_cast<const Bytef*>(e.name.data()), e.name.size());
        if (le_at(p, 2) == kUnicodePathExtraId && len > 5 && p[4] == 1 && le_at(p + 5, 4) == crc)
            return std::string(reinterpret_cast<const char*>(p + 9), len - 5);
        at += 4 + len;
    }
    return std::nullopt;
}

} // namespace

std::string decoded_name(const Entry& e) {
    if ((e.flags & kFlagUtf8) != 0) return e.name;
    std::string out;
    out.reserve(e.name.size());
    for (const char c : e.name) {
        const auto b = static_cast<std::uint8_t>(c);
        append_utf8(out, b < 0x80 ? b : kCp437High[b - 0x80]);
    }
    return out;
}

bool Entry::is_symlink() const {
    const std::uint32_t host = version_made_by >> 8;
    if (host != kHostUnix && host != kHostMacOs) return false;
    return ((external_attributes >> 16) & S_IFMT) == S_IFLNK;
}

std::optional<std::string> install_path(std::string_view name, std::string* why) {
    auto refuse = [&](std::string reason) -> std::optional<std::string> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    if (name.find('\0') != std::string_view::npos)
        return refuse("it holds a NUL byte (Python's zipfile cuts the name there)");
    if (name.find('\\') != std::string_view::npos)
        return refuse("it holds a backslash (a directory separator where the wheel is installed "
                      "on Windows)");
    if (name.starts_with('/')) return refuse("it is an absolute path");
    if (name.size() >= 2 && name[1] == ':' &&
        ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
        return refuse("it starts with a drive");
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (start <= name.size()) {
        const std::size_t slash = std::min(name.find('/', start), name.size());
        const std::string_view part = name.substr(start, slash - start);
        if (part == "..") {
            if (parts.empty()) return refuse("'..' climbs above the directory it is installed in");
            parts.pop_back();
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }
    if (parts.empty()) return refuse("it names the installation directory itself");
    // pip installs `<dist>.data/<scheme>/<path>` into the scheme's directory: platlib and
    // purelib are where the wheel's root goes too (the binary distribution format, "The .data
    // directory"), so `demo-1.0.data/platlib/demo/_C.so` is the file `demo/_C.so`. pip 23 tells
    // such a member by the first component of the name as written, then takes the scheme from
    // the normalised one: `x.data/../y/platlib/_C.so` is `_C.so`, `a/../x.data/platlib/_C.so`
    // a file in the root. A directory entry pip skips.
    if (name.substr(0, name.find('/')).ends_with(".data") && !name.ends_with('/')) {
        if (parts.size() < 3)
            return refuse("a member of a .data directory that is not <scheme>/<path> (pip "
                          "refuses it)");
        static constexpr std::string_view kSchemes[] = {"platlib", "purelib", "headers", "scripts",
                                                        "data"};
        if (std::find(std::begin(kSchemes), std::end(kSchemes), parts[1]) == std::end(kSchemes))
            return refuse(fmt::format("'{}' is no install scheme (pip knows platlib, purelib, "
                                      "headers, scripts and data, and refuses it)",
                                      parts[1]));
        if (parts[1] == "platlib" || parts[1] == "purelib")
            parts.erase(parts.begin(), parts.begin() + 2);
    }
    std::string out;
    for (const auto& p : parts) {
        if (!out.empty()) out += '/';
        out.append(p);
    }
    return out;
}

Archive::Archive() = default;
Archive::Archive(Archive&&) noexcept = default;
Archive& Archive::operator=(Archive&&) noexcept = default;
Archive::~Archive() = default;

Result<Archive> Archive::open_memory(const Bytes& bytes) {
    Archive a;
    a.source_ = std::make_unique<ZipSource>(bytes.data(), bytes.size());
    FORGE_TRY_STATUS(a.read_directory());
    FORGE_TRY_STATUS(a.check_names());
    return a;
}

Result<Archive> Archive::open_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        Error e{fmt::format("cannot open: {}", std::strerror(errno))};
        if (fd >= 0) ::close(fd);
        return e;
    }
    Archive a;
    a.source_ = std::make_unique<ZipSource>(fd, static_cast<std::uint64_t>(st.st_size));
    FORGE_TRY_STATUS(a.read_directory());
    FORGE_TRY_STATUS(a.check_names());
    return a;
}

bool Archive::read_at(std::uint64_t offset, std::uint64_t n, std::uint8_t* out) const {
    return source_->read(offset, n, out);
}

Status Archive::read_directory() {
    auto end = read_end_records(*source_);
    if (!end) return std::move(end).error();
    comment_ = std::move(end->comment);
    // A zip behind other bytes (a self-extractor's stub) declares offsets from its own start:
    // the bytes before it are where the central directory ends minus where it says it does.
    const std::uint64_t cd_start = end->cd_end - end->cd_size;
    if (end->cd_offset > cd_start)
        return zip_error(end->cd_end,
                         fmt::format("the end record puts the central directory at 0x{:x} ({} "
                                     "bytes), past where it ends (0x{:x}){}",
                                     end->cd_offset, end->cd_size, end->cd_end, end->note));
    base_ = cd_start - end->cd_offset;
    // Each entry takes at least 46 bytes: a count the directory cannot hold is refused before
    // anything is allocated for it.
    if (end->count > end->cd_size / kCentralSize)
        return zip_error(end->cd_end, fmt::format("the end record declares {} entries in a "
                                                  "central directory of {} bytes{}",
                                                  end->count, end->cd_size, end->note));
    std::vector<std::uint8_t> cd;
    try {
        cd.resize(static_cast<std::size_t>(end->cd_size));
    } catch (const std::bad_alloc&) {
        return zip_error(cd_start, "out of memory for the central directory");
    }
    if (!source_->read(cd_start, cd.size(), cd.data()))
        return zip_error(cd_start, "cannot read the central directory");
    entries_.clear();
    entries_.reserve(static_cast<std::size_t>(end->count));
    std::uint64_t at = 0;
    for (std::uint64_t i = 0; i < end->count; ++i) {
        std::uint64_t next = 0;
        auto e = parse_central(cd, at, cd_start, i, next);
        if (!e) {
            Error err = std::move(e).error();
            err.message += end->note;
            return err;
        }
        entries_.push_back(std::move(*e));
        at = next;
    }
    if (at != cd.size())
        return zip_error(cd_start + at, fmt::format("the end record declares {} entries, the "
                                                    "central directory holds more ({} bytes "
                                                    "left after them)",
                                                    end->count, cd.size() - at));
    return ok_status();
}

// pip installs member by member into one directory: a name it would put outside, or a second
// member for a file already written (the later one wins, whichever the gate judged), makes the
// wheel something other than what was read.
Status Archive::check_names() const {
    std::unordered_map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        const Entry& e = entries_[i];
        auto refuse = [&](std::string message) {
            Error err{std::move(message)};
            err.key = e.name;
            err.offset = e.header_offset;
            return err;
        };
        if ((e.flags & kFlagUtf8) != 0 && first_invalid_utf8(e.name))
            return refuse("the member's name is flagged UTF-8 and is not: Python's zipfile (and "
                          "pip) cannot decode it");
        if (auto other = unicode_path(e); other && *other != decoded_name(e))
            return refuse(fmt::format("its Info-ZIP Unicode Path extra field (0x7075) names "
                                      "'{}': Python 3.12's zipfile installs the member under "
                                      "that name, earlier ones under this one",
                                      *other));
        std::string why;
        auto path = install_path(decoded_name(e), &why);
        if (!path)
            return refuse(fmt::format("the member path leaves the directory the wheel is "
                                      "installed into: {}; pip refuses to install it",
                                      why));
        if (e.is_directory()) continue;
        auto [at, fresh] = seen.emplace(*path, i);
        if (!fresh)
            return refuse(fmt::format(
                "a second member for the file {} (central directory entries {} and {}, '{}' and "
                "'{}'): pip writes both and keeps the last, whatever was judged",
                *path, at->second, i, entries_[at->second].name, e.name));
    }
    return ok_status();
}

Result<Archive::Stored> Archive::stored(const Entry& e, std::string* local_extra) const {
    const std::uint64_t at = base_ + e.local_offset;
    std::uint8_t h[kLocalSize];
    if (e.local_offset > source_->size() - std::min(base_, source_->size()) ||
        !source_->read(at, kLocalSize, h) || le_at(h, 4) != kSigLocal)
        return zip_error(at, fmt::format("no local header at 0x{:x}, where the central directory "
                                         "says the member starts",
                                         at));
    const std::uint64_t name_len = le_at(h + 26, 2);
    const std::uint64_t extra_len = le_at(h + 28, 2);
    std::string name(name_len, '\0');
    std::string extra(extra_len, '\0');
    if (!source_->read(at + kLocalSize, name_len, reinterpret_cast<std::uint8_t*>(name.data())) ||
        !source_->read(at + kLocalSize + name_len, extra_len,
                       reinterpret_cast<std::uint8_t*>(extra.data())))
        return zip_error(at, "the local header runs past the end of the file");
    // A reader that trusts local headers (a streaming unzip) would see another file here.
    if (name != e.name)
        return zip_error(at, fmt::format("the local header names '{}', the central directory "
                                         "'{}'",
                                         name, e.name));
    // Python's zipfile decodes the local name by the local header's own UTF-8 flag and compares
    // the text: the same bytes under another flag are another name to it.
    if ((le_at(h + 6, 2) & kFlagUtf8) != (e.flags & kFlagUtf8) && has_high_bytes(name))
        return zip_error(at, fmt::format("the local header's UTF-8 flag differs from the central "
                                         "directory's for '{}': Python's zipfile (and pip) read "
                                         "two names and refuse it",
                                         e.name));
    if (static_cast<int>(le_at(h + 8, 2)) != e.method)
        return zip_error(at, fmt::format("the local header says compression method {}, the "
                                         "central directory {}",
                                         le_at(h + 8, 2), e.method));
    Stored s{at + kLocalSize + name_len + extra_len, e.comp_size};
    if (s.offset > source_->size() || s.size > source_->size() - s.offset)
        return zip_error(at, fmt::format("its {} stored bytes at 0x{:x} run past the end of the "
                                         "file",
                                         s.size, s.offset));
    if (local_extra) *local_extra = std::move(extra);
    return s;
}

Result<MemberReader> MemberReader::open(const Archive& archive, const Entry& entry) {
    if (entry.encrypted) return make_error("encrypted zip member");
    // Python's zipfile refuses to open these (pip skips directories, which it never opens).
    if ((entry.flags & (kFlagPatched | kFlagStrongEncryption)) != 0)
        return make_error(fmt::format("a zip member flagged {}: Python's zipfile (and pip) do "
                                      "not read it",
                                      (entry.flags & kFlagPatched) != 0
                                          ? "compressed patched data (bit 5)"
                                          : "strongly encrypted (bit 6)"));
    if (entry.method != kMethodStore && entry.method != kMethodDeflate)
        return make_error(fmt::format("zip compression method {} is not supported (only stored "
                                      "and deflated members are read)",
                                      entry.method));
    auto stored = archive.stored(entry);
    if (!stored) return std::move(stored).error();
    MemberReader r;
    r.archive_ = &archive;
    r.entry_ = entry;
    r.stored_ = *stored;
    r.crc_ = static_cast<std::uint32_t>(crc32(0, nullptr, 0));
    if (entry.method == kMethodDeflate) {
        auto s = std::make_unique<z_stream>();
        if (inflateInit2(s.get(), -MAX_WBITS) != Z_OK)
            return make_error("cannot start inflating: out of memory");
        r.strm_.reset(s.release());
    }
    return r;
}

void MemberReader::InflateEnd::operator()(z_stream* s) const {
    inflateEnd(s);
    delete s; // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

MemberReader::~MemberReader() = default;

Result<std::uint64_t> MemberReader::read_stored(std::uint8_t* out, std::uint64_t n) {
    const std::uint64_t take = std::min(n, stored_.size - consumed_);
    if (take > 0 && !archive_->read_at(stored_.offset + consumed_, take, out))
        return make_error(fmt::format("cannot read the zip member's bytes at 0x{:x}",
                                      stored_.offset + consumed_));
    consumed_ += take;
    return take;
}

Status MemberReader::finish() {
    done_ = true;
    // The CRC covers what was produced: past the declared size the size is what is wrong
    // (Python's zipfile stops at the declared size and checks the CRC of that).
    if (inflated_ > entry_.size)
        return make_error(
            fmt::format("zip member inflates to more than the {} bytes it declares", entry_.size));
    if (crc_ != entry_.crc)
        return make_error(fmt::format("cannot inflate zip member: CRC error (0x{:08x}, the entry "
                                      "declares 0x{:08x})",
                                      crc_, entry_.crc));
    return ok_status();
}

Result<std::uint64_t> MemberReader::read(std::uint8_t* out, std::uint64_t n) {
    std::uint64_t produced = 0;
    while (produced < n && !done_) {
        // zlib counts in 32 bits: one call produces at most 1 GiB.
        const auto room = static_cast<unsigned>(std::min<std::uint64_t>(n - produced, 1u << 30));
        if (!strm_) {
            auto got = read_stored(out + produced, room);
            if (!got) return std::move(got).error();
            if (*got == 0) {
                FORGE_TRY_STATUS(finish());
                break;
            }
            crc_ = static_cast<std::uint32_t>(crc32_z(crc_, out + produced, *got));
            inflated_ += *got;
            produced += *got;
            continue;
        }
        if (strm_->avail_in == 0 && consumed_ < stored_.size) {
            in_.resize(kInChunk);
            auto got = read_stored(in_.data(), in_.size());
            if (!got) return std::move(got).error();
            strm_->next_in = in_.data();
            strm_->avail_in = static_cast<uInt>(*got);
        }
        strm_->next_out = out + produced;
        strm_->avail_out = room;
        const int rc = inflate(strm_.get(), Z_NO_FLUSH);
        const std::uint64_t made = room - strm_->avail_out;
        crc_ = static_cast<std::uint32_t>(crc32_z(crc_, out + produced, made));
        inflated_ += made;
        produced += made;
        if (rc == Z_STREAM_END) {
            FORGE_TRY_STATUS(finish());
            break;
        }
        if (rc == Z_BUF_ERROR && consumed_ == stored_.size && strm_->avail_in == 0 && made == 0)
            return make_error("cannot inflate zip member: the deflate stream is cut short");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return make_error(fmt::format("cannot inflate zip member: {}",
                                          strm_->msg ? strm_->msg : "invalid deflate data"));
    }
    return produced;
}

// --- the writer -------------------------------------------------------------------------------

// One member as its headers describe it.
struct Writer::Member {
    std::string name;
    std::uint32_t version_made_by = kUnixMadeBy;
    std::uint32_t version_needed = kVersionDefault;
    std::uint32_t flags = 0;
    int method = kMethodStore;
    std::uint32_t dos_time = 0;
    std::uint32_t crc = 0;
    std::uint64_t comp_size = 0;
    std::uint64_t size = 0;
    std::uint32_t internal_attributes = 0;
    std::uint32_t external_attributes = kRegularFile0644;
    std::string central_extra; // without a zip64 block
    std::string comment;
    std::uint64_t offset = 0; // of the local header, set by begin_member
};

namespace {

// The zip64 extra block with the fields whose header fields overflow, in APPNOTE's order (4.5.3);
// empty when none does.
std::string zip64_block(std::initializer_list<std::pair<bool, std::uint64_t>> fields) {
    Le body;
    for (const auto& [needed, value] : fields)
        if (needed) body.u64(value);
    if (body.s.empty()) return {};
    Le block;
    block.u16(kZip64ExtraId).u16(body.s.size()).str(body.s);
    return block.s;
}

std::uint32_t dos_datetime(std::int64_t mtime, bool* ok) {
    const auto t = static_cast<std::time_t>(std::max(mtime, kDosEpoch));
    std::tm tm{};
    *ok = gmtime_r(&t, &tm) != nullptr;
    if (!*ok || tm.tm_year + 1900 > 2107) return 0; // a DOS date ends in 2107
    const auto date =
        static_cast<std::uint32_t>(((tm.tm_year - 80) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
    const auto time =
        static_cast<std::uint32_t>((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
    return (date << 16) | time;
}

} // namespace

Writer::Writer() = default;
Writer::Writer(Writer&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)), pos_(o.pos_),
      buffer_(std::move(o.buffer_)), central_(std::move(o.central_)) {}

Writer::~Writer() {
    if (fd_ >= 0) ::close(fd_);
}

Result<Writer> Writer::create(const std::string& path) {
    Writer w;
    auto opened = open_file(path, O_WRONLY | O_CREAT | O_TRUNC, FileKind::Regular);
    if (!opened) return make_error(fmt::format("cannot create a zip: {}", opened.error().message));
    w.fd_ = opened->release();
    w.path_ = path;
    w.buffer_.reserve(kWriteBuffer);
    return w;
}

Result<Writer> Writer::onto(int fd, const std::string& path) {
    Writer w;
    w.fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (w.fd_ < 0) return make_error(fmt::format("cannot write a zip: {}", std::strerror(errno)));
    w.path_ = path;
    w.buffer_.reserve(kWriteBuffer);
    return w;
}

Status Writer::flush() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return Error{fmt::format("cannot write: {}", std::strerror(n < 0 ? errno : EIO)),
                         path_};
        done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
    return ok_status();
}

Status Writer::put(const void* data, std::size_t size) {
    if (fd_ < 0) return Error{"the zip is already closed", path_};
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
        const std::size_t take = std::min(size, kWriteBuffer - buffer_.size());
        buffer_.insert(buffer_.end(), p, p + take);
        p += take;
        size -= take;
        pos_ += take;
        if (buffer_.size() == kWriteBuffer) FORGE_TRY_STATUS(flush());
    }
    return ok_status();
}

// The local header; the member's bytes follow it.
Status Writer::begin_member(const Member& m, const std::string& local_extra) {
    if (m.name.size() > kMax16)
        return make_error(fmt::format("{}: a member name longer than 65,535 bytes", m.name));
    const bool big = m.size >= kMax32 || m.comp_size >= kMax32;
    // A local zip64 block holds both sizes when either overflows (APPNOTE 4.5.3).
    const std::string extra = zip64_block({{big, m.size}, {big, m.comp_size}}) + local_extra;
    if (extra.size() > kMax16)
        return make_error(fmt::format("{}: the local extra field grows past 65,535 bytes", m.name));
    Le h;
    h.u32(kSigLocal).u16(big ? std::max<std::uint32_t>(m.version_needed, kVersionZip64)
                             : m.version_needed);
    h.u16(m.flags).u16(static_cast<std::uint64_t>(m.method)).u32(m.dos_time).u32(m.crc);
    h.u32(big ? kMax32 : m.comp_size).u32(big ? kMax32 : m.size);
    h.u16(m.name.size()).u16(extra.size()).str(m.name).str(extra);
    return put(h.s.data(), h.s.size());
}

// The member's central header, kept until close().
Status Writer::end_member(Member m) {
    const bool big_size = m.size >= kMax32;
    const bool big_comp = m.comp_size >= kMax32;
    const bool big_offset = m.offset >= kMax32;
    const std::string extra =
        zip64_block({{big_size, m.size}, {big_comp, m.comp_size}, {big_offset, m.offset}}) +
        m.central_extra;
    if (extra.size() > kMax16)
        return make_error(
            fmt::format("{}: the central extra field grows past 65,535 bytes", m.name));
    const bool zip64 = big_size || big_comp || big_offset;
    Le h;
    h.u32(kSigCentral).u16(m.version_made_by);
    h.u16(zip64 ? std::max<std::uint32_t>(m.version_needed, kVersionZip64) : m.version_needed);
    h.u16(m.flags).u16(static_cast<std::uint64_t>(m.method)).u32(m.dos_time).u32(m.crc);
    h.u32(big_comp ? kMax32 : m.comp_size).u32(big_size ? kMax32 : m.size);
    h.u16(m.name.size()).u16(extra.size()).u16(m.comment.size());
    h.u16(0).u16(m.internal_attributes).u32(m.external_attributes);
    h.u32(big_offset ? kMax32 : m.offset).str(m.name).str(extra).str(m.comment);
    central_.push_back(std::move(h.s));
    return ok_status();
}

Status Writer::copy_raw(const Archive& from, const Entry& entry) {
    if (entry.name.find('\0') != std::string::npos)
        return make_error("a zip member name holds a NUL byte: it cannot be copied");
    if (entry.encrypted) return make_error(fmt::format("{}: an encrypted member", entry.name));
    std::string local;
    auto stored = from.stored(entry, &local);
    if (!stored) return std::move(stored).error();

    Member m;
    m.name = entry.name;
    m.version_made_by = entry.version_made_by;
    m.version_needed = entry.version_needed & 0xFF;
    // The sizes go in the local header: no data descriptor follows the copy.
    m.flags = entry.flags & ~kFlagDataDescriptor;
    m.method = entry.method;
    m.dos_time = entry.dos_time;
    m.crc = entry.crc;
    m.comp_size = entry.comp_size;
    m.size = entry.size;
    m.internal_attributes = entry.internal_attributes;
    m.external_attributes = entry.external_attributes;
    m.central_extra = without_zip64(entry.extra);
    m.comment = entry.comment;
    m.offset = pos_;
    FORGE_TRY_STATUS(begin_member(m, without_zip64(local)));
    std::vector<std::uint8_t> buf(kInChunk);
    for (std::uint64_t copied = 0; copied < stored->size;) {
        const std::uint64_t n = std::min<std::uint64_t>(buf.size(), stored->size - copied);
        if (!from.read_at(stored->offset + copied, n, buf.data()))
            return make_error(fmt::format("cannot read {}", entry.name));
        FORGE_TRY_STATUS(put(buf.data(), static_cast<std::size_t>(n)));
        copied += n;
    }
    return end_member(std::move(m));
}

Status Writer::add(const std::string& name, const std::string& data, int method,
                   std::int64_t mtime) {
    if (method != kMethodStore && method != kMethodDeflate)
        return make_error(fmt::format("{}: compression method {} is not written", name, method));
    bool ok = false;
    Member m;
    m.name = name;
    m.dos_time = dos_datetime(mtime, &ok);
    if (!ok) return make_error(fmt::format("cannot convert the time {}", mtime));
    m.flags = has_high_bytes(name) ? kFlagUtf8 : 0; // Python's zipfile reads others as cp437
    m.method = method;
    m.size = data.size();
    m.crc = static_cast<std::uint32_t>(
        crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
    std::string stored;
    if (method == kMethodDeflate) {
        z_stream z{};
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, kDeflateMemLevel,
                         Z_DEFAULT_STRATEGY) != Z_OK)
            return make_error("cannot start deflating: out of memory");
        stored.resize(deflateBound(&z, data.size()));
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
        z.avail_in = static_cast<uInt>(data.size());
        z.next_out = reinterpret_cast<Bytef*>(stored.data());
        z.avail_out = static_cast<uInt>(stored.size());
        const int rc = deflate(&z, Z_FINISH);
        stored.resize(z.total_out);
        deflateEnd(&z);
        if (rc != Z_STREAM_END) return make_error(fmt::format("cannot deflate {}", name));
    }
    const std::string& bytes = method == kMethodDeflate ? stored : data;
    m.comp_size = bytes.size();
    m.offset = pos_;
    FORGE_TRY_STATUS(begin_member(m, {}));
    FORGE_TRY_STATUS(put(bytes.data(), bytes.size()));
    return end_member(std::move(m));
}

Status Writer::close(const std::string& comment) {
    if (comment.size() > kMax16) return make_error("a zip comment longer than 65,535 bytes");
    const std::uint64_t cd_offset = pos_;
    for (const auto& h : central_)
        FORGE_TRY_STATUS(put(h.data(), h.size()));
    const std::uint64_t cd_size = pos_ - cd_offset;
    const std::uint64_t count = central_.size();
    // 0xFFFF / 0xFFFFFFFF in the end record say "read the zip64 one" (APPNOTE 4.4.1.4): unzip
    // takes 65,535 entries as that mark, so that count gets the zip64 record too.
    const bool zip64 = count >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32;
    Le end;
    if (zip64) {
        const std::uint64_t end64_offset = pos_;
        end.u32(kSigEnd64).u64(kEnd64Size - 12).u16(kUnixMadeBy).u16(kVersionZip64);
        end.u32(0).u32(0).u64(count).u64(count).u64(cd_size).u64(cd_offset);
        end.u32(kSigLocator64).u32(0).u64(end64_offset).u32(1);
    }
    end.u32(kSigEnd).u16(0).u16(0);
    end.u16(std::min(count, kMax16)).u16(std::min(count, kMax16));
    end.u32(std::min(cd_size, kMax32)).u32(std::min(cd_offset, kMax32));
    end.u16(comment.size()).str(comment);
    FORGE_TRY_STATUS(put(end.s.data(), end.s.size()));
    FORGE_TRY_STATUS(flush());
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0)
        return Error{fmt::format("cannot finish the zip: {}", std::strerror(errno)), path_};
    central_.clear();
    return ok_status();
}

} // namespace forge::binary::zipio
