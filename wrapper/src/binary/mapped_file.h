// A read-only memory map of a file. Listing touches only headers, so the mapping is advised
// MADV_RANDOM: kernel readahead would otherwise page in megabytes around every header we read
// (on a 456 MB libtorch_cuda.so that is the whole file).
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <string>

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

  private:
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    bool mapped_ = false;
};

// Drops the whole pages of [begin, begin + len) that lie inside a live MappedFile from this
// process's resident set; they stay in the page cache and a later read faults them back in.
// Listing a 456 MB library touches one page per header, and the kernel's fault-around maps up to
// 16 neighbours with each: without this the resident set grows with the file (117 MiB measured on
// libtorch_cuda.so). Memory that is not a live mapping (a decompressed wheel member) is left alone.
void release_pages(const std::uint8_t* begin, std::uint64_t len);

} // namespace forge::binary
