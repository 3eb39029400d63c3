#include "policy/report.h"

#include "core/text.h"
#include "policy/versions.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace forge::policy {

using json = nlohmann::ordered_json;

namespace {

std::string products_of(const arch::Gpu& g) {
    return g.products.empty() ? std::string("(no confirmed product)")
                              : fmt::format("{}", fmt::join(g.products, ", "));
}

std::string html_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (const char* e = markup_entity(c))
            out += e;
        else
            out += c;
    }
    return out;
}

std::vector<const arch::CoverageRow*> rows_with(const CoverageReport& r, arch::Tier t) {
    std::vector<const arch::CoverageRow*> out;
    for (const auto& row : r.rows)
        if (row.tier == t) out.push_back(&row);
    return out;
}

std::string cc_list(const std::vector<const arch::CoverageRow*>& rows) {
    std::vector<std::string> parts;
    for (const auto* r : rows)
        parts.push_back(arch::cc_string(r->gpu.sm));
    return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, " "));
}

// Printed by `coverage` (a test asserts its start), so worded as before: the "second PTX" it
// names is the PTX below a major gap (docs/arch-rules.md, "PTX once per major").
std::string gap_sentence(const arch::GapFinding& g) {
    if (g.has_ptx_net && !g.ptx_placed && g.suggested_sm > 0)
        return fmt::format("major {} has no cubin; {} PTX below it is the JIT net, but +PTX "
                           "belongs on {}, the highest arch below the gap (resolve adds it there)",
                           g.major, g.net, arch::cc_string(g.suggested_sm));
    if (g.has_ptx_net)
        return fmt::format("major {} has no cubin; {} PTX below it is the JIT net", g.major, g.net);
    return fmt::format("major {} has no cubin and no PTX below it: add +PTX on {} (the second PTX, "
                       "below the gap) or a "
                       "cubin for it",
                       g.major,
                       g.suggested_sm > 0 ? arch::cc_string(g.suggested_sm)
                                          : std::string("the arch below"));
}

// Each declared knob with its value for this list (null: not exported, see the notes).
json knobs_json(const std::vector<ArchKnob>& declared, const KnobExport& exported) {
    json out = json::array();
    for (const auto& k : declared) {
        auto v = std::find_if(exported.values.begin(), exported.values.end(),
                              [&](const KnobValue& x) { return x.variable == k.variable; });
        json accepts = nullptr;
        if (k.accepts) accepts = k.accepts->to_string();
        out.push_back({{"variable", k.variable},
                       {"value", v == exported.values.end() ? json(nullptr) : json(v->value)},
                       {"separator", k.separator},
                       {"form", knob_form_string(k.form)},
                       {"ptx", knob_ptx_string(k.ptx)},
                       {"accepts", accepts},
                       {"reason", k.reason},
                       {"source", k.source}});
    }
    return out;
}

std::vector<std::string> target_names(const arch::ArchList& list) {
    std::vector<std::string> out;
    for (const auto& t : list.targets())
        out.push_back(t.name());
    return out;
}

} // namespace

Result<std::string> torch_arch_list(const Resolution& r) {
    auto text = r.list.to_torch();
    if (!text) return text;
    const std::string& sep = r.wrapper.arch_list_separator;
    if (sep.empty() || sep == " ") return text;
    std::string out;
    for (char c : *text)
        out += c == ' ' ? sep : std::string(1, c);
    return out;
}

