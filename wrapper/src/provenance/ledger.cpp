// The ledger's index: one pass over the file, then a record read back per lookup.
#include "provenance/ledger.h"

#include "core/sha256.h"
#include "provenance/stamp.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::provenance {
namespace {

std::array<std::uint64_t, 2> digest_of(std::string_view text) {
    Sha256 h;
    h.update(text);
    const auto d = h.digest();
    std::array<std::uint64_t, 2> out{};
    std::memcpy(out.data(), d.data(), sizeof out);
    return out;
}

// A line as stamp writes it, or an error naming the file and line.
Result<nlohmann::json> parse_line(std::string_view text, const std::string& path, std::uint32_t n) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    Error e{"", path};
    e.line = static_cast<int>(n);
    if (j.is_discarded() || !j.is_object()) {
        e.message = "not a JSON object";
        return e;
    }
    auto w = j.find("wheel");
    if (w == j.end() || !w->is_string() || w->get<std::string>().empty()) {
        e.key = "wheel";
        e.message = "no wheel filename";
        return e;
    }
    return j;
}

// Never 0, which says "no modules".
std::uint64_t distribution_digest(std::string_view dist) {
    return digest_of(dist)[0] | 1;
}

bool lists_modules(const nlohmann::json& record) {
    auto m = record.find("modules");
    return m != record.end() && m->is_array();
}

} // namespace

std::string distribution_key(std::string_view wheel_filename) {
    auto name = parse_wheel_filename(wheel_filename);
    if (!name) return "";
    std::string key;
    for (char c : name->distribution)
        key += c == '-' || c == '.'
                   ? '_'
                   : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return key;
}

// The one pass: every line in file order, then each name's latest kept.
class Ledger::Builder {
  public:
    explicit Builder(Ledger& ledger) : ledger_(ledger) {}

    Status read_all() {
        constexpr size_t kChunk = size_t{1} << 20;
        std::string pending; // the line read so far
        std::uint64_t offset = 0, line_start = 0;
        std::vector<char> chunk(kChunk);
        for (;;) {
            const ssize_t got = ::read(ledger_.fd_, chunk.data(), chunk.size());
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                return Error{fmt::format("cannot read the ledger: {}", std::strerror(errno)),
                             ledger_.path_};
            if (got == 0) break;
            std::string_view data(chunk.data(), static_cast<size_t>(got));
            for (size_t nl; (nl = data.find('\n')) != std::string_view::npos;) {
                pending.append(data.substr(0, nl));
                if (auto s = add(pending, line_start); !s) return s;
                line_start = offset + nl + 1;
                offset += nl + 1;
                data.remove_prefix(nl + 1);
                pending.clear();
            }
            pending.append(data);
            offset += data.size();
        }
        if (!pending.empty()) return add(pending, line_start);
        return ok_status();
    }

    // Each name's latest line, kept in place (sorted by name, then line: the last of each run);
    // then the ones that list modules, by distribution. Nothing is copied whole: the index's
    // peak is its size.
    void finish() {
        auto& lines = ledger_.by_name_;
        std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
            return a.name != b.name ? a.name < b.name : a.line < b.line;
        });
        size_t kept = 0, modules = 0;
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i + 1 < lines.size() && lines[i + 1].name == lines[i].name) continue;
            modules += lines[i].distribution != 0 ? 1 : 0;
            lines[kept++] = lines[i];
        }
        lines.resize(kept);
        lines.shrink_to_fit();
        auto& with = ledger_.with_modules_;
        with.reserve(modules);
        for (size_t i = 0; i < lines.size(); ++i)
            if (lines[i].distribution != 0) with.push_back(static_cast<std::uint32_t>(i));
        std::sort(with.begin(), with.end(), [&](std::uint32_t a, std::uint32_t b) {
            return std::pair(lines[a].distribution, lines[a].line) <
                   std::pair(lines[b].distribution, lines[b].line);
        });
    }

  private:
    Status add(std::string_view text, std::uint64_t offset) {
        ++ledger_.counters_->lines;
        if (++number_ == std::numeric_limits<std::uint32_t>::max() ||
            text.size() >= std::numeric_limits<std::uint32_t>::max())
            return Error{"the ledger has too many lines or too long a line", ledger_.path_};
        const auto length = static_cast<std::uint32_t>(text.size());
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        if (text.find_first_not_of(" \t") == std::string_view::npos) return ok_status();
        auto j = parse_line(text, ledger_.path_, number_);
        if (!j) return std::move(j).error();
        const auto& wheel = (*j)["wheel"].get_ref<const std::string&>();
        std::uint64_t distribution = 0;
        if (const std::string dist = distribution_key(wheel); !dist.empty() && lists_modules(*j))
            distribution = distribution_digest(dist);
        ledger_.by_name_.push_back({digest_of(wheel), offset, length, number_, distribution});
        return ok_status();
    }

    Ledger& ledger_;
    std::uint32_t number_ = 0;
};

