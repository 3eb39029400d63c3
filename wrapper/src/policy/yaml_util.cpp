#include "policy/yaml_util.h"

#include "core/file.h"
#include "core/text.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <set>

namespace forge::policy::yamlx {

std::optional<int> line_of(const YAML::Node& node) {
    if (!node.IsDefined()) return std::nullopt;
    YAML::Mark m = node.Mark();
    if (m.line < 0) return std::nullopt;
    return m.line + 1;
}

namespace {

// yaml-cpp marks an empty value (`key:` and nothing after it) at the token that follows: the next
// key, lines below, or the end of the file (past the last newline). The line to edit is the key's:
// the last line before the mark with more than blanks and a comment. nullopt when the mark is not
// the first token of its line (`{list: , reason: x}`: the mark is already on the right line) or
// the file cannot be read again.
std::optional<int> empty_value_line(const std::string& file, const YAML::Mark& mark) {
    auto text = read_file(file);
    if (!text || mark.pos < 0) return std::nullopt;
    const std::string_view t = *text;
    auto pos = std::min(static_cast<std::size_t>(mark.pos), t.size());
    auto start = pos == 0 ? 0 : t.rfind('\n', pos - 1);
    start = start == std::string_view::npos ? 0 : start + (pos == 0 ? 0 : 1);
    if (t.substr(start, pos - start).find_first_not_of(" \t\r") != std::string_view::npos)
        return std::nullopt;
    int line = mark.line + 1;
    while (start > 0) {
        const auto end = start - 1; // the '\n' ending the line above
        const auto begin = end == 0 ? 0 : t.rfind('\n', end - 1);
        start = begin == std::string_view::npos ? 0 : begin + 1;
        --line;
        std::string_view above = t.substr(start, end - start);
        // A comment starts at a '#' at the line's start or after a blank.
        for (std::size_t i = 0; i < above.size(); ++i)
            if (above[i] == '#' && (i == 0 || above[i - 1] == ' ' || above[i - 1] == '\t')) {
                above = above.substr(0, i);
                break;
            }
        if (above.find_first_not_of(" \t\r") != std::string_view::npos) return line;
    }
    return std::nullopt;
}

} // namespace

Error error_at(const std::string& file, const YAML::Node& node, std::string key,
               std::string message) {
    Error e{std::move(message), file};
    e.line = line_of(node);
    if (e.line && node.IsNull())
        if (auto line = empty_value_line(file, node.Mark())) e.line = line;
    e.key = std::move(key);
    return e;
}

Result<YAML::Node> load_text(std::string_view text, const std::string& file) {
    // YAML text is Unicode (YAML 1.2, section 5.2), and these files are read as UTF-8: a byte
    // that is not would pass through yaml-cpp into names and reasons, and from there into JSON,
    // which must be UTF-8. It is refused here, where the file and line are known.
    if (const auto bad = first_invalid_utf8(text)) {
        const std::string_view before = text.substr(0, *bad);
        const auto line_start = before.rfind('\n');
        Error e{fmt::format("not UTF-8: byte 0x{:02x} at column {} is not valid UTF-8 text (save "
                            "the file as UTF-8)",
                            static_cast<unsigned char>(text[*bad]),
                            *bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1),
                file};
        e.line = static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1;
        e.offset = bad;
        return e;
    }
    try {
        return YAML::Load(std::string(text));
    } catch (const YAML::Exception& ex) {
        Error e{ex.mark.column >= 0
                    ? fmt::format("YAML syntax error at column {}: {}", ex.mark.column + 1, ex.msg)
                    : fmt::format("YAML syntax error: {}", ex.msg),
                file};
        if (ex.mark.line >= 0) e.line = ex.mark.line + 1;
        return e;
    }
}

Result<YAML::Node> load_file(const std::filesystem::path& path) {
    auto text = read_file(path);
    if (!text) return std::move(text).error();
    return load_text(*text, path.string());
}

namespace {

Status check_map_impl(const std::string& file, const YAML::Node& node, std::string_view where,
                      const std::initializer_list<std::string_view>* allowed) {
    if (!node.IsMap())
        return error_at(file, node, std::string(where),
                        node.IsNull() ? "expected a map, found nothing" : "expected a map");
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar())
            return error_at(file, it->first, std::string(where), "map keys must be plain scalars");
        std::string key = it->first.Scalar();
        if (!seen.insert(key).second)
            return error_at(file, it->first, key, fmt::format("duplicate key in {}", where));
        if (allowed == nullptr) continue;
        bool known = false;
        for (auto a : *allowed)
            known = known || a == key;
        if (!known) {
            std::string list;
            for (auto a : *allowed)
                list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
            return error_at(file, it->first, key,
                            fmt::format("unknown key in {} (allowed: {})", where, list));
        }
    }
    return ok_status();
}

} // namespace

Status check_map(const std::string& file, const YAML::Node& node, std::string_view where,
                 std::initializer_list<std::string_view> allowed) {
    return check_map_impl(file, node, where, &allowed);
}

Status check_any_map(const std::string& file, const YAML::Node& node, std::string_view where) {
    return check_map_impl(file, node, where, nullptr);
}

Result<std::string> scalar(const std::string& file, const YAML::Node& node, std::string_view key) {
    if (!node.IsScalar())
        return error_at(file, node, std::string(key),
                        node.IsNull() || !node.IsDefined() ? "expected a value, found nothing"
                                                           : "expected a single value (a string)");
    return node.Scalar();
}

Result<bool> boolean(const std::string& file, const YAML::Node& node, std::string_view key) {
    auto s = scalar(file, node, key);
    if (!s) return std::move(s).error();
    if (*s == "true") return true;
    if (*s == "false") return false;
    return error_at(file, node, std::string(key),
                    fmt::format("expected true or false, got '{}'", *s));
}

Result<long> integer(const std::string& file, const YAML::Node& node, std::string_view key) {
    auto s = scalar(file, node, key);
    if (!s) return std::move(s).error();
    long v = 0;
    auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || p != s->data() + s->size())
        return error_at(file, node, std::string(key),
                        fmt::format("expected an integer, got '{}'", *s));
    return v;
}

} // namespace forge::policy::yamlx