json resolution_json(const Resolution& r) {
    json j;
    j["arch_list"] = r.list.to_string();
    json tokens = json::array();
    for (const auto& e : r.list.entries())
        tokens.push_back(e.token());
    j["tokens"] = tokens;
    j["targets"] = target_names(r.list);
    // What the package's build compiles (its target_forms): the gate expects these targets.
    j["builds_as"] = target_names(r.builds_as());
    // The same as a list: what the wrapper compares and injects with (NVCC_FORGE_ARCH_LIST).
    j["builds_as_list"] = r.builds_as().to_string();
    j["target_forms"] = r.forms_source.empty() ? json(nullptr) : json(r.forms_source);
    j["source"] = r.source;
    j["requested"] = r.requested;
    j["reason"] = r.reason;
    json clamped = json::array();
    for (const auto& c : r.clamped)
        clamped.push_back({{"token", c.token}, {"reason", c.reason}});
    j["clamped"] = clamped;
    json ptx_added = json::array();
    for (const auto& p : r.ptx_added)
        ptx_added.push_back(arch::cc_string(p.sm));
    j["ptx_added"] = ptx_added;
    json narrowed = json::array();
    for (const auto& n : r.narrowed)
        narrowed.push_back({{"token", n.token}, {"against", n.against}, {"reason", n.reason}});
    j["narrowed"] = narrowed;
    j["ptx_not_added"] = r.ptx_not_added.empty() ? json(nullptr) : json(r.ptx_not_added);
    json dropped = json::array();
    for (const auto& c : r.ptx_dropped)
        dropped.push_back({{"token", c.token}, {"reason", c.reason}});
    j["ptx_dropped"] = dropped;
    j["torch_ceiling"] = r.torch_ceiling ? json(r.torch_ceiling->where) : json(nullptr);
    auto torch = torch_arch_list(r);
    j["torch_arch_list"] = torch ? json(*torch) : json(nullptr);
    j["cuda"] = r.cuda;
    j["torch"] = r.torch.empty() ? json(nullptr) : json(r.torch);
    j["python"] = r.python.empty() ? json(nullptr) : json(r.python);
    j["platform"] = r.platform;
    j["package"] = r.package.empty() ? json(nullptr) : json(r.package);
    j["policy_file"] = r.policy_file;
    j["package_file"] = r.package_file.empty() ? json(nullptr) : json(r.package_file);
    j["inputs"] = r.inputs;
    j["policy_sha256"] = r.policy_sha256;
    j["build_epoch"] = r.build_epoch ? json(*r.build_epoch) : json(nullptr);
    j["nvcc_source"] = r.nvcc_source;
    j["cmake"] = r.list.to_cmake();
    j["gencode"] = r.list.to_gencode();
    json waivers = json::array();
    for (const auto& t : r.allow_missing)
        waivers.push_back(t.name());
    j["verify"] = {{"allow_missing_archs", waivers},
                   {"allow_pure_python", r.allow_pure_python},
                   {"lint_ignore", r.lint_ignore}};
    json expected = json::array();
    for (const auto& e : r.expected_extensions)
        expected.push_back(
            {{"module", e.module}, {"reason", e.reason}, {"device_code", e.device_code}});
    j["verify"]["extensions"] = expected;
    json w = json::object();
    if (!r.wrapper.mode.empty()) w["mode"] = r.wrapper.mode;
    if (r.wrapper.inject_arch_specific) w["inject_arch_specific"] = *r.wrapper.inject_arch_specific;
    if (!r.wrapper.arch_specific_sources.empty())
        w["arch_specific_sources"] = r.wrapper.arch_specific_sources;
    if (!r.wrapper.max_toolkit.empty()) w["max_toolkit"] = r.wrapper.max_toolkit;
    if (!r.wrapper.arch_list_separator.empty())
        w["arch_list_separator"] = r.wrapper.arch_list_separator;
    j["wrapper"] = w;
    const KnobExport knobs = export_knobs(r.arch_knobs, r.list);
    j["arch_knobs"] = knobs_json(r.arch_knobs, knobs);
    json gaps = json::array();
    for (const auto& g : knobs.cannot_express) {
        json targets = json::array();
        for (const auto& t : g.targets)
            targets.push_back(t.name());
        gaps.push_back({{"variable", g.variable},
                        {"token", g.token},
                        {"targets", targets},
                        {"reason", g.reason}});
    }
    j["knob_cannot_express"] = gaps;
    j["notes"] = r.notes;
    for (const auto& n : knobs.notes)
        j["notes"].push_back(n);
    j["near_package"] =
        r.near_package.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.near_package);
    return j;
}

CoverageReport coverage_report(const Resolution& r, const std::vector<arch::Gpu>& gpus) {
    const auto targets = r.builds_as().targets();
    const auto cell = gpus_for(gpus, r.platform, r.cuda);
    CoverageReport report{arch::coverage(targets, cell, arch::TegraSet(gpus)),
                          arch::major_gaps(targets, cell)};
    for (auto& row : report.rows) {
        const std::string why = torch_ceiling_reason(r, row.gpu.sm, gpus);
        if (why.empty()) continue;
        // Whatever the extension carries, no kernel of the torch it runs in loads there.
        row.why = fmt::format("{}; the extension alone would be {} ({})", why,
                              arch::tier_string(row.tier), row.why);
        row.tier = arch::Tier::TorchDead;
    }
    return report;
}

