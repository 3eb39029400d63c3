#include "binary/zip.h"

#include <fmt/format.h>
#include <memory>
#include <new>
#include <optional>
#include <zip.h>

namespace forge::binary {

namespace {

constexpr std::uint64_t kPeekBytes = 8;
constexpr std::uint64_t kDeflateMaxRatio = 1032;
constexpr std::uint64_t kDeflateSlack = 1024;
constexpr std::uint64_t kInflateChunk = 16ull << 20;

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

Error member_error(const Where& where, const std::string& name, std::string message) {
    Where w = where;
    w.member = where.member ? *where.member + "/" + name : name;
    return w.error(0, std::move(message));
}

} // namespace

bool has_zip_magic(const Bytes& b) {
    return b.starts_with("PK\x03\x04") || b.starts_with("PK\x05\x06");
}

Status for_each_zip_member(const Bytes& bytes, const Where& where, const ZipLimits& limits,
                           const ZipWanted& wanted, const ZipVisit& visit) {
    zip_error_t zerr;
    zip_error_init(&zerr);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &zerr);
    if (!src) {
        auto e = where.error(bytes.abs(0),
                             fmt::format("cannot read zip: {}", zip_error_strerror(&zerr)));
        zip_error_fini(&zerr);
        return e;
    }
    std::unique_ptr<zip_t, ZipCloser> za(
        zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &zerr));
    if (!za) {
        zip_source_free(src);
        auto e = where.error(
            bytes.abs(0), fmt::format("not a readable zip archive: {}", zip_error_strerror(&zerr)));
        zip_error_fini(&zerr);
        return e;
    }
    zip_error_fini(&zerr);

    const zip_int64_t count = zip_get_num_entries(za.get(), 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(za.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0)
            return where.error(bytes.abs(0),
                               fmt::format("zip entry {}: {}", i, zip_strerror(za.get())));
        const std::string name =
            (st.valid & ZIP_STAT_NAME) && st.name ? st.name : fmt::format("#{}", i);
        if (!name.empty() && name.back() == '/') continue; // directory
        if (!(st.valid & ZIP_STAT_SIZE))
            return member_error(where, name, "zip member without a declared size");
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
            return member_error(where, name, "encrypted zip member");
        if (st.size == 0) continue;

        std::unique_ptr<zip_file_t, ZipFileCloser> zf(
            zip_fopen_index(za.get(), static_cast<zip_uint64_t>(i), 0));
        if (!zf)
            return member_error(where, name,
                                fmt::format("cannot open zip member: {}", zip_strerror(za.get())));
        std::uint8_t head[kPeekBytes] = {};
        const std::uint64_t want_head = std::min<std::uint64_t>(kPeekBytes, st.size);
        const zip_int64_t got_head = zip_fread(zf.get(), head, want_head);
        if (got_head < 0)
            return member_error(
                where, name,
                fmt::format("cannot inflate zip member: {}", zip_file_strerror(zf.get())));
        if (!wanted(Bytes{head, static_cast<std::uint64_t>(got_head)})) continue;

        // Declared sizes are checked before inflating anything substantial.
        if (st.size > limits.max_member_bytes)
            return member_error(where, name,
                                fmt::format("zip member declares {} bytes inflated, "
                                            "over the limit of {} bytes",
                                            st.size, limits.max_member_bytes));
        std::uint64_t total = (limits.inflated_total ? *limits.inflated_total : 0);
        if (st.size > limits.max_total_inflated || total > limits.max_total_inflated - st.size)
            return member_error(where, name,
                                fmt::format("inflating zip member ({} bytes) would "
                                            "exceed the total limit of {} bytes",
                                            st.size, limits.max_total_inflated));
        // Deflate expands at most 1032-fold (https://zlib.net/zlib_tech.html), a stored member
        // not at all: a declaration beyond that is a lie, refused before anything is held.
        if (st.valid & ZIP_STAT_COMP_SIZE && st.valid & ZIP_STAT_COMP_METHOD) {
            std::optional<std::uint64_t> most;
            if (st.comp_method == ZIP_CM_STORE) most = st.comp_size;
            if (st.comp_method == ZIP_CM_DEFLATE)
                most = checked_add(checked_mul(st.comp_size, kDeflateMaxRatio).value_or(UINT64_MAX),
                                   kDeflateSlack);
            if (most && st.size > *most)
                return member_error(where, name,
                                    fmt::format("zip member declares {} bytes inflated from {} "
                                                "stored bytes, more than they can hold ({})",
                                                st.size, st.comp_size, *most));
        }
        if (limits.inflated_total) *limits.inflated_total = total + st.size;

        // Grown as the bytes arrive, not sized by the declaration: memory follows what the
        // member really inflates to (the declaration is checked against it below).
        std::vector<std::uint8_t> data;
        std::uint64_t have = 0;
        try {
            data.assign(head, head + got_head);
            have = static_cast<std::uint64_t>(got_head);
            while (have < st.size) {
                const std::uint64_t chunk = std::min<std::uint64_t>(st.size - have, kInflateChunk);
                data.resize(static_cast<std::size_t>(have + chunk));
                const zip_int64_t n = zip_fread(zf.get(), data.data() + have, chunk);
                if (n < 0)
                    return member_error(
                        where, name,
                        fmt::format("cannot inflate zip member: {}", zip_file_strerror(zf.get())));
                have += static_cast<std::uint64_t>(n);
                data.resize(static_cast<std::size_t>(have));
                if (n == 0) break;
            }
        } catch (const std::bad_alloc&) {
            return member_error(where, name,
                                fmt::format("out of memory after inflating {} of the {} bytes "
                                            "the zip member declares",
                                            have, st.size));
        }
        if (have != st.size)
            return member_error(where, name,
                                fmt::format("zip member inflates to {} bytes, but "
                                            "declares {}",
                                            have, st.size));
        std::uint8_t extra = 0;
        const zip_int64_t more = zip_fread(zf.get(), &extra, 1);
        if (more < 0)
            return member_error(
                where, name,
                fmt::format("cannot inflate zip member: {}", zip_file_strerror(zf.get())));
        if (more > 0)
            return member_error(where, name,
                                fmt::format("zip member inflates to more than the "
                                            "{} bytes it declares",
                                            st.size));
        zf.reset();
        FORGE_TRY_STATUS(visit(name, std::move(data)));
    }
    return ok_status();
}

} // namespace forge::binary
