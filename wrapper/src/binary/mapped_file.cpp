#include "binary/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace forge::binary {

Result<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error{fmt::format("cannot open: {}", std::strerror(errno)), path};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return Error{fmt::format("cannot stat: {}", std::strerror(err)), path};
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return Error{"not a regular file", path};
    }
    MappedFile f;
    f.size_ = static_cast<std::uint64_t>(st.st_size);
    if (f.size_ > 0) {
        void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            return Error{fmt::format("cannot map: {}", std::strerror(err)), path};
        }
        ::madvise(p, f.size_, MADV_RANDOM);
        f.data_ = static_cast<const std::uint8_t*>(p);
        f.mapped_ = true;
    }
    ::close(fd);
    return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (mapped_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        mapped_ = std::exchange(o.mapped_, false);
    }
    return *this;
}

MappedFile::~MappedFile() {
    if (mapped_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

} // namespace forge::binary
