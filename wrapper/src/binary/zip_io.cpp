#include "binary/zip_io.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <minizip/unzip.h>
#include <minizip/zip.h>

namespace forge::binary::zipio {

// minizip reads through the callbacks below: a zip held in memory is never written to disk.
// Outside the anonymous namespace: Archive::State (declared in the header) holds one.
struct MemStream {
    const std::uint8_t* data = nullptr;
    std::uint64_t size = 0;
    std::uint64_t pos = 0;
};

namespace {

constexpr std::uint64_t kInChunk = 64u << 10;
constexpr unsigned kMaxField = 0xFFFF; // name, extra and comment lengths are 16-bit fields
constexpr std::uint64_t kZip64Threshold = 0xFFFFFFFFu;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr int kDeflateMemLevel = 8;                    // zlib's default
constexpr std::uint32_t kUnixMadeBy = (3u << 8) | 20u; // made on Unix, zip 2.0
constexpr std::uint32_t kRegularFile0644 = 0100644u << 16;
constexpr std::int64_t kDosEpoch = 315532800; // 1980-01-01T00:00:00Z

// minizip writes the ZIP64 extra block itself when a size or offset needs it: a copied one
// would be a second, stale copy.
std::string without_zip64(const std::string& extra) {
    std::string out;
    std::size_t at = 0;
    while (at + 4 <= extra.size()) {
        const auto id =
            static_cast<std::uint16_t>(static_cast<unsigned char>(extra[at]) |
                                       (static_cast<unsigned char>(extra[at + 1]) << 8));
        const std::size_t len = static_cast<unsigned char>(extra[at + 2]) |
                                (static_cast<unsigned char>(extra[at + 3]) << 8);
        if (len > extra.size() - at - 4) return extra; // not blocks: kept as it is
        if (id != kZip64ExtraId) out.append(extra, at, 4 + len);
        at += 4 + len;
    }
    return at == extra.size() ? out : extra;
}

voidpf ZCALLBACK mem_open(voidpf opaque, const void* /*name*/, int /*mode*/) {
    auto* s = static_cast<MemStream*>(opaque);
    s->pos = 0;
    return s;
}
uLong ZCALLBACK mem_read(voidpf /*opaque*/, voidpf stream, void* buf, uLong size) {
    auto* s = static_cast<MemStream*>(stream);
    const std::uint64_t n = std::min<std::uint64_t>(size, s->size - s->pos);
    if (n > 0) std::memcpy(buf, s->data + s->pos, static_cast<std::size_t>(n));
    s->pos += n;
    return static_cast<uLong>(n);
}
uLong ZCALLBACK mem_write(voidpf /*opaque*/, voidpf /*stream*/, const void* /*buf*/,
                          uLong /*size*/) {
    return 0;
}
ZPOS64_T ZCALLBACK mem_tell(voidpf /*opaque*/, voidpf stream) {
    return static_cast<MemStream*>(stream)->pos;
}
long ZCALLBACK mem_seek(voidpf /*opaque*/, voidpf stream, ZPOS64_T offset, int origin) {
    auto* s = static_cast<MemStream*>(stream);
    if (origin == ZLIB_FILEFUNC_SEEK_SET) {
        if (offset > s->size) return -1;
        s->pos = offset;
        return 0;
    }
    if (origin != ZLIB_FILEFUNC_SEEK_CUR && origin != ZLIB_FILEFUNC_SEEK_END) return -1;
    // minizip steps back by passing a negative offset wrapped into the unsigned type (as
    // fseeko would read it).
    const std::uint64_t base = origin == ZLIB_FILEFUNC_SEEK_CUR ? s->pos : s->size;
    const auto delta = static_cast<std::int64_t>(offset);
    const std::uint64_t magnitude =
        delta < 0 ? 0 - static_cast<std::uint64_t>(delta) : static_cast<std::uint64_t>(delta);
    if (delta < 0 ? magnitude > base : magnitude > s->size - base) return -1;
    s->pos = delta < 0 ? base - magnitude : base + magnitude;
    return 0;
}
int ZCALLBACK mem_close(voidpf /*opaque*/, voidpf /*stream*/) {
    return 0;
}
int ZCALLBACK mem_error(voidpf /*opaque*/, voidpf /*stream*/) {
    return 0;
}

} // namespace

std::string error_text(int code) {
    switch (code) {
    case UNZ_OK:
        return "no error";
    case UNZ_ERRNO:
        return fmt::format("read error: {}", std::strerror(errno));
    case UNZ_PARAMERROR:
        return "invalid argument";
    case UNZ_BADZIPFILE:
        return "inconsistent or damaged zip structure";
    case UNZ_INTERNALERROR:
        return "internal error in the zip library";
    case UNZ_CRCERROR:
        return "CRC error";
    case UNZ_END_OF_LIST_OF_FILE:
        return "unexpected end of the central directory";
    default:
        return fmt::format("zip error {}", code);
    }
}

struct Archive::State {
    MemStream mem;
    zlib_filefunc64_def funcs{};
    unzFile unz = nullptr;
    ~State() {
        if (unz) unzClose(unz);
    }
};

Archive::Archive(std::unique_ptr<State> s) : state_(std::move(s)) {}
Archive::Archive(Archive&&) noexcept = default;
Archive& Archive::operator=(Archive&&) noexcept = default;
Archive::~Archive() = default;

Result<Archive> Archive::open_memory(const Bytes& bytes) {
    auto s = std::make_unique<State>();
    s->mem = MemStream{bytes.data(), bytes.size(), 0};
    s->funcs = zlib_filefunc64_def{mem_open, mem_read,  mem_write, mem_tell,
                                   mem_seek, mem_close, mem_error, &s->mem};
    s->unz = unzOpen2_64("memory", &s->funcs);
    // minizip says only that it failed: no end of central directory, or one it cannot follow.
    if (!s->unz) return make_error("no valid end of central directory");
    Archive a(std::move(s));
    FORGE_TRY_STATUS(a.list());
    return a;
}

Result<Archive> Archive::open_file(const std::string& path) {
    auto s = std::make_unique<State>();
    s->unz = unzOpen64(path.c_str());
    if (!s->unz) return make_error("no valid end of central directory");
    Archive a(std::move(s));
    FORGE_TRY_STATUS(a.list());
    return a;
}

Status Archive::list() {
    unzFile z = state_->unz;
    unz_global_info64 gi{};
    if (int rc = unzGetGlobalInfo64(z, &gi); rc != UNZ_OK) return make_error(error_text(rc));
    entries_.clear();
    positions_.clear();
    std::vector<char> name(kMaxField + 1, '\0');
    std::vector<char> extra(kMaxField + 1, '\0');
    std::vector<char> comment(kMaxField + 1, '\0');
    int rc = unzGoToFirstFile(z);
    for (std::uint64_t i = 0; rc == UNZ_OK; ++i) {
        unz_file_info64 fi{};
        if (int got = unzGetCurrentFileInfo64(z, &fi, name.data(), kMaxField, extra.data(),
                                              kMaxField, comment.data(), kMaxField);
            got != UNZ_OK)
            return make_error(fmt::format("zip entry {}: {}", i, error_text(got)));
        Entry e;
        e.name.assign(name.data(), std::min<uLong>(fi.size_filename, kMaxField));
        e.extra.assign(extra.data(), std::min<uLong>(fi.size_file_extra, kMaxField));
        e.comment.assign(comment.data(), std::min<uLong>(fi.size_file_comment, kMaxField));
        e.flags = static_cast<std::uint32_t>(fi.flag);
        e.dos_time = static_cast<std::uint32_t>(fi.dosDate);
        e.version_made_by = static_cast<std::uint32_t>(fi.version);
        e.internal_attributes = static_cast<std::uint32_t>(fi.internal_fa);
        e.external_attributes = static_cast<std::uint32_t>(fi.external_fa);
        e.method = static_cast<int>(fi.compression_method);
        e.size = fi.uncompressed_size;
        e.comp_size = fi.compressed_size;
        e.crc = static_cast<std::uint32_t>(fi.crc);
        e.encrypted = (fi.flag & 1u) != 0;
        e.index = i;
        entries_.push_back(std::move(e));
        unz64_file_pos pos{};
        if (int got = unzGetFilePos64(z, &pos); got != UNZ_OK)
            return make_error(fmt::format("zip entry {}: {}", i, error_text(got)));
        positions_.emplace_back(pos.pos_in_zip_directory, pos.num_of_file);
        rc = unzGoToNextFile(z);
    }
    if (rc != UNZ_END_OF_LIST_OF_FILE)
        return make_error(fmt::format("zip entry {}: {}", entries_.size(), error_text(rc)));
    if (entries_.size() != gi.number_entry)
        return make_error(fmt::format("the central directory holds {} entries, the end record "
                                      "declares {}",
                                      entries_.size(), gi.number_entry));
    return ok_status();
}

std::string Archive::global_comment() const {
    unz_global_info64 gi{};
    if (unzGetGlobalInfo64(state_->unz, &gi) != UNZ_OK || gi.size_comment == 0) return {};
    std::string c(gi.size_comment + 1, '\0');
    const int got = unzGetGlobalComment(state_->unz, c.data(), static_cast<uLong>(c.size()));
    if (got < 0) return {};
    c.resize(static_cast<std::size_t>(got));
    return c;
}

Result<void*> Archive::select(std::uint64_t index) {
    if (index >= positions_.size())
        return make_error(fmt::format("zip entry {}: no such entry", index));
    unz64_file_pos pos{positions_[index].first, positions_[index].second};
    if (int rc = unzGoToFilePos64(state_->unz, &pos); rc != UNZ_OK)
        return make_error(fmt::format("zip entry {}: {}", index, error_text(rc)));
    return static_cast<void*>(state_->unz);
}

Result<MemberReader> MemberReader::open(Archive& archive, const Entry& entry) {
    if (entry.encrypted) return make_error("encrypted zip member");
    if (entry.method != kMethodStore && entry.method != kMethodDeflate)
        return make_error(fmt::format("zip compression method {} is not supported (only stored "
                                      "and deflated members are read)",
                                      entry.method));
    auto z = archive.select(entry.index);
    if (!z) return std::move(z).error();
    int method = 0;
    int level = 0;
    // Raw: minizip checks the local header against the central directory and hands over the
    // stored bytes; inflating them is ours.
    if (int rc = unzOpenCurrentFile2(*z, &method, &level, 1); rc != UNZ_OK)
        return make_error(fmt::format("cannot open zip member: {}", error_text(rc)));
    MemberReader r;
    r.unz_.reset(*z);
    r.entry_ = entry;
    r.crc_ = static_cast<std::uint32_t>(crc32(0, nullptr, 0));
    if (entry.method == kMethodDeflate) {
        auto s = std::make_unique<z_stream>();
        if (inflateInit2(s.get(), -MAX_WBITS) != Z_OK)
            return make_error("cannot start inflating: out of memory");
        r.strm_.reset(s.release());
    }
    return r;
}

void CurrentFileCloser::operator()(void* unz) const {
    unzCloseCurrentFile(unz);
}
void MemberReader::InflateEnd::operator()(z_stream* s) const {
    inflateEnd(s);
    delete s; // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

MemberReader::~MemberReader() = default;

Result<std::uint64_t> MemberReader::fill() {
    in_.resize(kInChunk);
    const int n = unzReadCurrentFile(unz_.get(), in_.data(), static_cast<unsigned>(in_.size()));
    if (n < 0) return make_error(fmt::format("cannot read zip member: {}", error_text(n)));
    in_.resize(static_cast<std::size_t>(n));
    if (n == 0) in_eof_ = true;
    return static_cast<std::uint64_t>(n);
}

Status MemberReader::finish() {
    done_ = true;
    if (crc_ != entry_.crc)
        return make_error(fmt::format("cannot inflate zip member: CRC error (0x{:08x}, the entry "
                                      "declares 0x{:08x})",
                                      crc_, entry_.crc));
    return ok_status();
}

Result<std::uint64_t> MemberReader::read(std::uint8_t* out, std::uint64_t n) {
    std::uint64_t produced = 0;
    while (produced < n && !done_) {
        const auto room = static_cast<unsigned>(std::min<std::uint64_t>(n - produced, kInChunk));
        if (!strm_) {
            const int got = unzReadCurrentFile(unz_.get(), out + produced, room);
            if (got < 0)
                return make_error(fmt::format("cannot read zip member: {}", error_text(got)));
            if (got == 0) {
                FORGE_TRY_STATUS(finish());
                break;
            }
            crc_ = static_cast<std::uint32_t>(crc32(crc_, out + produced, static_cast<uInt>(got)));
            produced += static_cast<std::uint64_t>(got);
            continue;
        }
        if (strm_->avail_in == 0 && !in_eof_) {
            auto got = fill();
            if (!got) return std::move(got).error();
            strm_->next_in = in_.data();
            strm_->avail_in = static_cast<uInt>(in_.size());
        }
        strm_->next_out = out + produced;
        strm_->avail_out = room;
        const int rc = inflate(strm_.get(), Z_NO_FLUSH);
        const std::uint64_t made = room - strm_->avail_out;
        crc_ = static_cast<std::uint32_t>(crc32(crc_, out + produced, static_cast<uInt>(made)));
        produced += made;
        if (rc == Z_STREAM_END) {
            FORGE_TRY_STATUS(finish());
            break;
        }
        if (rc == Z_BUF_ERROR && in_eof_ && made == 0)
            return make_error("cannot inflate zip member: the deflate stream is cut short");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return make_error(fmt::format("cannot inflate zip member: {}",
                                          strm_->msg ? strm_->msg : "invalid deflate data"));
    }
    return produced;
}

void Writer::Closer::operator()(void* zip) const {
    zipClose(zip, nullptr);
}

Writer::~Writer() = default;

Result<Writer> Writer::create(const std::string& path) {
    Writer w;
    w.zip_.reset(zipOpen64(path.c_str(), APPEND_STATUS_CREATE));
    if (!w.zip_) return make_error(fmt::format("cannot create a zip: {}", std::strerror(errno)));
    return w;
}

Status Writer::copy_raw(Archive& from, const Entry& entry) {
    if (entry.name.find('\0') != std::string::npos)
        return make_error("a zip member name holds a NUL byte: it cannot be copied");
    auto z = from.select(entry.index);
    if (!z) return std::move(z).error();
    int method = 0;
    int level = 0;
    if (int rc = unzOpenCurrentFile2(*z, &method, &level, 1); rc != UNZ_OK)
        return make_error(fmt::format("cannot open zip member: {}", error_text(rc)));
    std::unique_ptr<void, CurrentFileCloser> open(*z);
    std::string local(kMaxField, '\0');
    const int local_size = unzGetLocalExtrafield(*z, local.data(), kMaxField);
    if (local_size < 0)
        return make_error(
            fmt::format("cannot read the local extra field: {}", error_text(local_size)));
    local.resize(static_cast<std::size_t>(local_size));
    local = without_zip64(local);
    const std::string central = without_zip64(entry.extra);

    zip_fileinfo zi{};
    zi.dosDate = entry.dos_time;
    zi.internal_fa = entry.internal_attributes;
    zi.external_fa = entry.external_attributes;
    const int zip64 = entry.size >= kZip64Threshold || entry.comp_size >= kZip64Threshold ? 1 : 0;
    // Encryption, level and data-descriptor bits are the writer's: the level comes back from it.
    const std::uint32_t flag_base = entry.flags & ~(1u | 6u | 8u);
    if (int rc = zipOpenNewFileInZip4_64(
            zip_.get(), entry.name.c_str(), &zi, local.empty() ? nullptr : local.data(),
            static_cast<uInt>(local.size()), central.empty() ? nullptr : central.data(),
            static_cast<uInt>(central.size()),
            entry.comment.empty() ? nullptr : entry.comment.c_str(), method, level, 1, -MAX_WBITS,
            kDeflateMemLevel, Z_DEFAULT_STRATEGY, nullptr, 0, entry.version_made_by, flag_base,
            zip64);
        rc != ZIP_OK)
        return make_error(fmt::format("cannot write {}: {}", entry.name, error_text(rc)));
    std::vector<std::uint8_t> buf(kInChunk);
    std::uint64_t copied = 0;
    while (true) {
        const int n = unzReadCurrentFile(*z, buf.data(), static_cast<unsigned>(buf.size()));
        if (n < 0) return make_error(fmt::format("cannot read {}: {}", entry.name, error_text(n)));
        if (n == 0) break;
        if (int rc = zipWriteInFileInZip(zip_.get(), buf.data(), static_cast<unsigned>(n));
            rc != ZIP_OK)
            return make_error(fmt::format("cannot write {}: {}", entry.name, error_text(rc)));
        copied += static_cast<std::uint64_t>(n);
    }
    if (copied != entry.comp_size)
        return make_error(fmt::format("{}: {} stored bytes, the entry declares {}", entry.name,
                                      copied, entry.comp_size));
    if (int rc = zipCloseFileInZipRaw64(zip_.get(), entry.size, entry.crc); rc != ZIP_OK)
        return make_error(fmt::format("cannot write {}: {}", entry.name, error_text(rc)));
    return ok_status();
}

Status Writer::add(const std::string& name, const std::string& data, int method,
                   std::int64_t mtime) {
    const std::time_t t = static_cast<std::time_t>(std::max(mtime, kDosEpoch));
    std::tm tm{};
    if (!gmtime_r(&t, &tm)) return make_error(fmt::format("cannot convert the time {}", mtime));
    zip_fileinfo zi{};
    zi.tmz_date.tm_sec = static_cast<uInt>(tm.tm_sec);
    zi.tmz_date.tm_min = static_cast<uInt>(tm.tm_min);
    zi.tmz_date.tm_hour = static_cast<uInt>(tm.tm_hour);
    zi.tmz_date.tm_mday = static_cast<uInt>(tm.tm_mday);
    zi.tmz_date.tm_mon = static_cast<uInt>(tm.tm_mon);
    zi.tmz_date.tm_year = static_cast<uInt>(tm.tm_year + 1900);
    zi.external_fa = kRegularFile0644;
    const int level = method == kMethodDeflate ? Z_DEFAULT_COMPRESSION : 0;
    if (int rc = zipOpenNewFileInZip4_64(zip_.get(), name.c_str(), &zi, nullptr, 0, nullptr, 0,
                                         nullptr, method, level, 0, -MAX_WBITS, kDeflateMemLevel,
                                         Z_DEFAULT_STRATEGY, nullptr, 0, kUnixMadeBy, 0,
                                         data.size() >= kZip64Threshold ? 1 : 0);
        rc != ZIP_OK)
        return make_error(fmt::format("cannot add {}: {}", name, error_text(rc)));
    for (std::size_t at = 0; at < data.size();) {
        const auto n = static_cast<unsigned>(std::min<std::size_t>(data.size() - at, kInChunk));
        if (int rc = zipWriteInFileInZip(zip_.get(), data.data() + at, n); rc != ZIP_OK)
            return make_error(fmt::format("cannot write {}: {}", name, error_text(rc)));
        at += n;
    }
    if (int rc = zipCloseFileInZip(zip_.get()); rc != ZIP_OK)
        return make_error(fmt::format("cannot write {}: {}", name, error_text(rc)));
    return ok_status();
}

Status Writer::close(const std::string& comment) {
    void* z = zip_.release();
    if (int rc = zipClose(z, comment.empty() ? nullptr : comment.c_str()); rc != ZIP_OK)
        return make_error(fmt::format("cannot finish the zip: {}", error_text(rc)));
    return ok_status();
}

} // namespace forge::binary::zipio
