#include "binary/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace forge::binary {

namespace {

struct Mapping {
    const std::uint8_t* begin;
    std::uint64_t size;
};

std::mutex& mappings_mutex() {
    static std::mutex m;
    return m;
}

std::vector<Mapping>& mappings() {
    static std::vector<Mapping> v;
    return v;
}

void register_mapping(const std::uint8_t* p, std::uint64_t size) {
    std::lock_guard lock(mappings_mutex());
    mappings().push_back({p, size});
}

void unregister_mapping(const std::uint8_t* p) {
    std::lock_guard lock(mappings_mutex());
    auto& v = mappings();
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Mapping& m) { return m.begin == p; }),
            v.end());
}

} // namespace

void release_pages(const std::uint8_t* begin, std::uint64_t len) {
    if (begin == nullptr || len == 0) return;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto lo = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t hi = lo + len;
    const std::uintptr_t first = (lo + page - 1) / page * page; // whole pages only
    const std::uintptr_t last = hi / page * page;
    if (first >= last) return;
    std::lock_guard lock(mappings_mutex());
    for (const auto& m : mappings()) {
        const auto mlo = reinterpret_cast<std::uintptr_t>(m.begin);
        if (first >= mlo && last <= mlo + m.size) {
            // A read-only private file mapping that was never written: dropping its pages loses
            // nothing, the next access reads them from the page cache again.
            ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
            return;
        }
    }
}

Result<MappedFile> MappedFile::open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
    // descriptor is only mapped, never read, so the flag changes nothing for a regular file.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
        register_mapping(f.data_, f.size_);
    }
    ::close(fd);
    return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (mapped_) {
            unregister_mapping(data_);
            ::munmap(const_cast<std::uint8_t*>(data_), size_);
        }
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        mapped_ = std::exchange(o.mapped_, false);
    }
    return *this;
}

MappedFile::~MappedFile() {
    if (mapped_) {
        unregister_mapping(data_);
        ::munmap(const_cast<std::uint8_t*>(data_), size_);
    }
}

} // namespace forge::binary