json coverage_json(const CoverageReport& report) {
    json j = json::object();
    for (const auto& row : report.rows) {
        json e;
        e["tier"] = std::string(arch::tier_string(row.tier));
        e["products"] = row.gpu.products;
        e["via"] = row.via;
        e["why"] = row.why;
        e["tegra"] = row.gpu.tegra;
        if (!row.gpu.note.empty()) e["note"] = row.gpu.note;
        j[arch::cc_string(row.gpu.sm)] = e;
    }
    return j;
}

std::string coverage_rows_text(const CoverageReport& report) {
    std::string out;
    for (const auto& row : report.rows) {
        out += fmt::format("{:>5}  {:<6}  {}\n", arch::cc_string(row.gpu.sm),
                           arch::tier_string(row.tier), products_of(row.gpu));
        out += fmt::format("       {}\n", row.why);
        if (!row.gpu.note.empty()) out += fmt::format("       note: {}\n", row.gpu.note);
    }
    auto jit = rows_with(report, arch::Tier::Jit);
    auto dead = rows_with(report, arch::Tier::Dead);
    auto torch_dead = rows_with(report, arch::Tier::TorchDead);
    out += fmt::format("\nnative: {}\njit:    {}\ndead:   {}\n",
                       cc_list(rows_with(report, arch::Tier::Native)), cc_list(jit), cc_list(dead));
    if (!torch_dead.empty()) out += fmt::format("dead (torch): {}\n", cc_list(torch_dead));
    if (!dead.empty()) {
        out += "\nExcluded (these GPUs get cudaErrorNoKernelImageForDevice at first launch):\n";
        for (const auto* d : dead)
            out += fmt::format("  - {} {}: {}\n", arch::cc_string(d->gpu.sm), products_of(d->gpu),
                               d->why);
    }
    if (!torch_dead.empty()) {
        out += "\nExcluded by the torch ceiling (the paired torch itself cannot run there):\n";
        for (const auto* d : torch_dead)
            out += fmt::format("  - {} {}: {}\n", arch::cc_string(d->gpu.sm), products_of(d->gpu),
                               d->why);
    }
    if (!jit.empty()) {
        out += "\nJIT only (minutes-long first load, driver-cache fragile; functional, not "
               "supported):\n";
        for (const auto* d : jit)
            out += fmt::format("  - {} {}\n", arch::cc_string(d->gpu.sm), products_of(d->gpu));
    }
    return out;
}

std::string coverage_text(const Resolution& r, const CoverageReport& report) {
    std::string out = fmt::format("arch list: {}\nsource:    {}\n", r.list.to_string(), r.source);
    if (!r.cuda.empty())
        out += fmt::format("cell:      cuda {} torch {} platform {}{}\n", r.cuda,
                           r.torch.empty() ? "-" : r.torch, r.platform,
                           r.package.empty() ? "" : fmt::format(" package {}", r.package));
    if (r.built)
        out += fmt::format("builds as: {} ({})\n", fmt::join(target_names(r.builds_as()), " "),
                           r.forms_source);
    out += "\n";
    out += coverage_rows_text(report);
    if (!r.ptx_dropped.empty()) {
        out += "\nPTX left out (the package's build ships no forward tail):\n";
        for (const auto& c : r.ptx_dropped)
            out += fmt::format("  - {}: {}\n", c.token, c.reason);
    }
    if (!r.narrowed.empty()) {
        out += fmt::format("\nNarrowed against {} ({}):\n", r.narrowed.front().against,
                           r.reason.empty() ? "no reason given" : r.reason);
        for (const auto& n : r.narrowed)
            out += fmt::format("  - {}\n", n.token);
        std::vector<arch::Gpu> gpus;
        for (const auto& row : report.rows)
            gpus.push_back(row.gpu);
        // What the build would run with the dropped tokens back: the cost is the narrowing's
        // alone, not the package's spelling of the tokens it kept (target_forms).
        arch::ArchList with_row = r.builds_as();
        for (const auto& n : r.narrowed)
            if (auto back = arch::ArchList::parse(n.token); back)
                for (const auto& e : back->entries())
                    with_row.add(e);
        auto promised = arch::coverage(with_row.targets(), gpus);
        std::vector<std::string> cost;
        for (std::size_t i = 0; i < gpus.size() && i < promised.size(); ++i)
            // A GPU the torch cannot run is lost to the torch, not to the narrowing.
            if (report.rows[i].tier != arch::Tier::TorchDead &&
                report.rows[i].tier != promised[i].tier &&
                (promised[i].tier == arch::Tier::Native || report.rows[i].tier == arch::Tier::Dead))
                cost.push_back(fmt::format(
                    "{} {}: {} -> {}", arch::cc_string(gpus[i].sm), products_of(gpus[i]),
                    arch::tier_string(promised[i].tier), arch::tier_string(report.rows[i].tier)));
        out += cost.empty() ? "  costs no GPU its tier\n"
                            : fmt::format("  costs:\n    {}\n", fmt::join(cost, "\n    "));
    }
    if (!r.clamped.empty()) {
        out += "\nClamped from the requested list:\n";
        for (const auto& c : r.clamped)
            out += fmt::format("  - {}: {}\n", c.token, c.reason);
    }
    if (!report.gaps.empty()) {
        out += "\nMajor gaps:\n";
        for (const auto& g : report.gaps)
            out += fmt::format("  - {}{}\n", g.has_ptx_net ? "" : "FINDING: ", gap_sentence(g));
    }
    for (const auto& n : r.notes)
        out += fmt::format("\nnote: {}\n", n);
    return out;
}

