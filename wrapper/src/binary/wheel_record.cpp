#include "binary/wheel_record.h"

#include "core/sha256.h"

#include <charconv>
#include <fmt/format.h>

namespace forge::binary {

namespace {

std::string base64_urlsafe_nopad(const std::uint8_t* bytes, std::size_t n) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < n; i += 3) {
        const unsigned v =
            (unsigned{bytes[i]} << 16) | (unsigned{bytes[i + 1]} << 8) | bytes[i + 2];
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (const std::size_t rest = n - i; rest == 1) {
        const unsigned v = unsigned{bytes[i]} << 16;
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
    } else if (rest == 2) {
        const unsigned v = (unsigned{bytes[i]} << 16) | (unsigned{bytes[i + 1]} << 8);
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
    }
    return out;
}

// One CSV row starting at `at`: its fields, `at` moved past its line end. A quoted field may hold
// line breaks.
std::vector<std::string> next_row(std::string_view text, std::size_t& at) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    bool was_quoted = false;
    while (at < text.size()) {
        const char c = text[at++];
        if (quoted) {
            if (c != '"') {
                fields.back() += c;
            } else if (at < text.size() && text[at] == '"') {
                fields.back() += '"';
                ++at;
            } else {
                quoted = false;
            }
            continue;
        }
        if (c == '"' && fields.back().empty() && !was_quoted) {
            quoted = was_quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
            was_quoted = false;
        } else if (c == '\n') {
            break;
        } else if (c == '\r' && at < text.size() && text[at] == '\n') {
            ++at;
            break;
        } else {
            fields.back() += c;
        }
    }
    return fields;
}

} // namespace

std::vector<std::string> record_fields(std::string_view line) {
    std::size_t at = 0;
    return next_row(line, at);
}

std::string record_csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

Result<std::vector<RecordRow>> parse_record(std::string_view text) {
    std::vector<RecordRow> rows;
    std::size_t at = 0;
    int line = 1;
    while (at < text.size()) {
        const std::size_t start = at;
        const int row_line = line;
        auto fields = next_row(text, at);
        for (std::size_t i = start; i < at; ++i)
            line += text[i] == '\n' ? 1 : 0;
        if (fields.size() == 1 && fields[0].find_first_not_of(" \t\r") == std::string::npos)
            continue; // a blank line
        auto bad = [&](std::string message) {
            Error e{std::move(message)};
            e.line = row_line;
            return e;
        };
        if (fields.size() != 3)
            return bad(fmt::format("a RECORD row is path,hash,size: this one has {} field{}",
                                   fields.size(), fields.size() == 1 ? "" : "s"));
        RecordRow row{std::move(fields[0]), std::move(fields[1]), std::nullopt, row_line};
        if (!fields[2].empty()) {
            std::uint64_t size = 0;
            const char* b = fields[2].data();
            const char* e = b + fields[2].size();
            auto [p, ec] = std::from_chars(b, e, size);
            if (ec != std::errc() || p != e)
                return bad(fmt::format("the size of {} is '{}', not a number of bytes", row.path,
                                       fields[2]));
            row.size = size;
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string record_hash(const std::array<std::uint8_t, 32>& sha256) {
    return "sha256=" + base64_urlsafe_nopad(sha256.data(), sha256.size());
}

std::string record_hash(std::string_view bytes) {
    Sha256 h;
    h.update(bytes);
    return record_hash(h.digest());
}

bool is_record_member(std::string_view name) {
    const auto slash = name.find('/');
    return slash != std::string_view::npos && name.substr(slash) == "/RECORD" &&
           name.substr(0, slash).ends_with(".dist-info");
}

} // namespace forge::binary
