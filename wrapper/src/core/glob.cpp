#include "core/glob.h"

#include <optional>

namespace forge {

namespace {

// The bracket set opening at g[gi]: whether `c` is in it, with `next` set past its ']'; nullopt
// when the set is never closed (the '[' is then an ordinary character, as in fnmatch).
std::optional<bool> set_match(std::string_view g, std::size_t gi, char c, std::size_t& next) {
    std::size_t i = gi + 1;
    bool negate = false;
    if (i < g.size() && (g[i] == '!' || g[i] == '^')) {
        negate = true;
        ++i;
    }
    bool matched = false;
    bool first = true;
    while (i < g.size()) {
        if (g[i] == ']' && !first) break;
        first = false;
        char lo = g[i];
        if (lo == '\\' && i + 1 < g.size()) lo = g[++i];
        ++i;
        char hi = lo;
        if (i + 1 < g.size() && g[i] == '-' && g[i + 1] != ']') {
            hi = g[i + 1];
            i += 2;
            if (hi == '\\' && i < g.size()) hi = g[i++];
        }
        const auto u = static_cast<unsigned char>(c);
        if (static_cast<unsigned char>(lo) <= u && u <= static_cast<unsigned char>(hi))
            matched = true;
    }
    if (i >= g.size()) return std::nullopt;
    next = i + 1;
    // A set is inside one component, like `?`.
    return c != '/' && matched != negate;
}

bool match_at(std::string_view g, std::size_t gi, std::string_view p, std::size_t pi) {
    while (gi < g.size()) {
        const char c = g[gi];
        if (c == '*') {
            if (gi + 1 < g.size() && g[gi + 1] == '*') {
                std::size_t ng = gi + 2;
                // `**/` may stand for no directory at all.
                if (ng < g.size() && g[ng] == '/' && match_at(g, ng + 1, p, pi)) return true;
                for (std::size_t k = pi; k <= p.size(); ++k)
                    if (match_at(g, ng, p, k)) return true;
                return false;
            }
            for (std::size_t k = pi;; ++k) {
                if (match_at(g, gi + 1, p, k)) return true;
                if (k >= p.size() || p[k] == '/') return false;
            }
        }
        if (pi >= p.size()) return false;
        if (c == '?') {
            if (p[pi] == '/') return false;
            ++gi;
        } else if (c == '[') {
            std::size_t next = 0;
            if (auto in = set_match(g, gi, p[pi], next)) {
                if (!*in) return false;
                gi = next;
            } else {
                if (p[pi] != '[') return false;
                ++gi;
            }
        } else if (c == '\\' && gi + 1 < g.size()) {
            if (p[pi] != g[gi + 1]) return false;
            gi += 2;
        } else {
            if (c != p[pi]) return false;
            ++gi;
        }
        ++pi;
    }
    return pi == p.size();
}

bool whole(std::string_view glob, std::string_view text) {
    return match_at(glob, 0, text, 0);
}

} // namespace

bool glob_match(std::string_view glob, std::string_view path) {
    if (glob.find('/') == std::string_view::npos) {
        std::size_t b = 0;
        while (b <= path.size()) {
            std::size_t e = path.find('/', b);
            if (e == std::string_view::npos) e = path.size();
            // "/abs" and "a//b" have empty components; no name is empty.
            if (e > b && whole(glob, path.substr(b, e - b))) return true;
            b = e + 1;
        }
        return false;
    }
    if (whole(glob, path)) return true;
    // Without any wildcard the glob names a directory (or a file) and covers what is under it.
    return !glob_has_wildcard(glob) && path.size() > glob.size() && path.starts_with(glob) &&
           path[glob.size()] == '/';
}

bool glob_has_wildcard(std::string_view glob) {
    return glob.find_first_of("*?[\\") != std::string_view::npos;
}

bool glob_match_unrooted(std::string_view glob, std::string_view path) {
    if (glob_match(glob, path)) return true;
    if (glob.find('/') == std::string_view::npos) return false; // every component was tried
    for (std::size_t pos = path.find('/'); pos != std::string_view::npos;
         pos = path.find('/', pos + 1))
        if (glob_match(glob, path.substr(pos + 1))) return true;
    return false;
}

} // namespace forge