std::string coverage_markdown(const Resolution& r, const CoverageReport& report) {
    std::string out =
        fmt::format("## Coverage of `{}`\n\nSource: `{}`", r.list.to_string(), r.source);
    if (!r.cuda.empty())
        out += fmt::format(" (CUDA {}, torch {}, {}{})", r.cuda, r.torch.empty() ? "-" : r.torch,
                           r.platform,
                           r.package.empty() ? "" : fmt::format(", package {}", r.package));
    out += "\n\n| CC | tier | products | why |\n|---|---|---|---|\n";
    for (const auto& row : report.rows) {
        std::string why = row.why;
        if (!row.gpu.note.empty()) why += fmt::format(" ({})", row.gpu.note);
        std::replace(why.begin(), why.end(), '|', '/');
        out += fmt::format("| {} | {} | {} | {} |\n", arch::cc_string(row.gpu.sm),
                           arch::tier_string(row.tier), products_of(row.gpu), why);
    }
    auto dead = rows_with(report, arch::Tier::Dead);
    for (const auto* d : rows_with(report, arch::Tier::TorchDead))
        dead.push_back(d);
    if (!dead.empty()) {
        out += "\n### Excluded\n\n";
        for (const auto* d : dead)
            out += fmt::format("- **{}** {}: {}\n", arch::cc_string(d->gpu.sm), products_of(d->gpu),
                               d->why);
    }
    if (!r.clamped.empty()) {
        out += "\n### Clamped\n\n";
        for (const auto& c : r.clamped)
            out += fmt::format("- `{}`: {}\n", c.token, c.reason);
    }
    if (!report.gaps.empty()) {
        out += "\n### Major gaps\n\n";
        for (const auto& g : report.gaps)
            out += fmt::format("- {}{}\n", g.has_ptx_net ? "" : "**Finding:** ", gap_sentence(g));
    }
    for (const auto& n : r.notes)
        out += fmt::format("\n> note: {}\n", n);
    return out;
}

