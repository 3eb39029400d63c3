#include "policy/resolve.h"

#include "core/paths.h"
#include "core/sha256.h"
#include "policy/versions.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::policy {

namespace {

struct Winner {
    std::string text;
    arch::ArchList list;
    std::string source;
    std::string reason;
};

Winner from_override(const OverrideValue& v, const std::string& pkg, std::string_view file,
                     std::string field) {
    return Winner{v.text, v.list, fmt::format("packages/{}/{}:{}", pkg, file, field), v.reason};
}

Winner from_row(const PolicyRow& r, std::string field) {
    return Winner{r.text, r.list, std::move(field), r.reason};
}

Error input_error(std::string message, std::string file, std::string key,
                  std::optional<int> line = {}) {
    Error e{std::move(message), std::move(file)};
    e.key = std::move(key);
    e.line = line;
    e.exit_code = kExitInput;
    return e;
}

std::string describe_build(const TorchBuild& b) {
    std::vector<std::string> sass, ptx;
    for (const auto& t : b.targets)
        (t.kind == arch::Kind::Sass ? sass : ptx).push_back(arch::cc_string(t.sm));
    return fmt::format("SASS {}, PTX {}",
                       sass.empty() ? "none" : fmt::format("{}", fmt::join(sass, " ")),
                       ptx.empty() ? "none" : fmt::format("{}", fmt::join(ptx, " ")));
}

// forward_ptx: false: the package's build ships no forward tail (its +PTX would become
// compute_Xa, or it emits no PTX at all), so every +PTX of the winning list goes, the policy
// row's included, each with the package's reason.
void drop_forward_ptx(const PackageOverride* package, arch::ArchList& list, Resolution& res) {
    if (package == nullptr || !package->forward_ptx || package->forward_ptx->value) return;
    for (auto& e : list.mutable_entries()) {
        if (!e.ptx || !e.sass) continue;
        res.ptx_dropped.push_back(
            {e.token(), fmt::format("packages/{}/arch_override.yml:forward_ptx: {}", package->name,
                                    package->forward_ptx->reason)});
        e.ptx = false;
    }
}

// Clamp 1: what this toolkit can emit, in the spelling the package's build uses (target_forms:
// nvcc 12.8 emits sm_120a but no sm_121a, so SageAttention's 12.1 goes there).
std::vector<arch::ArchEntry> clamp_to_toolkit(const arch::ArchList& list,
                                              const PackageOverride* package,
                                              const std::set<arch::Target>& emittable,
                                              const std::string& nvcc_name, Resolution& res) {
    std::vector<arch::ArchEntry> kept;
    for (const auto& e : list.entries()) {
        arch::ArchList one;
        one.add(e);
        if (package != nullptr && package->target_forms)
            one = apply_target_forms(one, *package->target_forms, res.cuda);
        std::optional<arch::Target> missing;
        for (const auto& t : one.targets())
            if (!emittable.count(t)) {
                missing = t;
                break;
            }
        if (missing)
            res.clamped.push_back({e.token(), fmt::format("{} cannot emit {} ({})", nvcc_name,
                                                          missing->name(), res.nvcc_source)});
        else
            kept.push_back(e);
    }
    return kept;
}

// +PTX on the highest plain entry, then on the highest plain entry below every gap of this
// cell's GPUs that the rule's PTX does not net yet (arch::major_gaps, the same function
// `coverage` advises from); a note per gap says where its GPUs land.
void normalize_ptx(const PackageOverride* package, const std::vector<arch::Gpu>& cell_gpus,
                   const std::set<arch::Target>& emittable, arch::ArchList& list, Resolution& res) {
    if (package != nullptr && package->forward_ptx && !package->forward_ptx->value) {
        if (const arch::ArchEntry* h = list.highest_portable(); h != nullptr && !h->ptx)
            res.ptx_not_added = fmt::format("packages/{}/arch_override.yml:forward_ptx: {}",
                                            package->name, package->forward_ptx->reason);
    } else {
        if (int sm = list.ensure_ptx_on_highest_base(); sm >= 0)
            res.ptx_added.push_back({sm, "highest plain arch"});
        for (const auto& gap : arch::major_gaps(list.targets(), cell_gpus)) {
            if (gap.ptx_placed || gap.suggested_sm == 0) continue;
            if (!emittable.count({arch::Kind::Ptx, gap.suggested_sm, arch::Suffix::None})) continue;
            bool added = false;
            for (auto& e : list.mutable_entries())
                if (e.sm == gap.suggested_sm && e.suffix == arch::Suffix::None && !e.ptx)
                    e.ptx = added = true;
            if (added)
                res.ptx_added.push_back(
                    {gap.suggested_sm,
                     fmt::format("highest plain arch below the major {} gap", gap.major)});
        }
    }
    for (const auto& gap : arch::major_gaps(list.targets(), cell_gpus)) {
        std::vector<std::string> ccs;
        for (const auto& g : cell_gpus)
            if (arch::sm_major(g.sm) == gap.major) ccs.push_back(arch::cc_string(g.sm));
        const std::string where = ccs.empty() ? fmt::format("major {}", gap.major)
                                              : fmt::format("CC {}", fmt::join(ccs, " "));
        res.notes.push_back(
            gap.has_ptx_net ? fmt::format("major {} has no cubin: {} lands in jit through {} PTX",
                                          gap.major, where, gap.net)
                            : fmt::format("major {} has no cubin and no PTX below it: {} is dead",
                                          gap.major, where));
    }
}

// The cell as asked: platform, torch, python and CUDA normalised; a torch built for another CUDA
// index refused.
Status read_cell(const ResolveRequest& req, Resolution& res) {
    auto platform = normalize_platform(req.platform.empty() ? host_platform() : req.platform);
    if (!platform) return std::move(platform).error();
    res.platform = *platform;
    if (!req.torch.empty()) {
        auto t = normalize_torch(req.torch);
        if (!t) return std::move(t).error();
        res.torch = *t;
    }
    if (!req.python.empty()) {
        auto p = normalize_python(req.python);
        if (!p) return std::move(p).error();
        res.python = *p;
    }
    if (!req.cuda.empty()) {
        auto c = normalize_cuda(req.cuda);
        if (!c) return std::move(c).error();
        res.cuda = *c;
        if (res.cuda != req.cuda)
            res.notes.push_back(fmt::format("--cuda {} read as CUDA {}", req.cuda, res.cuda));
    } else if (req.toolkit) {
        res.cuda = req.toolkit->version.release();
    } else {
        return input_error("no CUDA version: pass --cuda or let a real nvcc be found", "",
                           "--cuda");
    }
    // A torch local tag names the CUDA index it was built for: 2.9.1+cu126 is not a CUDA 12.8 cell.
    if (auto plus = req.torch.find("+cu"); plus != std::string::npos) {
        auto built = normalize_cuda(std::string_view(req.torch).substr(plus + 1));
        if (built && *built != res.cuda)
            return input_error(fmt::format("--torch {} is built for CUDA {}, not CUDA {}: a torch "
                                           "from another CUDA index is another cell",
                                           req.torch, *built, res.cuda),
                               "", "--torch");
    }
    return ok_status();
}

// The CUDA keys a table has, for the error that finds none ("12.6 12.8 12.9 13.0").
std::string row_keys(const std::map<std::string, PolicyRow>& table) {
    std::string keys;
    for (const auto& [key, row] : table)
        keys += (keys.empty() ? "" : " ") + key;
    return keys.empty() ? std::string("none") : keys;
}

// aarch64 lane: arch_list_by_cuda_aarch64[cuda] > arch_list_aarch64 > arch_policy_aarch64[cuda].
Result<Winner> pick_aarch64(const PolicyData& policy, const PackageOverride* package,
                            const std::string& cuda) {
    if (package != nullptr) {
        if (auto it = package->arch_list_by_cuda_aarch64.find(cuda);
            it != package->arch_list_by_cuda_aarch64.end())
            return from_override(it->second, package->name, "arch_override.yml",
                                 fmt::format("arch_list_by_cuda_aarch64[{}]", cuda));
        if (package->arch_list_aarch64)
            return from_override(*package->arch_list_aarch64, package->name, "arch_override.yml",
                                 "arch_list_aarch64");
    }
    auto it = policy.arch_policy_aarch64.find(cuda);
    if (it == policy.arch_policy_aarch64.end())
        return input_error(fmt::format("no arch_policy_aarch64[{}] row (the aarch64 lane never "
                                       "falls back to another table); rows: {}",
                                       cuda, row_keys(policy.arch_policy_aarch64)),
                           policy.file, fmt::format("arch_policy_aarch64[{}]", cuda));
    return from_row(it->second, fmt::format("arch_policy_aarch64[{}]", cuda));
}

// The build_matrix combinations that match the cell: an axis the request leaves open is no
// mismatch (a note says the combination was skipped).
std::vector<const Combination*> matching_combinations(const PackageOverride& package,
                                                      Resolution& res) {
    std::vector<const Combination*> matches;
    for (const auto& combo : package.combinations) {
        if (!combo.arch_list) continue;
        bool match = true;
        std::vector<std::string> unknown;
        for (const auto& [axis, value] : combo.match) {
            const std::string& have = axis == "cuda"     ? res.cuda
                                      : axis == "torch"  ? res.torch
                                      : axis == "python" ? res.python
                                                         : res.platform;
            if (have.empty()) unknown.push_back(fmt::format("{} {}", axis, value));
            match = match && have == value;
        }
        if (match) {
            matches.push_back(&combo);
        } else if (!unknown.empty()) {
            res.notes.push_back(
                fmt::format("packages/{}/build_matrix.yml combinations[{}] names {}, which this "
                            "request does not give (--{}): skipped",
                            package.name, combo.index, fmt::join(unknown, ", "),
                            unknown.front().substr(0, unknown.front().find(' '))));
        }
    }
    return matches;
}

// Step 1: the first matching combination; another one with a different list is an error.
Result<std::optional<Winner>> from_combinations(const PackageOverride& package, Resolution& res) {
    const std::vector<const Combination*> matches = matching_combinations(package, res);
    if (matches.empty()) return std::optional<Winner>{};
    const Combination& first = *matches.front();
    for (const Combination* other : matches) {
        if (other == &first) continue;
        if (!(other->arch_list->list == first.arch_list->list))
            return input_error(
                fmt::format("build_matrix combinations[{}] ('{}') and [{}] ('{}') both "
                            "match this cell with different arch lists",
                            first.index, first.arch_list->text, other->index,
                            other->arch_list->text),
                package.matrix_file, fmt::format("combinations[{}].arch_list", other->index),
                other->line);
        res.notes.push_back(
            fmt::format("build_matrix combinations[{}] and [{}] both match; [{}] won (same list)",
                        first.index, other->index, first.index));
    }
    return std::optional<Winner>{
        from_override(*first.arch_list, package.name, "build_matrix.yml",
                      fmt::format("combinations[{}].arch_list", first.index))};
}

// x86-64 / Windows lane: a build_matrix combination > arch_list_by_cuda[cuda] > arch_list >
// arch_exceptions[cuda/torch] > arch_policy[cuda].
Result<Winner> pick_x86(const PolicyData& policy, const PackageOverride* package, Resolution& res) {
    const std::string& cuda = res.cuda;
    if (package != nullptr) {
        auto combo = from_combinations(*package, res);
        if (!combo) return std::move(combo).error();
        if (*combo) return std::move(**combo);
        if (auto it = package->arch_list_by_cuda.find(cuda); it != package->arch_list_by_cuda.end())
            return from_override(it->second, package->name, "arch_override.yml",
                                 fmt::format("arch_list_by_cuda[{}]", cuda));
        if (package->arch_list)
            return from_override(*package->arch_list, package->name, "arch_override.yml",
                                 "arch_list");
    }
    if (!res.torch.empty()) {
        std::string key = fmt::format("{}/{}", cuda, res.torch);
        if (auto it = policy.arch_exceptions.find(key); it != policy.arch_exceptions.end())
            return from_row(it->second, fmt::format("arch_exceptions[{}]", key));
    }
    auto it = policy.arch_policy.find(cuda);
    if (it == policy.arch_policy.end())
        return input_error(fmt::format("no arch_policy[{}] row; a missing CUDA key is a hard "
                                       "error, never a guess; rows: {}",
                                       cuda, row_keys(policy.arch_policy)),
                           policy.file, fmt::format("arch_policy[{}]", cuda));
    return from_row(it->second, fmt::format("arch_policy[{}]", cuda));
}

// What this cell's nvcc can emit: the probed toolkit when it is the cell's CUDA release, else
// the policy's nvcc_supported row.
struct Emitter {
    const std::set<arch::Target>* emittable = nullptr;
    std::string nvcc_name;
};
Result<Emitter> cell_emitter(const ResolveRequest& req, const PolicyData& policy, Resolution& res) {
    const std::string& cuda = res.cuda;
    if (req.toolkit && (req.cuda.empty() || req.toolkit->version.release() == cuda)) {
        res.nvcc_source = fmt::format("{} (probed)", req.toolkit->nvcc);
        return Emitter{&req.toolkit->emittable,
                       fmt::format("nvcc {}", req.toolkit->version.full())};
    }
    auto it = policy.nvcc_supported.find(cuda);
    if (it == policy.nvcc_supported.end())
        return input_error(
            fmt::format("no nvcc_supported[{}] row: what CUDA {} can emit is unknown", cuda, cuda),
            policy.file, fmt::format("nvcc_supported[{}]", cuda));
    res.nvcc_source = fmt::format("nvcc_supported[{}] ({})", cuda, it->second.read_from);
    return Emitter{&it->second.emittable, fmt::format("nvcc {}", cuda)};
}

// Clamp 2: what the paired torch can run.
Status clamp_to_torch(const PolicyData& policy, bool aarch64, const std::vector<arch::Gpu>& gpus,
                      std::vector<arch::ArchEntry>& kept, Resolution& res) {
    auto ceiling = find_torch_build(policy, res.cuda, res.torch, aarch64);
    if (!ceiling) return std::move(ceiling).error();
    if (!ceiling->note.empty()) res.notes.push_back(ceiling->note);
    res.torch_ceiling = ceiling->ceiling;
    if (!res.torch_ceiling) return ok_status();
    std::vector<arch::ArchEntry> runnable;
    for (const auto& e : kept) {
        if (std::string why = torch_ceiling_reason(res, e.sm, gpus); !why.empty())
            res.clamped.push_back({e.token(), why});
        else
            runnable.push_back(e);
    }
    kept = std::move(runnable);
    return ok_status();
}

// Both clamps took everything: a policy finding naming each token and why.
Error collapsed(const Resolution& res, const PolicyData& policy) {
    std::vector<std::string> why;
    for (const auto& c : res.clamped)
        why.push_back(fmt::format("{}: {}", c.token, c.reason));
    Error e{fmt::format("{} '{}' collapses to an empty arch list after the clamp ({})", res.source,
                        res.requested, fmt::join(why, "; "))};
    e.key = res.source;
    e.file = res.source.starts_with("packages/") ? std::string() : policy.file;
    e.exit_code = kExitPolicy;
    return e;
}

// The policy row a package's override is measured against, and its name; null when none.
const PolicyRow* policy_row(const PolicyData& policy, bool aarch64, const Resolution& res,
                            std::string& row_name) {
    const std::string& cuda = res.cuda;
    if (aarch64) {
        auto it = policy.arch_policy_aarch64.find(cuda);
        if (it == policy.arch_policy_aarch64.end()) return nullptr;
        row_name = fmt::format("arch_policy_aarch64[{}]", cuda);
        return &it->second;
    }
    std::string key = fmt::format("{}/{}", cuda, res.torch);
    if (auto it = policy.arch_exceptions.find(key);
        !res.torch.empty() && it != policy.arch_exceptions.end()) {
        row_name = fmt::format("arch_exceptions[{}]", key);
        return &it->second;
    }
    if (auto it = policy.arch_policy.find(cuda); it != policy.arch_policy.end()) {
        row_name = fmt::format("arch_policy[{}]", cuda);
        return &it->second;
    }
    return nullptr;
}

// Narrowing: what the override drops against the policy row, after the same clamps (a token the
// row would lose too is a clamp, not a narrowing).
void narrow(const PolicyRow& row, const std::string& row_name,
            const std::set<arch::Target>& emittable, const std::vector<arch::Gpu>& gpus,
            const std::vector<arch::ArchEntry>& kept, Resolution& res) {
    const TorchBuild* torch_build = res.torch_ceiling ? &res.torch_ceiling->build : nullptr;
    for (const auto& e : row.list.entries()) {
        auto ts = e.targets();
        bool emits = std::all_of(ts.begin(), ts.end(),
                                 [&](const arch::Target& t) { return emittable.count(t); });
        if (!emits || (torch_build != nullptr && !torch_runs(*torch_build, e.sm, gpus))) continue;
        bool kept_sm = std::any_of(kept.begin(), kept.end(),
                                   [&](const arch::ArchEntry& k) { return k.sm == e.sm; });
        if (!kept_sm) res.narrowed.push_back({e.token(), row_name, res.reason});
    }
}

} // namespace

