// The nvcc command-line model. Every fact here was checked against nvcc 13.0.88 `-dryrun` and is
// pinned by tests/unit/nvcc and tests/integration/nvcc (docs/nvcc-command-line.md).
#include "nvcc/cmdline.h"

#include "arch/gencode.h"
#include "nvcc/options.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <sstream>

namespace forge::nvcc {

using toolkit::ToolkitCaps;

namespace {

using arch::Kind;
using arch::Suffix;
using arch::Target;

constexpr int kMaxOptionsFileDepth = 32;
// What options files may add up to across one command line: files that fan out without a cycle
// (depth 7, fan-out 10) made 10^7 arguments and 1.58 GB, and `-optf /dev/zero` grows without end.
// A real command line (300,000 -gencode flags is about 12 MB, a build reads a few files) stays
// far below each bound.
constexpr std::uint64_t kMaxOptionsFileBytes = 64ull << 20;
constexpr std::uint64_t kMaxExpandedArgs = 2'000'000;
constexpr std::uint64_t kMaxOptionsFileReads = 10'000;

struct ExpandBudget {
    std::uint64_t bytes_left = kMaxOptionsFileBytes;
    std::uint64_t args_left = kMaxExpandedArgs;
    std::uint64_t reads_left = kMaxOptionsFileReads;
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// nvcc's options-file tokenizer [obs]: whitespace separates; double quotes group and are removed;
// a backslash makes the next character literal (`\ ` a space, `\"` a quote, `\\` a backslash) and
// is removed; single quotes are literal; no comments. An unbalanced quote is fatal to nvcc
// ("Stray '"' character").
Result<std::vector<std::string>> tokenize_options_file(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    bool in_token = false, in_quotes = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\\' && i + 1 < text.size()) {
            cur += text[++i];
            in_token = true;
        } else if (c == '"') {
            in_quotes = !in_quotes;
            in_token = true;
        } else if (is_space(c) && !in_quotes) {
            if (in_token) out.push_back(std::move(cur));
            cur.clear();
            in_token = false;
        } else {
            cur += c;
            in_token = true;
        }
    }
    if (in_quotes) return Error{"stray '\"' character (unbalanced double quote)"};
    if (in_token) out.push_back(std::move(cur));
    return out;
}

// NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS: whitespace separates, double quotes group and are KEPT
// (`code="sm_90,compute_90"` works there), single quotes and backslashes are literal [obs].
Result<std::vector<std::string>> tokenize_env(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    bool in_token = false, in_quotes = false;
    for (char c : text) {
        if (c == '"') in_quotes = !in_quotes;
        if (is_space(c) && !in_quotes) {
            if (in_token) out.push_back(std::move(cur));
            cur.clear();
            in_token = false;
        } else {
            cur += c;
            in_token = true;
        }
    }
    if (in_quotes) return Error{"stray '\"' character (unbalanced double quote)"};
    if (in_token) out.push_back(std::move(cur));
    return out;
}

// nvcc list values split on commas; `\,` keeps a comma (list options accept it escaped).
std::vector<std::string> split_list(std::string_view v) {
    std::vector<std::string> out;
    std::string cur;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size() && v[i + 1] == ',') {
            cur += ',';
            ++i;
        } else if (v[i] == ',') {
            out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += v[i];
        }
    }
    out.push_back(std::move(cur));
    return out;
}

Error arg_error(std::string message, const Arg& where, std::string_view key) {
    Error e{std::move(message)};
    e.key = std::string(key);
    if (where.source != Arg::Source::Argv)
        e.file = where.origin; // the options file, or the env var name
    return e;
}

// Expands options files in place; everything else is copied, and a value-taking option's separate
// argument is copied without being looked at (so `-o -optf` does not read a file named by -o).
// At most `budget.bytes_left` bytes of the file, and whether there was more.
bool read_bounded(std::ifstream& f, ExpandBudget& budget, std::string& text) {
    std::vector<char> chunk(1 << 16);
    while (f) {
        f.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        const auto got = static_cast<std::uint64_t>(f.gcount());
        if (got > budget.bytes_left) return false;
        budget.bytes_left -= got;
        text.append(chunk.data(), static_cast<std::size_t>(got));
    }
    return true;
}

