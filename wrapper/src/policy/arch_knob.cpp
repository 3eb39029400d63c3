#include "policy/arch_knob.h"

#include "policy/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <string_view>
#include <utility>

namespace forge::policy {

using yamlx::error_at;

namespace {

constexpr std::pair<KnobForm, std::string_view> kForms[] = {
    {KnobForm::Digits, "digits"}, {KnobForm::Dotted, "dotted"}, {KnobForm::Sm, "sm"}};
constexpr std::pair<KnobPtx, std::string_view> kPtx[] = {
    {KnobPtx::None, "none"}, {KnobPtx::Suffix, "suffix"}, {KnobPtx::Newest, "newest"}};

// A knob's name is exported into the user's shell (`env` after `eval`), a build's environment and
// CMake's cache: it must be a package's own variable. The pattern: upper case, digits and '_',
// starting with a letter, with at least one '_' (every single word a shell, loader or build tool
// reads - PATH, IFS, HOME, CC, CXX, ENV, SHELL - is one word).
bool is_knob_name(std::string_view s) {
    auto word = [](char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    return !s.empty() && s.front() >= 'A' && s.front() <= 'Z' && !s.ends_with('_') &&
           s.find('_') != std::string_view::npos && std::all_of(s.begin(), s.end(), word);
}

// Names of that pattern something else reads, and why: a knob may set none of them.
constexpr std::pair<std::string_view, std::string_view> kDeniedPrefixes[] = {
    {"NVCC_FORGE_", "nvcc-forge's own settings"},
    {"NVCC_", "nvcc reads NVCC_PREPEND_FLAGS, NVCC_APPEND_FLAGS, NVCC_CCBIN"},
    {"LD_", "the dynamic loader reads LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT"},
    {"DYLD_", "the macOS loader"},
    {"BASH_", "bash reads BASH_ENV and imports BASH_FUNC_ functions"},
    {"CMAKE_", "CMake reads CMAKE_* variables (CMAKE_CUDA_COMPILER_LAUNCHER runs a program)"},
    {"CUDA_", "CUDA's tools and the build scripts read CUDA_HOME, CUDA_PATH, CUDA_VISIBLE_DEVICES"},
    {"PYTHON", "Python reads PYTHONPATH, PYTHONHOME, PYTHONSTARTUP"},
    {"PIP_", "pip reads every PIP_* as an option (PIP_INDEX_URL)"},
    {"UV_", "uv reads UV_* as options"},
    {"SETUPTOOLS_", "setuptools reads SETUPTOOLS_* settings"},
    {"GIT_", "git reads GIT_* (GIT_SSH_COMMAND runs a program)"},
    {"MAKE", "make reads MAKEFLAGS and MAKEFILES"},
    {"GCONV_", "glibc loads modules from GCONV_PATH"},
    {"MALLOC_", "glibc's allocator"},
    {"GLIBC_", "glibc's tunables"},
    {"LC_", "the locale"},
    {"SSH_", "ssh and its agent"},
    {"SUDO_", "sudo"},
    {"XDG_", "where programs find their configuration and caches"},
    {"CCACHE_", "ccache reads CCACHE_* (CCACHE_PREFIX runs a program)"},
    {"SCCACHE_", "sccache reads SCCACHE_*"},
    {"TORCH_", "torch's build reads TORCH_* (TORCH_CUDA_ARCH_LIST is the list itself)"},
    {"CONDA_", "conda's activation"},
};
constexpr std::pair<std::string_view, std::string_view> kDeniedNames[] = {
    {"PROMPT_COMMAND", "bash runs it before every prompt"},
    {"PS1", "the shell's prompt"},
    {"HOST_CC", "a build's host compiler"},
    {"LOCPATH", "glibc loads locales from it"},
    {"NLSPATH", "message catalogues are loaded from it"},
    {"HOSTALIASES", "the resolver reads it"},
    {"RES_OPTIONS", "the resolver reads it"},
    {"TMPDIR", "where every tool creates its temporary files"},
    {"HISTFILE", "the shell writes its history there"},
    {"VIRTUAL_ENV", "the active Python environment"},
    {"MAX_JOBS", "torch's build reads it"},
};

// Why another program reads `name` (nullopt when none of the list does).
std::optional<std::string_view> denied_because(std::string_view name) {
    for (const auto& [n, why] : kDeniedNames)
        if (name == n) return why;
    for (const auto& [prefix, why] : kDeniedPrefixes)
        if (name.starts_with(prefix)) return why;
    return std::nullopt;
}

Result<std::string> knob_field(const std::string& file, const YAML::Node& item,
                               const std::string& where, const char* key) {
    if (!item[key]) return error_at(file, item, where, fmt::format("missing '{}:'", key));
    auto v = yamlx::scalar(file, item[key], fmt::format("{}.{}", where, key));
    if (!v) return v;
    if (v->find_first_not_of(" \t") == std::string::npos && std::string_view(key) != "separator")
        return error_at(file, item[key], fmt::format("{}.{}", where, key), "must not be empty");
    return v;
}

template <typename E, std::size_t N>
Result<E> knob_enum(const std::string& file, const YAML::Node& node, const std::string& where,
                    const std::string& text, const std::pair<E, std::string_view> (&names)[N]) {
    for (const auto& [value, name] : names)
        if (text == name) return value;
    std::vector<std::string_view> all;
    for (const auto& n : names)
        all.push_back(n.second);
    return error_at(file, node, where,
                    fmt::format("'{}' is not one of {}", text, fmt::join(all, ", ")));
}

Status check_variable(const std::string& file, const YAML::Node& node, const std::string& where,
                      const std::string& name) {
    if (!is_knob_name(name))
        return error_at(file, node, where,
                        fmt::format("'{}' is not a variable name a knob may have: upper-case "
                                    "letters, digits and '_', a letter first, at least one '_' "
                                    "(FLASH_ATTN_CUDA_ARCHS)",
                                    name));
    if (name == "TORCH_CUDA_ARCH_LIST")
        return error_at(file, node, where,
                        "TORCH_CUDA_ARCH_LIST is exported from the list already; the form a build "
                        "script splits it in is wrapper.arch_list_separator");
    if (name.starts_with("NVCC_FORGE_"))
        return error_at(file, node, where,
                        fmt::format("{} is nvcc-forge's own variable, not a package's", name));
    if (auto why = denied_because(name))
        return error_at(file, node, where,
                        fmt::format("{} is not a package's own variable ({}): a knob is exported "
                                    "into the user's shell and the build",
                                    name, *why));
    return ok_status();
}

Result<ArchKnob> parse_one_knob(const std::string& file, const YAML::Node& item,
                                const std::string& where) {
    if (!item.IsMap())
        return error_at(file, item, where,
                        "an entry is {variable, separator, form, ptx, reason, source}");
    FORGE_TRY_STATUS(
        yamlx::check_map(file, item, where,
                         {"variable", "separator", "form", "ptx", "accepts", "reason", "source"}));
    ArchKnob k;
    k.line = yamlx::line_of(item).value_or(0);
    std::string form, ptx;
    for (auto [key, slot] :
         {std::pair{"variable", &k.variable}, std::pair{"separator", &k.separator},
          std::pair{"form", &form}, std::pair{"ptx", &ptx}, std::pair{"reason", &k.reason},
          std::pair{"source", &k.source}}) {
        auto v = knob_field(file, item, where, key);
        if (!v) return std::move(v).error();
        *slot = std::move(*v);
    }
    FORGE_TRY_STATUS(check_variable(file, item["variable"], where + ".variable", k.variable));
    if (k.separator != " " && k.separator != ";" && k.separator != ",")
        return error_at(
            file, item["separator"], where + ".separator",
            fmt::format("'{}' is not a separator: expected \" \", \";\" or \",\"", k.separator));
    auto f = knob_enum(file, item["form"], where + ".form", form, kForms);
    if (!f) return std::move(f).error();
    k.form = *f;
    auto p = knob_enum(file, item["ptx"], where + ".ptx", ptx, kPtx);
    if (!p) return std::move(p).error();
    k.ptx = *p;
    if (item["accepts"]) {
        auto text = yamlx::scalar(file, item["accepts"], where + ".accepts");
        if (!text) return std::move(text).error();
        auto list = arch::ArchList::parse(*text, file);
        if (!list || list->empty() ||
            std::any_of(list->entries().begin(), list->entries().end(),
                        [](const arch::ArchEntry& e) { return !e.sass || e.ptx || e.lto; }))
            return error_at(file, item["accepts"], where + ".accepts",
                            "expected the archs the script has a branch for, such as \"8.0 9.0 "
                            "10.0\" (cubin tokens, no +PTX)");
        k.accepts = std::move(*list);
    }
    return k;
}

std::string spell(const arch::ArchEntry& e, KnobForm form) {
    const std::string suffix(arch::suffix_string(e.suffix));
    switch (form) {
    case KnobForm::Digits:
        return fmt::format("{}{}", e.sm, suffix);
    case KnobForm::Sm:
        return fmt::format("sm_{}{}", e.sm, suffix);
    case KnobForm::Dotted:
        break;
    }
    return arch::cc_string(e.sm) + suffix;
}

// Without `accepts` any plain CC: a script that parses numbers has no spelling for a suffix.
bool accepted(const ArchKnob& k, const arch::ArchEntry& e) {
    if (!k.accepts) return e.suffix == arch::Suffix::None;
    return std::any_of(k.accepts->entries().begin(), k.accepts->entries().end(),
                       [&](const arch::ArchEntry& a) { return a.same_slot(e); });
}

std::string accepts_text(const ArchKnob& k) {
    std::vector<std::string> tokens;
    for (const auto& a : k.accepts->entries())
        tokens.push_back(spell(a, k.form));
    return fmt::format("{}", fmt::join(tokens, " "));
}

// The knob's value for `list`, and what it cannot say.
void export_one(const ArchKnob& k, const arch::ArchList& list, KnobExport& out) {
    std::vector<std::string> tokens;
    std::vector<const arch::ArchEntry*> spelled, ptx_wanted;
    auto gap = [&](std::string token, std::vector<arch::Target> targets, std::string reason) {
        out.cannot_express.push_back(
            {k.variable, std::move(token), std::move(targets), std::move(reason)});
    };
    for (const auto& e : list.entries()) {
        if (!e.sass || e.lto) {
            gap(e.token(), e.targets(),
                "the knob names cubins: a PTX-only or LTO entry has no spelling in it");
            continue;
        }
        if (!accepted(k, e)) {
            gap(e.token(), e.targets(),
                k.accepts ? fmt::format("the build script has no branch for it (it builds {})",
                                        accepts_text(k))
                          : std::string("the knob has no spelling for an a/f arch"));
            continue;
        }
        std::string token = spell(e, k.form);
        if (e.ptx && k.ptx == KnobPtx::Suffix) token += "+PTX";
        if (e.ptx && k.ptx != KnobPtx::Suffix) ptx_wanted.push_back(&e);
        tokens.push_back(std::move(token));
        spelled.push_back(&e);
    }
    // newest: the script embeds PTX for its highest token, and for no other.
    const arch::ArchEntry* newest = nullptr;
    if (k.ptx == KnobPtx::Newest && !spelled.empty()) newest = spelled.back(); // sorted by sm
    for (const auto* e : ptx_wanted) {
        if (e == newest) continue;
        const arch::Target ptx{arch::Kind::Ptx, e->sm, e->suffix};
        gap(arch::cc_string(e->sm) + std::string(arch::suffix_string(e->suffix)) + "+PTX", {ptx},
            k.ptx == KnobPtx::None
                ? std::string("the knob has no +PTX spelling")
                : fmt::format("the knob has no +PTX spelling: the script embeds PTX for its "
                              "highest token only ({})",
                              spell(*newest, k.form)));
    }
    if (newest != nullptr && !newest->ptx)
        out.notes.push_back(fmt::format(
            "{}: the build script embeds compute_{} PTX for its highest token, which the list "
            "does not ask for (the gate reports it as extra)",
            k.variable, newest->sm));
    if (tokens.empty()) {
        out.notes.push_back(fmt::format("{}: no token of the list can be spelled in it: not "
                                        "exported (the build script's default applies)",
                                        k.variable));
        return;
    }
    out.values.push_back({k.variable, fmt::format("{}", fmt::join(tokens, k.separator))});
}

} // namespace

Result<std::vector<ArchKnob>> parse_arch_knobs(const std::string& file, const YAML::Node& node) {
    if (!node.IsSequence())
        return error_at(file, node, "arch_knobs",
                        "expected a list of {variable, separator, form, ptx, reason, source}");
    std::vector<ArchKnob> out;
    int index = 0;
    for (const auto& item : node) {
        const std::string where = fmt::format("arch_knobs[{}]", index++);
        auto k = parse_one_knob(file, item, where);
        if (!k) return std::move(k).error();
        if (std::any_of(out.begin(), out.end(),
                        [&](const ArchKnob& o) { return o.variable == k->variable; }))
            return error_at(file, item["variable"], where + ".variable",
                            fmt::format("{} is declared twice", k->variable));
        out.push_back(std::move(*k));
    }
    return out;
}

KnobExport export_knobs(const std::vector<ArchKnob>& knobs, const arch::ArchList& list) {
    KnobExport out;
    for (const auto& k : knobs)
        export_one(k, list, out);
    return out;
}

std::string_view knob_form_string(KnobForm form) {
    for (const auto& [value, name] : kForms)
        if (value == form) return name;
    return "digits";
}

std::string_view knob_ptx_string(KnobPtx ptx) {
    for (const auto& [value, name] : kPtx)
        if (value == ptx) return name;
    return "none";
}

} // namespace forge::policy
