// The zip layer, ours: reading a zip from memory or a file (the end records, zip64 included, the
// central directory, each member's local header and stored bytes), the rules every member name
// must pass, inflating one member with its declared size and CRC checked (zlib), and writing a zip
// (members copied as stored, zip64 records wherever a count, size or offset needs them). The wheel
// reader (zip.cpp) and the wheel stamper (provenance/stamp_wheel.cpp) both go through here.
// Format: APPNOTE.TXT 6.3.10 (https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT).
// Why not minizip, which it replaced: docs/wheels.md (Debian 12's minizip 1.1 reads no zip64
// extra field, takes 65,535 entries for "unknown" and writes no zip64 end record past 65,535).
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <zlib.h>

namespace forge::binary::zipio {

inline constexpr int kMethodStore = 0;
inline constexpr int kMethodDeflate = 8;

// One central-directory entry, as declared.
struct Entry {
    std::string name;
    int method = 0;
    std::uint64_t size = 0;      // inflated
    std::uint64_t comp_size = 0; // stored
    std::uint32_t crc = 0;
    bool encrypted = false;
    std::uint64_t index = 0;         // position in the central directory
    std::uint64_t header_offset = 0; // of its central-directory header, in the zip
    std::uint64_t local_offset = 0;  // of its local header, as the central directory says
    // What a copy keeps (Writer::copy_raw).
    std::uint32_t flags = 0;
    std::uint32_t dos_time = 0;
    std::uint32_t version_made_by = 0;
    std::uint32_t version_needed = 0;
    std::uint32_t internal_attributes = 0;
    std::uint32_t external_attributes = 0;
    std::string extra; // central-directory extra field
    std::string comment;

    [[nodiscard]] bool is_directory() const { return name.ends_with('/'); }
    // A symbolic link as zip and unzip store one: made on Unix (or macOS), S_IFLNK in the high
    // half of the external attributes, the link's target as the member's bytes. pip writes those
    // bytes to a regular file: the link is not what gets installed.
    [[nodiscard]] bool is_symlink() const;
};

// The member's name as Python's zipfile (and so pip) reads it: UTF-8 when the entry's flag bit 11
// says so, code page 437 otherwise, in UTF-8. Two names are one file when these are equal.
std::string decoded_name(const Entry& e);

// A member name (decoded) as pip installs it (os.path.normpath, then joined to the target
// directory): "a//b/./c" -> "a/b/c", "a/x/../b" -> "a/b", and a `<dist>.data/platlib/` or
// `purelib/` prefix dropped (pip installs those where the root goes). nullopt when no file inside
// the target directory is what it names: why is in `why` (".." above the root, an absolute path, a
// backslash or a drive, a NUL byte, nothing left of it, a `.data` member pip refuses: not
// `<scheme>/<path>` or an unknown scheme).
std::optional<std::string> install_path(std::string_view name, std::string* why = nullptr);

// Where a zip's bytes come from: memory (a mapped file: read with copy_bytes, so the pages are not
// kept resident) or an open file descriptor (pread).
class ZipSource;

class Archive {
  public:
    // A zip in memory (the bytes must outlive the archive) or a file on disk. Errors: why it is
    // not a readable zip, at the offset of what could not be followed (where the end record was
    // looked for, the central-directory entry that breaks), or a member no installer may take:
    // one that leaves the target directory or names the same file as an earlier one (key: the
    // member, offset: its central-directory header).
    static Result<Archive> open_memory(const Bytes& bytes);
    static Result<Archive> open_file(const std::string& path);
    Archive(Archive&&) noexcept;
    Archive& operator=(Archive&&) noexcept;
    Archive(const Archive&) = delete;
    Archive& operator=(const Archive&) = delete;
    ~Archive();

    [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
    [[nodiscard]] const std::string& global_comment() const { return comment_; }

    // A member's stored bytes: where they start, checked against its local header (the same
    // name, a method, inside the file); the local extra field when `local_extra` is given.
    struct Stored {
        std::uint64_t offset = 0; // of the first stored byte, in the zip
        std::uint64_t size = 0;
    };
    Result<Stored> stored(const Entry& entry, std::string* local_extra = nullptr) const;
    // Reads `n` bytes at `offset` of the zip; false when they are not all there.
    bool read_at(std::uint64_t offset, std::uint64_t n, std::uint8_t* out) const;

  private:
    Archive();
    Status read_directory();
    Status check_names() const;
    std::unique_ptr<ZipSource> source_;
    std::vector<Entry> entries_;
    std::string comment_;
    std::uint64_t base_ = 0; // bytes before the zip proper (a self-extractor's stub)
};

// Streams one member's inflated bytes. read() returns what it produced (0 at the end of the
// member) or an error; reaching the end checks the CRC.
class MemberReader {
  public:
    static Result<MemberReader> open(const Archive& archive, const Entry& entry);
    MemberReader(MemberReader&&) noexcept = default;
    MemberReader& operator=(MemberReader&&) = delete;
    MemberReader(const MemberReader&) = delete;
    MemberReader& operator=(const MemberReader&) = delete;
    ~MemberReader();

    Result<std::uint64_t> read(std::uint8_t* out, std::uint64_t n);

  private:
    MemberReader() = default;
    // The next stored bytes into out (at most n): 0 at the end of the member.
    Result<std::uint64_t> read_stored(std::uint8_t* out, std::uint64_t n);
    Status finish();
    struct InflateEnd {
        void operator()(z_stream* s) const;
    };
    const Archive* archive_ = nullptr;
    Entry entry_;
    Archive::Stored stored_;
    std::uint64_t consumed_ = 0; // stored bytes read so far
    // zlib's state points back at its z_stream: it lives on the heap so the reader can move.
    std::unique_ptr<z_stream, InflateEnd> strm_;
    std::vector<std::uint8_t> in_;
    bool done_ = false;
    std::uint32_t crc_ = 0;
    std::uint64_t inflated_ = 0; // bytes produced so far
};

// Writes a new zip file: members copied from another archive as they are stored (no
// recompression), or new ones from bytes. Sizes go in the local headers (no data descriptors);
// a size or offset of 0xFFFFFFFF or more gets a zip64 extra field, and 65,535 entries or more, or
// a central directory past 4 GiB, the zip64 end records (APPNOTE 4.3.14-4.3.15, 4.5.3).
class Writer {
  public:
    static Result<Writer> create(const std::string& path);
    // Onto an open, empty file (a copy of the descriptor: the caller keeps its own to go on
    // working on the file, core/file.h); `path` names it in errors.
    static Result<Writer> onto(int fd, const std::string& path);
    Writer(Writer&&) noexcept;
    Writer& operator=(Writer&&) = delete;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer(); // without close(), what was written is left incomplete

    // The member's stored bytes, name, time, attributes, extra fields and comment, unchanged.
    Status copy_raw(const Archive& from, const Entry& entry);
    // A new member, -rw-r--r--, dated `mtime` (Unix seconds, UTC; clamped to 1980, the first
    // time a zip can hold).
    Status add(const std::string& name, const std::string& data, int method, std::int64_t mtime);
    Status close(const std::string& comment);

  private:
    struct Member; // what the central directory says of one member
    Writer();
    Status put(const void* data, std::size_t size);
    Status flush();
    Status begin_member(const Member& m, const std::string& local_extra);
    Status end_member(Member m);
    int fd_ = -1;
    std::string path_;
    std::uint64_t pos_ = 0; // bytes written so far (the next header's offset)
    std::vector<std::uint8_t> buffer_;
    std::vector<std::string> central_; // each member's central header, serialised
};

} // namespace forge::binary::zipio
