#include "arch/arch.h"

#include "arch/gencode.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>

namespace forge::arch {

namespace {

struct NamedArch {
    std::string_view name;
    std::string_view list;
};

// torch/utils/cpp_extension.py `named_arches` (torch 2.11). Combined names come first there
// because torch does string replacement; here names are whole tokens, so order does not matter.
constexpr std::array kTorchNamedArches = {
    NamedArch{"Kepler+Tesla", "3.7"},     NamedArch{"Kepler", "3.5+PTX"},
    NamedArch{"Maxwell+Tegra", "5.3"},    NamedArch{"Maxwell", "5.0;5.2+PTX"},
    NamedArch{"Pascal", "6.0;6.1+PTX"},   NamedArch{"Volta+Tegra", "7.2"},
    NamedArch{"Volta", "7.0+PTX"},        NamedArch{"Turing", "7.5+PTX"},
    NamedArch{"Ampere+Tegra", "8.7"},     NamedArch{"Ampere", "8.0;8.6+PTX"},
    NamedArch{"Ada", "8.9+PTX"},          NamedArch{"Hopper", "9.0+PTX"},
    NamedArch{"Blackwell+Tegra", "11.0"}, NamedArch{"Blackwell", "10.0;10.3;12.0;12.1+PTX"},
};

bool parse_int(std::string_view s, int& out) {
    if (s.empty() || s.size() > 3) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

Error token_error(std::string_view token, std::string_view origin, std::string_view why) {
    Error e{fmt::format("bad arch token '{}': {}", token, why)};
    e.key = std::string(token);
    if (!origin.empty()) e.file = std::string(origin);
    return e;
}

// Suffix validity mirrors nvcc 13.0: `a` exists from 9.0, `f` from 10.0.
std::optional<std::string> suffix_problem(int sm, Suffix s) {
    if (s == Suffix::Specific && sm < 90)
        return std::string("arch-specific (a) targets exist only for CC 9.0 and later");
    if (s == Suffix::Family && sm < 100)
        return std::string("family (f) targets exist only for CC 10.0 and later");
    return std::nullopt;
}

Suffix suffix_from(char c) {
    return c == 'a' ? Suffix::Specific : c == 'f' ? Suffix::Family : Suffix::None;
}

// "<digits>[a|f]" -> sm, suffix
bool split_sm_suffix(std::string_view s, int& sm, Suffix& suffix) {
    suffix = Suffix::None;
    if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
        suffix = suffix_from(s.back());
        s.remove_suffix(1);
    }
    return parse_int(s, sm) && sm >= 10;
}

Result<std::vector<ArchEntry>> parse_token(std::string_view tok, std::string_view origin) {
    if (auto named = torch_named_arch(tok); !named.empty()) {
        auto list = ArchList::parse(named, origin);
        if (!list) return std::move(list).error();
        return list->entries();
    }
    ArchEntry e;
    // nvcc spellings
    for (auto [prefix, kind] : {std::pair{std::string_view("sm_"), Kind::Sass},
                                std::pair{std::string_view("compute_"), Kind::Ptx},
                                std::pair{std::string_view("lto_"), Kind::Lto}}) {
        if (tok.starts_with(prefix)) {
            auto t = parse_target(tok, origin);
            if (!t) return std::move(t).error();
            e.sm = t->sm;
            e.suffix = t->suffix;
            e.sass = kind == Kind::Sass;
            e.ptx = kind == Kind::Ptx;
            e.lto = kind == Kind::Lto;
            return std::vector<ArchEntry>{e};
        }
    }
    // torch X.Y[a|f][+PTX] or CMake NN[a|f][-real|-virtual]; the other form's tail is no arch
    using Tail = ArchSpelling::Tail;
    const bool torch = tok.find('.') != std::string_view::npos;
    auto s = split_arch_spelling(tok);
    if (!s || (torch ? s->tail != Tail::None && s->tail != Tail::Ptx : s->tail == Tail::Ptx))
        return token_error(tok, origin,
                           torch ? "expected X.Y with optional a/f suffix and +PTX (e.g. 9.0a+PTX)"
                                 : "not an arch (expected 8.0, 9.0+PTX, 10.0f, sm_90a, compute_90, "
                                   "90-real or a torch name like Ampere)");
    if (auto p = suffix_problem(s->sm, s->suffix)) return token_error(tok, origin, *p);
    e.sm = s->sm;
    e.suffix = s->suffix;
    e.sass = s->tail != Tail::Virtual;
    e.ptx = torch ? s->tail == Tail::Ptx : s->tail != Tail::Real;
    return std::vector<ArchEntry>{e};
}

bool entry_less(const ArchEntry& a, const ArchEntry& b) {
    return std::pair(a.sm, a.suffix) < std::pair(b.sm, b.suffix);
}

} // namespace

std::optional<ArchSpelling> split_arch_spelling(std::string_view token) {
    using Tail = ArchSpelling::Tail;
    ArchSpelling out;
    for (auto [text, tail] : {std::pair{std::string_view("+PTX"), Tail::Ptx},
                              std::pair{std::string_view("-real"), Tail::Real},
                              std::pair{std::string_view("-virtual"), Tail::Virtual}})
        if (token.ends_with(text)) {
            token.remove_suffix(text.size());
            out.tail = tail;
            break;
        }
    auto dot = token.find('.');
    if (dot == std::string_view::npos) {
        if (!split_sm_suffix(token, out.sm, out.suffix)) return std::nullopt;
        return out;
    }
    std::string_view minor = token.substr(dot + 1);
    if (!minor.empty() && (minor.back() == 'a' || minor.back() == 'f')) {
        out.suffix = suffix_from(minor.back());
        minor.remove_suffix(1);
    }
    int maj = 0, min = 0;
    if (!parse_int(token.substr(0, dot), maj) || maj < 1 || minor.size() != 1 ||
        !parse_int(minor, min))
        return std::nullopt;
    out.sm = maj * 10 + min;
    out.dotted = true;
    return out;
}

std::string cc_string(int sm) {
    return fmt::format("{}.{}", sm_major(sm), sm_minor(sm));
}

std::string_view suffix_string(Suffix s) {
    switch (s) {
    case Suffix::Specific:
        return "a";
    case Suffix::Family:
        return "f";
    case Suffix::None:
        break;
    }
    return "";
}

std::string_view kind_string(Kind k) {
    switch (k) {
    case Kind::Ptx:
        return "ptx";
    case Kind::Lto:
        return "lto";
    case Kind::Sass:
        break;
    }
    return "sass";
}

std::string Target::name() const {
    std::string_view prefix = kind == Kind::Sass ? "sm_" : kind == Kind::Ptx ? "compute_" : "lto_";
    return fmt::format("{}{}{}", prefix, sm, suffix_string(suffix));
}

Result<Target> parse_target(std::string_view name, std::string_view origin) {
    Target t;
    std::string_view rest;
    if (name.starts_with("sm_")) {
        t.kind = Kind::Sass;
        rest = name.substr(3);
    } else if (name.starts_with("compute_")) {
        t.kind = Kind::Ptx;
        rest = name.substr(8);
    } else if (name.starts_with("lto_")) {
        t.kind = Kind::Lto;
        rest = name.substr(4);
    } else {
        return token_error(name, origin, "expected sm_XX, compute_XX or lto_XX");
    }
    if (!split_sm_suffix(rest, t.sm, t.suffix))
        return token_error(name, origin, "expected an SM number such as 90, 90a or 100f");
    if (auto p = suffix_problem(t.sm, t.suffix)) return token_error(name, origin, *p);
    return t;
}

std::string ArchEntry::token() const {
    if (torch_expressible())
        return fmt::format("{}{}{}", cc_string(sm), suffix_string(suffix), ptx ? "+PTX" : "");
    std::vector<std::string> parts;
    for (const auto& t : targets())
        parts.push_back(t.name());
    return fmt::format("{}", fmt::join(parts, " "));
}

std::vector<Target> ArchEntry::targets() const {
    std::vector<Target> out;
    if (sass) out.push_back({Kind::Sass, sm, suffix});
    if (ptx) out.push_back({Kind::Ptx, sm, suffix});
    if (lto) out.push_back({Kind::Lto, sm, suffix});
    return out;
}

std::string_view torch_named_arch(std::string_view name) {
    for (const auto& n : kTorchNamedArches)
        if (n.name == name) return n.list;
    return {};
}

Result<ArchList> ArchList::parse(std::string_view text, std::string_view origin) {
    ArchList list;
    std::size_t i = 0;
    auto is_sep = [](char c) {
        return c == ' ' || c == ';' || c == ',' || c == '\t' || c == '\n' || c == '\r';
    };
    while (i < text.size()) {
        while (i < text.size() && is_sep(text[i]))
            ++i;
        std::size_t j = i;
        while (j < text.size() && !is_sep(text[j]))
            ++j;
        if (j > i) {
            auto entries = parse_token(text.substr(i, j - i), origin);
            if (!entries) return std::move(entries).error();
            for (const auto& e : *entries)
                list.add(e);
        }
        i = j;
    }
    return list;
}

ArchList ArchList::from_targets(const std::vector<Target>& targets) {
    ArchList list;
    for (const auto& t : targets)
        list.add(t);
    return list;
}

void ArchList::add(const ArchEntry& entry) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), entry, entry_less);
    if (it != entries_.end() && it->same_slot(entry)) {
        it->sass |= entry.sass;
        it->ptx |= entry.ptx;
        it->lto |= entry.lto;
        return;
    }
    entries_.insert(it, entry);
}

