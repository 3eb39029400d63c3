#include "lint/build_rules.h"

#include "lint/lex.h"
#include "lint/scan.h"
#include "nvcc/cmdline.h"
#include "nvcc/options.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fmt/format.h>
#include <set>

namespace forge::lint {

using namespace scan;

namespace {

// ---- build files ------------------------------------------------------------------------------

enum class BuildKind { Python, CMake, Shell };

std::optional<BuildKind> build_kind(std::string_view path) {
    std::string_view name = file_name(path);
    std::string ext = extension(path);
    if (name == "CMakeLists.txt" || ext == ".cmake") return BuildKind::CMake;
    if (name == "Makefile" || name == "makefile" || name == "GNUmakefile" || ext == ".mk" ||
        ext == ".sh" || ext == ".bash")
        return BuildKind::Shell;
    if (ext == ".py" || name == "pyproject.toml") return BuildKind::Python;
    return std::nullopt;
}

bool target_declared(const arch::ArchList& list, int sm, arch::Suffix s) {
    return has_entry(list, [&](const arch::ArchEntry& e) {
        return e.sm == sm && (s != arch::Suffix::Specific || e.suffix == arch::Suffix::Specific);
    });
}

void explicit_target_finding(Finder& f, std::size_t offset, std::string pattern, int sm,
                             arch::Suffix s, const arch::ArchList& list) {
    if (target_declared(list, sm, s)) return;
    // A family target is declared by its SM (the gate folds f); an `a` target only by `a`.
    std::string needs = arch::cc_string(sm) + (s == arch::Suffix::Specific ? "a" : "");
    f.add(offset, "explicit-target", pattern, needs,
          fmt::format("the build names {} itself but the list does not declare {}: the wheel "
                      "gets code the policy never asked for (the gate reports it as extra), or "
                      "{}-only kernels ship that nobody declared; declare {} in the package's arch "
                      "override, or lint_ignore it with the reason",
                      pattern, needs, needs, needs));
}

// sm_90a / compute_120 / lto_80 at word boundaries.
void scan_nvcc_targets(Finder& f, std::string_view code, const arch::ArchList& list) {
    for (std::string_view prefix : {"sm_", "compute_", "lto_"}) {
        std::size_t pos = 0;
        while ((pos = code.find(prefix, pos)) != std::string_view::npos) {
            std::size_t start = pos;
            pos += prefix.size();
            if (start > 0 && is_ident_char(code[start - 1])) continue;
            std::size_t k = pos;
            while (k < code.size() && is_digit(code[k]))
                ++k;
            if (k - pos < 2 || k - pos > 3) continue;
            if (k < code.size() && (code[k] == 'a' || code[k] == 'f')) ++k;
            if (k < code.size() && is_ident_char(code[k])) continue;
            auto target = arch::parse_target(code.substr(start, k - start));
            if (!target) continue;
            explicit_target_finding(f, start, target->name(), target->sm, target->suffix, list);
        }
    }
}

// An arch token as a string literal piece: torch "9.0a", "3.7+PTX" or CMake "90a-real".
struct ArchPiece {
    int sm = 0;
    arch::Suffix suffix = arch::Suffix::None;
    bool decorated = false; // has a/f, +PTX, -real or -virtual: unambiguously an arch
    bool torch = false;
};
std::optional<ArchPiece> arch_piece(std::string_view p, const std::vector<arch::Gpu>& gpus) {
    auto s = arch::split_arch_spelling(p);
    if (!s || !is_known_cc(s->sm, gpus)) return std::nullopt;
    return ArchPiece{s->sm, s->suffix,
                     s->tail != arch::ArchSpelling::Tail::None || s->suffix != arch::Suffix::None,
                     s->dotted};
}

// A string literal that is an arch list or arch token: "90a", "9.0a", "100a;120a",
// "3.7+PTX;5.0;6.0". Plain "80" or "12.8" alone are not (too ambiguous).
void scan_arch_strings(Finder& f, std::string_view code, const ScriptText& st,
                       const arch::ArchList& list) {
    for (const auto& span : st.strings) {
        std::string_view s = code.substr(span.begin, span.end - span.begin);
        if (s.empty() || s.size() > 400) continue;
        std::vector<std::pair<std::size_t, std::string_view>> pieces;
        std::size_t i = 0;
        while (i < s.size()) {
            while (i < s.size() && (s[i] == ' ' || s[i] == ';' || s[i] == ',' || s[i] == '\t'))
                ++i;
            std::size_t b = i;
            while (i < s.size() && !(s[i] == ' ' || s[i] == ';' || s[i] == ',' || s[i] == '\t'))
                ++i;
            if (i > b) pieces.emplace_back(b, s.substr(b, i - b));
        }
        if (pieces.empty()) continue;
        std::vector<std::pair<std::size_t, ArchPiece>> parsed;
        bool all = true, any_decorated = false, all_torch = true;
        for (auto& [off, p] : pieces) {
            auto a = arch_piece(p, f.gpus);
            if (!a) {
                all = false;
                break;
            }
            any_decorated = any_decorated || a->decorated;
            all_torch = all_torch && a->torch;
            parsed.emplace_back(off, *a);
        }
        if (!all || !(any_decorated || (parsed.size() >= 2 && all_torch))) continue;
        for (std::size_t k = 0; k < parsed.size(); ++k)
            explicit_target_finding(f, span.begin + parsed[k].first, std::string(pieces[k].second),
                                    parsed[k].second.sm, parsed[k].second.suffix, list);
    }
}

std::string_view skip_ws_back(std::string_view before) {
    while (!before.empty() && (before.back() == ' ' || before.back() == '\t'))
        before.remove_suffix(1);
    return before;
}
std::string_view skip_ws(std::string_view after) {
    while (!after.empty() && (after.front() == ' ' || after.front() == '\t'))
        after.remove_prefix(1);
    return after;
}

void scan_has_sm(Finder& f, std::string_view code, const arch::ArchList& list) {
    std::size_t pos = 0;
    while ((pos = code.find("HAS_SM", pos)) != std::string_view::npos) {
        std::size_t start = pos;
        pos += 6;
        if (start > 0 && is_ident_char(code[start - 1])) continue;
        std::size_t k = pos;
        while (k < code.size() && is_ident_char(code[k]))
            ++k;
        std::string_view ident = code.substr(start, k - start);
        std::optional<int> sm = sm_in(ident, "HAS_SM", "");
        if (!sm || !is_known_cc(*sm, f.gpus)) continue;
        // `HAS_SM89 = True` only records the request; the gate is where the flag is tested.
        std::string_view rest = skip_ws(code.substr(k));
        if (rest.starts_with("=") && !rest.starts_with("==")) continue;
        if (target_declared(list, *sm, arch::Suffix::None)) continue;
        std::string needs = arch::cc_string(*sm);
        f.add(start, "build-arch-gate", std::string(ident), needs,
              fmt::format("the build compiles its {} kernels only when {} is asked for; the list "
                          "lacks {}, so the wheel ships without them and {} GPUs fail at run time "
                          "(SageAttention: 'SM89 kernel is not available')",
                          ident, needs, needs, needs));
    }
}

constexpr std::string_view kArchListVar = "TORCH_CUDA_ARCH_LIST";

constexpr std::string_view kWhyReads =
    "the build parses TORCH_CUDA_ARCH_LIST itself instead of leaving it to "
    "torch.utils.cpp_extension: ladders and whitelists silently drop every arch they do not know "
    "(flash-attention's if-ladder, SageAttention's `continue`), and the wheel lacks it; read the "
    "parser, or emit the missing archs yourself (flash_attn's cuda_extra_archs)";
constexpr std::string_view kWhyWrites =
    "the build overwrites the requested arch list (pointnet2_ops set `3.7+PTX;...;7.5`): the "
    "wheel is built for the script's archs, not the policy's, and only the post-build gate can "
    "notice";
constexpr std::string_view kWhyGencode =
    "hard-coded nvcc targets: as soon as any user flag contains `arch`, torch stops adding "
    "TORCH_CUDA_ARCH_LIST's flags, so this line, not the request, decides the wheel's archs";
constexpr std::string_view kWhyCmakeArchs =
    "CUDA_ARCHITECTURES fixed in the build file: CMake builds these archs whatever the request "
    "says";

bool in_string(const ScriptText& st, std::size_t offset, StringSpan* span = nullptr) {
    auto it = std::upper_bound(st.strings.begin(), st.strings.end(), offset,
                               [](std::size_t o, const StringSpan& s) { return o < s.begin; });
    if (it == st.strings.begin()) return false;
    --it;
    if (offset >= it->begin && offset < it->end) {
        if (span) *span = *it;
        return true;
    }
    return false;
}

bool is_env_var_name(std::string_view s) {
    if (s.empty() || !(s[0] >= 'A' && s[0] <= 'Z')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; });
}

// An arch knob of the package's own: FLASH_ATTN_CUDA_ARCHS, NATTEN_CUDA_ARCH, CUMM_CUDA_ARCH_LIST.
bool is_own_arch_knob(std::string_view name) {
    return name != kArchListVar && is_env_var_name(name) &&
           name.find("CUDA_ARCH") != std::string_view::npos;
}

void own_knob_finding(Finder& f, std::size_t offset, std::string_view name) {
    f.add(offset, "script-own-arch-knob", std::string(name), "",
          fmt::format("the build takes its archs from its own variable {}, not "
                      "TORCH_CUDA_ARCH_LIST: unless the farm sets it from the resolved list, the "
                      "request is ignored",
                      name));
}

// Python (and TOML): a string literal "TORCH_CUDA_ARCH_LIST" used as an environment key.
void scan_python_env(Finder& f, std::string_view code, const ScriptText& st,
                     const LineIndex& lines) {
    for (const auto& span : st.strings) {
        std::string_view s = code.substr(span.begin, span.end - span.begin);
        if (span.begin == 0 || span.end >= code.size()) continue;
        std::string_view before = skip_ws_back(code.substr(0, span.begin - 1));
        std::string_view after = skip_ws(code.substr(span.end + 1));
        std::string_view line = line_text(code, lines, lines.line(span.begin));
        const bool env_line = line.find("environ") != std::string_view::npos ||
                              line.find("getenv") != std::string_view::npos ||
                              line.find("putenv") != std::string_view::npos;
        if (s == kArchListVar) {
            bool subscript_assign = after.starts_with("]") &&
                                    skip_ws(after.substr(1)).starts_with("=") &&
                                    !skip_ws(after.substr(1)).starts_with("==");
            bool dict_key = after.starts_with(":") && !env_line;
            bool mutator =
                before.ends_with("setdefault(") || before.ends_with("putenv(") ||
                before.ends_with("pop(") || before.ends_with("unsetenv(") ||
                (before.ends_with("[") &&
                 skip_ws_back(before.substr(0, before.size() - 1)).ends_with("environ") &&
                 skip_ws(line).starts_with("del "));
            if (subscript_assign || mutator || dict_key ||
                (after.starts_with(":") && env_line &&
                 line.find("update(") != std::string_view::npos)) {
                f.add(span.begin, "script-writes-arch-list", squeeze(line), "",
                      std::string(kWhyWrites));
            } else {
                f.add(span.begin, "script-reads-arch-list", squeeze(line), "",
                      std::string(kWhyReads));
            }
        } else if (is_own_arch_knob(s) && env_line) {
            own_knob_finding(f, span.begin, s);
        }
    }
    // environ.update(TORCH_CUDA_ARCH_LIST=...) / dict(TORCH_CUDA_ARCH_LIST=...)
    std::size_t pos = 0;
    while ((pos = code.find(kArchListVar, pos)) != std::string_view::npos) {
        std::size_t start = pos;
        pos += kArchListVar.size();
        if (in_string(st, start) || (start > 0 && is_ident_char(code[start - 1]))) continue;
        std::string_view after = skip_ws(code.substr(pos));
        if (after.starts_with("=") && !after.starts_with("==")) {
            std::string_view line = line_text(code, lines, lines.line(start));
            std::string_view before = skip_ws_back(code.substr(0, start));
            if (before.ends_with("(") || before.ends_with(","))
                f.add(start, "script-writes-arch-list", squeeze(line), "", std::string(kWhyWrites));
        }
    }
}

// ---- script-splits-arch-list: the script's own split of TORCH_CUDA_ARCH_LIST ----------------

// The string literal whose contents start at `begin` (its span), if any.
const StringSpan* string_at(const ScriptText& st, std::size_t begin) {
    auto it = std::lower_bound(st.strings.begin(), st.strings.end(), begin,
                               [](const StringSpan& s, std::size_t o) { return s.begin < o; });
    return it != st.strings.end() && it->begin == begin ? &*it : nullptr;
}

// A Python call's arguments when each is a string literal: `("a", "b")` -> {a, b}, `()` -> {}.
// `pos` is at '('; on success it moves past ')'. Anything else (a variable, a regex): nullopt.
std::optional<std::vector<std::string>> literal_args(std::string_view code, const ScriptText& st,
                                                     std::size_t& pos) {
    std::vector<std::string> args;
    std::size_t i = pos + 1;
    for (;;) {
        while (i < code.size() && (code[i] == ' ' || code[i] == '\t'))
            ++i;
        if (i >= code.size()) return std::nullopt;
        if (code[i] == ')') break;
        if (code[i] != '"' && code[i] != '\'') return std::nullopt;
        const StringSpan* span = string_at(st, i + 1);
        if (span == nullptr) return std::nullopt;
        args.emplace_back(code.substr(span->begin, span->end - span->begin));
        i = span->end + 1;
        while (i < code.size() && (code[i] == ' ' || code[i] == '\t'))
            ++i;
        if (i < code.size() && code[i] == ',') ++i;
    }
    pos = i + 1;
    return args;
}

std::vector<std::string> python_split(const std::string& text,
                                      const std::optional<std::string>& sep) {
    std::vector<std::string> out;
    if (!sep) { // str.split(): runs of whitespace, no empty pieces
        std::size_t i = 0;
        while (i < text.size()) {
            while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
                ++i;
            std::size_t b = i;
            while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
                ++i;
            if (i > b) out.push_back(text.substr(b, i - b));
        }
        return out;
    }
    if (sep->empty()) return {text}; // Python raises; nothing is split
    std::size_t b = 0;
    for (std::size_t at; (at = text.find(*sep, b)) != std::string::npos; b = at + sep->size())
        out.push_back(text.substr(b, at - b));
    out.push_back(text.substr(b));
    return out;
}

// What a chain of str methods after an arch-list expression does to a value: `.strip()`,
// `.replace(",", ";")`, ... up to the `.split(...)` that makes the tokens.
struct SplitChain {
    std::vector<std::pair<std::string, std::string>> replaces; // in order
    std::optional<std::string> sep;                            // nullopt: a plain .split()
    std::string text;                                          // ".replace(...).split(...)"