Result<TorchLookup> find_torch_build(const PolicyData& policy, const std::string& cuda,
                                     const std::string& torch, bool aarch64) {
    TorchLookup out;
    if (torch.empty()) return out;
    const auto& table = aarch64 ? policy.torch_runnable_aarch64 : policy.torch_runnable;
    const char* table_name = aarch64 ? "torch_runnable_aarch64" : "torch_runnable";
    auto it = table.find(cuda);
    if (it == table.end() && aarch64) {
        // The aarch64 table holds the builds read so far; one it lacks is unknown, not absent.
        out.note = fmt::format("torch clamp not applied: no torch_runnable_aarch64[{}] row (no "
                               "aarch64 torch build of CUDA {} has been read)",
                               cuda, cuda);
        return out;
    }
    if (it == table.end())
        return input_error(fmt::format("no {}[{}] row: what torch can run on CUDA {} is unknown",
                                       table_name, cuda, cuda),
                           policy.file, fmt::format("{}[{}]", table_name, cuda));
    const TorchIndex& idx = it->second;
    if (std::find(idx.releases.begin(), idx.releases.end(), torch) == idx.releases.end()) {
        if (aarch64) {
            out.note = fmt::format("torch clamp not applied: torch_runnable_aarch64[{}] has no "
                                   "row for torch {} (rows read: {})",
                                   cuda, torch, fmt::join(idx.releases, " "));
            return out;
        }
        return input_error(fmt::format("torch {} has no build on the CUDA {} index (releases: {})",
                                       torch, cuda, fmt::join(idx.releases, " ")),
                           policy.file, fmt::format("{}[{}].releases", table_name, cuda),
                           idx.line > 0 ? std::optional<int>(idx.line) : std::nullopt);
    }
    out.ceiling = TorchCeiling{idx.build_for(torch),
                               idx.by_torch.count(torch)
                                   ? fmt::format("{}[{}].by_torch[{}]", table_name, cuda, torch)
                                   : fmt::format("{}[{}]", table_name, cuda)};
    return out;
}

