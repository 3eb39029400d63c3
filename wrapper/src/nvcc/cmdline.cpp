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
Status expand(const std::vector<Arg>& in, const std::string& cwd, int depth,
              std::vector<Arg>& out) {
    for (std::size_t i = 0; i < in.size(); ++i) {
        const Arg& a = in[i];
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
            std::ifstream f(p, std::ios::binary);
            if (!f) {
                Error e{fmt::format("could not open options file '{}'", name), p.string()};
                e.key = a.text;
                return e;
            }
            std::stringstream ss;
            ss << f.rdbuf();
            auto tokens = tokenize_options_file(ss.str());
            if (!tokens) {
                Error e = std::move(tokens).error();
                e.file = p.string();
                e.key = a.text;
                return e;
            }
            std::vector<Arg> nested;
            for (auto& t : *tokens)
                nested.push_back(Arg{std::move(t), Arg::Source::OptionsFile, p.string(), -1});
            FORGE_TRY_STATUS(expand(nested, cwd, depth + 1, out));
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

struct TargetToken {
    std::size_t eff_index = 0;              // index of the option token in effective
    std::optional<std::size_t> value_index; // separate value token
    std::string value;
    Role role = Role::None;
};

// Everything parse_invocation learns from the (already expanded) effective args.
struct Analysis {
    Invocation inv;
    std::vector<TargetToken> target_tokens;
    std::vector<std::size_t> dlto_tokens;
};

Result<Analysis> analyze(std::vector<std::string> argv, std::vector<Arg> effective,
                         const ToolkitCaps& caps) {
    Analysis an;
    Invocation& inv = an.inv;
    inv.argv = std::move(argv);
    inv.effective = std::move(effective);
    const auto& eff = inv.effective;

    std::optional<std::pair<std::string, std::size_t>> arch_value; // last -arch wins
    std::vector<std::pair<std::string, std::size_t>> code_values, gencode_values;
    std::vector<PhaseFlag> phases;
    bool version = false, help = false, list_gpu = false, cmake_probe = false;
    std::string language;
    std::vector<std::string> inputs;

    for (std::size_t i = 0; i < eff.size(); ++i) {
        const std::string& tok = eff[i].text;
        TokenMatch m = match_token(tok);
        if (!m.spec) {
            if (tok.size() >= 2 && tok[0] == '-') continue; // unknown option: argument-less
            inputs.push_back(tok);
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
        switch (m.spec->role) {
        case Role::Output:
            inv.output = value;
            break;
        case Role::Language:
            language = value;
            break;
        case Role::GpuArch: {
            std::size_t opt_index = value_index ? *value_index - 1 : i;
            arch_value = {value, opt_index};
            an.target_tokens.push_back({opt_index, value_index, value, Role::GpuArch});
            break;
        }
        case Role::GpuCode:
        case Role::GenCode: {
            std::size_t opt_index = value_index ? *value_index - 1 : i;
            an.target_tokens.push_back({opt_index, value_index, value, m.spec->role});
            (m.spec->role == Role::GpuCode ? code_values : gencode_values)
                .emplace_back(value, opt_index);
            break;
        }
        case Role::Rdc:
            inv.rdc = value == "true";
            break;
        case Role::Dlto:
            inv.dlto = true;
            an.dlto_tokens.push_back(i);
            break;
        case Role::Dryrun:
            inv.dryrun = true;
            break;
        case Role::Version:
            version = true;
            break;
        case Role::Help:
            help = true;
            break;
        case Role::ListGpu:
            list_gpu = true;
            break;
        case Role::Phase:
            phases.push_back(m.spec->phase);
            break;
        case Role::OptionsFile: // already expanded
        case Role::None:
            break;
        }
    }

    // Inputs: -x applies to every input wherever it stands.
    for (const auto& in : inputs) {
        auto ext = extension_of(in);
        if (basename_of(in) == "CMakeCUDACompilerId.cu" || in == "__cmake_determine_cuda")
            cmake_probe = true;
        if (is_object(ext))
            inv.objects.push_back(in);
        else if (language == "cu" || (language.empty() && is_device_source(ext)))
            inv.sources.push_back(in);
    }

    auto has = [&](PhaseFlag p) {
        return std::find(phases.begin(), phases.end(), p) != phases.end();
    };
    // Several phase flags: nvcc stops at the earliest step (-E < -ptx < -cubin < -fatbin < -c <
    // -dlink < link); `-c -dlink` compiles with -rdc=true (--device-c) [obs].
    const bool compile_flag = has(PhaseFlag::Compile) || has(PhaseFlag::Cuda) ||
                              has(PhaseFlag::DeviceW) || has(PhaseFlag::Lib);
    if (has(PhaseFlag::DeviceC) || (compile_flag && has(PhaseFlag::DeviceLink))) inv.rdc = true;
    if (has(PhaseFlag::Ptx))
        inv.phase = Phase::Ptx;
    else if (has(PhaseFlag::Cubin))
        inv.phase = Phase::Cubin;
    else if (has(PhaseFlag::OptixIr) || has(PhaseFlag::LtoIr))
        inv.phase = Phase::OtherSingleTarget;
    else if (has(PhaseFlag::Fatbin))
        inv.phase = Phase::Fatbin;
    else if (has(PhaseFlag::DeviceC))
        inv.phase = Phase::CompileRdc;
    else if (compile_flag)
        inv.phase = inv.rdc ? Phase::CompileRdc : Phase::Compile;
    else if (has(PhaseFlag::DeviceLink))
        inv.phase = Phase::DeviceLink;
    else
        inv.phase = Phase::Link;

    // A device link without sources: nvlink's SASS is all that comes out (`-dlink k.cu` compiles
    // k.cu first, with the usual images [obs]).
    inv.device_link_only = inv.sources.empty() && !inv.objects.empty() &&
                           (inv.phase == Phase::DeviceLink || inv.phase == Phase::Link);
    const bool device_link_only = inv.device_link_only;

    if (version)
        inv.no_device = NoDeviceReason::Version;
    else if (help)
        inv.no_device = NoDeviceReason::Help;
    else if (list_gpu)
        inv.no_device = NoDeviceReason::ListGpu;
    else if (cmake_probe)
        inv.no_device = NoDeviceReason::CMakeCompilerId;
    else if (has(PhaseFlag::Preprocess) || has(PhaseFlag::Depend) || has(PhaseFlag::DependNonSys))
        inv.no_device = NoDeviceReason::Preprocess;
    else if (inputs.empty())
        inv.no_device = NoDeviceReason::NoInput;
    else if (inv.sources.empty() && !device_link_only)
        inv.no_device = NoDeviceReason::HostOnly;

    // Targets. Validate everything nvcc would validate, even for passthrough calls, but only
    // report errors where the call would compile: a `--version -arch=bogus` is still a version
    // call.
    std::set<Target> images;
    inv.targets_explicit = arch_value || !gencode_values.empty();
    auto fail = [&](Error e) -> Result<Analysis> {
        if (inv.no_device != NoDeviceReason::None) return an; // nvcc ignores targets there
        return e;
    };
    if (!code_values.empty() && !arch_value) {
        const Arg& w = eff[code_values.front().second];
        return fail(
            arg_error("-code needs a virtual -arch (nvcc: -arch option not specified)", w, w.text));
    }
    if (inv.dlto && (!code_values.empty() || !gencode_values.empty()) && !device_link_only) {
        const Arg& w = eff[!gencode_values.empty() ? gencode_values.front().second
                                                   : code_values.front().second];
        return fail(arg_error("'-dlto' conflicts with '-gencode' or '-code'; use code=lto_<arch>",
                              w, w.text));
    }
    if (arch_value) {
        const Arg& w = eff[arch_value->second];
        const std::string& v = arch_value->first;
        if (!code_values.empty()) {
            auto a = parse_virtual(v, w, "value of -arch");
            if (!a) return fail(std::move(a).error());
            for (const auto& [cv, idx] : code_values) {
                for (const auto& c : split_list(cv)) {
                    auto t = parse_code(c, eff[idx]);
                    if (!t) return fail(std::move(t).error());
                    if (auto st = check_compatible(*a, *t, eff[idx]); !st) return fail(st.error());
                    images.insert(image_of(*a, *t));
                }
            }
        } else {
            auto ex = expand_arch_shorthand(v, caps);
            if (!ex) {
                Error e = std::move(ex).error();
                Error ctx = arg_error(e.message, w, w.text);
                return fail(ctx);
            }
            std::set<Target> shorthand = *ex;
            if (v == "native") {
                inv.uses_native = true;
                inv.warnings.push_back(
                    caps.native_sm
                        ? fmt::format("-arch=native in a distributable build: targets depend on "
                                      "the build machine's GPU (here sm_{})",
                                      *caps.native_sm)
                        : fmt::format("-arch=native in a distributable build: no GPU here, nvcc "
                                      "falls back to its default sm_{}",
                                      caps.default_sm));
            }
            images.insert(shorthand.begin(), shorthand.end());
        }
    }
    for (const auto& [gv, idx] : gencode_values) {
        auto s = parse_gencode(gv, eff[idx]);
        if (!s) return fail(std::move(s).error());
        for (const auto& c : s->codes)
            images.insert(image_of(s->arch, c));
    }
    if (!inv.targets_explicit) {
        images = default_images(caps);
    }
    // -dlto compile: LTO-IR + PTX; a link in the same call then makes the SASS from it [obs].
    if (inv.dlto && !device_link_only) {
        std::set<Target> lto = apply_dlto(images);
        if (inv.phase == Phase::Link || inv.phase == Phase::DeviceLink)
            for (const auto& t : images)
                if (t.kind == Kind::Sass) lto.insert(t);
        images = std::move(lto);
    }
    // A device link runs nvlink once per real code: only SASS comes out of it [obs].
    if (device_link_only) {
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
    return an;
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
    FORGE_TRY_STATUS(expand(raw, cwd, 0, effective));
    auto an = analyze(argv, std::move(effective), caps);
    if (!an) return std::move(an).error();
    return std::move(an->inv);
}

Rewrite inject(const Invocation& inv, const std::vector<Target>& missing, bool clamp,
               const ToolkitCaps& caps) {
    Rewrite rw;
    rw.argv = inv.argv;
    if (inv.no_device != NoDeviceReason::None || inv.phase == Phase::Ptx ||
        inv.phase == Phase::Cubin || inv.phase == Phase::OtherSingleTarget) {
        if (!missing.empty())
            rw.notes.push_back(
                fmt::format("nothing injected: {} call", inv.no_device != NoDeviceReason::None
                                                             ? no_device_string(inv.no_device)
                                                             : phase_string(inv.phase)));
        return rw;
    }
    // Re-analysis gives the target tokens and their positions.
    auto base = analyze(inv.argv, inv.effective, caps);
    if (!base) {
        rw.notes.push_back("nothing injected: " + base.error().to_string());
        return rw;
    }
    const auto& eff = inv.effective;
    std::vector<std::optional<std::string>> replace(eff.size());
    std::vector<bool> drop(eff.size(), false);

    auto from_argv = [&](std::size_t i) { return eff[i].source == Arg::Source::Argv; };
    auto mark_drop = [&](const TargetToken& tt) {
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
    };
    auto set_value = [&](const TargetToken& tt, const std::string& value) {
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
    };

    if (clamp) {
        bool arch_dropped = false;
        for (const auto& tt : base->target_tokens) {
            if (tt.role == Role::GpuArch) {
                auto ex = expand_arch_shorthand(tt.value, caps);
                if (!ex) continue;
                std::vector<Target> bad;
                for (const auto& t : *ex)
                    if (!emittable(caps, t)) bad.push_back(t);
                if (!bad.empty() && mark_drop(tt)) {
                    arch_dropped = true;
                    rw.clamped_targets.insert(rw.clamped_targets.end(), bad.begin(), bad.end());
                }
            }
        }
        for (const auto& tt : base->target_tokens) {
            if (tt.role == Role::GpuCode) {
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
                    if (mark_drop(tt))
                        rw.clamped_targets.insert(rw.clamped_targets.end(), bad.begin(), bad.end());
                } else if (!bad.empty()) {
                    bool done = keep.empty()
                                    ? mark_drop(tt)
                                    : set_value(tt, fmt::format("{}", fmt::join(keep, ",")));
                    if (done)
                        rw.clamped_targets.insert(rw.clamped_targets.end(), bad.begin(), bad.end());
                }
            } else if (tt.role == Role::GenCode) {
                auto s = parse_gencode(tt.value, eff[tt.eff_index]);
                if (!s) continue;
                if (!emittable(caps, s->arch)) {
                    if (mark_drop(tt)) {
                        rw.clamped_targets.push_back(s->arch);
                        for (const auto& c : s->codes)
                            if (!emittable(caps, c)) rw.clamped_targets.push_back(c);
                    }
                    continue;
                }
                std::vector<std::string> keep;
                std::vector<Target> bad;
                for (const auto& c : s->codes) {
                    if (emittable(caps, c))
                        keep.push_back(c.name());
                    else
                        bad.push_back(c);
                }
                if (bad.empty()) continue;
                bool done = keep.empty()
                                ? mark_drop(tt)
                                : set_value(tt, arch::gencode_value(s->arch, bracket_list(keep)));
                if (done)
                    rw.clamped_targets.insert(rw.clamped_targets.end(), bad.begin(), bad.end());
            }
        }
    }

    // The effective args and argv after clamping.
    std::vector<Arg> eff2;
    std::vector<std::string> argv2;
    std::vector<bool> argv_drop(inv.argv.size(), false);
    std::vector<std::optional<std::string>> argv_replace(inv.argv.size());
    for (std::size_t i = 0; i < eff.size(); ++i) {
        if (eff[i].argv_index >= 0) {
            argv_drop[eff[i].argv_index] = drop[i];
            argv_replace[eff[i].argv_index] = replace[i];
        }
        if (drop[i]) continue;
        Arg a = eff[i];
        if (replace[i]) a.text = *replace[i];
        eff2.push_back(std::move(a));
    }
    auto after = analyze({}, eff2, caps);
    if (!after) {
        rw.notes.push_back("nothing injected: after clamping: " + after.error().to_string());
        return rw;
    }
    const Invocation& now = after->inv;
    std::set<Target> have = now.requested;
    // nvcc's default disappears as soon as any target is given: if the user relied on it, keep it
    // by stating it explicitly; if clamping removed every target, the policy replaces them.
    const bool keep_default = !inv.targets_explicit;
    const bool device_link = inv.device_link_only; // a call with no device code returned above
    const bool dlto_compile = inv.dlto && !device_link;
    if (dlto_compile && (inv.phase == Phase::Link || inv.phase == Phase::DeviceLink)) {
        rw.notes.push_back("nothing injected: -dlto compile-and-link in one call");
        rw.argv = inv.argv;
        rw.clamped.clear();
        rw.clamped_targets.clear();
        return rw;
    }
    // What the rewritten call already delivers without injection.
    std::set<Target> present;
    if (now.targets_explicit || keep_default) present = have;
    std::set<Target> add;
    for (auto t : missing) {
        if (device_link && t.kind != Kind::Sass) continue; // nvlink makes SASS only
        if (!emittable(caps, t)) { // fatal to nvcc: never inject what it does not know
            rw.notes.push_back(fmt::format("not injected: nvcc {}.{} cannot emit {}",
                                           caps.version.major, caps.version.minor, t.name()));
            continue;
        }
        if (dlto_compile && t.kind == Kind::Sass) {
            // A -dlto compile delivers SASS later, at the device link, from its LTO-IR.
            Target lto{Kind::Lto, t.sm, t.suffix};
            if (present.contains(lto)) continue;
            add.insert(Target{Kind::Ptx, t.sm, t.suffix});
            add.insert(lto);
            continue;
        }
        add.insert(t);
    }
    for (const auto& t : add)
        if (!present.contains(t)) rw.injected.push_back(t);

    for (std::size_t i = 0; i < inv.argv.size(); ++i) {
        if (argv_drop[i]) continue;
        argv2.push_back(argv_replace[i] ? *argv_replace[i] : inv.argv[i]);
    }

    if (rw.injected.empty()) {
        rw.argv = std::move(argv2);
        return rw;
    }

    std::vector<std::string> tail;
    auto gencode = [&](const Target& archv, const std::string& code) {
        tail.push_back("-gencode");
        tail.push_back(arch::gencode_value(archv, code));
    };
    if (dlto_compile) {
        // -dlto conflicts with -gencode: restate the whole target set as gencodes, one per
        // virtual arch, `code=[compute_X,lto_X]` [obs].
        auto argv_src = [&](std::size_t i) { return eff2[i].source == Arg::Source::Argv; };
        for (auto idx : after->dlto_tokens)
            if (!argv_src(idx)) {
                rw.notes.push_back("nothing injected: -dlto comes from " + eff2[idx].origin);
                rw.injected.clear();
                rw.argv = std::move(argv2);
                return rw;
            }
        for (const auto& tt : after->target_tokens)
            if (!argv_src(tt.eff_index) || (tt.value_index && !argv_src(*tt.value_index))) {
                rw.notes.push_back("nothing injected: -arch comes from " +
                                   eff2[tt.eff_index].origin);
                rw.injected.clear();
                rw.argv = std::move(argv2);
                return rw;
            }
        std::set<int> remove_argv;
        for (auto idx : after->dlto_tokens)
            remove_argv.insert(eff2[idx].argv_index);
        for (const auto& tt : after->target_tokens) {
            remove_argv.insert(eff2[tt.eff_index].argv_index);
            if (tt.value_index) remove_argv.insert(eff2[*tt.value_index].argv_index);
        }
        // argv2 indices differ from argv indices after clamping; map through argv.
        std::vector<std::string> kept;
        for (std::size_t i = 0; i < inv.argv.size(); ++i) {
            if (argv_drop[i] || remove_argv.contains(static_cast<int>(i))) continue;
            kept.push_back(argv_replace[i] ? *argv_replace[i] : inv.argv[i]);
        }
        argv2 = std::move(kept);
        std::set<Target> final_set = present;
        final_set.insert(add.begin(), add.end());
        std::map<std::pair<int, Suffix>, std::vector<std::string>> per_arch;
        for (const auto& t : final_set) {
            if (t.kind == Kind::Sass) continue;
            per_arch[{t.sm, t.suffix}].push_back(t.name());
        }
        for (auto& [slot, codes] : per_arch) {
            std::sort(codes.begin(), codes.end()); // compute_ before lto_
            gencode(Target{Kind::Ptx, slot.first, slot.second}, bracket_list(codes));
        }
        rw.notes.push_back(
            "-dlto compile: -dlto/-arch restated as -gencode code=[compute_X,lto_X]");
    } else {
        if (keep_default && !now.targets_explicit) {
            for (const auto& t : have) {
                if (std::find(rw.injected.begin(), rw.injected.end(), t) != rw.injected.end())
                    continue;
                gencode(Target{Kind::Ptx, t.sm, t.suffix}, t.name());
            }
            rw.notes.push_back("nvcc's default target made explicit");
        }
        for (const auto& t : rw.injected) {
            Target archv{Kind::Ptx, t.sm, t.suffix};
            gencode(archv, t.name());
        }
    }
    // At the end, unless argv ends with an option still waiting for its value (`... -Xcompiler`,
    // its value maybe in NVCC_APPEND_FLAGS): then before it, so it keeps pairing as before.
    std::size_t insert_at = argv2.size();
    for (std::size_t i = 0; i < argv2.size(); ++i) {
        TokenMatch m = match_token(argv2[i]);
        if (!m.spec || !m.needs_next) continue;
        if (i + 1 < argv2.size())
            ++i;
        else
            insert_at = i;
    }
    argv2.insert(argv2.begin() + static_cast<std::ptrdiff_t>(insert_at), tail.begin(), tail.end());
    rw.argv = std::move(argv2);
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