Status expand(const std::vector<Arg>& in, const std::string& cwd, int depth, ExpandBudget& budget,
              std::vector<Arg>& out) {
    for (std::size_t i = 0; i < in.size(); ++i) {
        const Arg& a = in[i];
        if (budget.args_left == 0)
            return arg_error(
                fmt::format("options files expand to more than {} arguments", kMaxExpandedArgs), a,
                a.text);
        --budget.args_left;
        TokenMatch m = match_token(a.text);
        if (!m.spec) {
            out.push_back(a);
            continue;
        }
        if (m.spec->role != Role::OptionsFile) {
            out.push_back(a);
            if (m.needs_next && i + 1 < in.size()) out.push_back(in[++i]);
            continue;
        }
        std::string value;
        if (m.value) {
            value = std::string(*m.value);
        } else if (i + 1 < in.size()) {
            value = in[++i].text;
        } else {
            return arg_error(fmt::format("'{}' needs an options file name", a.text), a, a.text);
        }
        if (depth >= kMaxOptionsFileDepth)
            return arg_error(
                fmt::format("options files nested deeper than {} (a cycle?)", kMaxOptionsFileDepth),
                a, a.text);
        for (const auto& name : split_list(value)) {
            // nvcc resolves nested options files against the cwd, not the including file.
            std::filesystem::path p(name);
            if (p.is_relative() && !cwd.empty()) p = std::filesystem::path(cwd) / p;
            if (budget.reads_left == 0)
                return arg_error(fmt::format("more than {} options files read for one command "
                                             "line (they fan out)",
                                             kMaxOptionsFileReads),
                                 a, a.text);
            --budget.reads_left;
            std::ifstream f(p, std::ios::binary);
            if (!f) {
                Error e{fmt::format("could not open options file '{}'", name), p.string()};
                e.key = a.text;
                return e;
            }
            std::string text;
            if (!read_bounded(f, budget, text)) {
                Error e{fmt::format("options files add up to more than {} bytes (this one and "
                                    "those read before it)",
                                    kMaxOptionsFileBytes),
                        p.string()};
                e.key = a.text;
                return e;
            }
            auto tokens = tokenize_options_file(text);
            if (!tokens) {
                Error e = std::move(tokens).error();
                e.file = p.string();
                e.key = a.text;
                return e;
            }
            std::vector<Arg> nested;
            for (auto& t : *tokens)
                nested.push_back(Arg{std::move(t), Arg::Source::OptionsFile, p.string(), -1});
            FORGE_TRY_STATUS(expand(nested, cwd, depth + 1, budget, out));
        }
    }
    return ok_status();
}

std::string_view extension_of(std::string_view path) {
    auto slash = path.find_last_of('/');
    auto base = slash == std::string_view::npos ? path : path.substr(slash + 1);
    auto dot = base.find_last_of('.');
    return dot == std::string_view::npos ? std::string_view{} : base.substr(dot);
}

std::string_view basename_of(std::string_view path) {
    auto slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_object(std::string_view ext) {
    return ext == ".o" || ext == ".obj" || ext == ".a" || ext == ".lib" || ext == ".so" ||
           ext == ".res";
}
// Device inputs nvcc compiles by extension (without -x).
bool is_device_source(std::string_view ext) {
    return ext == ".cu" || ext == ".cup" || ext == ".ptx" || ext == ".gpu";
}

// A comma list with `[...]` or `"..."` groups kept intact (a -gencode spec).
std::vector<std::string_view> split_spec(std::string_view v) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    int brackets = 0;
    bool quotes = false;
    for (std::size_t i = 0; i < v.size(); ++i) {
        char c = v[i];
        if (c == '"')
            quotes = !quotes;
        else if (c == '[' && !quotes)
            ++brackets;
        else if (c == ']' && !quotes)
            --brackets;
        else if (c == ',' && !quotes && brackets == 0) {
            out.push_back(v.substr(start, i - start));
            start = i + 1;
        }
    }
    out.push_back(v.substr(start));
    return out;
}

struct Spec {
    Target arch;               // the virtual arch (compute_X)
    std::vector<Target> codes; // codes as written
};

Result<Target> parse_code(std::string_view text, const Arg& where) {
    auto t = arch::parse_target(text);
    if (!t) return arg_error(fmt::format("unsupported gpu code '{}'", text), where, where.text);
    return *t;
}

Result<Target> parse_virtual(std::string_view text, const Arg& where, std::string_view what) {
    auto t = arch::parse_target(text);
    if (!t)
        return arg_error(fmt::format("unsupported gpu architecture '{}'", text), where, where.text);
    if (t->kind == Kind::Sass)
        return arg_error(
            fmt::format("{} '{}' must be a virtual code architecture (compute_XX)", what, text),
            where, where.text);
    // lto_X stands for its virtual arch here (`-arch=lto_90 -code=sm_90` builds sm_90) [obs].
    t->kind = Kind::Ptx;
    return *t;
}

// `code` must be reachable from `arch` (nvcc: "Incompatible code generation requested").
Status check_compatible(const Target& archv, const Target& code, const Arg& where) {
    bool ok = code.sm >= archv.sm;
    if (archv.suffix == Suffix::Specific) ok = ok && code.suffix == Suffix::Specific;
    if (archv.suffix == Suffix::Family)
        ok = ok && arch::sm_major(code.sm) == arch::sm_major(archv.sm);
    if (code.kind == Kind::Ptx) ok = ok && code.sm == archv.sm;
    if (!ok)
        return arg_error(fmt::format("incompatible code generation requested: arch='{}', code='{}'",
                                     archv.name(), code.name()),
                         where, where.text);
    return ok_status();
}

// The image one (arch, code) pair produces: a family arch turns a plain sm_103 into sm_103f
// (`arch=compute_100f,code=sm_103` embeds sm_103f) [obs].
Target image_of(const Target& archv, const Target& code) {
    Target t = code;
    if (archv.suffix == Suffix::Family && code.suffix == Suffix::None && code.kind != Kind::Ptx)
        t.suffix = Suffix::Family;
    return t;
}

