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

} // namespace forge::binary
