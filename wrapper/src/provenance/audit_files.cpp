// The files an audit reads: a walk in sorted order that holds one directory's names per level,
// and the list kept outside memory (an unnamed temporary file) for a fleet of any size.
#include "provenance/audit.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

namespace forge::provenance {
namespace {

namespace fs = std::filesystem;

bool wanted(const std::string& name) {
    return name.ends_with(".whl") || name.ends_with(".so") || name.ends_with(".pyd") ||
           name.find(".so.") != std::string::npos;
}

// One directory given on the command line, walked depth first. Each directory's entries are
// sorted by name, a directory's name with a '/' after it: then the paths come out in the order of
// their full strings (a sibling "a.so" sorts before "a/x.so", as '.' sorts before '/'), the order
// of a sorted list of every path, without the list.
class SortedWalk {
  public:
    static Result<SortedWalk> start(const std::string& root) {
        SortedWalk w;
        if (auto s = w.enter(root); !s) return std::move(s).error();
        return w;
    }

    // The next wheel or shared object; nullopt at the end.
    Result<std::optional<std::string>> next() {
        while (!levels_.empty()) {
            Level& level = levels_.back();
            if (level.at == level.entries.size()) {
                levels_.pop_back();
                continue;
            }
            const Item item = std::move(level.entries[level.at++]);
            if (item.directory) {
                if (auto s = enter(item.path); !s) return std::move(s).error();
                continue;
            }
            return std::optional<std::string>(item.path);
        }
        return std::optional<std::string>();
    }

  private:
    struct Item {
        std::string key; // the name, with a '/' after a directory's
        std::string path;
        bool directory;
    };
    struct Level {
        std::vector<Item> entries;
        size_t at = 0;
    };

    // Lists `dir`: its subdirectories (not a link to one, as the recursive iterator did not
    // follow them) and its wheels and shared objects (a link to a file counts, as it did).
    Status enter(const std::string& dir) {
        std::error_code ec;
        fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
        if (ec) return Error{fmt::format("cannot list: {}", ec.message()), dir};
        Level level;
        for (; it != fs::directory_iterator(); it.increment(ec)) {
            if (ec) break;
            std::error_code fe;
            std::string name = it->path().filename().string();
            if (it->is_directory(fe) && !it->is_symlink(fe)) {
                level.entries.push_back({name + "/", it->path().string(), true});
            } else if (it->is_regular_file(fe) && wanted(name)) {
                level.entries.push_back({std::move(name), it->path().string(), false});
            }
        }
        if (ec) return Error{fmt::format("cannot list: {}", ec.message()), dir};
        std::sort(level.entries.begin(), level.entries.end(),
                  [](const Item& a, const Item& b) { return a.key < b.key; });
        levels_.push_back(std::move(level));
        return ok_status();
    }

    std::vector<Level> levels_;
};

} // namespace

Status walk_audit_files(const std::vector<std::string>& paths,
                        const std::function<Status(const std::string& file)>& each) {
    // Every path's own sorted stream, merged: a file named twice, or a directory inside another
    // one given, comes out once.
    struct Stream {
        std::optional<SortedWalk> walk;
        std::optional<std::string> head;
    };
    std::vector<Stream> streams;
    for (const auto& path : paths) {
        std::error_code ec;
        auto st = fs::status(path, ec);
        if (ec || !fs::exists(st)) return Error{"no such file or directory", path};
        Stream s;
        if (fs::is_directory(st)) {
            auto w = SortedWalk::start(path);
            if (!w) return std::move(w).error();
            s.walk.emplace(std::move(*w));
            auto h = s.walk->next();
            if (!h) return std::move(h).error();
            s.head = std::move(*h);
        } else {
            s.head = path;
        }
        streams.push_back(std::move(s));
    }
    std::optional<std::string> last;
    for (;;) {
        Stream* least = nullptr;
        for (auto& s : streams)
            if (s.head && (least == nullptr || *s.head < *least->head)) least = &s;
        if (least == nullptr) return ok_status();
        if (!last || *last != *least->head) {
            if (auto s = each(*least->head); !s) return s;
            last = std::move(least->head);
        }
        least->head.reset();
        if (least->walk) {
            auto h = least->walk->next();
            if (!h) return std::move(h).error();
            least->head = std::move(*h);
        }
    }
}

Result<std::vector<std::string>> collect_audit_files(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    auto s = walk_audit_files(paths, [&](const std::string& f) {
        out.push_back(f);
        return ok_status();
    });
    if (!s) return std::move(s).error();
    return out;
}

Result<AuditFileList> AuditFileList::collect(const std::vector<std::string>& paths) {
    AuditFileList list;
    list.file_.reset(std::tmpfile());
    if (!list.file_)
        return Error{fmt::format("cannot make a temporary file for the list of files: {}",
                                 std::strerror(errno))};
    auto s = walk_audit_files(paths, [&](const std::string& f) -> Status {
        // NUL-terminated: a path holds no NUL.
        if (std::fwrite(f.c_str(), 1, f.size() + 1, list.file_.get()) != f.size() + 1)
            return Error{fmt::format("cannot write the list of files to a temporary file: {}",
                                     std::strerror(errno))};
        ++list.size_;
        return ok_status();
    });
    if (!s) return std::move(s).error();
    if (std::fflush(list.file_.get()) != 0 || std::fseek(list.file_.get(), 0, SEEK_SET) != 0)
        return Error{fmt::format("cannot read back the list of files: {}", std::strerror(errno))};
    return list;
}

Result<std::string> AuditFileList::next() {
    char* line = nullptr;
    size_t capacity = 0;
    const ssize_t n = ::getdelim(&line, &capacity, '\0', file_.get());
    std::unique_ptr<char, decltype(&std::free)> owned(line, &std::free);
    if (n <= 0 || line[n - 1] != '\0')
        return Error{fmt::format(
            "the list of files in a temporary file ended early ({} of {} read)", read_, size_)};
    ++read_;
    return std::string(line, static_cast<size_t>(n - 1));
}

void AuditFileList::Close::operator()(std::FILE* f) const {
    std::fclose(f);
}

} // namespace forge::provenance
