#include "tools/lint.h"

#include "arch/coverage.h"
#include "tools/lint_lex.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace forge::tools {

namespace {

constexpr std::string_view kWhyStub =
    "gated code compiles to an empty stub that host dispatch still selects (cudaErrorLaunchFailure "
    "or wrong results on real hardware, nothing at build "
    "time)";

bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) {
    return is_ident_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

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

// Collapses runs of blanks (a pattern spanning a line continuation reads as one line).
std::string squeeze(std::string_view s, std::size_t max_len = 120) {
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

// Offsets of line starts, for offset -> line lookups on large files.
class LineIndex {
  public:
    explicit LineIndex(std::string_view text) {
        starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') starts_.push_back(i + 1);
    }
    [[nodiscard]] int line(std::size_t offset) const {
        auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
        return static_cast<int>(it - starts_.begin());
    }
    [[nodiscard]] std::size_t start(int line) const {
        return starts_[static_cast<std::size_t>(line - 1)];
    }

  private:
    std::vector<std::size_t> starts_;
};

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

// ---- C tokens over blanked text ---------------------------------------------------------------

struct Tok {
    std::string_view text;
    std::size_t offset = 0;
    int logical = 0;    // logical line (backslash-newline does not end one)
    bool first = false; // first token of its logical line
};

bool is_number_tok(const Tok& t) {
    return !t.text.empty() && is_digit(t.text[0]);
}
bool is_ident_tok(const Tok& t) {
    return !t.text.empty() && is_ident_start(t.text[0]);
}

std::vector<Tok> tokenize(std::string_view code) {
    std::vector<Tok> out;
    const std::size_t n = code.size();
    std::size_t i = 0;
    int logical = 0;
    bool first = true;
    static constexpr std::string_view kTwo[] = {">=", "<=", "==", "!=", "&&",
                                                "||", ">>", "<<", "##"};
    while (i < n) {
        char c = code[i];
        if (c == '\\' && i + 1 < n && code[i + 1] == '\n') {
            i += 2;
            continue;
        }
        if (c == '\\' && i + 2 < n && code[i + 1] == '\r' && code[i + 2] == '\n') {
            i += 3;
            continue;
        }
        if (c == '\n') {
            ++logical;
            first = true;
            ++i;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            ++i;
            continue;
        }
        std::size_t k = i + 1;
        if (is_ident_start(c)) {
            while (k < n && is_ident_char(code[k]))
                ++k;
        } else if (is_digit(c)) {
            while (k < n && (is_ident_char(code[k]) || code[k] == '.' ||
                             (code[k] == '\'' && k + 1 < n && is_ident_char(code[k + 1]))))
                ++k;
        } else if (i + 1 < n) {
            std::string_view two = code.substr(i, 2);
            if (std::find(std::begin(kTwo), std::end(kTwo), two) != std::end(kTwo)) k = i + 2;
        }
        out.push_back({code.substr(i, k - i), i, logical, first});
        first = false;
        i = k;
    }
    return out;
}

bool is_directive(const std::vector<Tok>& t, std::size_t i, std::string_view name) {
    return t[i].first && t[i].text == "#" && i + 1 < t.size() && t[i + 1].logical == t[i].logical &&
           t[i + 1].text == name;
}

// Drops the tokens of `#if 0` regions (up to the matching #else/#elif/#endif): dead code is not
// a gate. Nested conditionals inside the region are skipped whole.
std::vector<Tok> drop_if0(const std::vector<Tok>& t) {
    std::vector<Tok> out;
    out.reserve(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
        bool if0 = is_directive(t, i, "if") && i + 2 < t.size() && t[i + 2].text == "0" &&
                   t[i + 2].logical == t[i].logical &&
                   (i + 3 >= t.size() || t[i + 3].logical != t[i].logical);
        if (!if0) {
            out.push_back(t[i]);
            continue;
        }
        int depth = 0;
        std::size_t j = i + 3;
        for (; j < t.size(); ++j) {
            if (!(t[j].first && t[j].text == "#") || j + 1 >= t.size()) continue;
            std::string_view d = t[j + 1].text;
            if (d == "if" || d == "ifdef" || d == "ifndef") {
                ++depth;
            } else if (d == "endif") {
                if (depth == 0) break;
                --depth;
            } else if ((d == "else" || d == "elif") && depth == 0) {
                break;
            }
        }
        // Resume at the #else/#elif/#endif itself (an #elif's condition is live code).
        i = j < t.size() ? j - 1 : t.size();
    }
    return out;
}

// ---- rules ------------------------------------------------------------------------------------

bool is_comparison(std::string_view op) {
    return op == ">=" || op == "<=" || op == "==" || op == "!=" || op == ">" || op == "<";
}

std::string_view flip(std::string_view op) {
    if (op == ">=") return "<=";
    if (op == "<=") return ">=";
    if (op == ">") return "<";
    if (op == "<") return ">";
    return op; // == and != are symmetric
}

struct Comparison {
    std::string op;        // with the macro on the left
    std::string operand;   // as written: "890", "ARCH_SM89"
    long value = 0;        // its integer value
    std::size_t begin = 0; // offsets of the whole comparison in the text
    std::size_t end = 0;
    bool resolved = false; // operand has a known integer value
};

// An operand: a number or a name, possibly in parentheses. `i` is the first token after the
// operator (forward) or the last before it (backward).
std::optional<std::size_t> operand_forward(const std::vector<Tok>& t, std::size_t i) {
    while (i < t.size() && t[i].text == "(")
        ++i;
    if (i < t.size() && (is_number_tok(t[i]) || is_ident_tok(t[i]))) return i;
    return std::nullopt;
}
std::optional<std::size_t> operand_backward(const std::vector<Tok>& t, std::size_t i) {
    while (i > 0 && t[i].text == ")")
        --i;
    if (is_number_tok(t[i]) || is_ident_tok(t[i])) return i;
    return std::nullopt;
}

class MacroLookup {
  public:
    MacroLookup(const MacroTable& local, const MacroTable& global)
        : local_(local), global_(global) {}
    [[nodiscard]] std::optional<long> value(std::string_view name) const {
        if (auto v = local_.value(name)) return v;
        return global_.value(name);
    }
    [[nodiscard]] std::string where(std::string_view name) const {
        if (local_.value(name)) return local_.where(name);
        return global_.where(name);
    }

  private:
    const MacroTable& local_;
    const MacroTable& global_;
};

// The comparison around t[i] (a macro such as __CUDA_ARCH__), with the macro put on the left.
std::optional<Comparison> comparison_at(const std::vector<Tok>& t, std::size_t i,
                                        const MacroLookup& macros) {
    std::size_t left = i, right = i; // widen over `(__CUDA_ARCH__)`
    while (left > 0 && right + 1 < t.size() && t[left - 1].text == "(" &&
           t[right + 1].text == ")") {
        --left;
        ++right;
    }
    Comparison c;
    std::size_t operand_index = 0;
    if (right + 1 < t.size() && is_comparison(t[right + 1].text)) {
        auto o = operand_forward(t, right + 2);
        if (!o) return std::nullopt;
        c.op = std::string(t[right + 1].text);
        operand_index = *o;
        c.begin = t[left].offset;
        c.end = t[*o].offset + t[*o].text.size();
    } else if (left > 0 && is_comparison(t[left - 1].text) && left >= 2) {
        auto o = operand_backward(t, left - 2);
        if (!o) return std::nullopt;
        c.op = std::string(flip(t[left - 1].text));
        operand_index = *o;
        c.begin = t[*o].offset;
        c.end = t[right].offset + t[right].text.size();
    } else {
        return std::nullopt;
    }
    const Tok& operand = t[operand_index];
    c.operand = std::string(operand.text);
    std::optional<long> v =
        is_number_tok(operand) ? parse_integer(operand.text) : macros.value(operand.text);
    if (v) {
        c.value = *v;
        c.resolved = true;
    }
    return c;
}

// `macro op K` as a gate: at_least B (the code is in images with value >= B) or exactly K.
struct Gate {
    bool at_least = true;
    long value = 0;
};
Gate gate_of(const Comparison& c) {
    if (c.op == ">=" || c.op == "<") return {true, c.value};
    if (c.op == ">" || c.op == "<=") return {true, c.value + 1};
    return {false, c.value}; // == and != pick out one arch
}

std::string arch_cc(long value) {
    return arch::cc_string(static_cast<int>((value + 9) / 10));
}

struct KnownGpu {
    int sm;
    bool tegra;
};
// Real compute capabilities. Tegra flags follow arch/coverage.h (own cubins only).
constexpr KnownGpu kKnownGpus[] = {
    {35, false}, {37, false}, {50, false},  {52, false},  {53, true},   {60, false},  {61, false},
    {62, true},  {70, false}, {72, true},   {75, false},  {80, false},  {86, false},  {87, true},
    {89, false}, {90, false}, {100, false}, {103, false}, {110, false}, {120, false}, {121, false}};

std::vector<arch::Gpu> builtin_gpus() {
    std::vector<arch::Gpu> out;
    for (const auto& g : kKnownGpus)
        out.push_back({g.sm, {}, g.tegra, {}});
    return out;
}

// The lowest real CC whose __CUDA_ARCH__ is >= value ("10.3" for 1001), else value rounded up.
std::string lowest_known_cc(long value) {
    for (const auto& g : kKnownGpus)
        if (g.sm * 10L >= value) return arch::cc_string(g.sm);
    return arch_cc(value);
}

bool is_known_cc(int sm) {
    if (sm == 88 || sm == 101) return true; // nvcc knows them; no desktop part to reason about
    return std::any_of(std::begin(kKnownGpus), std::end(kKnownGpus),
                       [&](const KnownGpu& g) { return g.sm == sm; });
}

struct Finder {
    std::string_view path;
    std::string_view text;
    const LineIndex& lines;
    std::vector<LintFinding>& out;
    const std::vector<arch::Gpu>& gpus;
    std::set<std::tuple<int, std::string, std::string>> seen; // (line, rule, needs)

    void add(std::size_t offset, std::string rule, std::string pattern, std::string needs,
             std::string why) {
        int line = lines.line(offset);
        if (!seen.emplace(line, rule, needs).second) return;
        out.push_back({std::string(path),
                       line,
                       std::move(rule),
                       std::move(pattern),
                       std::move(needs),
                       std::move(why),
                       {}});
    }
};

bool has_entry(const arch::ArchList& list, auto pred) {
    return std::any_of(list.entries().begin(), list.entries().end(), pred);
}

// ---- C-family sources -------------------------------------------------------------------------

void arch_gate_finding(Finder& f, const Comparison& c, std::string_view macro,
                       const MacroLookup& macros, const arch::ArchList& list) {
    Gate g = gate_of(c);
    GateCheck check = check_gate(g.value, g.at_least, list, f.gpus);
    if (check.declared) return;
    std::string pattern = fmt::format("{} {} {}", macro, c.op, c.operand);
    std::string defined;
    if (!c.operand.empty() && is_ident_start(c.operand[0]))
        defined =
            fmt::format(" ({} = {}, defined at {})", c.operand, c.value, macros.where(c.operand));
    f.add(c.begin, "arch-gate", pattern, check.needs,
          fmt::format("code gated on {}{} is compiled only into images whose __CUDA_ARCH__ "
                      "passes the gate; {}, so those GPUs run the other branch: {}",
                      pattern, defined, check.detail, kWhyStub));
}

void feature_finding(Finder& f, std::size_t offset, std::string pattern, int sm, arch::Suffix s,
                     const arch::ArchList& list) {
    bool declared = has_entry(list, [&](const arch::ArchEntry& e) {
        if (s == arch::Suffix::Specific) return e.sm == sm && e.suffix == arch::Suffix::Specific;
        return e.suffix != arch::Suffix::None && arch::sm_major(e.sm) == arch::sm_major(sm) &&
               e.sm >= sm;
    });
    if (declared) return;
    std::string needs = arch::cc_string(sm) + std::string(arch::suffix_string(s));
    f.add(offset, "arch-feature", pattern, needs,
          fmt::format("{} is defined only when compiling for {} (sm_{}{}), which the list does not "
                      "declare: the feature code is never built and every GPU runs the fallback: "
                      "{}",
                      pattern, needs, sm, arch::suffix_string(s), kWhyStub));
}

// `prefix` + digits + `tail`: the SM number, or nullopt.
std::optional<int> sm_in(std::string_view ident, std::string_view prefix, std::string_view tail) {
    if (!ident.starts_with(prefix) || !ident.ends_with(tail)) return std::nullopt;
    if (ident.size() <= prefix.size() + tail.size()) return std::nullopt;
    std::string_view digits =
        ident.substr(prefix.size(), ident.size() - prefix.size() - tail.size());
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    if (!std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
    return std::stoi(std::string(digits));
}

bool is_fp8_ident(std::string_view ident) {
    std::string l = lower(ident);
    if (l.find("e4m3") != std::string::npos || l.find("e5m2") != std::string::npos) return true;
    if (ident.starts_with("__nv_fp8")) return true;
    return ident.starts_with("__nv_cvt_") && l.find("fp8") != std::string::npos;
}

void specific_macro_finding(Finder& f, const std::vector<Tok>& t, std::size_t i,
                            const MacroLookup& macros, const arch::ArchList& list) {
    const bool family = t[i].text == "__CUDA_ARCH_FAMILY_SPECIFIC__";
    auto allowed = [&](arch::Suffix s) {
        return s == arch::Suffix::Specific || (family && s == arch::Suffix::Family);
    };
    const std::string letter = family ? "f" : "a";
    // The comparison that says which arch: on the macro itself, else any comparison of the macro
    // or of __CUDA_ARCH__ on the same logical line (`defined(__CUDA_ARCH_SPECIFIC__) &&
    // __CUDA_ARCH__ >= 1000`).
    std::optional<Comparison> cmp = comparison_at(t, i, macros);
    if (!cmp || !cmp->resolved) {
        cmp.reset();
        std::size_t first = i;
        while (first > 0 && t[first - 1].logical == t[i].logical)
            --first;
        for (std::size_t j = first; j < t.size() && t[j].logical == t[i].logical; ++j) {
            if (j == i) continue;
            if (t[j].text != t[i].text && t[j].text != "__CUDA_ARCH__") continue;
            auto c = comparison_at(t, j, macros);
            if (c && c->resolved) {
                cmp = c;
                break;
            }
        }
    }
    std::string pattern(t[i].text);
    bool declared = false;
    std::string needs = "*" + letter;
    if (cmp) {
        // These macros exist only in a/f images, so the predicate itself decides: some a/f
        // entry of the list must satisfy it (`< 1100` is met by 10.0f, `>= 1000` by 12.0f).
        const std::string& op = cmp->op;
        const long k = cmp->value;
        declared = has_entry(list, [&](const arch::ArchEntry& e) {
            const long v = e.sm * 10L;
            const bool holds = op == ">="   ? v >= k
                               : op == ">"  ? v > k
                               : op == "<=" ? v <= k
                               : op == "<"  ? v < k
                               : op == "==" ? v == k
                                            : v != k;
            return allowed(e.suffix) && holds;
        });
        if (op == "==")
            needs = arch_cc(k) + letter;
        else if (op == ">=")
            needs = lowest_known_cc(k) + letter;
        else if (op == ">")
            needs = lowest_known_cc(k + 1) + letter;
    } else {
        declared = has_entry(list, [&](const arch::ArchEntry& e) { return allowed(e.suffix); });
    }
    if (declared) return;
    f.add(t[i].offset, "arch-specific-macro", pattern, needs,
          fmt::format("{} is defined only when compiling for an {} target{}; the list has none, so "
                      "the code under it is never built and every GPU runs the fallback: {}",
                      pattern, family ? "arch-specific (a) or family (f)" : "arch-specific (a)",
                      cmp ? fmt::format(" ({})", needs) : std::string(), kWhyStub));
}

// ---- build files ------------------------------------------------------------------------------

enum class BuildKind { Python, CMake, Shell };

std::string_view file_name(std::string_view path) {
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
std::string extension(std::string_view path) {
    std::string_view name = file_name(path);
    auto dot = name.rfind('.');
    return dot == std::string_view::npos ? std::string() : lower(name.substr(dot));
}

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
std::optional<ArchPiece> arch_piece(std::string_view p) {
    ArchPiece a;
    if (p.ends_with("+PTX")) {
        p.remove_suffix(4);
        a.decorated = true;
    } else if (p.ends_with("-real")) {
        p.remove_suffix(5);
        a.decorated = true;
    } else if (p.ends_with("-virtual")) {
        p.remove_suffix(8);
        a.decorated = true;
    }
    if (!p.empty() && (p.back() == 'a' || p.back() == 'f')) {
        a.suffix = p.back() == 'a' ? arch::Suffix::Specific : arch::Suffix::Family;
        a.decorated = true;
        p.remove_suffix(1);
    }
    auto dot = p.find('.');
    if (dot != std::string_view::npos) {
        std::string_view maj = p.substr(0, dot), min = p.substr(dot + 1);
        if (maj.empty() || maj.size() > 2 || min.size() != 1 || !is_digit(min[0]) ||
            !std::all_of(maj.begin(), maj.end(), is_digit))
            return std::nullopt;
        a.sm = std::stoi(std::string(maj)) * 10 + (min[0] - '0');
        a.torch = true;
    } else {
        if (p.size() < 2 || p.size() > 3 || !std::all_of(p.begin(), p.end(), is_digit))
            return std::nullopt;
        a.sm = std::stoi(std::string(p));
    }
    if (!is_known_cc(a.sm)) return std::nullopt;
    return a;
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
            auto a = arch_piece(p);
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
        if (!sm || !is_known_cc(*sm)) continue;
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

void scan_cmake_env(Finder& f, std::string_view code, const LineIndex& lines) {
    std::size_t pos = 0;
    while ((pos = code.find(kArchListVar, pos)) != std::string_view::npos) {
        std::size_t start = pos;
        pos += kArchListVar.size();
        if ((start > 0 && is_ident_char(code[start - 1])) ||
            (pos < code.size() && is_ident_char(code[pos])))
            continue;
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
        if (write)
            f.add(start, "script-writes-arch-list", squeeze(line), "", std::string(kWhyWrites));
        else if (read)
            f.add(start, "script-reads-arch-list", squeeze(line), "", std::string(kWhyReads));
    }
    // $ENV{FLASH_ATTN_CUDA_ARCHS}
    pos = 0;
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
    std::size_t pos = 0;
    while ((pos = code.find(kArchListVar, pos)) != std::string_view::npos) {
        std::size_t start = pos;
        pos += kArchListVar.size();
        if ((start > 0 && is_ident_char(code[start - 1])) ||
            (pos < code.size() && is_ident_char(code[pos])))
            continue;
        std::string_view before = code.substr(0, start);
        std::string_view after = code.substr(pos);
        std::string_view line = line_text(code, lines, lines.line(start));
        bool read = before.ends_with("$") || before.ends_with("${") || before.ends_with("$(");
        std::string_view a = skip_ws(after);
        bool assign =
            a.starts_with("=") || a.starts_with(":=") || a.starts_with("?=") || a.starts_with("+=");
        bool write = !read && (assign || skip_ws_back(before).ends_with("unset"));
        if (write)
            f.add(start, "script-writes-arch-list", squeeze(line), "", std::string(kWhyWrites));
        else if (read)
            f.add(start, "script-reads-arch-list", squeeze(line), "", std::string(kWhyReads));
    }
    pos = 0;
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

void scan_gencode(Finder& f, std::string_view code, BuildKind kind, const LineIndex& lines) {
    static constexpr std::string_view kNeedles[] = {
        "-gencode", "--generate-code",    "arch=compute_", "arch=sm_", "-arch=",
        "-arch ",   "--gpu-architecture", "--gpu-code",    "code=sm_", "code=compute_",
        "code=["};
    for (std::string_view needle : kNeedles) {
        std::size_t pos = 0;
        while ((pos = code.find(needle, pos)) != std::string_view::npos) {
            std::size_t start = pos;
            pos += needle.size();
            // `-arch` must not be the tail of another flag (-march=native).
            if (needle.starts_with("-") && !needle.starts_with("--") && start > 0 &&
                (is_ident_char(code[start - 1]) || code[start - 1] == '-'))
                continue;
            if (needle == "-arch " &&
                !(pos < code.size() && (code[pos] == 's' || code[pos] == 'c')))
                continue; // `-arch sm_80` / `-arch compute_80`, not prose
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
            auto a = arch_piece(tok);
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

} // namespace

// ---- public ---------------------------------------------------------------------------------

const std::vector<std::string_view>& lint_rule_ids() {
    static const std::vector<std::string_view> ids = {
        "arch-gate",
        "fp8-type",
        "arch-feature",
        "arch-specific-macro",
        "explicit-target",
        "build-arch-gate",
        "script-reads-arch-list",
        "script-writes-arch-list",
        "script-own-arch-knob",
        "script-emits-gencode",
        "script-sets-cuda-architectures",
    };
    return ids;
}

Result<LintIgnore> parse_lint_ignore(std::string_view entry, std::string_view origin) {
    LintIgnore ig;
    ig.entry = trim(entry);
    auto fail = [&](std::string msg) {
        Error e(std::move(msg));
        e.key = ig.entry;
        if (!origin.empty()) e.file = std::string(origin);
        return e;
    };
    if (ig.entry.empty()) return fail("empty lint_ignore entry");
    std::string_view s = ig.entry;
    auto colon = s.rfind(':');
    if (colon != std::string_view::npos) {
        std::string_view rule = s.substr(colon + 1);
        bool rule_like = !rule.empty() && std::all_of(rule.begin(), rule.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '*';
        });
        if (rule_like) {
            const auto& ids = lint_rule_ids();
            if (rule != "*" && std::find(ids.begin(), ids.end(), rule) == ids.end()) {
                std::string known;
                for (auto id : ids)
                    known += (known.empty() ? "" : ", ") + std::string(id);
                return fail(
                    fmt::format("unknown rule '{}' in lint_ignore entry (rules: {})", rule, known));
            }
            ig.rule = std::string(rule);
            s = s.substr(0, colon);
        }
    }
    ig.glob = trim(s);
    if (ig.glob.empty()) ig.glob = "**";
    if (ig.glob.starts_with("./")) ig.glob = ig.glob.substr(2);
    if (ig.glob.ends_with("/")) ig.glob += "**";
    return ig;
}

namespace {
bool glob_at(std::string_view g, std::size_t gi, std::string_view p, std::size_t pi) {
    while (gi < g.size()) {
        if (g[gi] == '*') {
            if (gi + 1 < g.size() && g[gi + 1] == '*') {
                std::size_t ng = gi + 2;
                if (ng < g.size() && g[ng] == '/' && glob_at(g, ng + 1, p, pi)) return true;
                for (std::size_t k = pi; k <= p.size(); ++k)
                    if (glob_at(g, ng, p, k)) return true;
                return false;
            }
            for (std::size_t k = pi;; ++k) {
                if (glob_at(g, gi + 1, p, k)) return true;
                if (k >= p.size() || p[k] == '/') return false;
            }
        }
        if (pi >= p.size()) return false;
        if (g[gi] == '?') {
            if (p[pi] == '/') return false;
        } else if (g[gi] != p[pi]) {
            return false;
        }
        ++gi;
        ++pi;
    }
    return pi == p.size();
}
} // namespace

bool glob_match(std::string_view glob, std::string_view path) {
    if (glob.find('/') == std::string_view::npos) {
        // Like .gitignore: a name matches a file or a directory at any depth.
        std::size_t b = 0;
        while (b <= path.size()) {
            std::size_t e = path.find('/', b);
            if (e == std::string_view::npos) e = path.size();
            if (glob_at(glob, 0, path.substr(b, e - b), 0)) return true;
            b = e + 1;
        }
        return false;
    }
    if (glob_at(glob, 0, path, 0)) return true;
    // A plain directory name ("third_party/flash") covers what is under it.
    return glob.find_first_of("*?") == std::string_view::npos && path.size() > glob.size() &&
           path.starts_with(glob) && path[glob.size()] == '/';
}

bool ignore_matches(const LintIgnore& ignore, const LintFinding& finding) {
    if (!ignore.rule.empty() && ignore.rule != "*" && ignore.rule != finding.rule) return false;
    return glob_match(ignore.glob, finding.file);
}

void MacroTable::collect(std::string_view code, std::string_view file) {
    std::vector<Tok> t = tokenize(code);
    LineIndex lines(code);
    for (std::size_t i = 0; i + 2 < t.size(); ++i) {
        if (!is_directive(t, i, "define")) continue;
        const Tok& name = t[i + 2];
        if (name.logical != t[i].logical || !is_ident_tok(name)) continue;
        if (defs_.count(name.text)) continue;
        std::size_t j = i + 3;
        // function-like: '(' right after the name
        if (j < t.size() && t[j].logical == name.logical && t[j].text == "(" &&
            t[j].offset == name.offset + name.text.size())
            continue;
        std::string body;
        for (; j < t.size() && t[j].logical == name.logical; ++j) {
            if (!body.empty()) body += ' ';
            body += t[j].text;
        }
        defs_.emplace(std::string(name.text),
                      Def{body, fmt::format("{}:{}", file, lines.line(name.offset))});
    }
}

std::optional<long> MacroTable::value(std::string_view name) const {
    std::string current(name);
    for (int depth = 0; depth < 8; ++depth) {
        auto it = defs_.find(current);
        if (it == defs_.end()) return std::nullopt;
        std::string_view body = it->second.body;
        while (body.size() >= 2 && body.front() == '(' && body.back() == ')') {
            body = body.substr(1, body.size() - 2);
            while (!body.empty() && body.front() == ' ')
                body.remove_prefix(1);
            while (!body.empty() && body.back() == ' ')
                body.remove_suffix(1);
        }
        if (body.empty()) return std::nullopt;
        if (is_digit(body[0])) return parse_integer(body);
        if (!std::all_of(body.begin(), body.end(), is_ident_char)) return std::nullopt;
        current = std::string(body);
    }
    return std::nullopt;
}

std::string MacroTable::where(std::string_view name) const {
    auto it = defs_.find(name);
    return it == defs_.end() ? std::string() : it->second.where;
}

GateCheck check_gate(long arch_value, bool at_least, const arch::ArchList& list,
                     const std::vector<arch::Gpu>& gpus) {
    GateCheck out;
    const std::vector<arch::Target> targets = list.targets();
    std::vector<std::string> stubbed;
    std::vector<arch::Gpu> sorted = gpus.empty() ? builtin_gpus() : gpus;
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.sm < b.sm; });
    for (const auto& gpu : sorted) {
        const long device_value = gpu.sm * 10L;
        if (at_least ? device_value < arch_value : device_value != arch_value) continue;
        const auto& known = gpu;
        const arch::Target* image = nullptr;
        for (const auto& t : targets)
            if (arch::sass_runs_on(t, gpu) && (!image || t.sm > image->sm)) image = &t;
        bool jit = false;
        if (!image) {
            for (const auto& t : targets)
                if (arch::ptx_jits_on(t, gpu) && (!image || t.sm > image->sm)) image = &t;
            jit = image != nullptr;
        }
        if (!image) continue; // the list does not reach this GPU at all: coverage's finding
        const long image_value = image->sm * 10L;
        if (at_least ? image_value >= arch_value : image_value == arch_value) continue;
        if (out.declared) {
            out.declared = false;
            out.needs = arch::cc_string(known.sm);
            out.detail =
                fmt::format("CC {} {} {} {} (__CUDA_ARCH__ {} {} {})", out.needs,
                            jit ? "JIT-compiles the" : "loads the", image->name(),
                            jit ? "PTX" : "cubin", image_value, at_least ? "<" : "!=", arch_value);
        } else {
            stubbed.push_back(fmt::format("{} ({})", arch::cc_string(known.sm), image->name()));
        }
    }
    if (!stubbed.empty()) {
        out.detail += "; also CC ";
        for (std::size_t i = 0; i < stubbed.size(); ++i)
            out.detail += (i ? ", " : "") + stubbed[i];
    }
    return out;
}

bool is_c_source(std::string_view path) {
    static const std::set<std::string, std::less<>> exts = {
        ".cu", ".cuh", ".c",   ".cc",  ".cpp", ".cxx", ".c++",  ".h",
        ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tcc", ".cuinl"};
    return exts.count(extension(path)) > 0;
}

bool is_build_file(std::string_view path) {
    return build_kind(path).has_value();
}

namespace {
std::vector<LintFinding> lint_source_with(std::string_view path, std::string_view text,
                                          const arch::ArchList& list, const MacroTable& global,
                                          const std::vector<arch::Gpu>& gpus,
                                          bool already_blanked) {
    std::vector<LintFinding> out;
    if (!is_c_source(path)) return out;
    std::string code = already_blanked ? std::string(text) : blank_c_like(text);
    MacroTable local;
    local.collect(code, path);
    MacroLookup macros(local, global);
    LineIndex lines(code);
    Finder f{path, code, lines, out, gpus, {}};
    std::vector<Tok> t = drop_if0(tokenize(code));
    for (std::size_t i = 0; i < t.size(); ++i) {
        const Tok& tok = t[i];
        if (!is_ident_tok(tok)) continue;
        std::string_view id = tok.text;
        if (id == "__CUDA_ARCH__") {
            auto c = comparison_at(t, i, macros);
            if (c && c->resolved) arch_gate_finding(f, *c, id, macros, list);
        } else if (auto sm = sm_in(id, "NV_PROVIDES_SM_", "")) {
            GateCheck check = check_gate(*sm * 10L, true, list, gpus);
            if (!check.declared)
                f.add(tok.offset, "arch-gate", std::string(id), check.needs,
                      fmt::format("NV_IF_TARGET({}) code is compiled only into images for {} or "
                                  "newer; {}, so those GPUs run the other branch: {}",
                                  id, arch::cc_string(*sm), check.detail, kWhyStub));
        } else if (auto sm_exact = sm_in(id, "NV_IS_EXACTLY_SM_", "")) {
            GateCheck check = check_gate(*sm_exact * 10L, false, list, gpus);
            if (!check.declared)
                f.add(tok.offset, "arch-gate", std::string(id), check.needs,
                      fmt::format("NV_IF_TARGET({}) code is compiled only into the sm_{} image; "
                                  "{}, so those GPUs run the other branch: {}",
                                  id, *sm_exact, check.detail, kWhyStub));
        } else if (auto feat = sm_in(id, "__CUDA_ARCH_FEAT_SM", "_ALL")) {
            feature_finding(f, tok.offset, std::string(id), *feat, arch::Suffix::Specific, list);
        } else if (id == "__CUDA_ARCH_HAS_FEATURE__" && i + 3 < t.size() && t[i + 1].text == "(") {
            if (auto has = sm_in(t[i + 2].text, "SM", "_ALL"))
                feature_finding(f, tok.offset, fmt::format("{}({})", id, t[i + 2].text), *has,
                                arch::Suffix::Specific, list);
        } else if (auto nva = sm_in(id, "NV_HAS_FEATURE_SM_", "a")) {
            feature_finding(f, tok.offset, std::string(id), *nva, arch::Suffix::Specific, list);
        } else if (auto nvf = sm_in(id, "NV_HAS_FEATURE_SM_", "f")) {
            feature_finding(f, tok.offset, std::string(id), *nvf, arch::Suffix::Family, list);
        } else if (auto ca = sm_in(id, "CUTLASS_ARCH_MMA_SM", "A_ENABLED")) {
            feature_finding(f, tok.offset, std::string(id), *ca, arch::Suffix::Specific, list);
        } else if (auto cf = sm_in(id, "CUTLASS_ARCH_MMA_SM", "F_ENABLED")) {
            feature_finding(f, tok.offset, std::string(id), *cf, arch::Suffix::Family, list);
        } else if (id == "__CUDA_ARCH_SPECIFIC__" || id == "__CUDA_ARCH_FAMILY_SPECIFIC__") {
            specific_macro_finding(f, t, i, macros, list);
        } else if (is_fp8_ident(id)) {
            GateCheck check = check_gate(890, true, list, gpus);
            if (!check.declared)
                f.add(tok.offset, "fp8-type", std::string(id), check.needs,
                      fmt::format(
                          "FP8 ({}) runs in hardware from CC 8.9 (Ada) on, and FP8 "
                          "kernels are gated on __CUDA_ARCH__ >= 890; {}, so those GPUs run the "
                          "other branch: {}",
                          id, check.detail, kWhyStub));
        }
    }
    return out;
}
} // namespace

std::vector<LintFinding> lint_source_text(std::string_view path, std::string_view text,
                                          const arch::ArchList& list, const MacroTable& macros,
                                          const std::vector<arch::Gpu>& gpus) {
    return lint_source_with(path, text, list, macros, gpus, false);
}

std::vector<LintFinding> lint_build_text(std::string_view path, std::string_view text,
                                         const arch::ArchList& list) {
    std::vector<LintFinding> out;
    auto kind = build_kind(path);
    if (!kind) return out;
    ScriptDialect dialect = *kind == BuildKind::CMake   ? ScriptDialect::CMake
                            : *kind == BuildKind::Shell ? ScriptDialect::Shell
                                                        : ScriptDialect::Python;
    ScriptText st = lex_script(text, dialect);
    std::string_view code = st.code;
    LineIndex lines(code);
    static const std::vector<arch::Gpu> kNoGpus;
    Finder f{path, code, lines, out, kNoGpus, {}};
    switch (*kind) {
    case BuildKind::Python:
        scan_python_env(f, code, st, lines);
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
    return out;
}

std::size_t LintReport::active_count() const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                  [](const auto& f) { return !f.ignored(); }));
}
std::size_t LintReport::ignored_count() const {
    return findings.size() - active_count();
}

namespace {

bool skip_directory(const std::string& name) {
    if (name.starts_with(".")) return true; // .git, .hg, .venv, .tox, .eggs, .github...
    static const std::set<std::string, std::less<>> names = {"build", "_build", "dist",
                                                             "__pycache__", "node_modules"};
    return names.count(name) || name.starts_with("cmake-build-") || name.ends_with(".egg-info");
}

Result<std::string> read_file(const fs::path& p, std::uintmax_t max_bytes, bool& too_large) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) return Error(fmt::format("cannot stat: {}", ec.message()), p.string());
    if (size > max_bytes) {
        too_large = true;
        return std::string();
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) return Error("cannot open for reading", p.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Error("read error", p.string());
    return ss.str();
}

bool looks_binary(std::string_view data) {
    return data.substr(0, 8192).find('\0') != std::string_view::npos;
}

} // namespace

Result<LintReport> lint_tree(const fs::path& root, const LintOptions& options) {
    std::vector<LintIgnore> ignores;
    for (const auto& entry : options.ignore) {
        auto ig = parse_lint_ignore(entry, options.ignore_origin);
        if (!ig) return std::move(ig).error();
        ignores.push_back(std::move(*ig));
    }
    std::error_code ec;
    auto status = fs::status(root, ec);
    if (ec || !fs::exists(status))
        return Error(fmt::format("no such file or directory{}", ec ? ": " + ec.message() : ""),
                     root.string());

    LintReport report;
    std::vector<std::pair<std::string, fs::path>> files; // (relative, absolute)
    if (fs::is_regular_file(status)) {
        files.emplace_back(root.filename().generic_string(), root);
    } else if (fs::is_directory(status)) {
        fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
        if (ec) return Error(fmt::format("cannot read directory: {}", ec.message()), root.string());
        while (it != end) {
            const fs::directory_entry& entry = *it;
            std::error_code sec;
            const bool is_link = entry.is_symlink(sec);
            if (!is_link && entry.is_directory(sec)) {
                if (skip_directory(entry.path().filename().string()))
                    it.disable_recursion_pending();
            } else if (!is_link && entry.is_regular_file(sec)) {
                std::string rel = entry.path().lexically_relative(root).generic_string();
                if (is_c_source(rel) || is_build_file(rel)) files.emplace_back(rel, entry.path());
            }
            it.increment(ec);
            if (ec) {
                report.skipped.push_back(
                    fmt::format("{}: cannot read directory: {}",
                                it == end ? root.string() : it->path().string(), ec.message()));
                report.unreadable = true;
                ec.clear();
                if (it == end) break;
            }
        }
    } else {
        return Error("not a regular file or directory", root.string());
    }
    std::sort(files.begin(), files.end());

    // Pass 1: read, blank and collect macros across the tree (a gate in a .cu can use a constant
    // from a header).
    struct Loaded {
        std::string rel;
        std::string text; // blanked for C sources, raw for build files
        bool c_source;
    };
    std::vector<Loaded> loaded;
    MacroTable macros;
    for (const auto& [rel, abs] : files) {
        bool too_large = false;
        auto data = read_file(abs, options.max_file_bytes, too_large);
        if (!data) {
            report.skipped.push_back(fmt::format("{}: {}", rel, data.error().message));
            report.unreadable = true;
            continue;
        }
        if (too_large) {
            report.skipped.push_back(
                fmt::format("{}: larger than {} bytes, not scanned", rel, options.max_file_bytes));
            continue;
        }
        if (looks_binary(*data)) continue;
        ++report.files_scanned;
        if (is_c_source(rel)) {
            std::string code = blank_c_like(*data);
            macros.collect(code, rel);
            loaded.push_back({rel, std::move(code), true});
        } else {
            loaded.push_back({rel, std::move(*data), false});
        }
    }
    // Pass 2: the rules.
    for (const auto& l : loaded) {
        auto found = l.c_source
                         ? lint_source_with(l.rel, l.text, options.list, macros, options.gpus, true)
                         : lint_build_text(l.rel, l.text, options.list);
        for (auto& f : found)
            report.findings.push_back(std::move(f));
    }
    std::vector<bool> used(ignores.size(), false);
    for (auto& f : report.findings) {
        for (std::size_t i = 0; i < ignores.size(); ++i) {
            if (ignore_matches(ignores[i], f)) {
                f.ignored_by = ignores[i].entry;
                used[i] = true;
                break;
            }
        }
    }
    for (std::size_t i = 0; i < ignores.size(); ++i)
        if (!used[i]) report.unused_ignores.push_back(ignores[i].entry);
    std::sort(report.findings.begin(), report.findings.end(), [](const auto& a, const auto& b) {
        return std::tie(a.file, a.line, a.rule, a.needs, a.pattern) <
               std::tie(b.file, b.line, b.rule, b.needs, b.pattern);
    });
    return report;
}

} // namespace forge::tools