Result<Spec> parse_gencode(std::string_view value, const Arg& where) {
    std::optional<std::string_view> arch_text, code_text;
    for (auto part : split_spec(value)) {
        while (!part.empty() && part.front() == ' ')
            part.remove_prefix(1); // tolerated by nvcc
        auto eq = part.find('=');
        if (eq == std::string_view::npos)
            return arg_error(fmt::format("'{}' is not in 'keyword=value' format", part), where,
                             where.text);
        auto key = part.substr(0, eq);
        auto val = part.substr(eq + 1);
        if (key != "arch" && key != "code")
            return arg_error(fmt::format("unknown keyword '{}' in -gencode", key), where,
                             where.text);
        auto& slot = key == "arch" ? arch_text : code_text;
        if (slot)
            return arg_error(fmt::format("redefinition of keyword '{}'", key), where, where.text);
        slot = val;
    }
    if (!arch_text) return arg_error("-gencode: missing architecture", where, where.text);
    if (!code_text) return arg_error("-gencode: missing code", where, where.text);
    Spec s;
    auto a = parse_virtual(*arch_text, where, "-gencode arch");
    if (!a) return std::move(a).error();
    s.arch = *a;
    std::string_view codes = *code_text;
    if (codes.size() >= 2 && ((codes.front() == '[' && codes.back() == ']') ||
                              (codes.front() == '"' && codes.back() == '"'))) {
        codes = codes.substr(1, codes.size() - 2);
    }
    if (codes.empty()) return arg_error("-gencode: empty code list", where, where.text);
    for (const auto& c : split_list(codes)) {
        auto t = parse_code(c, where);
        if (!t) return std::move(t).error();
        FORGE_TRY_STATUS(check_compatible(s.arch, *t, where));
        s.codes.push_back(*t);
    }
    return s;
}

std::set<Target> default_images(const ToolkitCaps& caps) {
    return {Target{Kind::Sass, caps.default_sm, Suffix::None},
            Target{Kind::Ptx, caps.default_sm, Suffix::None}};
}

// -dlto turns every virtual pass into an LTO-IR image and keeps the PTX; no SASS at compile
// (`-dlto -arch=sm_90a` -> lto_90, lto_90a, compute_90, compute_90a) [obs].
std::set<Target> apply_dlto(const std::set<Target>& images) {
    std::set<Target> out;
    for (const auto& t : images) {
        if (t.kind == Kind::Ptx) out.insert(t);
        out.insert(Target{Kind::Lto, t.sm, t.suffix});
    }
    return out;
}

// What the option scan collects before the phase and the targets are decided.
struct OptionScan {
    std::optional<std::pair<std::string, std::size_t>> arch_value; // last -arch wins
    std::vector<std::pair<std::string, std::size_t>> code_values, gencode_values;
    std::vector<PhaseFlag> phases;
    bool version = false, help = false, list_gpu = false;
    std::string language;
    std::vector<std::string> inputs;

    [[nodiscard]] bool has(PhaseFlag p) const {
        return std::find(phases.begin(), phases.end(), p) != phases.end();
    }
};

// One recognised option, its value already taken (`i` is the last token it used).
void take_option(const OptionSpec& spec, std::size_t i, const std::string& value,
                 std::optional<std::size_t> value_index, Invocation& inv, OptionScan& sc) {
    switch (spec.role) {
    case Role::Output:
        inv.output = value;
        break;
    case Role::Language:
        sc.language = value;
        break;
    case Role::GpuArch: {
        std::size_t opt_index = value_index ? *value_index - 1 : i;
        sc.arch_value = {value, opt_index};
        inv.target_tokens.push_back({opt_index, value_index, value, Role::GpuArch});
        break;
    }
    case Role::GpuCode:
    case Role::GenCode: {
        std::size_t opt_index = value_index ? *value_index - 1 : i;
        inv.target_tokens.push_back({opt_index, value_index, value, spec.role});
        (spec.role == Role::GpuCode ? sc.code_values : sc.gencode_values)
            .emplace_back(value, opt_index);
        break;
    }
    case Role::Rdc:
        inv.rdc = value == "true";
        break;
    case Role::Dlto:
        inv.dlto = true;
        inv.dlto_tokens.push_back(i);
        break;
    case Role::Dryrun:
        inv.dryrun = true;
        break;
    case Role::Version:
        sc.version = true;
        break;
    case Role::Help:
        sc.help = true;
        break;
    case Role::ListGpu:
        sc.list_gpu = true;
        break;
    case Role::Phase:
        sc.phases.push_back(spec.phase);
        break;
    case Role::OptionsFile: // already expanded
    case Role::None:
        break;
    }
}

OptionScan scan_options(Invocation& inv) {
    OptionScan sc;
    const auto& eff = inv.effective;
    for (std::size_t i = 0; i < eff.size(); ++i) {
        const std::string& tok = eff[i].text;
        TokenMatch m = match_token(tok);
        if (!m.spec) {
            if (tok.size() >= 2 && tok[0] == '-') continue; // unknown option: argument-less
            sc.inputs.push_back(tok);
            continue;
        }
        std::string value;
        std::optional<std::size_t> value_index;
        if (m.value) {
            value = std::string(*m.value);
        } else if (m.needs_next) {
            if (i + 1 >= eff.size()) continue; // nvcc: "option requires an argument"
            value_index = ++i;
            value = eff[i].text;
        }
        take_option(*m.spec, i, value, value_index, inv, sc);
    }
    return sc;
}

// Inputs: -x applies to every input wherever it stands. True when CMake's compiler-id probe is
// among them.
bool sort_inputs(const OptionScan& sc, Invocation& inv) {
    bool cmake_probe = false;
    for (const auto& in : sc.inputs) {
        auto ext = extension_of(in);
        if (basename_of(in) == "CMakeCUDACompilerId.cu" || in == "__cmake_determine_cuda")
            cmake_probe = true;
        if (is_object(ext))
            inv.objects.push_back(in);
        else if (sc.language == "cu" || (sc.language.empty() && is_device_source(ext)))
            inv.sources.push_back(in);
    }
    return cmake_probe;
}

