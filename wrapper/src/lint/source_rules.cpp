#include "lint/source_rules.h"

#include "lint/lex.h"
#include "lint/scan.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace forge::lint {

using namespace scan;

namespace {

constexpr std::string_view kWhyStub =
    "gated code compiles to an empty stub that host dispatch still selects (cudaErrorLaunchFailure "
    "or wrong results on real hardware, nothing at build "
    "time)";

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
            needs = lowest_known_cc(k, f.gpus) + letter;
        else if (op == ">")
            needs = lowest_known_cc(k + 1, f.gpus) + letter;
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

} // namespace

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
    std::vector<arch::Gpu> sorted = gpus;
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.sm < b.sm; });
    const arch::TegraSet tegra(gpus);
    for (const auto& gpu : sorted) {
        // No supported nvcc builds an image for a retired part, so no gate of ours decides it.
        if (gpu.retired) continue;
        const long device_value = gpu.sm * 10L;
        if (at_least ? device_value < arch_value : device_value != arch_value) continue;
        const auto& known = gpu;
        const arch::Target* image = nullptr;
        for (const auto& t : targets)
            if (arch::sass_runs_on(t, gpu, tegra) && (!image || t.sm > image->sm)) image = &t;
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

std::vector<LintFinding> lint_blanked_source(std::string_view path, std::string_view code,
                                             const arch::ArchList& list, const MacroTable& global,
                                             const std::vector<arch::Gpu>& gpus) {
    std::vector<LintFinding> out;
    if (!is_c_source(path)) return out;
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

std::vector<LintFinding> lint_source_text(std::string_view path, std::string_view text,
                                          const arch::ArchList& list, const MacroTable& macros,
                                          const std::vector<arch::Gpu>& gpus) {
    if (!is_c_source(path)) return {};
    return lint_blanked_source(path, blank_c_like(text), list, macros, gpus);
}

} // namespace forge::lint
