#include "policy/package.h"

#include <cctype>

#include "core/file.h"
#include "core/suggest.h"
#include "core/text.h"
#include "policy/policy_file.h"
#include "policy/versions.h"
#include "policy/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::policy {

namespace fs = std::filesystem;
using yamlx::error_at;

namespace {

Result<OverrideValue> parse_value(const std::string& file, const YAML::Node& node,
                                  const std::string& where) {
    OverrideValue v;
    v.line = yamlx::line_of(node).value_or(0);
    if (node.IsMap()) {
        FORGE_TRY_STATUS(yamlx::check_map(file, node, where, {"list", "reason", "source"}));
        for (const char* f : {"list", "reason", "source"})
            if (!node[f]) return error_at(file, node, where, fmt::format("missing '{}:'", f));
        auto list = yamlx::scalar(file, node["list"], where + ".list");
        auto reason = yamlx::scalar(file, node["reason"], where + ".reason");
        auto source = yamlx::scalar(file, node["source"], where + ".source");
        if (!list) return std::move(list).error();
        if (!reason) return std::move(reason).error();
        if (!source) return std::move(source).error();
        if (reason->empty() || source->empty())
            return error_at(file, node, where, "'reason:' and 'source:' must not be empty");
        v.text = *list;
        v.reason = *reason;
        v.source = *source;
    } else {
        auto s = yamlx::scalar(file, node, where);
        if (!s) return std::move(s).error();
        v.text = *s;
    }
    auto parsed = arch::ArchList::parse(v.text, file);
    if (!parsed) {
        Error e = std::move(parsed).error();
        e.file = file;
        e.line = v.line;
        e.message = fmt::format("{}: {}", where, e.message);
        return e;
    }
    if (parsed->empty()) return error_at(file, node, where, "the list is empty");
    v.list = std::move(*parsed);
    return v;
}

Result<std::map<std::string, OverrideValue>>
parse_by_cuda(const std::string& file, const YAML::Node& node, const std::string& name) {
    FORGE_TRY_STATUS(yamlx::check_any_map(file, node, name));
    std::map<std::string, OverrideValue> out;
    for (auto it = node.begin(); it != node.end(); ++it) {
        std::string key = it->first.Scalar();
        std::string where = fmt::format("{}[{}]", name, key);
        auto norm = normalize_cuda(key);
        if (!norm || *norm != key)
            return error_at(file, it->first, where,
                            "keys are CUDA major.minor versions such as 12.8");
        auto v = parse_value(file, it->second, where);
        if (!v) return std::move(v).error();
        out.emplace(key, std::move(*v));
    }
    return out;
}

Result<std::vector<std::string>> string_list(const std::string& file, const YAML::Node& node,
                                             const std::string& where) {
    if (!node.IsSequence()) return error_at(file, node, where, "expected a list");
    std::vector<std::string> out;
    for (const auto& item : node) {
        auto s = yamlx::scalar(file, item, where);
        if (!s) return std::move(s).error();
        out.push_back(*s);
    }
    return out;
}

Result<std::vector<ExpectedExtension>> parse_extensions(const std::string& file,
                                                        const YAML::Node& list) {
    const std::string where = "verify.extensions";
    if (!list.IsSequence()) return error_at(file, list, where, "expected a list");
    std::vector<ExpectedExtension> out;
    for (const auto& item : list) {
        if (!item.IsMap())
            return error_at(file, item, where,
                            "an entry is {module: GLOB, reason: \"...\"}: the reason says what "
                            "the wheel cannot do without the module");
        FORGE_TRY_STATUS(yamlx::check_map(file, item, where, {"module", "reason", "device_code"}));
        for (const char* f : {"module", "reason"})
            if (!item[f]) return error_at(file, item, where, fmt::format("missing '{}:'", f));
        auto module = yamlx::scalar(file, item["module"], where + ".module");
        auto reason = yamlx::scalar(file, item["reason"], where + ".reason");
        if (!module) return std::move(module).error();
        if (!reason) return std::move(reason).error();
        if (module->empty() || reason->find_first_not_of(" \t") == std::string::npos)
            return error_at(file, item, where, "'module:' and 'reason:' must not be empty");
        ExpectedExtension e{*module, *reason, true, yamlx::line_of(item).value_or(0)};
        if (item["device_code"]) {
            auto b = yamlx::boolean(file, item["device_code"], where + ".device_code");
            if (!b) return std::move(b).error();
            e.device_code = *b;
        }
        out.push_back(std::move(e));
    }
    return out;
}

Status parse_verify(const std::string& file, const YAML::Node& node, PackageOverride& pkg) {
    FORGE_TRY_STATUS(yamlx::check_map(file, node, "verify",
                                      {"allow_missing_archs", "allow_pure_python", "lint_ignore",
                                       "extensions", "embedded_fatbins"}));
    if (node["allow_missing_archs"]) {
        const YAML::Node list = node["allow_missing_archs"];
        if (!list.IsSequence())
            return error_at(file, list, "verify.allow_missing_archs", "expected a list");
        for (const auto& item : list) {
            std::string where = "verify.allow_missing_archs";
            if (!item.IsMap())
                return error_at(file, item, where,
                                "a waiver is {arch: sm_XX, evidence: \"...\"}: upstream's absence "
                                "needs its evidence written down");
            FORGE_TRY_STATUS(yamlx::check_map(file, item, where, {"arch", "evidence"}));
            if (!item["arch"]) return error_at(file, item, where, "missing 'arch:'");
            if (!item["evidence"])
                return error_at(file, item, where,
                                "a waiver without 'evidence:' is not accepted (only documented "
                                "upstream absences may be waived)");
            auto a = yamlx::scalar(file, item["arch"], where + ".arch");
            auto ev = yamlx::scalar(file, item["evidence"], where + ".evidence");
            if (!a) return std::move(a).error();
            if (!ev) return std::move(ev).error();
            if (ev->find_first_not_of(" \t") == std::string::npos)
                return error_at(file, item["evidence"], where, "'evidence:' is empty");
            auto t = arch::parse_target(*a, file);
            if (!t) {
                // Also accept the torch spelling "11.0" for the cubin.
                auto l = arch::ArchList::parse(*a, file);
                if (!l || l->targets().size() != 1)
                    return error_at(file, item["arch"], *a,
                                    "expected one target such as sm_110 or compute_120");
                t = l->targets().front();
            }
            pkg.allow_missing.push_back(Waiver{*t, *ev, yamlx::line_of(item).value_or(0)});
        }
    }
    if (node["allow_pure_python"]) {
        auto b = yamlx::boolean(file, node["allow_pure_python"], "verify.allow_pure_python");
        if (!b) return std::move(b).error();
        pkg.allow_pure_python = *b;
    }
    if (node["lint_ignore"]) {
        auto l = string_list(file, node["lint_ignore"], "verify.lint_ignore");
        if (!l) return std::move(l).error();
        pkg.lint_ignore = std::move(*l);
    }
    if (node["embedded_fatbins"]) {
        auto v = yamlx::scalar(file, node["embedded_fatbins"], "verify.embedded_fatbins");
        if (!v) return std::move(v).error();
        if (*v != "report" && *v != "judge")
            return error_at(file, node["embedded_fatbins"], "verify.embedded_fatbins",
                            fmt::format("'{}': expected report (list embedded fatbin containers "
                                        "apart) or judge (count them as carried code)",
                                        *v));
        pkg.judge_embedded = *v == "judge";
    }
    if (node["extensions"]) {
        auto e = parse_extensions(file, node["extensions"]);
        if (!e) return std::move(e).error();
        pkg.extensions = std::move(*e);
    }
    return ok_status();
}

Status parse_wrapper(const std::string& file, const YAML::Node& node, WrapperSettings& w) {
    FORGE_TRY_STATUS(yamlx::check_map(file, node, "wrapper",
                                      {"mode", "inject_arch_specific", "arch_specific_sources",
                                       "max_toolkit", "arch_list_separator"}));
    if (node["mode"]) {
        auto s = yamlx::scalar(file, node["mode"], "wrapper.mode");
        if (!s) return std::move(s).error();
        // The front end's modes (frontend/config.cpp parse_mode); checked here so a typo names
        // its file:line instead of surfacing mid-build.
        if (*s != "observe" && *s != "inject" && *s != "strict")
            return error_at(
                file, node["mode"], "wrapper.mode",
                fmt::format("unknown mode '{}' (expected observe, inject or strict)", *s));
        w.mode = *s;
    }
    if (node["inject_arch_specific"]) {
        auto b = yamlx::boolean(file, node["inject_arch_specific"], "wrapper.inject_arch_specific");
        if (!b) return std::move(b).error();
        w.inject_arch_specific = *b;
    }
    if (node["arch_specific_sources"]) {
        auto l = string_list(file, node["arch_specific_sources"], "wrapper.arch_specific_sources");
        if (!l) return std::move(l).error();
        w.arch_specific_sources = std::move(*l);
    }
    if (node["arch_list_separator"]) {
        auto sep = yamlx::scalar(file, node["arch_list_separator"], "wrapper.arch_list_separator");
        if (!sep) return std::move(sep).error();
        if (*sep != " " && *sep != ";" && *sep != ",")
            return error_at(
                file, node["arch_list_separator"], "wrapper.arch_list_separator",
                fmt::format("'{}' is not a separator: expected \" \", \";\" or \",\"", *sep));
        w.arch_list_separator = *sep;
    }
    if (node["max_toolkit"]) {
        const YAML::Node m = node["max_toolkit"];
        FORGE_TRY_STATUS(yamlx::check_any_map(file, m, "wrapper.max_toolkit"));
        for (auto it = m.begin(); it != m.end(); ++it) {
            std::string key = it->first.Scalar();
            auto l = arch::ArchList::parse(key, file);
            if (!l || l->empty())
                return error_at(file, it->first, key,
                                "wrapper.max_toolkit keys are arches such as 12.0 or sm_120");
            auto v = yamlx::scalar(file, it->second, "wrapper.max_toolkit[" + key + "]");
            if (!v) return std::move(v).error();
            auto c = normalize_cuda(*v);
            if (!c) return error_at(file, it->second, key, c.error().message);
            w.max_toolkit.emplace(key, *c);
        }
    }
    return ok_status();
}

Result<ForwardPtx> parse_forward_ptx(const std::string& file, const YAML::Node& node) {
    ForwardPtx f;
    f.line = yamlx::line_of(node).value_or(0);
    if (!node.IsMap()) {
        auto b = yamlx::boolean(file, node, "forward_ptx");
        if (!b) return std::move(b).error();
        if (!*b)
            return error_at(file, node, "forward_ptx",
                            "leaving out the +PTX tail needs its reason: write forward_ptx: "
                            "{value: false, reason: \"...\"}");
        return f;
    }
    FORGE_TRY_STATUS(yamlx::check_map(file, node, "forward_ptx", {"value", "reason", "source"}));
    if (!node["value"]) return error_at(file, node, "forward_ptx", "missing 'value:'");
    auto b = yamlx::boolean(file, node["value"], "forward_ptx.value");
    if (!b) return std::move(b).error();
    f.value = *b;
    for (auto [key, slot] : {std::pair{"reason", &f.reason}, std::pair{"source", &f.source}}) {
        if (!node[key]) continue;
        auto v = yamlx::scalar(file, node[key], fmt::format("forward_ptx.{}", key));
        if (!v) return std::move(v).error();
        *slot = *v;
    }
    if (!f.value && f.reason.find_first_not_of(" \t") == std::string::npos)
        return error_at(file, node, "forward_ptx",
                        "forward_ptx: false needs a non-empty 'reason:'");
    return f;
}

// One form: `sm_90a` (the cubin; +PTX stays plain) or {sass: sm_90a, ptx: compute_90a,
// since_cuda: "12.9"}. The targets keep the token's SM: a form renames the suffix, never the GPU.
Result<TargetForm> parse_target_form(const std::string& file, const YAML::Node& node,
                                     const std::string& where, int sm) {
    TargetForm f;
    f.line = yamlx::line_of(node).value_or(0);
    auto target = [&](const YAML::Node& n, std::string_view field,
                      arch::Kind kind) -> Result<arch::Target> {
        const std::string at = fmt::format("{}.{}", where, field);
        auto text = yamlx::scalar(file, n, at);
        if (!text) return std::move(text).error();
        auto t = arch::parse_target(*text, file);
        if (!t || t->kind != kind || t->sm != sm)
            return error_at(
                file, n, at,
                fmt::format("'{}' is not a {} target of this token's CC (expected {}{}, "
                            "{}{}a or {}{}f)",
                            *text, kind == arch::Kind::Sass ? "cubin" : "PTX",
                            kind == arch::Kind::Sass ? "sm_" : "compute_", sm,
                            kind == arch::Kind::Sass ? "sm_" : "compute_", sm,
                            kind == arch::Kind::Sass ? "sm_" : "compute_", sm));
        return *t;
    };
    if (!node.IsMap()) {
        auto sass = target(node, "sass", arch::Kind::Sass);
        if (!sass) return std::move(sass).error();
        f.sass = *sass;
        return f;
    }
    FORGE_TRY_STATUS(yamlx::check_map(file, node, where, {"sass", "ptx", "since_cuda"}));
    if (!node["sass"]) return error_at(file, node, where, "missing 'sass:' (the cubin it emits)");
    auto sass = target(node["sass"], "sass", arch::Kind::Sass);
    if (!sass) return std::move(sass).error();
    f.sass = *sass;
    if (node["ptx"]) {
        auto ptx = target(node["ptx"], "ptx", arch::Kind::Ptx);
        if (!ptx) return std::move(ptx).error();
        f.ptx = *ptx;
    }
    if (node["since_cuda"]) {
        auto text = yamlx::scalar(file, node["since_cuda"], where + ".since_cuda");
        if (!text) return std::move(text).error();
        auto n = normalize_cuda(*text);
        if (!n || *n != *text)
            return error_at(file, node["since_cuda"], where + ".since_cuda",
                            "expected a CUDA major.minor such as 12.9");
        f.since_cuda = *text;
    }
    return f;
}

Result<TargetForms> parse_target_forms(const std::string& file, const YAML::Node& node) {
    TargetForms out;
    out.line = yamlx::line_of(node).value_or(0);
    FORGE_TRY_STATUS(yamlx::check_map(file, node, "target_forms", {"forms", "reason", "source"}));
    for (const char* f : {"forms", "reason", "source"})
        if (!node[f])
            return error_at(file, node, "target_forms",
                            fmt::format("missing '{}:' (the forms are read off the package's build "
                                        "script: say which, and why they matter)",
                                        f));
    for (auto [key, slot] : {std::pair{"reason", &out.reason}, std::pair{"source", &out.source}}) {
        auto v = yamlx::scalar(file, node[key], fmt::format("target_forms.{}", key));
        if (!v) return std::move(v).error();
        if (v->find_first_not_of(" \t") == std::string::npos)
            return error_at(file, node[key], "target_forms", fmt::format("'{}:' is empty", key));
        *slot = *v;
    }
    const YAML::Node forms = node["forms"];
    FORGE_TRY_STATUS(yamlx::check_any_map(file, forms, "target_forms.forms"));
    for (auto it = forms.begin(); it != forms.end(); ++it) {
        const std::string key = it->first.Scalar();
        const std::string where = fmt::format("target_forms.forms[{}]", key);
        auto cc = parse_cc(key, file);
        if (!cc) return error_at(file, it->first, where, "keys are CCs such as 9.0");
        auto f = parse_target_form(file, it->second, where, *cc);
        if (!f) return std::move(f).error();
        out.by_sm.emplace(*cc, std::move(*f));
    }
    return out;
}

// A +PTX that the build turns into compute_Xa (one CC) or compute_Xf (one family) is no forward
// tail: the package must say it ships none (docs/arch-rules.md, "a-kernel packages and +PTX").
Status check_forms_against_forward_ptx(const std::string& file, const PackageOverride& pkg) {
    if (!pkg.target_forms || (pkg.forward_ptx && !pkg.forward_ptx->value)) return ok_status();
    for (const auto& [sm, form] : pkg.target_forms->by_sm) {
        if (!form.ptx || form.ptx->suffix == arch::Suffix::None) continue;
        Error e{
            fmt::format("a +PTX on {} becomes {}, which JITs onto {} only: that is no forward "
                        "tail, so declare forward_ptx: {{value: false, reason: \"...\", source: "
                        "\"...\"}}",
                        arch::cc_string(sm), form.ptx->name(),
                        form.ptx->suffix == arch::Suffix::Specific
                            ? fmt::format("CC {}", arch::cc_string(sm))
                            : fmt::format("the {}.x family", arch::sm_major(sm))),
            file};
        e.line = form.line;
        e.key = fmt::format("target_forms.forms[{}].ptx", arch::cc_string(sm));
        return e;
    }
    return ok_status();
}

} // namespace

