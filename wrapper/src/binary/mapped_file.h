// A read-only memory map of a file. Listing touches only headers, so the mapping is advised
// MADV_RANDOM: kernel readahead would otherwise page in megabytes around every header we read
// (on a 456 MB libtorch_cuda.so that is the whole file).
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <string>
#include <sys/stat.h>

namespace forge::binary {

class MappedFile {
  public:
    static Result<MappedFile> open(const std::string& path);

    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    ~MappedFile();

    [[nodiscard]] Bytes bytes() const { return Bytes{data_, size_, 0}; }
    // fstat of the descriptor open() mapped: the stamp of the bytes read, never of a name looked
    // up again (a symbolic link flipped in between would stamp one file with another's results).
    [[nodiscard]] const struct stat& opened() const { return opened_; }

  private:
    friend class SpillFile;
    // Maps `size` bytes of the open file `fd` (taken over, closed with the mapping).
    static Result<MappedFile> map_fd(int fd, std::uint64_t size, const std::string& shown);
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    bool mapped_ = false;
    int fd_ = -1; // kept for copy_bytes(): headers are read with pread, not through the map
    struct stat opened_ {};
};

// An unnamed temporary file that a large inflated wheel member is written to, then mapped like a
// file on disk: the readers reach it through a MappedFile (pread for headers, release_pages for
// payloads), so what stays resident does not grow with the member (docs/wheels.md). It lives in
// $TMPDIR, else /var/tmp (on disk where /tmp is memory), else /tmp, and has no name there: nothing
// is left behind, whatever ends the process.
class SpillFile {
  public:
    static Result<SpillFile> create();
    SpillFile(SpillFile&& o) noexcept;
    SpillFile& operator=(SpillFile&&) = delete;
    SpillFile(const SpillFile&) = delete;
    SpillFile& operator=(const SpillFile&) = delete;
    ~SpillFile();

    Status write(const std::uint8_t* data, std::uint64_t n);
    // What was written, mapped read-only; the file goes with the mapping.
    Result<MappedFile> map() &&;
    [[nodiscard]] const std::string& directory() const { return dir_; }

  private:
    SpillFile() = default;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::string dir_;
};

// Copies the `n` bytes at `p` to `dst`. Inside a live MappedFile they are read with pread, so no
// page of the mapping is touched: a page fault would map up to 15 neighbouring pages with it
// (fault-around, which MADV_RANDOM does not turn off), and listing reads one small header per
// fatbin entry, spread over the whole file. Elsewhere (an inflated wheel member) a plain copy.
void copy_bytes(const std::uint8_t* p, std::uint64_t n, std::uint8_t* dst);

// Drops the whole pages of [begin, begin + len) that lie inside a live MappedFile from this
// process's resident set; they stay in the page cache and a later read faults them back in.
// Listing a 456 MB library touches one page per header, and the kernel's fault-around maps up to
// 16 neighbours with each: without this the resident set grows with the file (117 MiB measured on
// libtorch_cuda.so). Memory that is not a live mapping (a decompressed wheel member) is left alone.
void release_pages(const std::uint8_t* begin, std::uint64_t len);

// An address range as large as an image, of which only the parts written take memory
// (anonymous, MAP_NORESERVE): the streaming cubin reader copies the few parts of a decompressed
// image it reads to their own offsets, so the readers see the image's layout without holding it.
// Bytes never written read as zeros; the reader checks that it reads only what it wrote. Reused
// by one worker from entry to entry: forget() returns the written pages to the system.
class SparseImage {
  public:
    SparseImage() = default;
    SparseImage(const SparseImage&) = delete;
    SparseImage& operator=(const SparseImage&) = delete;
    ~SparseImage();

    // At least `size` bytes of address space; false when the system refuses.
    bool reserve(std::uint64_t size);
    [[nodiscard]] std::uint8_t* data() const { return data_; }
    // Drops the pages of [off, off + len) (whole pages around it): they read as zeros again.
    void forget(std::uint64_t off, std::uint64_t len);

  private:
    std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
};

} // namespace forge::binary