void ArchList::add(const Target& t) {
    ArchEntry e{t.sm, t.suffix, t.kind == Kind::Sass, t.kind == Kind::Ptx, t.kind == Kind::Lto};
    add(e);
}

bool ArchList::remove_sass(int sm, Suffix suffix) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->sm == sm && it->suffix == suffix) {
            entries_.erase(it);
            return true;
        }
    }
    return false;
}

std::vector<Target> ArchList::targets() const {
    std::vector<Target> out;
    for (const auto& e : entries_)
        for (const auto& t : e.targets())
            out.push_back(t);
    std::sort(out.begin(), out.end());
    return out;
}

std::string ArchList::to_string() const {
    std::vector<std::string> parts;
    parts.reserve(entries_.size());
    for (const auto& e : entries_)
        parts.push_back(e.token());
    return fmt::format("{}", fmt::join(parts, " "));
}

Result<std::string> ArchList::to_torch() const {
    for (const auto& e : entries_) {
        if (!e.torch_expressible()) {
            Error err{fmt::format("'{}' has no TORCH_CUDA_ARCH_LIST spelling (torch lists SASS "
                                  "arches, optionally +PTX; PTX-only and LTO entries cannot be "
                                  "expressed)",
                                  e.token())};
            err.key = e.token();
            return err;
        }
    }
    return to_string();
}