void decide_phase(const OptionScan& sc, Invocation& inv) {
    // Several phase flags: nvcc stops at the earliest step (-E < -ptx < -cubin < -fatbin < -c <
    // -dlink < link); `-c -dlink` compiles with -rdc=true (--device-c) [obs].
    const bool compile_flag = sc.has(PhaseFlag::Compile) || sc.has(PhaseFlag::Cuda) ||
                              sc.has(PhaseFlag::DeviceW) || sc.has(PhaseFlag::Lib);
    if (sc.has(PhaseFlag::DeviceC) || (compile_flag && sc.has(PhaseFlag::DeviceLink)))
        inv.rdc = true;
    if (sc.has(PhaseFlag::Ptx))
        inv.phase = Phase::Ptx;
    else if (sc.has(PhaseFlag::Cubin))
        inv.phase = Phase::Cubin;
    else if (sc.has(PhaseFlag::OptixIr) || sc.has(PhaseFlag::LtoIr))
        inv.phase = Phase::OtherSingleTarget;
    else if (sc.has(PhaseFlag::Fatbin))
        inv.phase = Phase::Fatbin;
    else if (sc.has(PhaseFlag::DeviceC))
        inv.phase = Phase::CompileRdc;
    else if (compile_flag)
        inv.phase = inv.rdc ? Phase::CompileRdc : Phase::Compile;
    else if (sc.has(PhaseFlag::DeviceLink))
        inv.phase = Phase::DeviceLink;
    else
        inv.phase = Phase::Link;
    // A device link without sources: nvlink's SASS is all that comes out (`-dlink k.cu` compiles
    // k.cu first, with the usual images [obs]). The one place a device link is decided.
    inv.device_link_only = inv.sources.empty() && !inv.objects.empty() &&
                           (inv.phase == Phase::DeviceLink || inv.phase == Phase::Link);
}

NoDeviceReason no_device_reason(const OptionScan& sc, bool cmake_probe, const Invocation& inv) {
    if (sc.version) return NoDeviceReason::Version;
    if (sc.help) return NoDeviceReason::Help;
    if (sc.list_gpu) return NoDeviceReason::ListGpu;
    if (cmake_probe) return NoDeviceReason::CMakeCompilerId;
    if (sc.has(PhaseFlag::Preprocess) || sc.has(PhaseFlag::Depend) ||
        sc.has(PhaseFlag::DependNonSys))
        return NoDeviceReason::Preprocess;
    if (sc.inputs.empty()) return NoDeviceReason::NoInput;
    if (inv.sources.empty() && !inv.device_link_only) return NoDeviceReason::HostOnly;
    return NoDeviceReason::None;
}

void warn_native(const ToolkitCaps& caps, Invocation& inv) {
    inv.uses_native = true;
    inv.warnings.push_back(caps.native_sm
                               ? fmt::format("-arch=native in a distributable build: targets "
                                             "depend on the build machine's GPU (here sm_{})",
                                             *caps.native_sm)
                               : fmt::format("-arch=native in a distributable build: no GPU here, "
                                             "nvcc falls back to its default sm_{}",
                                             caps.default_sm));
}

// The images of -arch, alone (a shorthand) or with its -code lists.
Status add_arch_images(const OptionScan& sc, const ToolkitCaps& caps, Invocation& inv,
                       std::set<Target>& images) {
    const auto& eff = inv.effective;
    const Arg& w = eff[sc.arch_value->second];
    const std::string& v = sc.arch_value->first;
    if (sc.code_values.empty()) {
        auto ex = expand_arch_shorthand(v, caps);
        if (!ex) return arg_error(ex.error().message, w, w.text);
        if (v == "native") warn_native(caps, inv);
        images.insert(ex->begin(), ex->end());
        return ok_status();
    }
    auto a = parse_virtual(v, w, "value of -arch");
    if (!a) return std::move(a).error();
    for (const auto& [cv, idx] : sc.code_values) {
        for (const auto& c : split_list(cv)) {
            auto t = parse_code(c, eff[idx]);
            if (!t) return std::move(t).error();
            FORGE_TRY_STATUS(check_compatible(*a, *t, eff[idx]));
            images.insert(image_of(*a, *t));
        }
    }
    return ok_status();
}

// Every image the target options ask for, validated as nvcc validates them; nvcc's default when
// none is given.
Result<std::set<Target>> requested_images(const OptionScan& sc, const ToolkitCaps& caps,
                                          Invocation& inv) {
    const auto& eff = inv.effective;
    if (!sc.code_values.empty() && !sc.arch_value) {
        const Arg& w = eff[sc.code_values.front().second];
        return arg_error("-code needs a virtual -arch (nvcc: -arch option not specified)", w,
                         w.text);
    }
    if (inv.dlto && (!sc.code_values.empty() || !sc.gencode_values.empty()) &&
        !inv.device_link_only) {
        const Arg& w = eff[!sc.gencode_values.empty() ? sc.gencode_values.front().second
                                                      : sc.code_values.front().second];
        return arg_error("'-dlto' conflicts with '-gencode' or '-code'; use code=lto_<arch>", w,
                         w.text);
    }
    std::set<Target> images;
    if (sc.arch_value) FORGE_TRY_STATUS(add_arch_images(sc, caps, inv, images));
    for (const auto& [gv, idx] : sc.gencode_values) {
        auto s = parse_gencode(gv, eff[idx]);
        if (!s) return std::move(s).error();
        for (const auto& c : s->codes)
            images.insert(image_of(s->arch, c));
    }
    if (!inv.targets_explicit) images = default_images(caps);
    return images;
}