    [[nodiscard]] std::vector<std::string> tokens(std::string value) const {
        for (const auto& [from, to] : replaces) {
            if (from.empty()) continue;
            for (std::size_t at = 0; (at = value.find(from, at)) != std::string::npos;
                 at += to.size())
                value.replace(at, from.size(), to);
        }
        std::vector<std::string> out;
        for (auto& t : python_split(value, sep))
            if (auto s = trim(t); !s.empty()) out.push_back(s);
        return out;
    }
};

std::optional<SplitChain> split_chain(std::string_view code, const ScriptText& st,
                                      std::size_t pos) {
    SplitChain chain;
    const std::size_t start = pos;
    for (;;) {
        if (pos >= code.size() || code[pos] != '.') return std::nullopt;
        std::size_t b = pos + 1, e = b;
        while (e < code.size() && is_ident_char(code[e]))
            ++e;
        std::string_view method = code.substr(b, e - b);
        if (e >= code.size() || code[e] != '(') return std::nullopt;
        std::size_t next = e;
        auto args = literal_args(code, st, next);
        if (!args) return std::nullopt;
        if (method == "split" && args->size() <= 1) {
            if (args->size() == 1) chain.sep = args->front();
            chain.text = squeeze(code.substr(start, next - start));
            return chain;
        }
        if (method == "replace" && args->size() == 2)
            chain.replaces.emplace_back((*args)[0], (*args)[1]);
        else if (!((method == "strip" || method == "lower" || method == "upper" ||
                    method == "rstrip" || method == "lstrip") &&
                   args->empty()))
            return std::nullopt;
        pos = next;
    }
}

std::string separator_name(std::string_view sep) {
    return sep == " " ? std::string("space-separated") : fmt::format("'{}'-separated", sep);
}

// Python: `os.getenv("TORCH_CUDA_ARCH_LIST", "").split(";")`, or a name bound from it
// (`arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "")`) split later.
void scan_python_split(Finder& f, std::string_view code, const ScriptText& st,
                       const LineIndex& lines, const arch::ArchList& list,
                       std::string_view separator) {
    const std::string sep(separator.empty() ? " " : separator);
    std::string exported;
    if (auto t = list.to_torch(); t.ok()) exported = *t;
    if (exported.empty() || list.entries().size() < 2) exported = "8.0 9.0";
    std::replace(exported.begin(), exported.end(), ' ', sep[0]);
    const auto want =
        static_cast<std::size_t>(std::count(exported.begin(), exported.end(), sep[0])) + 1;

    auto check = [&](std::size_t at, std::size_t chain_pos) {
        auto chain = split_chain(code, st, chain_pos);
        if (!chain) return;
        const auto seen = chain->tokens(exported);
        if (seen.size() == want) return;
        std::string fix;
        for (std::string_view s : {" ", ";", ","}) {
            std::string sample = "8.0 9.0";
            std::replace(sample.begin(), sample.end(), ' ', s[0]);
            if (chain->tokens(sample).size() == 2) {
                fix = fmt::format("; set wrapper.arch_list_separator: \"{}\" in the package file "
                                  "so `nvcc-forge env --package` exports the form it parses",
                                  s);
                break;
            }
        }
        std::string shown;
        for (const auto& t : seen)
            shown += (shown.empty() ? "'" : ", '") + t + "'";
        f.add(at, "script-splits-arch-list", squeeze(line_text(code, lines, lines.line(at))), "",
              fmt::format("TORCH_CUDA_ARCH_LIST is exported {} ('{}'); the script splits it with "
                          "{} and sees {} token{} ({}) instead of {}, so its arch checks match "
                          "none of them or the wrong ones and the build drops archs silently{}",
                          separator_name(sep), exported, chain->text, seen.size(),
                          seen.size() == 1 ? "" : "s", shown.empty() ? "none" : shown, want, fix));
    };

    std::set<std::string> names;
    for (const auto& span : st.strings) {
        if (code.substr(span.begin, span.end - span.begin) != kArchListVar) continue;
        // The end of the read: the ')' or ']' closing the call or subscript the name is in.
        std::size_t i = span.end + 1;
        int depth = 0;
        while (i < code.size() && code[i] != '\n') {
            if (code[i] == '"' || code[i] == '\'') {
                StringSpan inner;
                if (in_string(st, i + 1, &inner)) {
                    i = inner.end + 1;
                    continue;
                }
            }
            if (code[i] == '(' || code[i] == '[') ++depth;
            if (code[i] == ')' || code[i] == ']') {
                if (depth == 0) break;
                --depth;
            }
            ++i;
        }
        if (i < code.size() && code[i] != '\n') check(span.begin, i + 1);
        // `NAME = <the read>`: NAME carries the list.
        std::string_view line = line_text(code, lines, lines.line(span.begin));
        std::string_view head = skip_ws(line);
        std::size_t n = 0;
        while (n < head.size() && is_ident_char(head[n]))
            ++n;
        std::string_view rest = skip_ws(head.substr(n));
        if (n > 0 && is_ident_start(head[0]) && rest.starts_with("=") && !rest.starts_with("=="))
            names.emplace(head.substr(0, n));
    }
    for (const auto& name : names) {
        std::size_t pos = 0;
        while ((pos = code.find(name, pos)) != std::string_view::npos) {
            std::size_t start = pos;
            pos += name.size();
            if ((start > 0 && (is_ident_char(code[start - 1]) || code[start - 1] == '.')) ||
                (pos < code.size() && is_ident_char(code[pos])) || in_string(st, start))
                continue;
            check(start, pos);
        }
    }
}

// A build script's use of TORCH_CUDA_ARCH_LIST: writing it overrides the list the build was given,
// reading it means the script decides the targets itself.
void note_arch_list_use(Finder& f, std::size_t start, std::string_view line, bool write,
                        bool read) {
    if (write)
        f.add(start, "script-writes-arch-list", squeeze(line), "", std::string(kWhyWrites));
    else if (read)
        f.add(start, "script-reads-arch-list", squeeze(line), "", std::string(kWhyReads));
}

// Each place where `name` stands in `code` as a whole identifier, not inside a longer one: the
// offset of its first character and of the character after it.
template <class Visit>
void for_each_whole_name(std::string_view code, std::string_view name, Visit&& visit) {
    std::size_t pos = 0;
    while ((pos = code.find(name, pos)) != std::string_view::npos) {
        const std::size_t start = pos;
        pos += name.size();
        if ((start > 0 && is_ident_char(code[start - 1])) ||
            (pos < code.size() && is_ident_char(code[pos])))
            continue;
        visit(start, pos);
    }
}

void scan_cmake_env(Finder& f, std::string_view code, const LineIndex& lines) {
    for_each_whole_name(code, kArchListVar, [&](std::size_t start, std::size_t /*end*/) {
        std::string_view before = code.substr(0, start);
        std::string_view line = line_text(code, lines, lines.line(start));
        bool env = before.ends_with("ENV{");
        std::string_view head = env ? before.substr(0, before.size() - 4) : before;
        std::string_view cmd = skip_ws_back(head);
        std::string lcmd = lower(cmd.substr(cmd.size() >= 8 ? cmd.size() - 8 : 0));
        bool write = lcmd.ends_with("set(") || lcmd.ends_with("unset(");
        bool read = env ? head.ends_with("$") || cmd.ends_with("DEFINED")
                        : before.ends_with("${") || cmd.ends_with("DEFINED") ||
                              lcmd.ends_with("if(") || lcmd.ends_with("list(");
        note_arch_list_use(f, start, line, write, read);
    });
    // $ENV{FLASH_ATTN_CUDA_ARCHS}
    std::size_t pos = 0;
    while ((pos = code.find("ENV{", pos)) != std::string_view::npos) {
        std::size_t b = pos + 4;
        pos = b;
        std::size_t e = code.find('}', b);
        if (e == std::string_view::npos) break;
        std::string_view name = code.substr(b, e - b);
        if (is_own_arch_knob(name)) own_knob_finding(f, b, name);
    }
}

void scan_shell_env(Finder& f, std::string_view code, const LineIndex& lines) {
    for_each_whole_name(code, kArchListVar, [&](std::size_t start, std::size_t end) {
        std::string_view before = code.substr(0, start);
        std::string_view after = code.substr(end);
        std::string_view line = line_text(code, lines, lines.line(start));
        bool read = before.ends_with("$") || before.ends_with("${") || before.ends_with("$(");
        std::string_view a = skip_ws(after);
        bool assign =
            a.starts_with("=") || a.starts_with(":=") || a.starts_with("?=") || a.starts_with("+=");
        bool write = !read && (assign || skip_ws_back(before).ends_with("unset"));
        note_arch_list_use(f, start, line, write, read);
    });
    std::size_t pos = 0;
    while ((pos = code.find('$', pos)) != std::string_view::npos) {
        std::size_t b = pos + 1;
        pos = b;
        if (b < code.size() && (code[b] == '{' || code[b] == '(')) ++b;
        std::size_t e = b;
        while (e < code.size() && is_ident_char(code[e]))
            ++e;
        std::string_view name = code.substr(b, e - b);
        if (is_own_arch_knob(name)) own_knob_finding(f, b, name);
    }
}

// How a script spells an nvcc target option, as text to find. The option spellings come from
// nvcc's option table (nvcc/options.h), so the lint and the wrapper agree on what nvcc accepts.
struct Needle {
    enum class Form : std::uint8_t {
        Long,        // "--generate-code": never the tail of another word
        Short,       // "-gencode", "-arch=": not after an identifier or '-' (-march=native)
        ShortSpaced, // "-arch ": also followed by a target (`-arch sm_80`, not prose)
        ValueSyntax, // "arch=compute_": the value syntax of -gencode, anywhere
    };
    std::string text;
    Form form = Form::Long;
};

const std::vector<Needle>& gencode_needles() {
    static const std::vector<Needle> needles = [] {
        std::vector<Needle> out;
        for (const auto& o : nvcc::option_table()) {
            if (!o.targets) continue;
            if (!o.long_name.empty()) out.push_back({std::string(o.long_name), Needle::Form::Long});
            if (o.short_name.empty()) continue;
            const std::string s(o.short_name);
            if (o.role == nvcc::Role::GenCode) {
                // Alone: setup.py lists put "-gencode" and its value in separate strings.
                out.push_back({s, Needle::Form::Short});
            } else if (o.role == nvcc::Role::GpuArch) {
                out.push_back({s + "=", Needle::Form::Short});
                out.push_back({s + " ", Needle::Form::ShortSpaced});
            }
            // The short -code is found by its value (`code=sm_`, `code=compute_` below).
        }
        for (std::string_view v :
             {"arch=compute_", "arch=sm_", "code=sm_", "code=compute_", "code=["})
            out.push_back({std::string(v), Needle::Form::ValueSyntax});
        return out;
    }();
    return needles;
}

void scan_gencode(Finder& f, std::string_view code, BuildKind kind, const LineIndex& lines) {
    for (const Needle& needle : gencode_needles()) {
        std::size_t pos = 0;
        while ((pos = code.find(needle.text, pos)) != std::string_view::npos) {
            std::size_t start = pos;
            pos += needle.text.size();
            const bool is_short =
                needle.form == Needle::Form::Short || needle.form == Needle::Form::ShortSpaced;
            if (is_short && start > 0 && (is_ident_char(code[start - 1]) || code[start - 1] == '-'))
                continue;
            if (needle.form == Needle::Form::ShortSpaced &&
                !(pos < code.size() && (code[pos] == 's' || code[pos] == 'c')))
                continue;
            f.add(start, "script-emits-gencode", squeeze(line_text(code, lines, lines.line(start))),
                  "", std::string(kWhyGencode));
        }
    }
    if (kind != BuildKind::CMake) {
        std::size_t pos = 0;
        while ((pos = code.find("CUDA_ARCHITECTURES=", pos)) != std::string_view::npos) {
            std::size_t start = pos;
            pos += 19;
            f.add(start, "script-sets-cuda-architectures",
                  squeeze(line_text(code, lines, lines.line(start))), "",
                  std::string(kWhyCmakeArchs));
        }
    }
}

// CMake: `set(CMAKE_CUDA_ARCHITECTURES 80 90a-real)`, `CUDA_ARCHITECTURES "90a;100a"`.
void scan_cmake_architectures(Finder& f, std::string_view code, const arch::ArchList& list,
                              const LineIndex& lines) {
    std::size_t pos = 0;
    constexpr std::string_view kWord = "CUDA_ARCHITECTURES";
    while ((pos = code.find(kWord, pos)) != std::string_view::npos) {
        std::size_t start = pos;
        pos += kWord.size();
        if (pos < code.size() && is_ident_char(code[pos])) continue;
        // the arguments up to the command's closing parenthesis
        std::size_t e = pos;
        int depth = 0;
        while (e < code.size()) {
            if (code[e] == '(') ++depth;
            if (code[e] == ')') {
                if (depth == 0) break;
                --depth;
            }
            ++e;
        }
        std::string_view args = code.substr(pos, e - pos);
        bool literal = false;
        std::size_t i = 0;
        while (i < args.size()) {
            auto sep = [](char c) {
                return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == '"';
            };
            while (i < args.size() && sep(args[i]))
                ++i;
            std::size_t b = i;
            while (i < args.size() && !sep(args[i]))
                ++i;
            std::string_view tok = args.substr(b, i - b);
            if (tok.empty()) continue;
            if (tok == "all" || tok == "all-major" || tok == "native") {
                literal = true;
                continue;
            }
            auto a = arch_piece(tok, f.gpus);
            if (!a || a->torch) continue;
            literal = true;
            explicit_target_finding(f, pos + b, std::string(tok), a->sm, a->suffix, list);
        }
        if (literal) {
            std::size_t line_start = lines.start(lines.line(start));
            f.add(start, "script-sets-cuda-architectures",
                  squeeze(code.substr(line_start, std::min(e + 1, code.size()) - line_start)), "",
                  std::string(kWhyCmakeArchs));
        }
        pos = std::max(pos, e);
    }
}

// ---- script blocks: a ladder of target lines read as one decision ---------------------------

bool block_rule(const LintFinding& f) {
    return f.rule == "script-emits-gencode" || f.rule == "explicit-target";
}

// The nvcc arguments a block spells: its string literals (Python) or its words (CMake, shell),
// as far as they are target options; "" pieces the lint cannot read (an f-string) make it give up.
std::optional<std::vector<std::string>> block_args(std::string_view code, const ScriptText& st,
                                                   BuildKind kind, std::size_t begin,
                                                   std::size_t end) {
    std::vector<std::string> words;
    if (kind == BuildKind::Python) {
        for (const auto& span : st.strings)
            if (span.begin >= begin && span.end <= end)
                words.emplace_back(code.substr(span.begin, span.end - span.begin));
    } else {
        std::size_t i = begin;
        while (i < end) {
            while (i < end && std::isspace(static_cast<unsigned char>(code[i])))
                ++i;
            std::size_t b = i;
            while (i < end && !std::isspace(static_cast<unsigned char>(code[i])))
                ++i;
            std::string w(code.substr(b, i - b));
            std::erase_if(w, [](char c) { return c == '"' || c == '\'' || c == '(' || c == ')'; });
            if (!w.empty()) words.push_back(w);
        }
    }
    std::vector<std::string> args;
    for (const auto& w : words) {
        const bool target_word = w.starts_with("-") || w.find("arch=") != std::string::npos ||
                                 w.find("code=") != std::string::npos;
        if (!target_word) continue;
        if (w.find('{') != std::string::npos || w.find('$') != std::string::npos)
            return std::nullopt;
        if (w.starts_with("-")) {
            // Only target options: another option's value could swallow the next word.
            const auto m = nvcc::match_token(w);
            if (m.spec == nullptr || !m.spec->targets) continue;
        }
        args.push_back(w);
    }
    return args;
}

std::string names_of(const std::vector<arch::Target>& ts) {
    std::string out;
    for (const auto& t : ts)
        out += (out.empty() ? "" : " ") + t.name();
    return out.empty() ? std::string("nothing") : out;
}

// Groups the -gencode lines of a build file into blocks (lines at most three apart), and gives
// each block of two or more lines its summary against the list.
void mark_blocks(std::vector<LintFinding>& out, std::string_view code, const ScriptText& st,
                 BuildKind kind, const LineIndex& lines, const arch::ArchList& list,
                 const std::vector<arch::Gpu>& gpus) {
    std::vector<int> target_lines;
    // A block is a ladder: two or more -gencode lines (a named target next to one is not).
    for (const auto& f : out)
        if (f.rule == "script-emits-gencode") target_lines.push_back(f.line);
    std::sort(target_lines.begin(), target_lines.end());
    target_lines.erase(std::unique(target_lines.begin(), target_lines.end()), target_lines.end());
    std::vector<std::pair<int, int>> blocks;
    for (int l : target_lines) {
        if (!blocks.empty() && l - blocks.back().second <= 3)
            blocks.back().second = l;
        else
            blocks.emplace_back(l, l);
    }
    static const toolkit::ToolkitCaps kCaps{};
    const std::vector<arch::Target> wanted = list.targets();
    for (const auto& [first, last] : blocks) {
        if (first == last) continue;
        const std::size_t begin = lines.start(first);
        const std::size_t end =
            last < lines.line(code.size()) ? lines.start(last + 1) : code.size();
        std::string summary;
        auto args = block_args(code, st, kind, begin, end);
        std::optional<std::set<arch::Target>> emitted;
        if (args && !args->empty()) {
            args->push_back("-c");
            args->push_back("block.cu");
            if (auto inv = nvcc::parse_invocation(*args, "", "", ".", kCaps);
                inv.ok() && inv->targets_explicit)
                emitted = inv->requested;
        }
        if (emitted) {
            // Compared as the gate compares (arch::covers: sm_100f covers the list's sm_100,
            // sm_100a does not, since 10.3 is lost).
            const std::set<arch::Target> want(wanted.begin(), wanted.end());
            std::vector<arch::Target> named(wanted.begin(), wanted.end());
            named.insert(named.end(), emitted->begin(), emitted->end());
            const auto judged = arch::judged_gpus(gpus, named);
            const arch::TegraSet tegra(gpus);
            std::vector<arch::Target> lacks, beyond;
            for (const auto& t : wanted)
                if (!arch::covers(*emitted, t, judged, tegra)) lacks.push_back(t);
            for (const auto& t : *emitted)
                if (!arch::asked_for(t, want)) beyond.push_back(t);
            summary = fmt::format("emits {}; the list wants {} that it lacks; it adds {} beyond "
                                  "the list",
                                  names_of({emitted->begin(), emitted->end()}), names_of(lacks),
                                  names_of(beyond));
        } else {
            summary = "emits targets the lint cannot read (computed in the script); the JSON has "
                      "every line";
        }
        for (auto& f : out)
            if (block_rule(f) && f.line >= first && f.line <= last) {
                f.block_first = first;
                f.block_last = last;
                f.block_summary = summary;
            }
    }
}

} // namespace

