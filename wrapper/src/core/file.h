// Files: reading a whole file into memory, and the one way a file another user may control is
// opened or created (docs/DEVELOPING.md, "Trust"): no symbolic link followed in the last
// component, no FIFO opened blocking, the kind checked on the descriptor (fstat), a new file
// created O_EXCL under an unpredictable name, and every later step (owner, mode, stamp, rename
// check) done on the descriptor, never by name again.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <sys/stat.h>

namespace forge {

// The bytes of a regular file (a symbolic link to one followed: the user's own configuration), or
// Error{"cannot read file: why", path}. Opened O_NONBLOCK and checked on the descriptor: a FIFO or
// a device in the file's place is an error, never a read that waits.
Result<std::string> read_file(const std::filesystem::path& path);

// An open file descriptor, closed with the object.
class FileHandle {
  public:
    FileHandle() = default;
    explicit FileHandle(int fd) : fd_(fd) {}
    FileHandle(FileHandle&& o) noexcept : fd_(o.release()) {}
    FileHandle& operator=(FileHandle&& o) noexcept;
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;
    ~FileHandle();
    [[nodiscard]] int get() const { return fd_; }
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

  private:
    int fd_ = -1;
};

// What an opened file may be: a regular file, or also a character device (/dev/null as a log).
enum class FileKind : std::uint8_t { Regular, RegularOrDevice };

// Opens `path` with `flags` (O_RDONLY, O_WRONLY | O_APPEND | O_CREAT, ...) plus O_NOFOLLOW,
// O_NONBLOCK, O_CLOEXEC and O_NOCTTY; the descriptor is made blocking again once fstat says it
// is of `kind`. `st` gets that fstat: a stamp of what is read, not of a name looked up again.
// Errors name the path and why ("a symbolic link: not followed", "not a regular file").
Result<FileHandle> open_file(const std::filesystem::path& path, int flags, FileKind kind,
                             struct stat* st = nullptr, mode_t mode = 0644);

// The whole of a regular file opened by open_file (O_RDONLY), at most `max_bytes` of it (more is
// an error): for files in a cache another process may have replaced with a FIFO or a link.
// `stamp` gets the descriptor's fstat (for untrusted_record).
Result<std::string> read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                      struct stat* stamp = nullptr);

// Why a cached record with this stamp (fstat of the descriptor it was read from) may not decide
// anything ("" when it may): it must be a regular file this process's user owns that neither its
// group nor other users can write. Anyone else could have written it, checksum and all.
std::string untrusted_record(const struct stat& st);

// A new file in `dir`, created O_EXCL | O_NOFOLLOW, mode 0600, named `prefix` and a random
// suffix (getrandom); `created` gets its path (for the rename, and the unlink when it is given up).
Result<FileHandle> create_unique(const std::filesystem::path& dir, std::string_view prefix,
                                 std::string* created);
// The same in the directory open as `dir_fd` (openat: the directory is the one opened, whatever
// its path names by then); `name` gets the new file's name in it, `shown_dir` names it in errors.
Result<FileHandle> create_unique_at(int dir_fd, std::string_view prefix, std::string* name,
                                    std::string_view shown_dir);

// The one way a file is written whole: `write` fills a new file beside `path` (create_unique's
// O_EXCL | O_NOFOLLOW, a random name starting ".<name>.tmp-"), which then gets `mode` by fchmod
// (the umask does not narrow it), `mtime` when one is given (futimens), and is renamed over `path`
// in the directory opened once (renameat). A symbolic link or a planted file at `path` is
// replaced, never written through; a reader sees the old file or the new one, never a part; a
// failure leaves no temporary file. A FIFO there is replaced too, never opened; a character
// device (`-o /dev/null`) is written through, never replaced; a directory is an error. Errors
// name `path`.
using FileWriter = std::function<Status(int fd)>;
Status replace_file_with(const std::filesystem::path& path, mode_t mode, const FileWriter& write,
                         const struct timespec* mtime = nullptr);
// replace_file_with for bytes in memory.
Status replace_file(const std::filesystem::path& path, std::string_view bytes, mode_t mode = 0644,
                    const struct timespec* mtime = nullptr);

// A new directory in `parent` named `prefix` and six random characters (mkdtemp: created 0700,
// never a name that exists, a link included), then given `mode` (chmod on the new name: mkdtemp
// gives no descriptor, and only this user can enter the 0700 directory before it is widened).
Result<std::filesystem::path> create_unique_dir(const std::filesystem::path& parent,
                                                std::string_view prefix, mode_t mode = 0700);

// A mark whose existence is the fact ("said in this build"): `name` created in the directory open
// as `dir_fd` with O_CREAT | O_EXCL | O_NOFOLLOW, empty. true when this call made it, false when
// the name was there already (a symbolic link included, never followed); an error otherwise.
Result<bool> create_mark_at(int dir_fd, const std::string& name, std::string_view shown_dir);

// Why the directory `dir` may not be trusted with a cache or a log ("" when it may, or when it
// does not exist yet): not a directory (a symbolic link included), owned by another user than
// this process's (or root), or writable by its group or by others (ssh's rule for its files; git's
// safe.directory asks for the owner likewise).
std::string untrusted_directory(const std::filesystem::path& dir);
// The same for the lstat or fstat of a directory (fstat of an open one: no name looked up again).
std::string untrusted_directory(const struct stat& st);

} // namespace forge