// What comes out of the phase: a -dlto compile's LTO-IR + PTX (a link in the same call then makes
// the SASS from it [obs]); a device link's SASS only (nvlink runs once per real code [obs]).
void settle_requested(std::set<Target> images, Invocation& inv) {
    if (inv.dlto && !inv.device_link_only) {
        std::set<Target> lto = apply_dlto(images);
        if (inv.phase == Phase::Link || inv.phase == Phase::DeviceLink)
            for (const auto& t : images)
                if (t.kind == Kind::Sass) lto.insert(t);
        images = std::move(lto);
    }
    if (inv.device_link_only) {
        std::set<Target> sass;
        for (const auto& t : images)
            if (t.kind == Kind::Sass) sass.insert(t);
        images = std::move(sass);
    }
    inv.requested = std::move(images);
    for (const auto& t : inv.requested) {
        inv.has_a_target = inv.has_a_target || t.suffix == Suffix::Specific;
        inv.has_f_target = inv.has_f_target || t.suffix == Suffix::Family;
    }
    inv.arch_specific = !inv.requested.empty() &&
                        std::all_of(inv.requested.begin(), inv.requested.end(),
                                    [](const Target& t) { return t.suffix == Suffix::Specific; });
}

// Everything parse_invocation learns from the (already expanded) effective args.
Result<Invocation> analyze(std::vector<std::string> argv, std::vector<Arg> effective,
                           const ToolkitCaps& caps) {
    Invocation inv;
    inv.argv = std::move(argv);
    inv.effective = std::move(effective);
    const OptionScan sc = scan_options(inv);
    const bool cmake_probe = sort_inputs(sc, inv);
    decide_phase(sc, inv);
    inv.no_device = no_device_reason(sc, cmake_probe, inv);
    // Targets. Validate everything nvcc would validate, even for passthrough calls, but only
    // report errors where the call would compile: a `--version -arch=bogus` is still a version
    // call.
    inv.targets_explicit = sc.arch_value || !sc.gencode_values.empty();
    auto images = requested_images(sc, caps, inv);
    if (!images) {
        if (inv.no_device != NoDeviceReason::None) return inv; // nvcc ignores targets there
        return std::move(images).error();
    }
    settle_requested(std::move(*images), inv);
    return inv;
}

std::set<Target> plain_sass(const ToolkitCaps& caps) {
    std::set<Target> out;
    for (const auto& t : caps.emittable)
        if (t.kind == Kind::Sass && t.suffix == Suffix::None) out.insert(t);
    return out;
}

bool emittable(const ToolkitCaps& caps, const Target& t) {
    return caps.emittable.contains(t);
}

std::string bracket_list(const std::vector<std::string>& codes) {
    if (codes.size() == 1) return codes.front();
    return fmt::format("[{}]", fmt::join(codes, ","));
}

// A -dlto compile: SASS comes later, at the device link, from its LTO-IR.
bool dlto_compile(const Invocation& inv) {
    return inv.dlto && !inv.device_link_only;
}

// The call's own target tokens as the clamp edits them: what goes, what gets a new value.
struct Edits {
    const std::vector<Arg>& eff;
    Rewrite& rw;
    std::vector<std::optional<std::string>> replace;
    std::vector<bool> drop;

    Edits(const std::vector<Arg>& effective, Rewrite& rewrite)
        : eff(effective), rw(rewrite), replace(effective.size()), drop(effective.size(), false) {}

    [[nodiscard]] bool from_argv(std::size_t i) const { return eff[i].source == Arg::Source::Argv; }
    // Only argv can be edited: a token from an options file or the environment stays, with a note.
    bool mark_drop(const TargetToken& tt) {
        if (!from_argv(tt.eff_index) || (tt.value_index && !from_argv(*tt.value_index))) {
            rw.notes.push_back(fmt::format("cannot clamp '{}' from {}", eff[tt.eff_index].text,
                                           eff[tt.eff_index].origin));
            return false;
        }
        drop[tt.eff_index] = true;
        if (tt.value_index) drop[*tt.value_index] = true;
        rw.clamped.push_back(eff[tt.eff_index].text);
        if (tt.value_index) rw.clamped.back() += " " + eff[*tt.value_index].text;
        return true;
    }
    bool set_value(const TargetToken& tt, const std::string& value) {
        std::size_t at = tt.value_index ? *tt.value_index : tt.eff_index;
        if (!from_argv(at)) {
            rw.notes.push_back(
                fmt::format("cannot clamp '{}' from {}", eff[at].text, eff[at].origin));
            return false;
        }
        std::string old = eff[tt.eff_index].text;
        if (tt.value_index) {
            old += " " + eff[*tt.value_index].text;
            replace[at] = value;
        } else {
            auto eq = eff[at].text.find('=');
            replace[at] = eff[at].text.substr(0, eq + 1) + value;
        }
        rw.clamped.push_back(old);
        return true;
    }
    void clamped(const std::vector<Target>& bad) {
        rw.clamped_targets.insert(rw.clamped_targets.end(), bad.begin(), bad.end());
    }
};

