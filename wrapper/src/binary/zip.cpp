#include "binary/zip.h"

#include "binary/zip_io.h"

#include <fmt/format.h>
#include <new>
#include <optional>

namespace forge::binary {

namespace {

constexpr std::uint64_t kPeekBytes = 8;
constexpr std::uint64_t kDeflateMaxRatio = 1032;
constexpr std::uint64_t kDeflateSlack = 1024;
constexpr std::uint64_t kInflateChunk = 16ull << 20;

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
    auto za = zipio::Archive::open_memory(bytes);
    if (!za)
        return where.error(bytes.abs(0),
                           fmt::format("not a readable zip archive: {}", za.error().message));

    for (const zipio::Entry& st : za->entries()) {
        const std::string name = !st.name.empty() ? st.name : fmt::format("#{}", st.index);
        if (!name.empty() && name.back() == '/') continue; // directory
        if (st.encrypted) return member_error(where, name, "encrypted zip member");
        if (st.size == 0) continue;

        auto zf = zipio::MemberReader::open(*za, st);
        if (!zf) return member_error(where, name, zf.error().message);
        std::uint8_t head[kPeekBytes] = {};
        const std::uint64_t want_head = std::min<std::uint64_t>(kPeekBytes, st.size);
        auto got_head = zf->read(head, want_head);
        if (!got_head) return member_error(where, name, got_head.error().message);
        if (!wanted(Bytes{head, *got_head})) continue;

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
        std::optional<std::uint64_t> most;
        if (st.method == zipio::kMethodStore) most = st.comp_size;
        if (st.method == zipio::kMethodDeflate)
            most = checked_add(checked_mul(st.comp_size, kDeflateMaxRatio).value_or(UINT64_MAX),
                               kDeflateSlack);
        if (most && st.size > *most)
            return member_error(where, name,
                                fmt::format("zip member declares {} bytes inflated from {} "
                                            "stored bytes, more than they can hold ({})",
                                            st.size, st.comp_size, *most));
        if (limits.inflated_total) *limits.inflated_total = total + st.size;

        // Grown as the bytes arrive, not sized by the declaration: memory follows what the
        // member really inflates to (the declaration is checked against it below).
        std::vector<std::uint8_t> data;
        std::uint64_t have = 0;
        try {
            data.assign(head, head + *got_head);
            have = *got_head;
            while (have < st.size) {
                const std::uint64_t chunk = std::min<std::uint64_t>(st.size - have, kInflateChunk);
                data.resize(static_cast<std::size_t>(have + chunk));
                auto n = zf->read(data.data() + have, chunk);
                if (!n) return member_error(where, name, n.error().message);
                have += *n;
                data.resize(static_cast<std::size_t>(have));
                if (*n == 0) break;
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
        auto more = zf->read(&extra, 1); // reaching the end checks the CRC
        if (!more) return member_error(where, name, more.error().message);
        if (*more > 0)
            return member_error(where, name,
                                fmt::format("zip member inflates to more than the "
                                            "{} bytes it declares",
                                            st.size));
        FORGE_TRY_STATUS(visit(name, std::move(data)));
    }
    return ok_status();
}

} // namespace forge::binary
