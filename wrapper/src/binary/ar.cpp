#include "binary/ar.h"

#include <fmt/format.h>

namespace forge::binary {

namespace {

constexpr std::uint64_t kMagicSize = 8;
constexpr std::uint64_t kHeaderSize = 60;

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && s.back() == ' ')
        s.remove_suffix(1);
    return s;
}

// A decimal field padded with spaces; nullopt if it holds anything else.
std::optional<std::uint64_t> parse_decimal(std::string_view field) {
    field = trim_right(field);
    if (field.empty() || field.size() > 19) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : field) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
}

} // namespace

bool has_ar_magic(const Bytes& b) {
    return b.starts_with("!<arch>\n");
}
bool has_thin_ar_magic(const Bytes& b) {
    return b.starts_with("!<thin>\n");
}

Result<std::vector<ArMember>> parse_ar(const Bytes& b, const Where& where) {
    if (has_thin_ar_magic(b))
        return where.error(b.abs(0), "thin ar archives (members stored outside the archive) are "
                                     "not supported");
    if (!has_ar_magic(b)) return where.error(b.abs(0), "not an ar archive (bad magic)");
    std::vector<ArMember> members;
    std::string_view long_names; // GNU "//" member
    std::uint64_t off = kMagicSize;
    while (off < b.size()) {
        if (b.size() - off == 1 && b.u8(off) == '\n') break; // odd-size padding at the very end
        if (!b.has(off, kHeaderSize))
            return where.error(b.abs(off), fmt::format("truncated ar member header: 60 bytes "
                                                       "needed, 0x{:x} left",
                                                       b.size() - off));
        if (b.view(off + 58, 2) != "`\n")
            return where.error(b.abs(off + 58),
                               "bad ar member header terminator (expected \"`\\n\")");
        const std::string_view raw_name = b.view(off, 16);
        auto size = parse_decimal(b.view(off + 48, 10));
        if (!size)
            return where.error(b.abs(off + 48), fmt::format("bad ar member size field '{}'",
                                                            trim_right(b.view(off + 48, 10))));
        const std::uint64_t data_off = off + kHeaderSize;
        if (!b.has(data_off, *size))
            return where.error(b.abs(off + 48), fmt::format("ar member size {} extends past the "
                                                            "end of the archive (0x{:x} bytes "
                                                            "left)",
                                                            *size, b.size() - data_off));
        Bytes data = b.sub(data_off, *size);
        const std::uint64_t header_offset = off;
        off = data_off + *size + (*size & 1); // members are 2-byte aligned

        std::string name;
        const std::string_view trimmed = trim_right(raw_name);
        if (trimmed == "/" || trimmed == "/SYM64/" || trimmed.starts_with("__.SYMDEF"))
            continue; // symbol tables
        if (trimmed == "//") {
            long_names = data.view();
            continue;
        }
        if (trimmed.starts_with("#1/")) { // BSD: the name is the first N bytes of the data
            auto len = parse_decimal(trimmed.substr(3));
            if (!len || *len > data.size())
                return where.error(b.abs(header_offset),
                                   fmt::format("bad BSD ar long name '{}'", trimmed));
            std::string_view n = data.view(0, *len);
            if (auto nul = n.find('\0'); nul != std::string_view::npos) n = n.substr(0, nul);
            name = std::string(n);
            data = data.from(*len);
        } else if (trimmed.size() > 1 && trimmed[0] == '/') { // GNU: offset into "//"
            auto idx = parse_decimal(trimmed.substr(1));
            if (!idx || *idx >= long_names.size())
                return where.error(b.abs(header_offset), fmt::format("ar long name reference '{}' "
                                                                     "outside the name table",
                                                                     trimmed));
            std::string_view n = long_names.substr(static_cast<std::size_t>(*idx));
            // GNU ends a long name with "/\n", MSVC's .lib with a NUL.
            auto stop = n.find_first_of(std::string_view("\n\0", 2));
            if (stop == std::string_view::npos)
                return where.error(b.abs(header_offset), "unterminated ar long name");
            n = n.substr(0, stop);
            if (!n.empty() && n.back() == '/') n.remove_suffix(1);
            name = std::string(n);
        } else {
            std::string_view n = trimmed;
            if (!n.empty() && n.back() == '/') n.remove_suffix(1);
            name = std::string(n);
        }
        members.push_back(ArMember{std::move(name), b.abs(header_offset), data});
    }
    return members;
}

} // namespace forge::binary