// An -arch naming anything nvcc cannot emit goes whole. True when it went.
bool clamp_arch(const TargetToken& tt, const ToolkitCaps& caps, Edits& ed) {
    auto ex = expand_arch_shorthand(tt.value, caps);
    if (!ex) return false;
    std::vector<Target> bad;
    for (const auto& t : *ex)
        if (!emittable(caps, t)) bad.push_back(t);
    if (bad.empty() || !ed.mark_drop(tt)) return false;
    ed.clamped(bad);
    return true;
}

void clamp_code(const TargetToken& tt, bool arch_dropped, const ToolkitCaps& caps, Edits& ed) {
    std::vector<std::string> keep;
    std::vector<Target> bad;
    for (const auto& c : split_list(tt.value)) {
        auto t = arch::parse_target(c);
        if (t && !emittable(caps, *t))
            bad.push_back(*t);
        else
            keep.push_back(c);
    }
    // -code without its -arch is fatal, so it goes with a clamped -arch.
    if (arch_dropped) {
        if (ed.mark_drop(tt)) ed.clamped(bad);
    } else if (!bad.empty()) {
        bool done = keep.empty() ? ed.mark_drop(tt)
                                 : ed.set_value(tt, fmt::format("{}", fmt::join(keep, ",")));
        if (done) ed.clamped(bad);
    }
}

void clamp_gencode(const TargetToken& tt, const ToolkitCaps& caps, Edits& ed) {
    auto s = parse_gencode(tt.value, ed.eff[tt.eff_index]);
    if (!s) return;
    if (!emittable(caps, s->arch)) {
        if (ed.mark_drop(tt)) {
            ed.rw.clamped_targets.push_back(s->arch);
            for (const auto& c : s->codes)
                if (!emittable(caps, c)) ed.rw.clamped_targets.push_back(c);
        }
        return;
    }
    std::vector<std::string> keep;
    std::vector<Target> bad;
    for (const auto& c : s->codes) {
        if (emittable(caps, c))
            keep.push_back(c.name());
        else
            bad.push_back(c);
    }
    if (bad.empty()) return;
    bool done = keep.empty() ? ed.mark_drop(tt)
                             : ed.set_value(tt, arch::gencode_value(s->arch, bracket_list(keep)));
    if (done) ed.clamped(bad);
}

// Step 1: the call's target tokens that name what nvcc cannot emit, removed or rewritten.
void clamp_targets(const Invocation& inv, const ToolkitCaps& caps, Edits& ed) {
    bool arch_dropped = false;
    for (const auto& tt : inv.target_tokens)
        if (tt.role == Role::GpuArch && clamp_arch(tt, caps, ed)) arch_dropped = true;
    for (const auto& tt : inv.target_tokens) {
        if (tt.role == Role::GpuCode)
            clamp_code(tt, arch_dropped, caps, ed);
        else if (tt.role == Role::GenCode)
            clamp_gencode(tt, caps, ed);
    }
}

// The call after clamping: its effective args, and which argv tokens went or changed.
struct Clamped {
    std::vector<Arg> eff;
    std::vector<bool> argv_drop;
    std::vector<std::optional<std::string>> argv_replace;

    // argv without the dropped tokens (and those in `remove`), the replaced ones rewritten.
    [[nodiscard]] std::vector<std::string> argv(const std::vector<std::string>& original,
                                                const std::set<int>& remove = {}) const {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < original.size(); ++i) {
            if (argv_drop[i] || remove.contains(static_cast<int>(i))) continue;
            out.push_back(argv_replace[i] ? *argv_replace[i] : original[i]);
        }
        return out;
    }
};

Clamped apply_edits(const Invocation& inv, const Edits& ed) {
    Clamped cl;
    cl.argv_drop.assign(inv.argv.size(), false);
    cl.argv_replace.resize(inv.argv.size());
    for (std::size_t i = 0; i < ed.eff.size(); ++i) {
        if (ed.eff[i].argv_index >= 0) {
            cl.argv_drop[ed.eff[i].argv_index] = ed.drop[i];
            cl.argv_replace[ed.eff[i].argv_index] = ed.replace[i];
        }
        if (ed.drop[i]) continue;
        Arg a = ed.eff[i];
        if (ed.replace[i]) a.text = *ed.replace[i];
        cl.eff.push_back(std::move(a));
    }
    return cl;
}

// Step 2: the targets to add, as this call can take them: SASS only at a device link (nvlink
// makes nothing else), never what nvcc cannot emit (a note each), a -dlto compile's SASS as its
// compute_X + lto_X.
std::set<Target> targets_to_add(const Invocation& inv, const std::vector<Target>& missing,
                                const std::set<Target>& present, const ToolkitCaps& caps,
                                Rewrite& rw) {
    std::set<Target> add;
    for (auto t : missing) {
        if (inv.device_link_only && t.kind != Kind::Sass) continue;
        if (!emittable(caps, t)) { // fatal to nvcc: never inject what it does not know
            rw.notes.push_back(fmt::format("not injected: nvcc {}.{} cannot emit {}",
                                           caps.version.major, caps.version.minor, t.name()));
            continue;
        }
        if (dlto_compile(inv) && t.kind == Kind::Sass) {
            Target lto{Kind::Lto, t.sm, t.suffix};
            if (present.contains(lto)) continue;
            add.insert(Target{Kind::Ptx, t.sm, t.suffix});
            add.insert(lto);
            continue;
        }
        add.insert(t);
    }
    return add;
}

// An argv and the -gencode tokens to insert into it.
struct Restated {
    std::vector<std::string> argv;
    std::vector<std::string> tail;
};