std::string torch_ceiling_reason(const Resolution& r, int sm, const std::vector<arch::Gpu>& gpus) {
    if (!r.torch_ceiling || torch_runs(r.torch_ceiling->build, sm, gpus)) return {};
    return fmt::format("torch {} (CUDA {}) cannot run on CC {}: it ships {} and none of it loads "
                       "or JITs there, so a cubin for it is unreachable ({})",
                       r.torch, r.cuda, arch::cc_string(sm), describe_build(r.torch_ceiling->build),
                       r.torch_ceiling->where);
}

bool torch_runs(const TorchBuild& build, int sm, const std::vector<arch::Gpu>& gpus) {
    arch::Gpu gpu{sm, {}, false, {}};
    for (const auto& g : gpus)
        if (g.sm == sm) gpu = g;
    const arch::TegraSet tegra(gpus);
    return std::any_of(build.targets.begin(), build.targets.end(), [&](const arch::Target& t) {
        return arch::sass_runs_on(t, gpu, tegra) || arch::ptx_jits_on(t, gpu);
    });
}

void apply_package(const PackageOverride& package, Resolution& res) {
    res.package = package.name;
    for (const auto& w : package.allow_missing)
        res.allow_missing.push_back(w.target);
    res.allow_pure_python = package.allow_pure_python;
    res.lint_ignore = package.lint_ignore;
    res.expected_extensions = package.extensions;
    res.judge_embedded = package.judge_embedded;
    res.package_file = package.override_file;
    res.wrapper = package.wrapper;
    res.arch_knobs = package.arch_knobs;
}