std::vector<MatrixCell> policy_matrix(const PolicyData& policy, const PackageOverride* package,
                                      const std::vector<arch::Gpu>& gpus) {
    std::vector<MatrixCell> cells;
    auto sorted_keys = [](const auto& map) {
        std::vector<std::string> keys;
        for (const auto& [k, v] : map)
            keys.push_back(k);
        std::sort(keys.begin(), keys.end(),
                  [](const auto& a, const auto& b) { return version_less(a, b); });
        return keys;
    };
    auto add_cell = [&](const std::string& cuda, const std::string& torch,
                        std::vector<std::string> platforms) {
        MatrixCell cell;
        cell.cuda = cuda;
        cell.torch = torch;
        cell.platforms = std::move(platforms);
        ResolveRequest req;
        req.cuda = cuda;
        req.torch = torch;
        req.platform = cell.platforms.front();
        auto res = resolve_loaded(req, policy, package, gpus);
        if (res) {
            cell.coverage = coverage_report(*res, gpus);
            cell.resolution = std::move(*res);
        } else {
            cell.error = res.error().to_string();
        }
        cells.push_back(std::move(cell));
    };
    // Windows resolves through the x86 lane; a package's build_matrix may still tell them apart.
    bool platform_specific =
        package != nullptr &&
        std::any_of(package->combinations.begin(), package->combinations.end(),
                    [](const Combination& c) { return c.match.count("platform") > 0; });
    for (const auto& cuda : sorted_keys(policy.arch_policy)) {
        std::vector<std::string> torches{""};
        if (auto it = policy.torch_runnable.find(cuda); it != policy.torch_runnable.end())
            torches = it->second.releases;
        for (const auto& torch : torches) {
            if (platform_specific) {
                add_cell(cuda, torch, {"linux_x86_64"});
                add_cell(cuda, torch, {"win_amd64"});
            } else {
                add_cell(cuda, torch, {"linux_x86_64", "win_amd64"});
            }
        }
    }
    for (const auto& cuda : sorted_keys(policy.arch_policy_aarch64)) {
        std::vector<std::string> torches{""};
        if (auto it = policy.torch_runnable_aarch64.find(cuda);
            it != policy.torch_runnable_aarch64.end())
            torches = it->second.releases;
        for (const auto& torch : torches)
            add_cell(cuda, torch, {"linux_aarch64"});
        // Printed note, worded as in resolve.cpp: the "table" it names is the PyTorch snapshot
        // torch_runnable was read from (policy/arch_policy.yml).
        if (!policy.torch_runnable_aarch64.count(cuda) && cells.back().resolution)
            cells.back().resolution->notes.push_back(
                fmt::format("torch clamp not applied: no torch_runnable_aarch64[{}] row (no "
                            "aarch64 torch build of CUDA {} has been read)",
                            cuda, cuda));
    }
    return cells;
}

json matrix_json(const std::vector<MatrixCell>& cells) {
    json out = json::array();
    for (const auto& c : cells) {
        json j{{"cuda", c.cuda},
               {"torch", c.torch.empty() ? json(nullptr) : json(c.torch)},
               {"platforms", c.platforms}};
        if (c.resolution) {
            j["resolution"] = resolution_json(*c.resolution);
            j["coverage"] = coverage_json(c.coverage);
        } else {
            j["error"] = c.error;
        }
        out.push_back(j);
    }
    return out;
}