void add_gencode(std::vector<std::string>& tail, const Target& archv, const std::string& code) {
    tail.push_back("-gencode");
    tail.push_back(arch::gencode_value(archv, code));
}

// Step 3a: -dlto conflicts with -gencode, so the -dlto and -arch tokens go and the whole target
// set is restated as gencodes, one per virtual arch, `code=[compute_X,lto_X]` [obs]. Nothing (and
// a note) when one of them comes from outside argv, where it cannot be removed.
std::optional<Restated> restate_dlto(const Invocation& inv, const Invocation& now,
                                     const Clamped& cl, const std::set<Target>& targets,
                                     Rewrite& rw) {
    const auto& eff2 = now.effective;
    auto argv_src = [&](std::size_t i) { return eff2[i].source == Arg::Source::Argv; };
    for (auto idx : now.dlto_tokens)
        if (!argv_src(idx)) {
            rw.notes.push_back("nothing injected: -dlto comes from " + eff2[idx].origin);
            return std::nullopt;
        }
    for (const auto& tt : now.target_tokens)
        if (!argv_src(tt.eff_index) || (tt.value_index && !argv_src(*tt.value_index))) {
            rw.notes.push_back("nothing injected: -arch comes from " + eff2[tt.eff_index].origin);
            return std::nullopt;
        }
    // Clamping changed the effective indices; remove through argv's.
    std::set<int> remove_argv;
    for (auto idx : now.dlto_tokens)
        remove_argv.insert(eff2[idx].argv_index);
    for (const auto& tt : now.target_tokens) {
        remove_argv.insert(eff2[tt.eff_index].argv_index);
        if (tt.value_index) remove_argv.insert(eff2[*tt.value_index].argv_index);
    }
    Restated out{cl.argv(inv.argv, remove_argv), {}};
    std::map<std::pair<int, Suffix>, std::vector<std::string>> per_arch;
    for (const auto& t : targets) {
        if (t.kind == Kind::Sass) continue;
        per_arch[{t.sm, t.suffix}].push_back(t.name());
    }
    for (auto& [slot, codes] : per_arch) {
        std::sort(codes.begin(), codes.end()); // compute_ before lto_
        add_gencode(out.tail, Target{Kind::Ptx, slot.first, slot.second}, bracket_list(codes));
    }
    rw.notes.push_back("-dlto compile: -dlto/-arch restated as -gencode code=[compute_X,lto_X]");
    return out;
}

// Step 3b: one -gencode per injected target, after nvcc's default when the call relied on it.
Restated state_gencodes(std::vector<std::string> argv, bool state_default,
                        const std::set<Target>& have, Rewrite& rw) {
    Restated out{std::move(argv), {}};
    if (state_default) {
        for (const auto& t : have) {
            if (std::find(rw.injected.begin(), rw.injected.end(), t) != rw.injected.end()) continue;
            add_gencode(out.tail, Target{Kind::Ptx, t.sm, t.suffix}, t.name());
        }
        rw.notes.push_back("nvcc's default target made explicit");
    }
    for (const auto& t : rw.injected)
        add_gencode(out.tail, Target{Kind::Ptx, t.sm, t.suffix}, t.name());
    return out;
}

// Step 4: at the end, unless argv ends with an option still waiting for its value (`...
// -Xcompiler`, its value maybe in NVCC_APPEND_FLAGS): then before it, so it keeps pairing as
// before.
std::size_t insertion_point(const std::vector<std::string>& argv) {
    std::size_t insert_at = argv.size();
    for (std::size_t i = 0; i < argv.size(); ++i) {
        TokenMatch m = match_token(argv[i]);
        if (!m.spec || !m.needs_next) continue;
        if (i + 1 < argv.size())
            ++i;
        else
            insert_at = i;
    }
    return insert_at;
}

// ptx, cubin, single-target phases and calls without device code take nothing.
std::optional<std::string_view> passthrough(const Invocation& inv) {
    if (inv.no_device != NoDeviceReason::None) return no_device_string(inv.no_device);
    if (inv.phase == Phase::Ptx || inv.phase == Phase::Cubin ||
        inv.phase == Phase::OtherSingleTarget)
        return phase_string(inv.phase);
    return std::nullopt;
}

} // namespace

Result<std::set<Target>> expand_arch_shorthand(std::string_view v, const ToolkitCaps& caps) {
    std::set<Target> out;
    if (v == "all" || v == "all-major") {
        auto sass = plain_sass(caps);
        if (sass.empty()) return Error{"the toolkit lists no GPU targets"};
        // PTX: the lowest plain compute of the highest major ("all" embeds compute_120, not 121).
        int top_major = arch::sm_major(sass.rbegin()->sm);
        for (const auto& t : sass) {
            if (arch::sm_major(t.sm) == top_major) {
                out.insert(Target{Kind::Ptx, t.sm, Suffix::None});
                break;
            }
        }
        const int earliest = sass.begin()->sm; // all-major keeps the earliest (sm_75) too
        for (const auto& t : sass)
            if (v == "all" || arch::sm_minor(t.sm) == 0 || t.sm == earliest) out.insert(t);
        return out;
    }
    if (v == "native") {
        if (caps.native_sm)
            return std::set<Target>{Target{Kind::Sass, *caps.native_sm, Suffix::None}};
        return default_images(caps);
    }
    auto t = arch::parse_target(v);
    if (!t) return Error{fmt::format("unsupported gpu architecture '{}'", v)};
    Target virt{Kind::Ptx, t->sm, t->suffix};
    Target plain_virt{Kind::Ptx, t->sm, Suffix::None};
    switch (t->kind) {
    case Kind::Sass:
        out.insert(*t);
        out.insert(virt);
        break;
    case Kind::Ptx:
        out.insert(virt);
        break;
    case Kind::Lto:
        out.insert(*t);
        break;
    }
    // An a/f shorthand also runs the generic pass (`-arch=sm_90a` -> compute_90 too) [obs].
    if (t->suffix != Suffix::None) {
        if (t->kind == Kind::Lto)
            out.insert(Target{Kind::Lto, t->sm, Suffix::None});
        else
            out.insert(plain_virt);
    }
    return out;
}

