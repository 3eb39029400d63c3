// The wheel side of stamping: find the layout, read the stamp, rewrite the wheel.
//
// The rewrite writes a new wheel next to the old one: every untouched member's stored bytes are
// copied as they are (no recompression, order kept, binary/zip_io.h), RECORD is replaced where
// it stands and the stamp is replaced or appended; then the new file is flushed and renamed over
// the original, so a crash leaves the old wheel or the new one, never half of one.
#include "binary/zip_io.h"
#include "core/file.h"
#include "core/json.h"
#include "provenance/stamp.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::provenance {
namespace {

namespace zipio = binary::zipio;

constexpr std::uint64_t kMaxTextMember = 64ull << 20; // RECORD / _build_info.json

Result<zipio::Archive> open_zip(const std::string& path) {
    auto z = zipio::Archive::open_file(path);
    if (!z) {
        Error e = std::move(z).error();
        // A member no installer may take is named as it is; else the zip itself is unreadable.
        if (e.key.empty())
            e.message = fmt::format("not a readable zip archive (a wheel is one): {}", e.message);
        e.file = path;
        return e;
    }
    return z;
}

std::vector<std::string> member_names(const zipio::Archive& z) {
    std::vector<std::string> out;
    for (const auto& e : z.entries())
        out.push_back(e.name);
    return out;
}

bool is_extension_name(std::string_view name) {
    return name.ends_with(".so") || name.find(".so.") != std::string_view::npos ||
           name.ends_with(".pyd");
}

Result<std::string> read_member(zipio::Archive& z, const zipio::Entry& entry,
                                const std::string& path) {
    auto failure = [&](const std::string& message) {
        Error e{message, path};
        e.key = entry.name;
        return e;
    };
    if (entry.size > kMaxTextMember)
        return failure(fmt::format("member is larger than {} bytes", kMaxTextMember));
    auto f = zipio::MemberReader::open(z, entry);
    if (!f) return failure(fmt::format("cannot open member: {}", f.error().message));
    std::string data(entry.size, '\0');
    auto* out = reinterpret_cast<std::uint8_t*>(data.data());
    std::uint64_t have = 0;
    while (have < entry.size) {
        auto n = f->read(out + have, entry.size - have);
        if (!n) return failure(n.error().message);
        if (*n == 0) break;
        have += *n;
    }
    std::uint8_t extra = 0;
    auto more = f->read(&extra, 1); // reaching the end checks the CRC
    if (!more) return failure(more.error().message);
    if (have != entry.size || *more != 0)
        return failure(
            fmt::format("member inflates to {} bytes, but declares {}", have + *more, entry.size));
    return data;
}

std::optional<std::size_t> locate(const zipio::Archive& z, const std::string& name) {
    const auto& entries = z.entries();
    for (std::size_t i = 0; i < entries.size(); ++i)
        if (entries[i].name == name) return i;
    return std::nullopt;
}

Result<WheelLayout> layout_of(zipio::Archive& z, const std::string& path) {
    // Member paths that leave the wheel, or name one file twice, were refused by open_zip.
    auto names = member_names(z);
    WheelLayout l;
    for (const auto& n : names) {
        auto slash = n.find('/');
        if (slash == std::string::npos || n.substr(slash + 1) != "RECORD") continue;
        std::string dir = n.substr(0, slash);
        if (!dir.ends_with(".dist-info")) continue;
        if (!l.dist_info.empty() && l.dist_info != dir) {
            Error e{fmt::format("two .dist-info directories ({} and {})", l.dist_info, dir), path};
            return e;
        }
        l.dist_info = dir;
        l.record = n;
    }
    if (l.record.empty()) return Error{"not a wheel: no *.dist-info/RECORD member", path};

    // Top-level directories in member order, and which hold an extension.
    std::vector<std::string> dirs;
    std::vector<std::string> with_extension;
    for (const auto& n : names) {
        auto slash = n.find('/');
        if (slash == std::string::npos || slash == 0) continue;
        std::string dir = n.substr(0, slash);
        if (dir.ends_with(".dist-info") || dir.ends_with(".data")) continue;
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
        if (is_extension_name(n) &&
            std::find(with_extension.begin(), with_extension.end(), dir) == with_extension.end())
            with_extension.push_back(dir);
    }
    auto has = [](const std::vector<std::string>& v, const std::string& s) {
        return std::find(v.begin(), v.end(), s) != v.end();
    };
    // top_level.txt names the importable packages; prefer one that holds an extension.
    std::vector<std::string> top_level;
    if (auto idx = locate(z, l.dist_info + "/top_level.txt")) {
        auto text = read_member(z, z.entries()[*idx], path);
        if (!text) return std::move(text).error();
        size_t start = 0;
        while (start <= text->size()) {
            size_t nl = text->find('\n', start);
            std::string line =
                text->substr(start, nl == std::string::npos ? std::string::npos : nl - start);
            while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
                line.pop_back();
            // "pkg/sub" is allowed by setuptools; the top dir is what holds the files.
            line = line.substr(0, line.find('/'));
            if (!line.empty() && has(dirs, line)) top_level.push_back(line);
            if (nl == std::string::npos) break;
            start = nl + 1;
        }
    }
    for (const auto& t : top_level)
        if (has(with_extension, t)) return l.package = t, l;
    if (!with_extension.empty()) return l.package = with_extension.front(), l;
    if (!top_level.empty()) return l.package = top_level.front(), l;
    if (!dirs.empty()) return l.package = dirs.front(), l;
    return Error{"no package directory in the wheel to hold _build_info.json (every member is "
                 "top-level or in .dist-info/.data)",
                 path};
}

// The bytes of the descriptor `from` (from its first byte: the file this run wrote, read through
// the descriptor, never reopened by a name another user could swap) into `to_fd`.
Status copy_fd(int from, const std::string& from_path, int to_fd, const std::string& to_path) {
    std::vector<char> buf(1 << 20);
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(from, buf.data(), buf.size(), at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{fmt::format("cannot read: {}", std::strerror(errno)), from_path};
        if (n == 0) break;
        at += n;
        for (ssize_t off = 0; off < n;) {
            const ssize_t w = ::write(to_fd, buf.data() + off, static_cast<size_t>(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) return Error{fmt::format("cannot write: {}", std::strerror(errno)), to_path};
            off += w;
        }
    }
    return ok_status();
}

Status fsync_dir(int dir_fd, const std::string& path) {
    // Some filesystems refuse fsync on a directory; the rename is still atomic there.
    if (::fsync(dir_fd) != 0 && errno != EINVAL && errno != EBADF)
        return Error{fmt::format("cannot flush: {}", std::strerror(errno)), path};
    return ok_status();
}

// Writes the bytes of `from` over the file open as `to` (same inode), then cuts it to their length.
Status overwrite_with(int from, const std::string& from_path, int to, const std::string& shown) {
    Status copied =
        ::lseek(to, 0, SEEK_SET) == 0
            ? copy_fd(from, from_path, to, shown)
            : Status(Error{fmt::format("cannot seek: {}", std::strerror(errno)), shown});
    struct stat st {};
    if (copied.ok() && ::fstat(from, &st) != 0)
        copied = Error{fmt::format("cannot stat: {}", std::strerror(errno)), from_path};
    if (copied.ok() && ::ftruncate(to, st.st_size) != 0)
        copied = Error{fmt::format("cannot truncate: {}", std::strerror(errno)), shown};
    if (copied.ok() && ::fsync(to) != 0)
        copied = Error{fmt::format("cannot flush: {}", std::strerror(errno)), shown};
    return copied;
}

// Whether `name` in the directory `dir_fd` is still the file open as `fd` (in a directory only
// this user writes nobody can swap it; checked all the same, before and after the rename).
bool names_file(int dir_fd, const std::string& name, int fd) {
    struct stat by_name {};
    struct stat by_fd {};
    return ::fstatat(dir_fd, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
           ::fstat(fd, &by_fd) == 0 && by_name.st_ino == by_fd.st_ino &&
           by_name.st_dev == by_fd.st_dev;
}

// The wheel as this run opened it: its directory (every later name is looked up under that
// descriptor), the wheel itself, O_RDWR (an in-place rewrite goes into this very file), and the
// wheel's fstat: owner, mode and links of the file read, never of a name looked up again.
struct OpenWheel {
    FileHandle dir;
    FileHandle file;
    struct stat st {};
    std::string name;     // in `dir`
    std::string dir_path; // for messages
    std::string source;   // the path the zip reader opens: this file, whatever the name is by then
};

Result<OpenWheel> open_wheel(const std::filesystem::path& wheel, const std::string& wheel_path) {
    OpenWheel w;
    const std::filesystem::path dir = wheel.has_parent_path() ? wheel.parent_path() : ".";
    w.dir_path = dir.string();
    w.name = wheel.filename().string();
    w.dir = FileHandle(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (w.dir.get() < 0)
        return Error{fmt::format("cannot open its directory: {}", std::strerror(errno)),
                     wheel_path};
    // O_RDWR: renaming over a file needs only the directory's permission; stamping one the
    // caller could not write itself would hand it to the caller.
    w.file = FileHandle(::openat(w.dir.get(), w.name.c_str(),
                                 O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    const int err = errno;
    if (w.file.get() < 0 && (err == EACCES || err == EPERM || err == EROFS || err == ETXTBSY))
        return Error{fmt::format("cannot stamp a wheel you cannot write: {}", std::strerror(err)),
                     wheel_path};
    if (w.file.get() < 0 && err == ELOOP)
        return Error{"a symbolic link put in the wheel's place: not followed", wheel_path};
    if (w.file.get() < 0 && err != EISDIR)
        return Error{fmt::format("cannot open: {}", std::strerror(err)), wheel_path};
    if (w.file.get() < 0 || ::fstat(w.file.get(), &w.st) != 0 || !S_ISREG(w.st.st_mode))
        return Error{"not a regular file", wheel_path};
    ::fcntl(w.file.get(), F_SETFL, ::fcntl(w.file.get(), F_GETFL) & ~O_NONBLOCK);
    // The zip reader opens a path: this descriptor's, where /proc gives one.
    const std::string by_fd = fmt::format("/proc/self/fd/{}", w.file.get());
    w.source = ::access(by_fd.c_str(), F_OK) == 0 ? by_fd : wheel.string();
    return w;
}

// Removes the temporary file (by its name in the directory open as `dir_fd`) unless released.
struct TempFile {
    int dir_fd = -1;
    std::string name;
    std::string path; // for messages
    ~TempFile() {
        if (!name.empty()) ::unlinkat(dir_fd, name.c_str(), 0);
    }
};

} // namespace

Result<WheelLayout> wheel_layout(const std::string& path) {
    auto z = open_zip(path);
    if (!z) return std::move(z).error();
    return layout_of(*z, path);
}

Result<std::optional<StampFound>> read_stamp(const std::string& wheel_path) {
    auto z = open_zip(wheel_path);
    if (!z) return std::move(z).error();
    auto names = member_names(*z);
    // <dir>/_build_info.json one level down; with several (a vendored stamped package), the one
    // next to an extension is the wheel's own, as stamp_wheel places it.
    std::optional<size_t> chosen;
    bool chosen_has_extension = false;
    for (size_t i = 0; i < names.size(); ++i) {
        const auto& n = names[i];
        auto slash = n.find('/');
        if (slash == std::string::npos || n.find('/', slash + 1) != std::string::npos) continue;
        if (n.substr(slash + 1) != kBuildInfoName) continue;
        std::string dir = n.substr(0, slash + 1);
        if (dir.ends_with(".dist-info/")) continue;
        bool has_extension = std::any_of(names.begin(), names.end(), [&](const std::string& m) {
            return m.starts_with(dir) && is_extension_name(m);
        });
        if (!chosen || (has_extension && !chosen_has_extension)) {
            chosen = i;
            chosen_has_extension = has_extension;
        }
    }
    if (!chosen) return std::optional<StampFound>();
    const std::string& member = names[*chosen];
    auto text = read_member(*z, z->entries()[*chosen], wheel_path);
    if (!text) return std::move(text).error();
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        Error e{"the stamp is not a JSON object", wheel_path};
        e.key = member;
        return e;
    }
    return std::optional<StampFound>(StampFound{member, std::move(j)});
}

namespace {

// The stamped copy (the temporary file open as `fd`) in the wheel's place: renamed over it, or
// written into it where a rename would lose its owner, mode or hard links, or where another user
// may swap names in the wheel's directory.
Status put_in_place(int fd, TempFile& temp, const OpenWheel& w, const std::string& wheel_path) {
    // A rename puts a new inode in place: right when it can carry the wheel's owner and mode and
    // no other name shares the old one. Otherwise the stamped bytes are written into the wheel
    // itself, which keeps its inode, owner, mode and hard links (not atomic: a crash in between
    // leaves a damaged wheel, the price of not breaking the links). A directory another user can
    // write (core/file.h's untrusted_directory) gets the same: there a name can be swapped between
    // any check and the rename, which would put their file, or a link, in the wheel's place.
    struct stat dir_st {};
    bool in_place = w.st.st_nlink > 1 || ::fstat(w.dir.get(), &dir_st) != 0 ||
                    !untrusted_directory(dir_st).empty();
    if (!in_place && (w.st.st_uid != ::geteuid() || w.st.st_gid != ::getegid()))
        in_place = ::fchown(fd, w.st.st_uid, w.st.st_gid) != 0;
    if (in_place) return overwrite_with(fd, temp.path, w.file.get(), wheel_path);
    // create_unique_at made the file 0600; give the result the wheel's mode.
    if (::fchmod(fd, w.st.st_mode & 07777) != 0)
        return Error{fmt::format("cannot set the mode: {}", std::strerror(errno)), temp.path};
    if (::fsync(fd) != 0)
        return Error{fmt::format("cannot flush: {}", std::strerror(errno)), temp.path};
    if (!names_file(w.dir.get(), temp.name, fd))
        return Error{"the temporary file was replaced by another: the wheel is left as it was",
                     temp.path};
    if (::renameat(w.dir.get(), temp.name.c_str(), w.dir.get(), w.name.c_str()) != 0)
        return Error{fmt::format("cannot replace the wheel: {}", std::strerror(errno)), wheel_path};
    temp.name.clear();
    if (!names_file(w.dir.get(), w.name, fd))
        return Error{"the wheel was replaced while it was stamped", wheel_path};
    return fsync_dir(w.dir.get(), w.dir_path);
}

} // namespace

Result<StampResult> stamp_wheel(const std::string& wheel_path, const policy::Resolution& r,
                                const EnvLookup& env) {
    namespace fs = std::filesystem;
    auto name = parse_wheel_filename(fs::path(wheel_path).filename().string());
    if (!name) return std::move(name).error().in_file(wheel_path);
    // A symlinked wheel is stamped where it lives: replacing the link by a stamped copy would
    // leave the file everybody else reads unstamped.
    std::error_code ec;
    const fs::path wheel = fs::canonical(wheel_path, ec);
    if (ec) return Error{fmt::format("cannot resolve: {}", ec.message()), wheel_path};
    auto opened = open_wheel(wheel, wheel_path);
    if (!opened) return std::move(opened).error();
    const OpenWheel& w = *opened;
    // Errors name the wheel, not the temporary file or the descriptor's path.
    auto named = [&](Error e) {
        e.file = wheel_path;
        return e;
    };

    // Refuse what is not a wheel before writing anything next to it.
    if (auto checked = wheel_layout(w.source); !checked) return named(std::move(checked).error());

    StampInputs in;
    in.distribution = name->distribution;
    auto t = stamp_time(env); // before the wheel is read: a bad SOURCE_DATE_EPOCH costs nothing
    if (!t) return std::move(t).error();
    in.time = *t;
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // a kernel-less cubin is not a target the module carries
    ro.scan_embedded = false;   // what the build registered, as audit compares it
    // RECORD is checked here, so the one written below is right for every member it keeps; a
    // wheel whose modules cannot be read is refused, not stamped with `modules: null`.
    ro.check_record = true;
    auto extensions = binary::read_extensions(wheel_path, ro);
    if (!extensions) return std::move(extensions).error();
    in.modules = module_records(*extensions);
    in.run_id = ci_run_id(env);

    auto z = open_zip(w.source);
    if (!z) return named(std::move(z).error());
    auto layout = layout_of(*z, wheel_path);
    if (!layout) return std::move(layout).error();
    in.package = layout->package;

    StampResult result;
    result.wheel = wheel_path;
    result.member = layout->package + "/" + std::string(kBuildInfoName);
    result.replaced = locate(*z, result.member).has_value();
    result.record = make_build_info(r, in);
    const std::string info_bytes = json_text(result.record, 2) + "\n";

    const zipio::Entry& record_entry = z->entries()[*locate(*z, layout->record)];
    auto record_text = read_member(*z, record_entry, wheel_path);
    if (!record_text) return std::move(record_text).error();
    const std::string new_record =
        update_record(*record_text, layout->record, result.member, info_bytes);
    const int record_method =
        record_entry.method == zipio::kMethodStore ? zipio::kMethodStore : zipio::kMethodDeflate;

    // The new wheel, in the wheel's directory so the rename is atomic; created O_EXCL under a
    // random name through the directory's descriptor and then only worked on through its own
    // (core/file.h).
    TempFile temp{w.dir.get(), {}, {}};
    auto created = create_unique_at(w.dir.get(), "." + w.name + ".stamp-", &temp.name, w.dir_path);
    if (!created)
        return Error{fmt::format("cannot create a temporary file next to the wheel: {}",
                                 created.error().message),
                     wheel_path};
    temp.path = (fs::path(w.dir_path) / temp.name).string();
    const int fd = created->get();
    auto out = zipio::Writer::onto(fd, temp.path);
    if (!out) return Error{out.error().message, temp.path};
    auto written = [&](Status s) -> Status {
        if (!s) return named(std::move(s).error());
        return s;
    };
    for (const zipio::Entry& e : z->entries()) {
        if (e.name == layout->record)
            FORGE_TRY_STATUS(written(out->add(e.name, new_record, record_method, in.time)));
        else if (e.name == result.member)
            FORGE_TRY_STATUS(written(out->add(e.name, info_bytes, zipio::kMethodDeflate, in.time)));
        else
            FORGE_TRY_STATUS(written(out->copy_raw(*z, e)));
    }
    if (!result.replaced)
        FORGE_TRY_STATUS(
            written(out->add(result.member, info_bytes, zipio::kMethodDeflate, in.time)));
    FORGE_TRY_STATUS(written(out->close(z->global_comment())));

    FORGE_TRY_STATUS(put_in_place(fd, temp, w, wheel_path));
    return result;
}

} // namespace forge::provenance