arch::ArchList apply_target_forms(const arch::ArchList& list, const TargetForms& forms,
                                  std::string_view cuda) {
    arch::ArchList out;
    for (const auto& e : list.entries()) {
        auto it = e.suffix == arch::Suffix::None ? forms.by_sm.find(e.sm) : forms.by_sm.end();
        bool applies = it != forms.by_sm.end();
        if (applies && !it->second.since_cuda.empty())
            applies = !cuda.empty() && !version_less(cuda, it->second.since_cuda);
        if (!applies) {
            out.add(e);
            continue;
        }
        const TargetForm& f = it->second;
        if (e.sass) out.add(f.sass);
        if (e.ptx) out.add(f.ptx.value_or(arch::Target{arch::Kind::Ptx, e.sm, arch::Suffix::None}));
        if (e.lto) out.add(arch::Target{arch::Kind::Lto, e.sm, arch::Suffix::None});
    }
    return out;
}

Result<PackageOverride> parse_arch_override(std::string_view text, const std::string& file) {
    auto root = yamlx::load_text(text, file);
    if (!root) return std::move(root).error();
    PackageOverride pkg;
    pkg.override_file = file;
    const YAML::Node& r = *root;
    if (r.IsNull()) return pkg; // an empty file overrides nothing
    FORGE_TRY_STATUS(yamlx::check_map(file, r, "arch_override.yml",
                                      {"arch_list", "arch_list_by_cuda", "arch_list_aarch64",
                                       "arch_list_by_cuda_aarch64", "verify", "wrapper",
                                       "forward_ptx", "arch_knobs", "target_forms"}));
    for (auto [name, slot] : {std::pair{"arch_list", &pkg.arch_list},
                              std::pair{"arch_list_aarch64", &pkg.arch_list_aarch64}}) {
        if (!r[name]) continue;
        auto v = parse_value(file, r[name], name);
        if (!v) return std::move(v).error();
        *slot = std::move(*v);
    }
    for (auto [name, slot] :
         {std::pair{"arch_list_by_cuda", &pkg.arch_list_by_cuda},
          std::pair{"arch_list_by_cuda_aarch64", &pkg.arch_list_by_cuda_aarch64}}) {
        if (!r[name]) continue;
        auto m = parse_by_cuda(file, r[name], name);
        if (!m) return std::move(m).error();
        *slot = std::move(*m);
    }
    if (r["verify"]) FORGE_TRY_STATUS(parse_verify(file, r["verify"], pkg));
    if (r["wrapper"]) FORGE_TRY_STATUS(parse_wrapper(file, r["wrapper"], pkg.wrapper));
    if (r["forward_ptx"]) {
        auto f = parse_forward_ptx(file, r["forward_ptx"]);
        if (!f) return std::move(f).error();
        pkg.forward_ptx = std::move(*f);
    }
    if (r["arch_knobs"]) {
        auto k = parse_arch_knobs(file, r["arch_knobs"]);
        if (!k) return std::move(k).error();
        pkg.arch_knobs = std::move(*k);
    }
    if (r["target_forms"]) {
        auto forms = parse_target_forms(file, r["target_forms"]);
        if (!forms) return std::move(forms).error();
        pkg.target_forms = std::move(*forms);
    }
    FORGE_TRY_STATUS(check_forms_against_forward_ptx(file, pkg));
    return pkg;
}

