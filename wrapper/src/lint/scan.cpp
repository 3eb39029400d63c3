#include "lint/scan.h"

#include <charconv>
#include <system_error>

namespace forge::lint::scan {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n'))
        ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n'))
        --e;
    return std::string(s.substr(b, e - b));
}

std::string squeeze(std::string_view s, std::size_t max_len) {
    std::string out;
    bool space = false;
    for (char c : s) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    if (out.size() > max_len) out = out.substr(0, max_len - 3) + "...";
    return out;
}

std::string_view line_text(std::string_view text, const LineIndex& idx, int line) {
    std::size_t b = idx.start(line);
    std::size_t e = text.find('\n', b);
    return text.substr(b, (e == std::string_view::npos ? text.size() : e) - b);
}

std::optional<long> parse_integer(std::string_view s) {
    while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L'))
        s.remove_suffix(1);
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<int> sm_in(std::string_view ident, std::string_view prefix, std::string_view tail) {
    if (!ident.starts_with(prefix) || !ident.ends_with(tail)) return std::nullopt;
    if (ident.size() <= prefix.size() + tail.size()) return std::nullopt;
    std::string_view digits =
        ident.substr(prefix.size(), ident.size() - prefix.size() - tail.size());
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    if (!std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
    return std::stoi(std::string(digits));
}

std::string_view file_name(std::string_view path) {
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
std::string extension(std::string_view path) {
    std::string_view name = file_name(path);
    auto dot = name.rfind('.');
    return dot == std::string_view::npos ? std::string() : lower(name.substr(dot));
}

std::string arch_cc(long value) {
    return arch::cc_string(static_cast<int>((value + 9) / 10));
}

namespace {

// A CC whose every product is listed again under a higher CC is an older name of those parts
// (Thor: 10.1 in CUDA 12.8/12.9, 11.0 from CUDA 13.0 on); the current name is the one to suggest.
bool is_current_name(const arch::Gpu& gpu, const std::vector<arch::Gpu>& gpus) {
    if (gpu.products.empty()) return false;
    return !std::all_of(gpu.products.begin(), gpu.products.end(), [&](const std::string& p) {
        return std::any_of(gpus.begin(), gpus.end(), [&](const arch::Gpu& later) {
            return later.sm > gpu.sm && std::find(later.products.begin(), later.products.end(),
                                                  p) != later.products.end();
        });
    });
}

} // namespace

std::string lowest_known_cc(long value, const std::vector<arch::Gpu>& gpus) {
    const arch::Gpu* best = nullptr;
    for (const auto& g : gpus)
        if (g.sm * 10L >= value && (!best || g.sm < best->sm) && is_current_name(g, gpus))
            best = &g;
    return best ? arch::cc_string(best->sm) : arch_cc(value);
}

bool is_known_cc(int sm, const std::vector<arch::Gpu>& gpus) {
    return std::any_of(gpus.begin(), gpus.end(), [&](const arch::Gpu& g) { return g.sm == sm; });
}

} // namespace forge::lint::scan
