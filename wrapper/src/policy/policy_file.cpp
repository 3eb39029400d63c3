#include "policy/policy_file.h"

#include "core/file.h"
#include "core/sha256.h"
#include "policy/versions.h"
#include "policy/yaml_util.h"

#include <algorithm>
#include <fmt/format.h>

namespace forge::policy {

namespace {

using yamlx::error_at;

std::vector<std::string_view> split_words(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    auto sep = [](char c) { return c == ' ' || c == ';' || c == ',' || c == '\t' || c == '\n'; };
    while (i < s.size()) {
        while (i < s.size() && sep(s[i]))
            ++i;
        std::size_t j = i;
        while (j < s.size() && !sep(s[j]))
            ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// A required, non-empty `reason:` (every row says why it is what it is).
Result<std::string> required_text(const std::string& file, const YAML::Node& row,
                                  std::string_view field, const std::string& where) {
    if (!row[std::string(field)])
        return error_at(file, row, where,
                        fmt::format("missing '{}:' (every row carries one)", field));
    auto s = yamlx::scalar(file, row[std::string(field)], where + "." + std::string(field));
    if (!s) return std::move(s).error();
    if (s->find_first_not_of(" \t") == std::string::npos)
        return error_at(file, row[std::string(field)], where, fmt::format("'{}:' is empty", field));
    return s;
}

Result<std::string> cuda_key(const std::string& file, const YAML::Node& key_node,
                             const std::string& table) {
    std::string key = key_node.Scalar();
    auto norm = normalize_cuda(key);
    if (!norm || *norm != key)
        return error_at(file, key_node, fmt::format("{}[{}]", table, key),
                        "keys are CUDA major.minor versions such as 12.8");
    return key;
}

Result<PolicyRow> parse_row(const std::string& file, const YAML::Node& row,
                            const std::string& where) {
    FORGE_TRY_STATUS(yamlx::check_map(file, row, where, {"list", "reason"}));
    PolicyRow out;
    out.line = yamlx::line_of(row).value_or(0);
    auto text = required_text(file, row, "list", where);
    if (!text) return std::move(text).error();
    auto reason = required_text(file, row, "reason", where);
    if (!reason) return std::move(reason).error();
    auto list = arch::ArchList::parse(*text, fmt::format("{}:{}", file, out.line));
    if (!list) {
        Error e = std::move(list).error();
        e.file = file;
        e.line = yamlx::line_of(row["list"]);
        e.message = fmt::format("{}: {}", where, e.message);
        return e;
    }
    if (list->empty()) return error_at(file, row["list"], where, "the list is empty");
    out.text = *text;
    out.list = std::move(*list);
    out.reason = *reason;
    return out;
}

Result<std::map<std::string, PolicyRow>> parse_rows(const std::string& file,
                                                    const YAML::Node& table,
                                                    const std::string& name, bool exception_keys) {
    FORGE_TRY_STATUS(yamlx::check_any_map(file, table, name));
    std::map<std::string, PolicyRow> rows;
    for (auto it = table.begin(); it != table.end(); ++it) {
        std::string key = it->first.Scalar();
        std::string where = fmt::format("{}[{}]", name, key);
        if (exception_keys) {
            auto slash = key.find('/');
            bool good = slash != std::string::npos;
            if (good) {
                auto c = normalize_cuda(key.substr(0, slash));
                auto t = normalize_torch(key.substr(slash + 1));
                good = c && t && *c == key.substr(0, slash) && *t == key.substr(slash + 1);
            }
            if (!good)
                return error_at(file, it->first, where,
                                "keys are '<cuda>/<torch minor>' such as 12.8/2.9");
        } else {
            auto k = cuda_key(file, it->first, name);
            if (!k) return std::move(k).error();
        }
        auto row = parse_row(file, it->second, where);
        if (!row) return std::move(row).error();
        rows.emplace(key, std::move(*row));
    }
    return rows;
}

Result<std::vector<int>> parse_cc_list(const std::string& file, const YAML::Node& node,
                                       const std::string& where) {
    auto text = yamlx::scalar(file, node, where);
    if (!text) return std::move(text).error();
    std::vector<int> out;
    for (auto w : split_words(*text)) {
        auto cc = parse_cc(w, "");
        if (!cc) return error_at(file, node, where, fmt::format("'{}' is not a CC like 8.6", w));
        out.push_back(*cc);
    }
    return out;
}

Result<TorchBuild> parse_torch_build(const std::string& file, const YAML::Node& row,
                                     const std::string& where, bool require_all) {
    TorchBuild b;
    b.line = yamlx::line_of(row).value_or(0);
    if (require_all && !row["sass"]) return error_at(file, row, where, "missing 'sass:'");
    if (!row["sass"] && !row["ptx"])
        return error_at(file, row, where, "needs 'sass:' and/or 'ptx:'");
    for (auto [field, kind] :
         {std::pair{"sass", arch::Kind::Sass}, std::pair{"ptx", arch::Kind::Ptx}}) {
        if (!row[field]) continue;
        auto ccs = parse_cc_list(file, row[field], where + "." + field);
        if (!ccs) return std::move(ccs).error();
        for (int cc : *ccs)
            b.targets.push_back(arch::Target{kind, cc, arch::Suffix::None});
    }
    std::sort(b.targets.begin(), b.targets.end());
    auto reason = required_text(file, row, "reason", where);
    if (!reason) return std::move(reason).error();
    b.reason = *reason;
    return b;
}

Result<std::map<std::string, TorchIndex>>
parse_torch_table(const std::string& file, const YAML::Node& table, const std::string& name) {
    std::map<std::string, TorchIndex> out;
    if (!table || table.IsNull()) return out;
    FORGE_TRY_STATUS(yamlx::check_any_map(file, table, name));
    for (auto it = table.begin(); it != table.end(); ++it) {
        auto key = cuda_key(file, it->first, name);
        if (!key) return std::move(key).error();
        std::string where = fmt::format("{}[{}]", name, *key);
        const YAML::Node row = it->second; // a copy: it-> is a temporary proxy
        FORGE_TRY_STATUS(
            yamlx::check_map(file, row, where, {"releases", "sass", "ptx", "reason", "by_torch"}));
        TorchIndex idx;
        idx.line = yamlx::line_of(row).value_or(0);
        auto base = parse_torch_build(file, row, where, true);
        if (!base) return std::move(base).error();
        idx.base = std::move(*base);
        auto releases = required_text(file, row, "releases", where);
        if (!releases) return std::move(releases).error();
        for (auto w : split_words(*releases)) {
            auto t = normalize_torch(w);
            if (!t || *t != w)
                return error_at(file, row["releases"], where,
                                fmt::format("'{}' is not a torch minor like 2.9", w));
            idx.releases.emplace_back(w);
        }
        if (row["by_torch"]) {
            FORGE_TRY_STATUS(yamlx::check_any_map(file, row["by_torch"], where + ".by_torch"));
            for (auto bt = row["by_torch"].begin(); bt != row["by_torch"].end(); ++bt) {
                std::string torch = bt->first.Scalar();
                std::string bwhere = fmt::format("{}.by_torch[{}]", where, torch);
                if (std::find(idx.releases.begin(), idx.releases.end(), torch) ==
                    idx.releases.end())
                    return error_at(file, bt->first, bwhere,
                                    fmt::format("torch {} is not in this row's releases", torch));
                FORGE_TRY_STATUS(
                    yamlx::check_map(file, bt->second, bwhere, {"sass", "ptx", "reason"}));
                auto b = parse_torch_build(file, bt->second, bwhere, true);
                if (!b) return std::move(b).error();
                idx.by_torch.emplace(torch, std::move(*b));
            }
        }
        out.emplace(*key, std::move(idx));
    }
    return out;
}

Result<std::map<std::string, NvccRow>> parse_nvcc_table(const std::string& file,
                                                        const YAML::Node& table) {
    std::map<std::string, NvccRow> out;
    FORGE_TRY_STATUS(yamlx::check_any_map(file, table, "nvcc_supported"));
    for (auto it = table.begin(); it != table.end(); ++it) {
        auto key = cuda_key(file, it->first, "nvcc_supported");
        if (!key) return std::move(key).error();
        std::string where = fmt::format("nvcc_supported[{}]", *key);
        const YAML::Node row = it->second; // a copy: it-> is a temporary proxy
        FORGE_TRY_STATUS(yamlx::check_map(file, row, where, {"codes", "read_from", "reason"}));
        NvccRow r;
        r.line = yamlx::line_of(row).value_or(0);
        auto codes = required_text(file, row, "codes", where);
        if (!codes) return std::move(codes).error();
        for (auto w : split_words(*codes)) {
            auto t = arch::parse_target(w, file);
            if (!t || t->kind != arch::Kind::Sass)
                return error_at(file, row["codes"], where,
                                fmt::format("'{}' is not an sm_ code", w));
            // nvcc accepts the same compute_/lto_ set as its sm_ set (every "Allowed values" list
            // read for this table shows that), so one list records all three.
            for (auto k : {arch::Kind::Sass, arch::Kind::Ptx, arch::Kind::Lto})
                r.emittable.insert(arch::Target{k, t->sm, t->suffix});
        }
        auto read_from = required_text(file, row, "read_from", where);
        if (!read_from) return std::move(read_from).error();
        auto reason = required_text(file, row, "reason", where);
        if (!reason) return std::move(reason).error();
        r.read_from = *read_from;
        r.reason = *reason;
        out.emplace(*key, std::move(r));
    }
    return out;
}

} // namespace

const TorchBuild& TorchIndex::build_for(const std::string& torch_minor) const {
    auto it = by_torch.find(torch_minor);
    return it == by_torch.end() ? base : it->second;
}

Result<int> parse_cc(std::string_view text, std::string_view origin) {
    auto dot = text.find('.');
    int major = 0, minor = 0;
    bool good = dot != std::string_view::npos && dot > 0 && dot + 2 == text.size();
    if (good) {
        for (std::size_t i = 0; i < dot; ++i)
            good = good && text[i] >= '0' && text[i] <= '9';
        good = good && text[dot + 1] >= '0' && text[dot + 1] <= '9' && dot <= 2;
    }
    if (!good) {
        Error e{fmt::format("'{}' is not a compute capability like 8.6", text)};
        e.key = std::string(text);
        e.file = std::string(origin);
        return e;
    }
    for (std::size_t i = 0; i < dot; ++i)
        major = major * 10 + (text[i] - '0');
    minor = text[dot + 1] - '0';
    return major * 10 + minor;
}

Result<PolicyData> parse_policy(std::string_view text, const std::string& file) {
    auto root = yamlx::load_text(text, file);
    if (!root) return std::move(root).error();
    FORGE_TRY_STATUS(
        yamlx::check_map(file, *root, "the policy file",
                         {"build_epoch", "arch_policy", "arch_exceptions", "arch_policy_aarch64",
                          "nvcc_supported", "torch_runnable", "torch_runnable_aarch64"}));
    PolicyData p;
    p.file = file;
    p.sha256 = sha256_hex(text);
    const YAML::Node& r = *root;
    for (const char* required :
         {"build_epoch", "arch_policy", "arch_policy_aarch64", "nvcc_supported", "torch_runnable"})
        if (!r[required]) return error_at(file, r, required, "missing top-level key");
    auto epoch = yamlx::integer(file, r["build_epoch"], "build_epoch");
    if (!epoch) return std::move(epoch).error();
    if (*epoch < 0) return error_at(file, r["build_epoch"], "build_epoch", "must be >= 0");
    p.build_epoch = *epoch;

    auto policy = parse_rows(file, r["arch_policy"], "arch_policy", false);
    if (!policy) return std::move(policy).error();
    p.arch_policy = std::move(*policy);
    if (r["arch_exceptions"]) {
        auto ex = parse_rows(file, r["arch_exceptions"], "arch_exceptions", true);
        if (!ex) return std::move(ex).error();
        p.arch_exceptions = std::move(*ex);
    }
    auto aarch64 = parse_rows(file, r["arch_policy_aarch64"], "arch_policy_aarch64", false);
    if (!aarch64) return std::move(aarch64).error();
    p.arch_policy_aarch64 = std::move(*aarch64);
    auto nvcc = parse_nvcc_table(file, r["nvcc_supported"]);
    if (!nvcc) return std::move(nvcc).error();
    p.nvcc_supported = std::move(*nvcc);
    auto torch = parse_torch_table(file, r["torch_runnable"], "torch_runnable");
    if (!torch) return std::move(torch).error();
    p.torch_runnable = std::move(*torch);
    auto torch_arm = parse_torch_table(file, r["torch_runnable_aarch64"], "torch_runnable_aarch64");
    if (!torch_arm) return std::move(torch_arm).error();
    p.torch_runnable_aarch64 = std::move(*torch_arm);

    // The exceptions table only ever adds to its policy row (docs/arch-rules.md, "arch_exceptions
    // only add"): a row that drops a token of arch_policy[cuda] would be read backwards.
    for (const auto& [key, row] : p.arch_exceptions) {
        std::string cuda = key.substr(0, key.find('/'));
        auto base = p.arch_policy.find(cuda);
        std::string where = fmt::format("arch_exceptions[{}]", key);
        if (base == p.arch_policy.end()) {
            Error e{fmt::format("no arch_policy[{}] row for this exception to add to", cuda), file};
            e.line = row.line;
            e.key = where;
            return e;
        }
        for (const auto& t : base->second.list.targets()) {
            auto mine = row.list.targets();
            if (std::find(mine.begin(), mine.end(), t) == mine.end()) {
                Error e{
                    fmt::format("drops {} from arch_policy[{}]; exceptions only add (a narrower "
                                "list belongs in the policy row, with its reason)",
                                t.name(), cuda),
                    file};
                e.line = row.line;
                e.key = where;
                return e;
            }
        }
    }
    return p;
}

Result<PolicyData> load_policy(const std::filesystem::path& file) {
    auto text = read_file(file);
    if (!text) return std::move(text).error();
    return parse_policy(*text, file.string());
}

namespace {

// Where a part exists: `platforms: [linux_aarch64]` (Jetson/DRIVE boards run aarch64 only) and
// the CUDA releases that name it with this CC (`since_cuda`, `until_cuda`: Thor).
Status parse_gpu_where(const std::string& file, const YAML::Node& row, const std::string& where,
                       arch::Gpu& g) {
    if (row["platforms"]) {
        if (!row["platforms"].IsSequence())
            return error_at(file, row["platforms"], where + ".platforms",
                            "expected a list such as [linux_aarch64]");
        for (const auto& p : row["platforms"]) {
            auto s = yamlx::scalar(file, p, where + ".platforms");
            if (!s) return std::move(s).error();
            auto n = normalize_platform(*s);
            if (!n || *n != *s)
                return error_at(
                    file, p, where + ".platforms",
                    fmt::format("'{}' is not linux_x86_64, linux_aarch64 or win_amd64", *s));
            g.platforms.push_back(*s);
        }
        if (g.platforms.empty())
            return error_at(file, row["platforms"], where + ".platforms",
                            "an empty list puts the part on no platform: leave the key out");
    }
    for (auto [key, slot] :
         {std::pair{"since_cuda", &g.since_cuda}, std::pair{"until_cuda", &g.until_cuda}}) {
        if (!row[key]) continue;
        const std::string at = fmt::format("{}.{}", where, key);
        auto s = yamlx::scalar(file, row[key], at);
        if (!s) return std::move(s).error();
        auto n = normalize_cuda(*s);
        if (!n || *n != *s)
            return error_at(file, row[key], at, "expected a CUDA major.minor such as 13.0");
        *slot = *s;
    }
    if (!g.since_cuda.empty() && !g.until_cuda.empty() && version_less(g.until_cuda, g.since_cuda))
        return error_at(file, row, where, "until_cuda is before since_cuda: no release names it");
    return ok_status();
}

// The rows of one CC map of the gpus file: `gpus:` (products, tegra, note) or `retired:` (products,
// note; a retired part gets no Tegra reasoning, coverage skips it).
Status parse_gpu_rows(const std::string& file, const YAML::Node& table, bool retired,
                      std::vector<arch::Gpu>& out) {
    const std::string section = retired ? "retired" : "gpus";
    FORGE_TRY_STATUS(yamlx::check_any_map(file, table, section));
    for (auto it = table.begin(); it != table.end(); ++it) {
        std::string key = it->first.Scalar();
        std::string where = fmt::format("{}[{}]", section, key);
        auto cc = parse_cc(key, file);
        if (!cc)
            return error_at(file, it->first, where, "keys are compute capabilities such as 8.6");
        if (std::any_of(out.begin(), out.end(), [&](const arch::Gpu& g) { return g.sm == *cc; }))
            return error_at(file, it->first, where,
                            "a CC is listed once, under either 'gpus:' or 'retired:'");
        const YAML::Node row = it->second; // a copy: it-> is a temporary proxy
        if (retired)
            FORGE_TRY_STATUS(yamlx::check_map(file, row, where, {"products", "note"}));
        else
            FORGE_TRY_STATUS(yamlx::check_map(
                file, row, where,
                {"products", "tegra", "note", "platforms", "since_cuda", "until_cuda"}));
        arch::Gpu g;
        g.sm = *cc;
        g.retired = retired;
        if (!row["products"] || !row["products"].IsSequence())
            return error_at(file, row, where, "'products:' must be a list (empty when unknown)");
        for (const auto& p : row["products"]) {
            auto s = yamlx::scalar(file, p, where + ".products");
            if (!s) return std::move(s).error();
            g.products.push_back(*s);
        }
        if (row["tegra"]) {
            auto b = yamlx::boolean(file, row["tegra"], where + ".tegra");
            if (!b) return std::move(b).error();
            g.tegra = *b;
        }
        if (row["note"]) {
            auto s = yamlx::scalar(file, row["note"], where + ".note");
            if (!s) return std::move(s).error();
            g.note = *s;
        }
        FORGE_TRY_STATUS(parse_gpu_where(file, row, where, g));
        out.push_back(std::move(g));
    }
    return ok_status();
}

} // namespace

Result<std::vector<arch::Gpu>> parse_gpus(std::string_view text, const std::string& file,
                                          Retired retired) {
    auto root = yamlx::load_text(text, file);
    if (!root) return std::move(root).error();
    FORGE_TRY_STATUS(yamlx::check_map(file, *root, "the gpus file", {"gpus", "retired"}));
    std::vector<arch::Gpu> out;
    FORGE_TRY_STATUS(parse_gpu_rows(file, (*root)["gpus"], false, out));
    if ((*root)["retired"]) FORGE_TRY_STATUS(parse_gpu_rows(file, (*root)["retired"], true, out));
    // Read and checked either way, so a broken `retired:` fails every command alike.
    if (retired == Retired::Skip) std::erase_if(out, [](const arch::Gpu& g) { return g.retired; });
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.sm < b.sm; });
    return out;
}

std::vector<arch::Gpu> gpus_for(const std::vector<arch::Gpu>& gpus, std::string_view platform,
                                std::string_view cuda) {
    std::vector<arch::Gpu> out;
    for (const auto& g : gpus) {
        if (!platform.empty() && !g.platforms.empty() &&
            std::find(g.platforms.begin(), g.platforms.end(), platform) == g.platforms.end())
            continue;
        if (!cuda.empty() && !g.since_cuda.empty() && version_less(cuda, g.since_cuda)) continue;
        if (!cuda.empty() && !g.until_cuda.empty() && version_less(g.until_cuda, cuda)) continue;
        out.push_back(g);
    }
    return out;
}

Result<std::vector<arch::Gpu>> load_gpus(const std::filesystem::path& file, Retired retired) {
    auto text = read_file(file);
    if (!text) return std::move(text).error();
    return parse_gpus(*text, file.string(), retired);
}

} // namespace forge::policy
