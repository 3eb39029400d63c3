#include "binary/zip.h"

#include "binary/mapped_file.h"
#include "binary/wheel_record.h"
#include "binary/zip_io.h"
#include "core/sha256.h"

#include <fmt/format.h>
#include <new>
#include <optional>
#include <unordered_map>

namespace forge::binary {

namespace {

constexpr std::uint64_t kPeekBytes = 8;
constexpr std::uint64_t kDeflateMaxRatio = 1032;
constexpr std::uint64_t kDeflateSlack = 1024;
constexpr std::uint64_t kInflateChunk = 16ull << 20; // growth step of a member held in memory
constexpr std::uint64_t kStreamChunk = 1ull << 20;   // what a streamed member passes through
constexpr std::uint64_t kMaxRecordBytes = 64ull << 20;
constexpr std::uint64_t kMaxLinkBytes = 4096; // PATH_MAX: a link target is a path

Error member_error(const Where& where, const std::string& name, std::string message,
                   std::uint64_t offset) {
    Where w = where;
    w.member = where.member ? *where.member + "/" + name : name;
    return w.error(offset, std::move(message));
}

// A name the dynamic loader or Python's import would open as a library.
bool library_name(std::string_view name) {
    const std::string_view base = name.substr(name.rfind('/') + 1);
    return base.ends_with(".so") || base.find(".so.") != std::string_view::npos ||
           base.ends_with(".pyd") || base.ends_with(".dll") || base.ends_with(".dylib");
}

// What a deflated member can inflate to at most (https://zlib.net/zlib_tech.html: 1032-fold); a
// stored one, its stored size. nullopt for methods the reader refuses anyway.
std::optional<std::uint64_t> most_inflated(const zipio::Entry& e) {
    if (e.method == zipio::kMethodStore) return e.comp_size;
    if (e.method == zipio::kMethodDeflate)
        return checked_add(checked_mul(e.comp_size, kDeflateMaxRatio).value_or(UINT64_MAX),
                           kDeflateSlack);
    return std::nullopt;
}

// Where a member's bytes go as they are inflated: hashed (a RECORD check), kept in memory, or
// written to a spill file; the head already read is passed on first.
class MemberSink {
  public:
    enum class Keep : std::uint8_t { Nothing, Memory, Spill };
    MemberSink(Keep keep, bool hash) : keep_(keep), hash_(hash) {}

    Status open(std::uint64_t declared) {
        if (keep_ == Keep::Spill) {
            auto f = SpillFile::create();
            if (f) {
                spill_.emplace(std::move(*f));
                return ok_status();
            }
            keep_ = Keep::Memory; // no writable temporary directory: held as before
        }
        if (keep_ == Keep::Memory) memory_.reserve(std::min(declared, kInflateChunk));
        return ok_status();
    }
    Status take(const std::uint8_t* p, std::uint64_t n) {
        if (hash_) sha_.update(p, n);
        if (keep_ == Keep::Memory) memory_.insert(memory_.end(), p, p + n);
        if (keep_ == Keep::Spill) return spill_->write(p, n);
        return ok_status();
    }
    // A buffer to inflate into: the vector's own end when in memory (no copy), else scratch.
    std::uint8_t* room(std::uint64_t have, std::uint64_t declared, std::uint64_t* n) {
        if (keep_ == Keep::Memory) {
            *n = std::min(declared - have, kInflateChunk);
            memory_.resize(static_cast<std::size_t>(have + *n));
            return memory_.data() + have;
        }
        scratch_.resize(kStreamChunk);
        *n = std::min(declared - have, kStreamChunk);
        return scratch_.data();
    }
    // Bytes inflated into room(): hashed and kept.
    Status took(const std::uint8_t* p, std::uint64_t have, std::uint64_t n) {
        if (keep_ == Keep::Memory) {
            if (hash_) sha_.update(p, n);
            memory_.resize(static_cast<std::size_t>(have + n));
            return ok_status();
        }
        return take(p, n);
    }
    std::string hash() { return record_hash(sha_.digest()); }
    // The kept bytes, valid while the sink lives.
    Result<Bytes> bytes() {
        if (keep_ == Keep::Spill) {
            auto mapped = std::move(*spill_).map();
            if (!mapped) return std::move(mapped).error();
            mapped_.emplace(std::move(*mapped));
            return mapped_->bytes();
        }
        return Bytes{memory_.data(), memory_.size(), 0};
    }

  private:
    Keep keep_;
    bool hash_;
    Sha256 sha_;
    std::vector<std::uint8_t> memory_;
    std::vector<std::uint8_t> scratch_;
    std::optional<SpillFile> spill_;
    std::optional<MappedFile> mapped_;
};

// One walk over a zip's members.
class ZipWalk {
  public:
    ZipWalk(zipio::Archive& archive, const Where& where, const ZipOptions& options,
            std::uint64_t base)
        : archive_(archive), where_(where), options_(options), base_(base) {}

