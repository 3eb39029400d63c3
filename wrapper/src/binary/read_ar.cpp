// ar archives (static libraries, MSVC .lib): each member read as a file of its own, its
// entries in the archive's extension.
#include "binary/read_context.h"

#include "binary/ar.h"

#include <fmt/format.h>

namespace forge::binary::detail {

Status Reader::read_ar(const Bytes& b, const Where& where, int depth,
                       std::optional<std::size_t> into) {
    auto members = parse_ar(b, where);
    if (!members) return std::move(members).error();
    const std::size_t ext = extension_for(where, into);
    for (const auto& m : *members) {
        const std::string label =
            where.member ? fmt::format("{}({})", *where.member, m.name) : m.name;
        FORGE_TRY_STATUS(read(m.data, label, depth + 1, ext));
    }
    return ok_status();
}

} // namespace forge::binary::detail
