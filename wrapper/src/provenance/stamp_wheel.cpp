// The wheel side of stamping, with libzip: find the layout, read the stamp, rewrite the wheel.
//
// The rewrite works on a copy next to the wheel: libzip modifies the copy in place, which copies
// every untouched member's compressed bytes as they are (no recompression, order kept), then the
// copy is flushed and renamed over the original, so a crash leaves the old wheel or the new one,
// never half of one.
#include "provenance/stamp.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

namespace forge::provenance {
namespace {

constexpr zip_uint64_t kMaxTextMember = 64ull << 20; // RECORD / _build_info.json

struct ZipCloser {
    void operator()(zip_t* z) const {
        if (z) zip_discard(z);
    }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

Error zip_failure(const std::string& path, const std::string& what, zip_error_t* ze) {
    return Error{fmt::format("{}: {}", what, zip_error_strerror(ze)), path};
}

Result<ZipPtr> open_zip(const std::string& path, int flags) {
    int code = 0;
    zip_t* z = zip_open(path.c_str(), flags, &code);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, code);
        Error e = zip_failure(path, "not a readable zip archive (a wheel is one)", &ze);
        zip_error_fini(&ze);
        return e;
    }
    return ZipPtr(z);
}

std::vector<std::string> member_names(zip_t* z) {
    std::vector<std::string> out;
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n; ++i) {
        const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
        out.emplace_back(name ? name : "");
    }
    return out;
}

bool is_extension_name(std::string_view name) {
    return name.ends_with(".so") || name.find(".so.") != std::string_view::npos ||
           name.ends_with(".pyd");
}

Result<std::string> read_member(zip_t* z, zip_uint64_t index, const std::string& path,
                                const std::string& name) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, index, 0, &st) != 0)
        return zip_failure(path, fmt::format("cannot stat member {}", name), zip_get_error(z));
    if (!(st.valid & ZIP_STAT_SIZE) || st.size > kMaxTextMember) {
        Error e{fmt::format("member is larger than {} bytes", kMaxTextMember), path};
        e.key = name;
        return e;
    }
    zip_file_t* f = zip_fopen_index(z, index, 0);
    if (!f) return zip_failure(path, fmt::format("cannot open member {}", name), zip_get_error(z));
    std::string data(st.size, '\0');
    zip_int64_t got = zip_fread(f, data.data(), st.size);
    bool bad = got < 0 || static_cast<zip_uint64_t>(got) != st.size;
    Error e = bad ? zip_failure(path, fmt::format("cannot inflate member {}", name),
                                zip_file_get_error(f))
                  : Error{};
    zip_fclose(f);
    if (bad) return e;
    return data;
}