namespace {

struct TierStyle {
    const char* cls;
    const char* letter;
    const char* colour;
    const char* words;
};

// One style per tier; the legend and the cells read the same table.
constexpr std::array kTierStyles = {
    TierStyle{"n", "N", "#2e9e44", "native: a cubin runs it"},
    TierStyle{"j", "J", "#f2b632", "jit: only a PTX tail reaches it (slow first load)"},
    TierStyle{"d", "D", "#c8342c", "dead: no kernel image"},
    TierStyle{"x", "T", "#5b2a86",
              "dead (torch): the paired torch build cannot run on this GPU, whatever the "
              "extension carries"},
};

const TierStyle& style_of(arch::Tier t) {
    return kTierStyles.at(static_cast<std::size_t>(t));
}

std::string matrix_legend() {
    std::string h = "<div class=\"legend\">";
    for (const auto& st : kTierStyles)
        h += fmt::format("<span><svg width=\"16\" height=\"16\" aria-hidden=\"true\"><rect "
                         "width=\"16\" height=\"16\" rx=\"3\" class=\"{}\" fill=\"{}\"/></svg>{} "
                         "{}</span>",
                         st.cls, st.colour, st.letter, html_escape(st.words));
    h += "</div>\n<p class=\"legend-words\">A cell shows the GPUs its platform and CUDA release "
         "have (policy/gpus.yml): Jetson and DRIVE parts (Tegra) run aarch64 only, so the "
         "x86-64/Windows table has no Tegra column; Thor is CC 10.1 up to CUDA 12.9 and CC 11.0 "
         "from CUDA 13.0, so a row has one of the two and the other is a grey, empty cell. A "
         "<span class=\"tegra\">dotted underline</span> marks a Tegra CC: it runs only its own "
         "cubin, never a desktop cubin of its major. The letters N, J, D and T repeat the "
         "colours.</p>\n";
    return h;
}

// The columns of one lane: every GPU that some cell of the lane can meet, in table order.
std::vector<arch::Gpu> lane_columns(const std::vector<const MatrixCell*>& lane,
                                    const std::vector<arch::Gpu>& gpus) {
    std::vector<arch::Gpu> out;
    for (const auto& g : gpus) {
        const bool used = std::any_of(lane.begin(), lane.end(), [&](const MatrixCell* c) {
            return !gpus_for({g}, c->platforms.front(), c->cuda).empty();
        });
        if (used) out.push_back(g);
    }
    return out;
}

std::string absent_title(const arch::Gpu& g, const MatrixCell& c) {
    std::string where;
    if (!g.platforms.empty()) where += fmt::format("{} only", fmt::join(g.platforms, ", "));
    if (!g.since_cuda.empty())
        where += fmt::format("{}named CC {} from CUDA {}", where.empty() ? "" : "; ",
                             arch::cc_string(g.sm), g.since_cuda);
    if (!g.until_cuda.empty())
        where += fmt::format("{}named CC {} up to CUDA {}", where.empty() ? "" : "; ",
                             arch::cc_string(g.sm), g.until_cuda);
    return fmt::format("{} {}: not a GPU of CUDA {} on {} ({})", arch::cc_string(g.sm),
                       products_of(g), c.cuda, c.platforms.front(), where);
}

std::string cell_words(const MatrixCell& c) {
    const Resolution& r = *c.resolution;
    std::string words = fmt::format("<b>{}</b> <span class=\"src\">({})</span>",
                                    html_escape(r.list.to_string()), html_escape(r.source));
    if (r.built)
        words +=
            fmt::format("<br>builds as {}",
                        html_escape(fmt::format("{}", fmt::join(target_names(*r.built), " "))));
    std::vector<std::string> dead, torch_dead;
    for (const auto& row : c.coverage.rows) {
        if (row.tier != arch::Tier::Dead && row.tier != arch::Tier::TorchDead) continue;
        (row.tier == arch::Tier::Dead ? dead : torch_dead)
            .push_back(fmt::format(
                "{}{}", arch::cc_string(row.gpu.sm),
                row.gpu.products.empty() ? "" : fmt::format(" ({})", row.gpu.products.front())));
    }
    if (!dead.empty())
        words +=
            fmt::format("<br>excluded: {}", html_escape(fmt::format("{}", fmt::join(dead, ", "))));
    if (!torch_dead.empty())
        words += fmt::format("<br>dead (torch): {} (torch {} cannot run there: {})",
                             html_escape(fmt::format("{}", fmt::join(torch_dead, ", "))),
                             html_escape(r.torch),
                             html_escape(r.torch_ceiling ? r.torch_ceiling->where : std::string()));
    for (const auto& cl : r.clamped)
        words += fmt::format("<br>clamped {}: {}", html_escape(cl.token), html_escape(cl.reason));
    for (const auto& cl : r.ptx_dropped)
        words +=
            fmt::format("<br>no +PTX on {}: {}", html_escape(cl.token), html_escape(cl.reason));
    for (const auto& g : c.coverage.gaps)
        if (!g.has_ptx_net) words += fmt::format("<br>finding: {}", html_escape(gap_sentence(g)));
    for (const auto& n : r.notes)
        words += fmt::format("<br><i>{}</i>", html_escape(n));
    return words;
}

std::string matrix_row(const MatrixCell& c, const std::vector<arch::Gpu>& columns) {
    std::string h = fmt::format("<tr><th class=\"cell\">CUDA {} &middot; torch {} &middot; {}</th>",
                                html_escape(c.cuda), c.torch.empty() ? "any" : html_escape(c.torch),
                                html_escape(fmt::format("{}", fmt::join(c.platforms, ", "))));
    if (!c.resolution)
        return h + fmt::format("<td class=\"err\" colspan=\"{}\">{}</td></tr>\n",
                               columns.size() + 1, html_escape(c.error));
    for (const auto& g : columns) {
        auto row = std::find_if(c.coverage.rows.begin(), c.coverage.rows.end(),
                                [&](const arch::CoverageRow& r) { return r.gpu.sm == g.sm; });
        if (row == c.coverage.rows.end()) {
            h +=
                fmt::format("<td class=\"na\" title=\"{}\"></td>", html_escape(absent_title(g, c)));
            continue;
        }
        const TierStyle& st = style_of(row->tier);
        h += fmt::format("<td class=\"t {}\" title=\"{} {}: {}\">{}</td>", st.cls,
                         arch::cc_string(row->gpu.sm), arch::tier_string(row->tier),
                         html_escape(row->why), st.letter);
    }
    return h + fmt::format("<td class=\"words\">{}</td></tr>\n", cell_words(c));
}

std::string lane_table(const std::string& lane, const std::vector<const MatrixCell*>& cells,
                       const std::vector<arch::Gpu>& gpus) {
    const auto columns = lane_columns(cells, gpus);
    std::string h =
        fmt::format("<h2>{}</h2>\n<table class=\"grid\">\n<thead><tr><th class=\"cell\">"
                    "CUDA &middot; torch &middot; platform</th>",
                    html_escape(lane));
    for (const auto& g : columns)
        h += fmt::format("<th title=\"{}\"{}>{}</th>",
                         html_escape(products_of(g) + (g.note.empty() ? "" : " - " + g.note)),
                         g.tegra ? " class=\"tegra\"" : "", arch::cc_string(g.sm));
    h += "<th class=\"cell\">arch list, clamped and excluded</th></tr></thead>\n<tbody>\n";
    for (const auto* c : cells)
        h += matrix_row(*c, columns);
    return h + "</tbody></table>\n";
}

} // namespace