Result<Invocation> parse_invocation(const std::vector<std::string>& argv,
                                    const std::string& prepend_env, const std::string& append_env,
                                    const std::string& cwd, const ToolkitCaps& caps) {
    auto pre = tokenize_env(prepend_env);
    if (!pre) return std::move(pre.error().in_file("NVCC_PREPEND_FLAGS"));
    auto app = tokenize_env(append_env);
    if (!app) return std::move(app.error().in_file("NVCC_APPEND_FLAGS"));
    std::vector<Arg> raw;
    for (auto& t : *pre)
        raw.push_back(Arg{std::move(t), Arg::Source::PrependEnv, "NVCC_PREPEND_FLAGS", -1});
    for (std::size_t i = 0; i < argv.size(); ++i)
        raw.push_back(Arg{argv[i], Arg::Source::Argv, "", static_cast<int>(i)});
    for (auto& t : *app)
        raw.push_back(Arg{std::move(t), Arg::Source::AppendEnv, "NVCC_APPEND_FLAGS", -1});
    std::vector<Arg> effective;
    ExpandBudget budget;
    FORGE_TRY_STATUS(expand(raw, cwd, 0, budget, effective));
    return analyze(argv, std::move(effective), caps);
}

Rewrite inject(const Invocation& inv, const std::vector<Target>& missing, bool clamp,
               const ToolkitCaps& caps) {
    Rewrite rw;
    rw.argv = inv.argv;
    if (auto why = passthrough(inv)) {
        if (!missing.empty()) rw.notes.push_back(fmt::format("nothing injected: {} call", *why));
        return rw;
    }
    Edits ed(inv.effective, rw);
    if (clamp) clamp_targets(inv, caps, ed);
    const Clamped cl = apply_edits(inv, ed);
    auto after = analyze({}, cl.eff, caps);
    if (!after) {
        rw.notes.push_back("nothing injected: after clamping: " + after.error().to_string());
        return rw;
    }
    const Invocation& now = *after;
    if (dlto_compile(inv) && (inv.phase == Phase::Link || inv.phase == Phase::DeviceLink)) {
        rw.notes.push_back("nothing injected: -dlto compile-and-link in one call");
        rw.argv = inv.argv;
        rw.clamped.clear();
        rw.clamped_targets.clear();
        return rw;
    }
    // nvcc's default disappears as soon as any target is given: if the user relied on it, keep it
    // by stating it explicitly; if clamping removed every target, the policy replaces them.
    const bool keep_default = !inv.targets_explicit;
    // What the rewritten call already delivers without injection.
    std::set<Target> present;
    if (now.targets_explicit || keep_default) present = now.requested;
    const std::set<Target> add = targets_to_add(inv, missing, present, caps, rw);
    for (const auto& t : add)
        if (!present.contains(t)) rw.injected.push_back(t);
    if (rw.injected.empty()) {
        rw.argv = cl.argv(inv.argv);
        return rw;
    }
    std::optional<Restated> out;
    if (dlto_compile(inv)) {
        std::set<Target> targets = present;
        targets.insert(add.begin(), add.end());
        out = restate_dlto(inv, now, cl, targets, rw);
        if (!out) {
            rw.injected.clear();
            rw.argv = cl.argv(inv.argv);
            return rw;
        }
    } else {
        out = state_gencodes(cl.argv(inv.argv), keep_default && !now.targets_explicit,
                             now.requested, rw);
    }
    auto at = out->argv.begin() + static_cast<std::ptrdiff_t>(insertion_point(out->argv));
    out->argv.insert(at, out->tail.begin(), out->tail.end());
    rw.argv = std::move(out->argv);
    return rw;
}

std::string_view phase_string(Phase p) {
    switch (p) {
    case Phase::Compile:
        return "compile";
    case Phase::CompileRdc:
        return "compile-rdc";
    case Phase::DeviceLink:
        return "device-link";
    case Phase::Link:
        return "link";
    case Phase::Ptx:
        return "ptx";
    case Phase::Cubin:
        return "cubin";
    case Phase::Fatbin:
        return "fatbin";
    case Phase::OtherSingleTarget:
        return "single-target";
    }
    return "unknown";
}

std::string_view no_device_string(NoDeviceReason r) {
    switch (r) {
    case NoDeviceReason::None:
        return "device";
    case NoDeviceReason::Version:
        return "version";
    case NoDeviceReason::Help:
        return "help";
    case NoDeviceReason::ListGpu:
        return "list-gpu";
    case NoDeviceReason::Preprocess:
        return "preprocess";
    case NoDeviceReason::HostOnly:
        return "host-only";
    case NoDeviceReason::CMakeCompilerId:
        return "cmake-compiler-id";
    case NoDeviceReason::NoInput:
        return "no-input";
    }
    return "unknown";
}

} // namespace forge::nvcc