Status parse_build_matrix(std::string_view text, const std::string& file, PackageOverride& into) {
    auto root = yamlx::load_text(text, file);
    if (!root) return std::move(root).error();
    into.matrix_file = file;
    const YAML::Node& r = *root;
    if (r.IsNull()) return ok_status();
    FORGE_TRY_STATUS(yamlx::check_map(file, r, "build_matrix.yml", {"combinations"}));
    if (!r["combinations"]) return ok_status();
    const YAML::Node combos = r["combinations"];
    if (!combos.IsSequence())
        return error_at(file, combos, "combinations", "expected a list of maps");
    int index = 0;
    for (const auto& c : combos) {
        std::string where = fmt::format("combinations[{}]", index);
        FORGE_TRY_STATUS(yamlx::check_map(
            file, c, where, {"cuda", "torch", "python", "platform", "arch_list", "reason"}));
        Combination combo;
        combo.index = index;
        combo.line = yamlx::line_of(c).value_or(0);
        for (const char* axis : {"cuda", "torch", "python", "platform"}) {
            if (!c[axis]) continue;
            auto s = yamlx::scalar(file, c[axis], where + "." + axis);
            if (!s) return std::move(s).error();
            Result<std::string> n = std::string(axis) == "cuda"     ? normalize_cuda(*s)
                                    : std::string(axis) == "torch"  ? normalize_torch(*s)
                                    : std::string(axis) == "python" ? normalize_python(*s)
                                                                    : normalize_platform(*s);
            if (!n) return error_at(file, c[axis], where + "." + axis, n.error().message);
            combo.match.emplace(axis, *n);
        }
        if (c["arch_list"]) {
            auto v = parse_value(file, c["arch_list"], where + ".arch_list");
            if (!v) return std::move(v).error();
            combo.arch_list = std::move(*v);
        }
        into.combinations.push_back(std::move(combo));
        ++index;
    }
    return ok_status();
}