// A member that would be written outside the directory the wheel is installed into.
bool leaves_wheel(std::string_view name) {
    if (name.starts_with('/') || name.find('\\') != std::string_view::npos) return true;
    std::size_t start = 0;
    while (start <= name.size()) {
        const std::size_t slash = name.find('/', start);
        const std::string_view part = name.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (part == "..") return true;
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return false;
}

Result<WheelLayout> layout_of(zip_t* z, const std::string& path) {
    auto names = member_names(z);
    for (const auto& n : names)
        if (leaves_wheel(n)) {
            Error e{"member path leaves the wheel ('..', a leading '/' or a backslash): "
                    "not stamping it",
                    path};
            e.key = n;
            return e;
        }
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
    if (zip_int64_t idx = zip_name_locate(z, (l.dist_info + "/top_level.txt").c_str(), 0);
        idx >= 0) {
        auto text =
            read_member(z, static_cast<zip_uint64_t>(idx), path, l.dist_info + "/top_level.txt");
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

std::optional<zip_uint64_t> locate(zip_t* z, const std::string& name) {
    zip_int64_t idx = zip_name_locate(z, name.c_str(), ZIP_FL_ENC_RAW);
    if (idx < 0) return std::nullopt;
    return static_cast<zip_uint64_t>(idx);
}

// Adds or replaces `name` with `data` (kept alive by the caller until zip_close).
Status put_member(zip_t* z, const std::string& path, const std::string& name,
                  const std::string& data, zip_int32_t method, std::int64_t mtime) {
    zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
    if (!src) return zip_failure(path, "cannot create a zip source", zip_get_error(z));
    zip_int64_t idx;
    if (auto existing = locate(z, name)) {
        if (zip_file_replace(z, *existing, src, 0) != 0) {
            zip_source_free(src);
            return zip_failure(path, fmt::format("cannot replace {}", name), zip_get_error(z));
        }
        idx = static_cast<zip_int64_t>(*existing);
    } else {
        idx = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
        if (idx < 0) {
            zip_source_free(src);
            return zip_failure(path, fmt::format("cannot add {}", name), zip_get_error(z));
        }
    }
    auto u = static_cast<zip_uint64_t>(idx);
    if (zip_set_file_compression(z, u, method, 0) != 0)
        return zip_failure(path, fmt::format("cannot set the compression of {}", name),
                           zip_get_error(z));
    // Zip (DOS) times start in 1980; an older SOURCE_DATE_EPOCH is clamped there.
    constexpr std::int64_t kDosEpoch = 315532800;
    if (zip_file_set_mtime(z, u, static_cast<time_t>(std::max(mtime, kDosEpoch)), 0) != 0)
        return zip_failure(path, fmt::format("cannot set the time of {}", name), zip_get_error(z));
    // -rw-r--r-- for a regular file, as wheel builders write it.
    if (zip_file_set_external_attributes(z, u, 0, ZIP_OPSYS_UNIX, (0100644u << 16)) != 0)
        return zip_failure(path, fmt::format("cannot set the attributes of {}", name),
                           zip_get_error(z));
    return ok_status();
}

Status copy_file(const std::string& from, int to_fd, const std::string& to_path) {
    int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return Error{fmt::format("cannot open: {}", std::strerror(errno)), from};
    std::vector<char> buf(1 << 20);
    while (true) {
        ssize_t n = ::read(in, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            Error e{fmt::format("cannot read: {}", std::strerror(errno)), from};
            ::close(in);
            return e;
        }
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = ::write(to_fd, buf.data() + off, static_cast<size_t>(n - off));
            if (w < 0) {
                if (errno == EINTR) continue;
                Error e{fmt::format("cannot write: {}", std::strerror(errno)), to_path};
                ::close(in);
                return e;
            }
            off += w;
        }
    }
    ::close(in);
    return ok_status();
}

Status fsync_path(const std::string& path, bool directory) {
    int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return Error{fmt::format("cannot open to flush: {}", std::strerror(errno)), path};
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    // Some filesystems refuse fsync on a directory; the rename is still atomic there.
    if (rc != 0 && !(directory && (err == EINVAL || err == EBADF)))
        return Error{fmt::format("cannot flush: {}", std::strerror(err)), path};
    return ok_status();
}

// Writes the bytes of `from` over the file `to` (same inode), then cuts it to their length.
Status overwrite_with(const std::string& from, const std::string& to, const std::string& shown) {
    int fd = ::open(to.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return Error{fmt::format("cannot open to write: {}", std::strerror(errno)), shown};
    Status copied = copy_file(from, fd, shown);
    struct stat st {};
    if (copied.ok() && ::stat(from.c_str(), &st) != 0)
        copied = Error{fmt::format("cannot stat: {}", std::strerror(errno)), from};
    if (copied.ok() && ::ftruncate(fd, st.st_size) != 0)
        copied = Error{fmt::format("cannot truncate: {}", std::strerror(errno)), shown};
    if (copied.ok() && ::fsync(fd) != 0)
        copied = Error{fmt::format("cannot flush: {}", std::strerror(errno)), shown};
    ::close(fd);
    return copied;
}

// Removes the temporary file unless released.
struct TempFile {
    std::string path;
    ~TempFile() {
        if (!path.empty()) ::unlink(path.c_str());
    }
};

} // namespace

Result<WheelLayout> wheel_layout(const std::string& path) {
    auto z = open_zip(path, ZIP_RDONLY | ZIP_CHECKCONS);
    if (!z) return std::move(z).error();
    return layout_of(z->get(), path);
}

Result<std::optional<StampFound>> read_stamp(const std::string& wheel_path) {
    auto z = open_zip(wheel_path, ZIP_RDONLY);
    if (!z) return std::move(z).error();
    auto names = member_names(z->get());
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
    auto text = read_member(z->get(), *chosen, wheel_path, member);
    if (!text) return std::move(text).error();
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        Error e{"the stamp is not a JSON object", wheel_path};
        e.key = member;
        return e;
    }
    return std::optional<StampFound>(StampFound{member, std::move(j)});
}

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
    struct stat original {};
    if (::stat(wheel.c_str(), &original) != 0)
        return Error{fmt::format("cannot stat: {}", std::strerror(errno)), wheel_path};
    if (!S_ISREG(original.st_mode)) return Error{"not a regular file", wheel_path};
    // Renaming over a file needs only the directory's permission; stamping one the caller could
    // not write itself would hand it to the caller.
    if (::faccessat(AT_FDCWD, wheel.c_str(), W_OK, AT_EACCESS) != 0)
        return Error{fmt::format("cannot stamp a wheel you cannot write: {}", std::strerror(errno)),
                     wheel_path};

    // Refuse what is not a wheel before writing anything next to it.
    if (auto checked = wheel_layout(wheel.string()); !checked)
        return std::move(checked).error().in_file(wheel_path);

    StampInputs in;
    in.distribution = name->distribution;
    binary::ReadOptions ro;
    ro.inspect_payloads = true; // a kernel-less cubin is not a target the module carries
    if (auto extensions = binary::read_extensions(wheel_path, ro); extensions)
        in.modules = module_records(*extensions);
    else
        in.modules_error = extensions.error().to_string();
    in.run_id = ci_run_id(env);
    auto t = stamp_time(env);
    if (!t) return std::move(t).error();
    in.time = *t;

    // The copy the rewrite works on, in the wheel's directory so the rename is atomic.
    fs::path dir = wheel.has_parent_path() ? wheel.parent_path() : fs::path(".");
    std::string tmpl = (dir / ("." + wheel.filename().string() + ".stamp-XXXXXX")).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = ::mkstemp(buf.data());
    if (fd < 0)
        return Error{fmt::format("cannot create a temporary file next to the wheel: {}",
                                 std::strerror(errno)),
                     wheel_path};
    TempFile temp{buf.data()};
    Status copied = copy_file(wheel.string(), fd, temp.path);
    ::close(fd);
    FORGE_TRY_STATUS(copied);

    // Errors name the wheel, not the temporary copy.
    auto named = [&](Error e) {
        e.file = wheel_path;
        return e;
    };
    auto z = open_zip(temp.path, ZIP_CHECKCONS);
    if (!z) return named(std::move(z).error());
    auto layout = layout_of(z->get(), wheel_path);
    if (!layout) return std::move(layout).error();
    in.package = layout->package;

    StampResult result;
    result.wheel = wheel_path;
    result.member = layout->package + "/" + std::string(kBuildInfoName);
    result.replaced = locate(z->get(), result.member).has_value();
    result.record = make_build_info(r, in);
    const std::string info_bytes = result.record.dump(2) + "\n";

    auto record_idx = locate(z->get(), layout->record);
    auto record_text = read_member(z->get(), *record_idx, wheel_path, layout->record);
    if (!record_text) return std::move(record_text).error();
    zip_stat_t record_stat;
    zip_stat_init(&record_stat);
    if (zip_stat_index(z->get(), *record_idx, 0, &record_stat) != 0)
        return named(zip_failure(wheel_path, "cannot stat RECORD", zip_get_error(z->get())));
    const std::string new_record =
        update_record(*record_text, layout->record, result.member, info_bytes);

    if (auto s =
            put_member(z->get(), wheel_path, result.member, info_bytes, ZIP_CM_DEFLATE, in.time);
        !s)
        return named(std::move(s).error());
    zip_int32_t record_method = (record_stat.valid & ZIP_STAT_COMP_METHOD)
                                    ? static_cast<zip_int32_t>(record_stat.comp_method)
                                    : ZIP_CM_DEFLATE;
    if (auto s =
            put_member(z->get(), wheel_path, layout->record, new_record, record_method, in.time);
        !s)
        return named(std::move(s).error());

    zip_t* raw = z->release();
    if (zip_close(raw) != 0) {
        Error e = zip_failure(wheel_path, "cannot write the stamped wheel", zip_get_error(raw));
        zip_discard(raw);
        return e;
    }
    // A rename puts a new inode in place: right when it can carry the wheel's owner and mode and
    // no other name shares the old one. Otherwise the stamped bytes are written into the wheel
    // itself, which keeps its inode, owner, mode and hard links (not atomic: a crash in between
    // leaves a damaged wheel, the price of not breaking the links).
    bool in_place = original.st_nlink > 1;
    if (!in_place && (original.st_uid != ::geteuid() || original.st_gid != ::getegid()))
        in_place = ::chown(temp.path.c_str(), original.st_uid, original.st_gid) != 0;
    if (in_place) {
        FORGE_TRY_STATUS(overwrite_with(temp.path, wheel.string(), wheel_path));
        return result;
    }
    // libzip wrote through its own temporary file; give the result the wheel's mode.
    if (::chmod(temp.path.c_str(), original.st_mode & 07777) != 0)
        return Error{fmt::format("cannot set the mode: {}", std::strerror(errno)), temp.path};
    FORGE_TRY_STATUS(fsync_path(temp.path, false));
    if (::rename(temp.path.c_str(), wheel.c_str()) != 0)
        return Error{fmt::format("cannot replace the wheel: {}", std::strerror(errno)), wheel_path};
    temp.path.clear();
    FORGE_TRY_STATUS(fsync_path(dir.string(), true));
    return result;
}

} // namespace forge::provenance
