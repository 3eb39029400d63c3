// The one rule for "has this file changed" (the toolkit result cache's index, the front end's
// cached caps and policy, plan's stubs): device, inode, size, mtime and ctime, the times with
// their nanoseconds. Device and inode tell a file replaced by a rename (an editor's save, a
// reinstalled toolkit) from the one that was read; ctime catches an edit that puts mtime back
// (`cp -p`, `touch -r`), as the kernel sets it on every change and no call sets it back. What
// none of them catches is a same-size edit within one tick of the file system's clock: `stable`
// (git's "racy clean" rule) says the last change was long enough before the stat for that to be
// ruled out, and the front end's small files stamp their content as well.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

struct stat;

namespace forge {

struct FileStamp {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    bool operator==(const FileStamp&) const = default;
    // "dev:ino:size:ctime_ns:mtime_ns", for a key or an identity kept as text.
    [[nodiscard]] std::string text() const;
};

inline constexpr int kStableSeconds = 2;

// The stamp of what stat(2) or fstat(2) said, of any kind of file.
FileStamp stamp_of(const struct stat& st);
// A regular file's stamp (take it from fstat of the descriptor that reads it, before reading),
// and whether it is stable: last changed more than kStableSeconds before now. nullopt for
// anything but a regular file.
std::optional<std::pair<FileStamp, bool>> file_stamp(const struct stat& st);

} // namespace forge