    // RECORD's rows by path, when the options ask for the check and the zip has one.
    Status load_record() {
        if (!options_.check_record) return ok_status();
        const zipio::Entry* record = nullptr;
        for (const auto& e : archive_.entries()) {
            if (!is_record_member(e.name)) continue;
            if (record)
                return fail(e, e.name,
                            fmt::format("a second .dist-info RECORD (the first is {}): "
                                        "pip refuses a wheel with two .dist-info "
                                        "directories",
                                        record->name));
            record = &e;
        }
        if (!record) return ok_status();
        if (record->size > kMaxRecordBytes)
            return fail(*record, record->name,
                        fmt::format("RECORD declares {} bytes, over the limit of {}", record->size,
                                    kMaxRecordBytes));
        MemberSink sink(MemberSink::Keep::Memory, false);
        FORGE_TRY_STATUS(inflate(*record, record->name, sink));
        auto bytes = sink.bytes();
        if (!bytes) return fail(*record, record->name, bytes.error().message);
        auto rows = parse_record(bytes->view());
        if (!rows) {
            Error e = fail(*record, record->name, rows.error().message);
            e.line = rows.error().line;
            return e;
        }
        record_member_ = record->name;
        for (auto& row : *rows) {
            const int line = row.line;
            auto [at, fresh] = rows_.emplace(row.path, std::move(row));
            if (!fresh)
                return fail(*record, record->name,
                            fmt::format("RECORD lists {} twice (lines {} and {})", at->first,
                                        at->second.line, line));
        }
        return ok_status();
    }

    Status member(const zipio::Entry& st, const ZipWanted& wanted, const ZipVisit& visit) {
        const std::string name = !st.name.empty() ? st.name : fmt::format("#{}", st.index);
        if (st.is_directory()) return ok_status();
        if (st.encrypted) return fail(st, name, "encrypted zip member");
        if (st.is_symlink() && library_name(name)) return symlink_error(st, name);
        const RecordRow* row = nullptr;
        FORGE_TRY_STATUS(listed(st, name, &row));

        auto zf = zipio::MemberReader::open(archive_, st);
        if (!zf) return fail(st, name, zf.error().message);
        std::uint8_t head[kPeekBytes] = {};
        auto got_head = zf->read(head, std::min<std::uint64_t>(kPeekBytes, st.size));
        if (!got_head) return fail(st, name, got_head.error().message);
        const bool want = st.size > 0 && wanted(Bytes{head, *got_head});
        // An empty member is read to its end all the same: Python's zipfile (pip) checks its
        // local header, its stream and its CRC, and refuses the wheel over a bad one.
        if (!want && !row && st.size > 0) return ok_status();

        FORGE_TRY_STATUS(check_declared(st, name, want));
        using Keep = MemberSink::Keep;
        MemberSink sink(!want                            ? Keep::Nothing
                        : st.size > options_.spill_above ? Keep::Spill
                                                         : Keep::Memory,
                        row != nullptr);
        FORGE_TRY_STATUS(sink.open(st.size));
        FORGE_TRY_STATUS(sink.take(head, *got_head));
        FORGE_TRY_STATUS(drain(*zf, st, name, *got_head, sink));
        if (row) FORGE_TRY_STATUS(compare_hash(st, name, *row, sink.hash()));
        if (!want) return ok_status();
        auto bytes = sink.bytes();
        if (!bytes) return fail(st, name, bytes.error().message);
        return visit(name, *bytes);
    }

  private:
    Status symlink_error(const zipio::Entry& st, const std::string& name) {
        std::string target;
        if (st.size <= kMaxLinkBytes) {
            MemberSink sink(MemberSink::Keep::Memory, false);
            if (inflate(st, name, sink).ok())
                if (auto b = sink.bytes()) target = std::string(b->view());
        }
        return fail(
            st, name,
            fmt::format("a symbolic link{} stored as a zip member: pip installs a small file "
                        "holding the link's target under this library's name, not the library",
                        target.empty() ? std::string() : fmt::format(" to '{}'", target)));
    }

    // The member's RECORD row (set when RECORD is checked), and its size against the
    // declaration.
    Status listed(const zipio::Entry& st, const std::string& name, const RecordRow** row) {
        *row = nullptr;
        if (record_member_.empty() || st.name == record_member_) return ok_status();
        const auto it = rows_.find(st.name);
        if (it == rows_.end()) {
            // Signatures of RECORD are the one thing it cannot list (the binary distribution
            // format, "Signed wheel files").
            if (st.name == dist_info() + "/RECORD.jws" || st.name == dist_info() + "/RECORD.p7s")
                return ok_status();
            return fail(st, name,
                        fmt::format("not listed in {}: the wheel's RECORD must list "
                                    "every file it installs",
                                    record_member_));
        }
        const RecordRow& r = it->second;
        if (r.hash.empty() || !r.size)
            return fail(st, name,
                        fmt::format("{} line {} lists it without its {}", record_member_, r.line,
                                    r.hash.empty() ? "hash" : "size"));
        if (*r.size != st.size)
            return fail(st, name,
                        fmt::format("{} line {} says {} bytes; the member holds {}", record_member_,
                                    r.line, *r.size, st.size));
        *row = &r;
        return ok_status();
    }

