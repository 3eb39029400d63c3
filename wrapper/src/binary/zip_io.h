// The one use of minizip (zlib's contrib/minizip): opening a zip from memory or a file, listing
// its members, and inflating one member with its declared size and CRC checked. The wheel reader
// (zip.cpp) and the wheel stamper (provenance/stamp_wheel.cpp) both go through here.
//
// Members are read raw (their stored bytes) and inflated here with zlib, so the checks are ours:
// minizip itself stops at the declared size, which would hide a member that inflates to more.
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <memory>
#include <string>
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
    std::uint64_t index = 0; // position in the central directory
    // What a copy keeps (Writer::copy_raw).
    std::uint32_t flags = 0;
    std::uint32_t dos_time = 0;
    std::uint32_t version_made_by = 0;
    std::uint32_t internal_attributes = 0;
    std::uint32_t external_attributes = 0;
    std::string extra; // central-directory extra field
    std::string comment;
};

class Archive {
  public:
    // A zip in memory (the bytes must outlive the archive) or a file on disk. The message says
    // why it is not a readable zip.
    static Result<Archive> open_memory(const Bytes& bytes);
    static Result<Archive> open_file(const std::string& path);
    Archive(Archive&&) noexcept;
    Archive& operator=(Archive&&) noexcept;
    Archive(const Archive&) = delete;
    Archive& operator=(const Archive&) = delete;
    ~Archive();

    [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
    [[nodiscard]] std::string global_comment() const;
    // The handle minizip reads, positioned on entry `index` (for a raw copy).
    Result<void*> select(std::uint64_t index);

  private:
    struct State;
    explicit Archive(std::unique_ptr<State> s);
    Status list();
    std::unique_ptr<State> state_;
    std::vector<Entry> entries_;
    // Where each entry's central header is ({offset, number}, minizip's unz64_file_pos): a
    // member is reached directly, not by walking the directory again.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> positions_;
};

// Closes the member minizip has open (MemberReader, Writer::copy_raw).
struct CurrentFileCloser {
    void operator()(void* unz) const;
};

// Streams one member's inflated bytes. read() returns what it produced (0 at the end of the
// member) or an error; reaching the end checks the CRC.
class MemberReader {
  public:
    static Result<MemberReader> open(Archive& archive, const Entry& entry);
    MemberReader(MemberReader&&) noexcept = default;
    MemberReader& operator=(MemberReader&&) = delete;
    MemberReader(const MemberReader&) = delete;
    MemberReader& operator=(const MemberReader&) = delete;
    ~MemberReader();

    Result<std::uint64_t> read(std::uint8_t* out, std::uint64_t n);

  private:
    MemberReader() = default;
    Result<std::uint64_t> fill();
    Status finish();
    struct InflateEnd {
        void operator()(z_stream* s) const;
    };
    std::unique_ptr<void, CurrentFileCloser> unz_;
    Entry entry_;
    // zlib's state points back at its z_stream: it lives on the heap so the reader can move.
    std::unique_ptr<z_stream, InflateEnd> strm_;
    std::vector<std::uint8_t> in_;
    bool in_eof_ = false;
    bool done_ = false;
    std::uint32_t crc_ = 0;
};

// Writes a new zip file: members copied from another archive as they are stored (no
// recompression), or new ones from bytes.
class Writer {
  public:
    static Result<Writer> create(const std::string& path);
    Writer(Writer&&) noexcept = default;
    Writer& operator=(Writer&&) = delete;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer(); // without close(), what was written is left incomplete

    // The member's stored bytes, name, time, attributes, extra fields and comment, unchanged.
    Status copy_raw(Archive& from, const Entry& entry);
    // A new member, -rw-r--r--, dated `mtime` (Unix seconds, UTC; clamped to 1980, the first
    // time a zip can hold).
    Status add(const std::string& name, const std::string& data, int method, std::int64_t mtime);
    Status close(const std::string& comment);

  private:
    Writer() = default;
    struct Closer {
        void operator()(void* zip) const;
    };
    std::unique_ptr<void, Closer> zip_;
};

// What minizip's status code means, for messages.
std::string error_text(int code);

} // namespace forge::binary::zipio