std::string matrix_html(const PolicyData& policy, const std::vector<MatrixCell>& cells,
                        const std::vector<arch::Gpu>& gpus, const std::string& title) {
    std::string h;
    h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
    h += fmt::format("<title>{}</title>\n", html_escape(title));
    h += R"(<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:15px;margin:18px 0 6px}
.meta{color:#555;margin:0 0 14px;font-size:12px}
table.grid{border-collapse:collapse;font-size:12px}
.grid th,.grid td{border:1px solid #d0d0d0;padding:0}
.grid thead th{padding:4px 2px;background:#f4f4f4;font-weight:600;writing-mode:vertical-rl;transform:rotate(180deg);height:48px}
.grid th.cell{writing-mode:horizontal-tb;transform:none;text-align:left;padding:4px 8px;white-space:nowrap;background:#fafafa;font-weight:500}
.grid thead th.cell{height:auto;vertical-align:bottom}
.grid td.t,.grid td.na{width:30px;height:26px;text-align:center;font-weight:700;font-size:11px}
.n{background:#2e9e44;color:#fff}.j{background:#f2b632;color:#3a2a00}.d{background:#c8342c;color:#fff}.x{background:#5b2a86;color:#fff}
.grid td.na{background:#ececec}
.grid td.words{padding:4px 8px;font-size:12px;color:#333;min-width:360px;max-width:640px}
.grid td.err{padding:4px 8px;color:#c8342c}
.legend{display:flex;gap:18px;align-items:center;flex-wrap:wrap;margin:0 0 6px;font-size:13px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.legend-words{font-size:12px;color:#333;max-width:1100px;margin:0 0 14px}
.src{color:#666;font-size:11px}
.tegra{text-decoration:underline dotted}
</style></head><body>
)";
    h += fmt::format("<h1>{}</h1>\n", html_escape(title));
    h += fmt::format("<p class=\"meta\">policy {} &middot; sha256 {} &middot; build_epoch {} "
                     "&middot; {} cells</p>\n",
                     html_escape(policy.file), policy.sha256.substr(0, 16), policy.build_epoch,
                     cells.size());
    h += matrix_legend();
    // One table per lane: the lanes have different GPUs (no Jetson on x86-64 or Windows).
    std::vector<std::pair<std::string, std::vector<const MatrixCell*>>> lanes;
    for (const auto& c : cells) {
        const std::string lane = c.platforms.front() == "linux_aarch64"
                                     ? "linux_aarch64 (arch_policy_aarch64)"
                                     : "linux_x86_64 / win_amd64 (arch_policy)";
        if (lanes.empty() || lanes.back().first != lane) lanes.push_back({lane, {}});
        lanes.back().second.push_back(&c);
    }
    for (const auto& [lane, lane_cells] : lanes)
        h += lane_table(lane, lane_cells, gpus);
    h += "</body></html>\n";
    return h;
}

} // namespace forge::policy