Result<Resolution> resolve_loaded(const ResolveRequest& req, const PolicyData& policy,
                                  const PackageOverride* package,
                                  const std::vector<arch::Gpu>& gpus) {
    Resolution res;
    FORGE_TRY_STATUS(read_cell(req, res));
    const bool aarch64 = res.platform == "linux_aarch64";
    res.policy_file = policy.file;
    res.policy_sha256 = policy.sha256;
    res.build_epoch = policy.build_epoch;
    if (package != nullptr) {
        apply_package(*package, res);
        if (package->override_file.empty() && package->matrix_file.empty())
            res.notes.push_back(
                fmt::format("package '{}' has no packages/{}/ files: the policy row applies",
                            package->name, package->name));
    }

    // ---- Step 1/2: pick the list (two lanes, highest wins) ----
    auto win = aarch64 ? pick_aarch64(policy, package, res.cuda) : pick_x86(policy, package, res);
    if (!win) return std::move(win).error();
    res.source = win->source;
    res.requested = win->text;
    res.reason = win->reason;
    arch::ArchList list = win->list;
    drop_forward_ptx(package, list, res);

    // ---- clamp 1: what this toolkit can emit; clamp 2: what the paired torch can run ----
    auto emitter = cell_emitter(req, policy, res);
    if (!emitter) return std::move(emitter).error();
    const std::set<arch::Target>& emittable = *emitter->emittable;
    std::vector<arch::ArchEntry> kept =
        clamp_to_toolkit(list, package, emittable, emitter->nvcc_name, res);
    FORGE_TRY_STATUS(clamp_to_torch(policy, aarch64, gpus, kept, res));
    if (kept.empty()) return collapsed(res, policy);
    arch::ArchList clamped_list;
    for (const auto& e : kept)
        clamped_list.add(e);

    if (res.source.starts_with("packages/")) {
        std::string row_name;
        if (const PolicyRow* row = policy_row(policy, aarch64, res, row_name))
            narrow(*row, row_name, emittable, gpus, kept, res);
    }

    // ---- Step 3: +PTX on the highest plain token (never on an a/f token), and on the highest
    // plain token below every gap (the second PTX, docs/arch-rules.md "PTX once per major") ----
    const std::vector<arch::Gpu> cell_gpus = gpus_for(gpus, res.platform, res.cuda);
    normalize_ptx(package, cell_gpus, emittable, clamped_list, res);
    res.list = std::move(clamped_list);
    if (package != nullptr && package->target_forms) {
        arch::ArchList built = apply_target_forms(res.list, *package->target_forms, res.cuda);
        if (!(built == res.list)) res.built = std::move(built);
        res.forms_source = fmt::format("packages/{}/arch_override.yml:target_forms ({})",
                                       package->name, package->target_forms->source);
    }
    return res;
}