Status check_packages_dir(std::string_view value, std::string_view origin) {
    auto fail = [&](const std::string& why) {
        Error e{fmt::format("{}: {}", shown_value(value), why)};
        e.key = std::string(origin);
        return e;
    };
    const auto control = std::find_if(value.begin(), value.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (control != value.end())
        return fail(fmt::format("the value has a control character at byte {}; name the directory "
                                "without one",
                                control - value.begin()));
    if (value.size() >= PATH_MAX)
        return fail(fmt::format("the value is {} bytes, longer than a path can be ({})",
                                value.size(), PATH_MAX));
    struct stat st {};
    if (::stat(std::string(value).c_str(), &st) != 0)
        return fail(
            fmt::format("cannot use it as the packages directory: {}", std::strerror(errno)));
    if (!S_ISDIR(st.st_mode)) return fail("is not a directory");
    if (::access(std::string(value).c_str(), R_OK | X_OK) != 0)
        return fail(fmt::format("cannot read the directory: {}", std::strerror(errno)));
    return ok_status();
}

std::vector<std::string> package_dir_candidates(std::string_view name) {
    std::vector<std::string> out{std::string(name)};
    for (auto [from, to] : {std::pair{'-', '_'}, std::pair{'_', '-'}}) {
        std::string swapped(name);
        std::replace(swapped.begin(), swapped.end(), from, to);
        if (std::find(out.begin(), out.end(), swapped) == out.end()) out.push_back(swapped);
    }
    return out;
}

// A distribution name as Python packaging writes one (PEP 508: letters, digits, '.', '_', '-',
// a letter or digit at each end). The name is written into shells, a shim's trailer and
// `.nvcc-forge-policy`: a newline in it would be a second setting.
bool is_package_name(std::string_view name) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    return !name.empty() && name.size() <= 200 && alnum(name.front()) && alnum(name.back()) &&
           std::all_of(name.begin(), name.end(),
                       [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

Result<PackageOverride> load_package(const fs::path& packages_dir, std::string_view name) {
    if (!is_package_name(name)) {
        Error e{fmt::format("'{}' is not a package name (letters, digits, '.', '_' and '-', a "
                            "letter or digit at each end)",
                            shown_value(name))};
        e.key = "--package";
        return e;
    }
    std::error_code ec;
    for (const auto& cand : package_dir_candidates(name)) {
        fs::path dir = packages_dir / cand;
        if (!fs::is_directory(dir, ec)) continue;
        fs::path ov = dir / "arch_override.yml", bm = dir / "build_matrix.yml";
        bool has_ov = fs::is_regular_file(ov, ec), has_bm = fs::is_regular_file(bm, ec);
        if (!has_ov && !has_bm) {
            Error e{"package directory has neither arch_override.yml nor build_matrix.yml",
                    dir.string()};
            e.key = std::string(name);
            return e;
        }
        PackageOverride pkg;
        if (has_ov) {
            auto text = read_file(ov);
            if (!text) return std::move(text).error();
            auto parsed = parse_arch_override(*text, ov.string());
            if (!parsed) return std::move(parsed).error();
            pkg = std::move(*parsed);
        }
        if (has_bm) {
            auto text = read_file(bm);
            if (!text) return std::move(text).error();
            FORGE_TRY_STATUS(parse_build_matrix(*text, bm.string(), pkg));
        }
        pkg.name = cand;
        return pkg;
    }
    // A name with no directory is refused: the package would silently get the policy row, and a
    // typo (or a name smuggling a setting) would pass for a package nvcc-forge knows.
    const std::string near = near_package_name(packages_dir, name);
    Error e{fmt::format("unknown package '{}': no directory {} (nor with '-' and '_' swapped) in "
                        "{}{}",
                        name, (packages_dir / std::string(name)).string(), packages_dir.string(),
                        near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near))};
    e.key = "--package";
    return e;
}

std::vector<std::string> list_packages(const fs::path& packages_dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(packages_dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec)) out.push_back(it->path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

std::string package_key(std::string_view name) {
    std::string key;
    for (char c : name)
        key += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return key;
}

} // namespace

std::string near_package_name(const fs::path& packages_dir, std::string_view name) {
    const std::string key = package_key(name);
    std::string best;
    std::size_t best_distance = 3;
    for (const auto& dir : list_packages(packages_dir)) {
        const std::size_t d = edit_distance(key, package_key(dir));
        if (d == 0) return ""; // the package has its directory
        if (d < best_distance) {
            best_distance = d;
            best = dir;
        }
    }
    return best;
}

} // namespace forge::policy