Result<Ledger> Ledger::load(const std::string& path) {
    Ledger ledger;
    ledger.path_ = path;
    // O_NONBLOCK: a FIFO would otherwise hold the open until a writer comes; a record is read
    // back by its offset, so only a regular file will do.
    ledger.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (ledger.fd_ < 0)
        return Error{fmt::format("cannot open the ledger: {}", std::strerror(errno)), path};
    struct stat st {};
    if (::fstat(ledger.fd_, &st) != 0 || !S_ISREG(st.st_mode))
        return Error{"the ledger is not a regular file", path};
    Builder builder(ledger);
    if (auto s = builder.read_all(); !s) return std::move(s).error();
    builder.finish();
    ++ledger.counters_->passes;
    return ledger;
}

Ledger::Ledger(Ledger&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), by_name_(std::move(o.by_name_)),
      with_modules_(std::move(o.with_modules_)), counters_(std::move(o.counters_)) {}

Ledger& Ledger::operator=(Ledger&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        path_ = std::move(o.path_);
        fd_ = std::exchange(o.fd_, -1);
        by_name_ = std::move(o.by_name_);
        with_modules_ = std::move(o.with_modules_);
        counters_ = std::move(o.counters_);
    }
    return *this;
}

Ledger::~Ledger() {
    if (fd_ >= 0) ::close(fd_);
}

Result<LedgerEntry> Ledger::read_line(std::uint64_t offset, std::uint32_t length,
                                      std::uint32_t line) const {
    ++counters_->records_read;
    std::string text(length, '\0');
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t got =
            ::pread(fd_, text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += static_cast<size_t>(got);
    }
    Error changed{"the ledger changed while it was audited: a line is not where it was", path_};
    changed.line = static_cast<int>(line);
    if (done != text.size()) return changed;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    auto j = parse_line(text, path_, line);
    if (!j) return changed;
    LedgerEntry e;
    e.wheel = (*j)["wheel"].get<std::string>();
    j->erase("wheel");
    e.record = std::move(*j);
    e.where = fmt::format("{}:{}", path_, line);
    e.line = static_cast<int>(line);
    return e;
}

const Ledger::Line* Ledger::find_line(std::string_view wheel) const {
    const Digest name = digest_of(wheel);
    auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                               [](const Line& l, const Digest& d) { return l.name < d; });
    return it != by_name_.end() && it->name == name ? &*it : nullptr;
}

Result<std::optional<LedgerEntry>> Ledger::find(std::string_view wheel) const {
    const Line* at = find_line(wheel);
    if (at == nullptr) return std::optional<LedgerEntry>();
    ++counters_->examined;
    auto e = read_line(at->offset, at->length, at->line);
    if (!e) return std::move(e).error();
    // Two names with one 128-bit digest: not expected in the life of the universe, but said.
    if (e->wheel != wheel) {
        Error err{fmt::format("two wheel names share an index digest: {} and {}", e->wheel, wheel),
                  path_};
        err.line = e->line;
        return err;
    }
    return std::optional<LedgerEntry>(std::move(*e));
}

Result<std::optional<LedgerEntry>> Ledger::previous_wheel(std::string_view wheel) const {
    const std::string dist = distribution_key(wheel);
    if (dist.empty()) return std::optional<LedgerEntry>();
    std::uint32_t before = std::numeric_limits<std::uint32_t>::max();
    if (const Line* own = find_line(wheel)) before = own->line;
    const std::uint64_t d = distribution_digest(dist);
    auto below = [&](std::uint32_t i, const std::pair<std::uint64_t, std::uint32_t>& k) {
        return std::pair(by_name_[i].distribution, by_name_[i].line) < k;
    };
    auto first = std::lower_bound(with_modules_.begin(), with_modules_.end(),
                                  std::pair(d, std::uint32_t{0}), below);
    auto end = std::lower_bound(first, with_modules_.end(), std::pair(d, before), below);
    // The latest first; one that another distribution's digest brought here is passed over.
    while (end != first) {
        --end;
        ++counters_->examined;
        const Line& at = by_name_[*end];
        auto e = read_line(at.offset, at.length, at.line);
        if (!e) return std::move(e).error();
        if (e->wheel != wheel && distribution_key(e->wheel) == dist && lists_modules(e->record))
            return std::optional<LedgerEntry>(std::move(*e));
    }
    return std::optional<LedgerEntry>();
}

LedgerStats Ledger::stats() const {
    return {counters_->passes.load(), counters_->lines.load(), counters_->records_read.load(),
            counters_->examined.load()};
}

Result<Ledger> load_ledger(const std::string& path) {
    return Ledger::load(path);
}

} // namespace forge::provenance