namespace {

// Resolution::inputs: the files read, and where a package's files are looked for.
std::vector<std::string> resolution_inputs(const ResolveRequest& req, const PackageOverride* pkg) {
    std::vector<std::string> out;
    std::error_code ec;
    auto add = [&](const std::filesystem::path& p) {
        if (!p.empty() && std::filesystem::exists(p, ec))
            out.push_back(std::filesystem::absolute(p, ec).lexically_normal().string());
    };
    add(req.policy_file);
    add(req.gpus_file);
    if (!pkg) return out;
    add(pkg->override_file);
    add(pkg->matrix_file);
    // The directory load_package() read (a package file added there later changes the list).
    add(std::filesystem::path(!pkg->override_file.empty() ? pkg->override_file : pkg->matrix_file)
            .parent_path());
    return out;
}

} // namespace

Result<Resolution> resolve(const ResolveRequest& request) {
    ResolveRequest req = request;
    if (req.policy_file.empty()) req.policy_file = default_policy_file();
    if (req.packages_dir.empty()) req.packages_dir = default_packages_dir();
    if (req.gpus_file.empty()) req.gpus_file = default_gpus_file();
    auto policy = load_policy(req.policy_file);
    if (!policy) return std::move(policy).error();
    auto gpus = load_gpus(req.gpus_file);
    if (!gpus) return std::move(gpus).error();
    std::optional<PackageOverride> pkg;
    if (!req.package.empty()) {
        auto p = load_package(req.packages_dir, req.package);
        if (!p) return std::move(p).error();
        pkg = std::move(*p);
    }
    auto res = resolve_loaded(req, *policy, pkg ? &*pkg : nullptr, *gpus);
    if (res) res->inputs = resolution_inputs(req, pkg ? &*pkg : nullptr);
    // A package without files is normal (most ride the policy row); one a typo away from a
    // package that has files is probably that package.
    if (res && pkg && pkg->override_file.empty() && pkg->matrix_file.empty())
        if (auto near = near_package_name(req.packages_dir, req.package); !near.empty()) {
            res->near_package = near;
            res->notes.push_back(fmt::format("did you mean package '{}'? '{}' has no files under "
                                             "{} and gets none of '{}''s overrides",
                                             near, req.package, req.packages_dir.string(), near));
        }
    return res;
}

std::string cell_key(const Resolution& r) {
    std::string canonical =
        fmt::format("nvcc-forge cell v1\ncuda={}\ntorch={}\npython={}\nplatform={}\npackage={}\n"
                    "arch_list={}\nbuild_epoch={}\n",
                    r.cuda, r.torch, r.python, r.platform, r.package, r.list.to_string(),
                    r.build_epoch ? fmt::format("{}", *r.build_epoch) : std::string("none"));
    return sha256_hex(canonical);
}

} // namespace forge::policy