bool is_build_file(std::string_view path) {
    return build_kind(path).has_value();
}
std::vector<LintFinding> lint_build_text(std::string_view path, std::string_view text,
                                         const arch::ArchList& list,
                                         const std::vector<arch::Gpu>& gpus,
                                         std::string_view separator) {
    std::vector<LintFinding> out;
    auto kind = build_kind(path);
    if (!kind) return out;
    ScriptDialect dialect = *kind == BuildKind::CMake   ? ScriptDialect::CMake
                            : *kind == BuildKind::Shell ? ScriptDialect::Shell
                                                        : ScriptDialect::Python;
    ScriptText st = lex_script(text, dialect);
    std::string_view code = st.code;
    LineIndex lines(code);
    Finder f{path, code, lines, out, gpus, {}};
    switch (*kind) {
    case BuildKind::Python:
        scan_python_env(f, code, st, lines);
        scan_python_split(f, code, st, lines, list, separator);
        break;
    case BuildKind::CMake:
        scan_cmake_env(f, code, lines);
        scan_cmake_architectures(f, code, list, lines);
        break;
    case BuildKind::Shell:
        scan_shell_env(f, code, lines);
        break;
    }
    scan_gencode(f, code, *kind, lines);
    scan_nvcc_targets(f, code, list);
    scan_arch_strings(f, code, st, list);
    scan_has_sm(f, code, list);
    mark_blocks(out, code, st, *kind, lines, list, gpus);
    return out;
}

} // namespace forge::lint
