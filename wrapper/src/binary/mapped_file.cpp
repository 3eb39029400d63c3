#include "binary/mapped_file.h"

#include "core/env.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
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
    int fd;
};

std::mutex& mappings_mutex() {
    static std::mutex m;
    return m;
}

std::vector<Mapping>& mappings() {
    static std::vector<Mapping> v;
    return v;
}

void register_mapping(const std::uint8_t* p, std::uint64_t size, int fd) {
    std::lock_guard lock(mappings_mutex());
    mappings().push_back({p, size, fd});
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

SparseImage::~SparseImage() {
    if (data_ != nullptr) ::munmap(data_, size_);
}

bool SparseImage::reserve(std::uint64_t size) {
    if (size <= size_) return true;
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Address space only: grow in large steps so that a worker maps once or twice per file.
    constexpr std::uint64_t kMinReserve = std::uint64_t{64} << 20;
    const std::uint64_t want = (std::max(size, kMinReserve) + page - 1) / page * page;
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<std::uint8_t*>(p);
    size_ = want;
    return true;
}

void SparseImage::forget(std::uint64_t off, std::uint64_t len) {
    if (data_ == nullptr || len == 0 || off >= size_) return;
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t first = off / page * page;
    const std::uint64_t end = len > size_ - off ? size_ : off + len;
    const std::uint64_t last = std::min(size_, (end + page - 1) / page * page);
    // Anonymous private memory: MADV_DONTNEED frees the pages, a later read sees zeros.
    ::madvise(data_ + first, last - first, MADV_DONTNEED);
}

void copy_bytes(const std::uint8_t* p, std::uint64_t n, std::uint8_t* dst) {
    if (n == 0) return;
    int fd = -1;
    std::uint64_t at = 0;
    {
        std::lock_guard lock(mappings_mutex());
        for (const auto& m : mappings())
            if (p >= m.begin && n <= m.size &&
                static_cast<std::uint64_t>(p - m.begin) <= m.size - n) {
                fd = m.fd;
                at = static_cast<std::uint64_t>(p - m.begin);
                break;
            }
    }
    if (fd >= 0) {
        std::uint64_t done = 0;
        while (done < n) {
            const ssize_t got = ::pread(fd, dst + done, static_cast<std::size_t>(n - done),
                                        static_cast<off_t>(at + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break; // the mapping still holds the bytes: copy the rest from it
            done += static_cast<std::uint64_t>(got);
        }
        if (done == n) return;
        std::memcpy(dst + done, p + done, static_cast<std::size_t>(n - done));
        return;
    }
    std::memcpy(dst, p, static_cast<std::size_t>(n));
}

Result<MappedFile> MappedFile::open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; only a
    // regular file is mapped and pread, and for one the flag changes nothing.
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
    auto f = map_fd(fd, static_cast<std::uint64_t>(st.st_size), path);
    if (f) f->opened_ = st;
    return f;
}

Result<MappedFile> MappedFile::map_fd(int fd, std::uint64_t size, const std::string& shown) {
    MappedFile f;
    f.size_ = size;
    if (f.size_ > 0) {
        void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            return Error{fmt::format("cannot map: {}", std::strerror(err)), shown};
        }
        ::madvise(p, f.size_, MADV_RANDOM);
        f.data_ = static_cast<const std::uint8_t*>(p);
        f.mapped_ = true;
        f.fd_ = fd;
        register_mapping(f.data_, f.size_, fd);
        return f;
    }
    ::close(fd);
    return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, false)), fd_(std::exchange(o.fd_, -1)), opened_(o.opened_) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (mapped_) {
            unregister_mapping(data_);
            ::munmap(const_cast<std::uint8_t*>(data_), size_);
        }
        if (fd_ >= 0) ::close(fd_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        mapped_ = std::exchange(o.mapped_, false);
        fd_ = std::exchange(o.fd_, -1);
        opened_ = o.opened_;
    }
    return *this;
}

MappedFile::~MappedFile() {
    if (mapped_) {
        unregister_mapping(data_);
        ::munmap(const_cast<std::uint8_t*>(data_), size_);
    }
    if (fd_ >= 0) ::close(fd_);
}

namespace {

// Where a spilled member goes, in order of preference.
std::vector<std::string> spill_directories() {
    std::vector<std::string> dirs;
    if (auto t = getenv_nonempty("TMPDIR")) dirs.push_back(std::move(*t));
    dirs.emplace_back("/var/tmp");
    dirs.emplace_back("/tmp");
    return dirs;
}

// An unnamed file in `dir`: O_TMPFILE where the file system has it, else a name removed at once.
int unnamed_file(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string name = dir + "/nvcc-forge-member-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
    return fd;
}

} // namespace

Result<SpillFile> SpillFile::create() {
    std::string tried;
    int err = 0;
    for (const auto& dir : spill_directories()) {
        const int fd = unnamed_file(dir);
        if (fd >= 0) {
            SpillFile f;
            f.fd_ = fd;
            f.dir_ = dir;
            return f;
        }
        err = errno;
        tried += (tried.empty() ? "" : ", ") + dir;
    }
    return Error{fmt::format("cannot create a temporary file for a large member in {}: {} (set "
                             "TMPDIR to a writable directory)",
                             tried, std::strerror(err))};
}

SpillFile::SpillFile(SpillFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(std::exchange(o.size_, 0)), dir_(std::move(o.dir_)) {}

SpillFile::~SpillFile() {
    if (fd_ >= 0) ::close(fd_);
}

Status SpillFile::write(const std::uint8_t* data, std::uint64_t n) {
    while (n > 0) {
        const ssize_t w =
            ::write(fd_, data, static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 30)));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return Error{fmt::format("cannot write a temporary file in {}: {} (set TMPDIR to a "
                                     "directory with room)",
                                     dir_, std::strerror(w < 0 ? errno : EIO))};
        data += w;
        n -= static_cast<std::uint64_t>(w);
        size_ += static_cast<std::uint64_t>(w);
    }
    return ok_status();
}

Result<MappedFile> SpillFile::map() && {
    return MappedFile::map_fd(std::exchange(fd_, -1), size_,
                              fmt::format("a temporary file in {}", dir_));
}

} // namespace forge::binary