    Status compare_hash(const zipio::Entry& st, const std::string& name, const RecordRow& row,
                        const std::string& actual) const {
        // sha256 is what every wheel builder writes; a stronger one RECORD may use instead is
        // left unchecked (its size was).
        if (!row.hash.starts_with("sha256=") || row.hash == actual) return ok_status();
        return fail(st, name,
                    fmt::format("{} line {} says {}; the member's bytes hash to {}", record_member_,
                                row.line, row.hash, actual));
    }

    [[nodiscard]] std::string dist_info() const {
        return record_member_.substr(0, record_member_.find('/'));
    }

    // The declared size against the limits and against what the stored bytes can hold, before
    // anything substantial is inflated.
    Status check_declared(const zipio::Entry& st, const std::string& name, bool kept) {
        if (kept && st.size > options_.max_member_bytes)
            return fail(st, name,
                        fmt::format("zip member declares {} bytes inflated, "
                                    "over the limit of {} bytes",
                                    st.size, options_.max_member_bytes));
        const std::uint64_t total = options_.inflated_total ? *options_.inflated_total : 0;
        if (st.size > options_.max_total_inflated || total > options_.max_total_inflated - st.size)
            return fail(st, name,
                        fmt::format("inflating zip member ({} bytes) would "
                                    "exceed the total limit of {} bytes",
                                    st.size, options_.max_total_inflated));
        if (auto most = most_inflated(st); most && st.size > *most)
            return fail(st, name,
                        fmt::format("zip member declares {} bytes inflated from {} "
                                    "stored bytes, more than they can hold ({})",
                                    st.size, st.comp_size, *most));
        if (options_.inflated_total) *options_.inflated_total = total + st.size;
        return ok_status();
    }

    // The whole member into the sink, its size checked against the declaration.
    Status inflate(const zipio::Entry& st, const std::string& name, MemberSink& sink) {
        auto zf = zipio::MemberReader::open(archive_, st);
        if (!zf) return fail(st, name, zf.error().message);
        FORGE_TRY_STATUS(sink.open(st.size));
        return drain(*zf, st, name, 0, sink);
    }

    Status drain(zipio::MemberReader& zf, const zipio::Entry& st, const std::string& name,
                 std::uint64_t have, MemberSink& sink) {
        try {
            while (have < st.size) {
                std::uint64_t n = 0;
                std::uint8_t* at = sink.room(have, st.size, &n);
                auto got = zf.read(at, n);
                if (!got) return fail(st, name, got.error().message);
                auto kept = sink.took(at, have, *got);
                if (!kept) return fail(st, name, kept.error().message);
                have += *got;
                if (*got == 0) break;
            }
        } catch (const std::bad_alloc&) {
            return fail(st, name,
                        fmt::format("out of memory after inflating {} of the {} bytes "
                                    "the zip member declares",
                                    have, st.size));
        }
        if (have != st.size)
            return fail(
                st, name,
                fmt::format("zip member inflates to {} bytes, but declares {}", have, st.size));
        std::uint8_t extra = 0;
        auto more = zf.read(&extra, 1); // reaching the end checks the CRC
        if (!more) return fail(st, name, more.error().message);
        if (*more > 0)
            return fail(st, name,
                        fmt::format("zip member inflates to more than the "
                                    "{} bytes it declares",
                                    st.size));
        return ok_status();
    }

    // Where the member's central-directory header is, as errors about the member itself show it.
    [[nodiscard]] std::uint64_t at(const zipio::Entry& st) const {
        return base_ + st.header_offset;
    }

    // Every error about a member names its central-directory header (docs/wheels.md).
    [[nodiscard]] Error fail(const zipio::Entry& st, const std::string& name,
                             std::string message) const {
        return member_error(where_, name, std::move(message), at(st));
    }

    zipio::Archive& archive_;
    const Where& where_;
    const ZipOptions& options_;
    std::uint64_t base_;        // the zip's first byte in the buffer errors are reported against
    std::string record_member_; // "" when RECORD is not checked
    std::unordered_map<std::string, RecordRow> rows_;
};

} // namespace

bool has_zip_magic(const Bytes& b) {
    return b.starts_with("PK\x03\x04") || b.starts_with("PK\x05\x06");
}

Status for_each_zip_member(const Bytes& bytes, const Where& where, const ZipOptions& options,
                           const ZipWanted& wanted, const ZipVisit& visit) {
    auto za = zipio::Archive::open_memory(bytes);
    if (!za) {
        const Error& e = za.error();
        const std::uint64_t at = bytes.abs(e.offset.value_or(0));
        if (!e.key.empty()) return member_error(where, e.key, e.message, at);
        return where.error(at, fmt::format("not a readable zip archive: {}", e.message));
    }
    ZipWalk walk(*za, where, options, bytes.abs(0));
    FORGE_TRY_STATUS(walk.load_record());
    for (const zipio::Entry& st : za->entries())
        FORGE_TRY_STATUS(walk.member(st, wanted, visit));
    return ok_status();
}

} // namespace forge::binary