std::string ArchList::to_cmake() const {
    std::vector<std::string> parts;
    for (const auto& e : entries_) {
        std::string base = fmt::format("{}{}", e.sm, suffix_string(e.suffix));
        if (e.sass && e.ptx)
            parts.push_back(base);
        else if (e.sass)
            parts.push_back(base + "-real");
        else if (e.ptx)
            parts.push_back(base + "-virtual");
        // LTO has no CUDA_ARCHITECTURES spelling of its own (CMake derives it from IPO).
    }
    return fmt::format("{}", fmt::join(parts, ";"));
}

std::vector<std::string> ArchList::to_gencode() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) {
        const Target arch{Kind::Ptx, e.sm, e.suffix};
        for (const auto& t : e.targets())
            out.push_back("-gencode=" + gencode_value(arch, t.name()));
    }
    return out;
}

const ArchEntry* ArchList::highest_portable() const {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
        if (it->suffix == Suffix::None && it->sass) return &*it;
    return nullptr;
}

int ArchList::ensure_ptx_on_highest_base() {
    const ArchEntry* h = highest_portable();
    if (h == nullptr || h->ptx) return -1;
    auto& e = entries_[static_cast<std::size_t>(h - entries_.data())];
    e.ptx = true;
    return e.sm;
}

bool ArchList::operator==(const ArchList& o) const {
    return targets() == o.targets();
}

} // namespace forge::arch
