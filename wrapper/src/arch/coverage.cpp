#include "arch/coverage.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace forge::arch {

std::string_view tier_string(Tier t) {
    switch (t) {
    case Tier::Native:
        return "native";
    case Tier::Jit:
        return "jit";
    case Tier::TorchDead:
        return "dead (torch)";
    case Tier::Dead:
        break;
    }
    return "dead";
}

TegraSet::TegraSet(const std::vector<Gpu>& gpus) {
    for (const auto& g : gpus)
        if (g.tegra) sms_.push_back(g.sm);
}

bool TegraSet::contains(int sm) const {
    return std::find(sms_.begin(), sms_.end(), sm) != sms_.end();
}

bool sass_runs_on(const Target& cubin, const Gpu& gpu, const TegraSet& tegra) {
    if (cubin.kind != Kind::Sass) return false;
    if (cubin.sm == gpu.sm) return true;
    if (gpu.tegra || cubin.suffix == Suffix::Specific) return false;
    // A Tegra cubin is built for that SoC; it is not a desktop cubin of the major.
    if (tegra.contains(cubin.sm)) return false;
    return sm_major(cubin.sm) == sm_major(gpu.sm) && sm_minor(gpu.sm) >= sm_minor(cubin.sm);
}

bool ptx_jits_on(const Target& ptx, const Gpu& gpu) {
    if (ptx.kind != Kind::Ptx) return false;
    switch (ptx.suffix) {
    case Suffix::Specific:
        return gpu.sm == ptx.sm;
    case Suffix::Family:
        return sm_major(gpu.sm) == sm_major(ptx.sm) && gpu.sm >= ptx.sm;
    case Suffix::None:
        break;
    }
    return gpu.sm >= ptx.sm;
}

bool covers(const std::set<Target>& have, const Target& want, const std::vector<Gpu>& gpus,
            const TegraSet& tegra) {
    if (have.contains(want)) return true;
    if (want.kind != Kind::Sass || want.suffix != Suffix::None) return false;
    if (std::none_of(have.begin(), have.end(), [&](const Target& t) { return t.folded() == want; }))
        return false;
    return std::all_of(gpus.begin(), gpus.end(), [&](const Gpu& g) {
        return !sass_runs_on(want, g, tegra) ||
               std::any_of(have.begin(), have.end(),
                           [&](const Target& t) { return sass_runs_on(t, g, tegra); });
    });
}

bool asked_for(const Target& carried, const std::set<Target>& want) {
    return want.contains(carried) || want.contains(carried.folded());
}

std::vector<Gpu> judged_gpus(const std::vector<Gpu>& table, const std::vector<Target>& targets) {
    std::vector<Gpu> out = table;
    for (const auto& t : targets)
        if (std::none_of(out.begin(), out.end(), [&](const Gpu& g) { return g.sm == t.sm; }))
            out.push_back(Gpu{t.sm, {}, false, {}});
    return out;
}

std::vector<CoverageRow> coverage(const std::vector<Target>& targets,
                                  const std::vector<Gpu>& gpus) {
    return coverage(targets, gpus, TegraSet(gpus));
}

std::vector<CoverageRow> coverage(const std::vector<Target>& targets, const std::vector<Gpu>& gpus,
                                  const TegraSet& tegra) {
    std::vector<CoverageRow> rows;
    for (const auto& gpu : gpus) {
        if (gpu.retired) continue;
        CoverageRow row{gpu, Tier::Dead, {}, {}};
        for (const auto& t : targets)
            if (sass_runs_on(t, gpu, tegra)) row.via.push_back(t.name());
        if (!row.via.empty()) {
            row.tier = Tier::Native;
            row.why = fmt::format("runs the {} cubin", fmt::join(row.via, ", "));
        } else {
            for (const auto& t : targets)
                if (ptx_jits_on(t, gpu)) row.via.push_back(t.name());
            if (!row.via.empty()) {
                row.tier = Tier::Jit;
                // The driver JITs the highest PTX at or below the device.
                row.why = fmt::format("no cubin loads; the driver JIT-compiles {} PTX at first "
                                      "load (slow, driver-cache fragile)",
                                      row.via.back());
            } else {
                row.why = "no cubin loads and no PTX at or below it: "
                          "cudaErrorNoKernelImageForDevice at first launch";
            }
        }
        if (gpu.tegra && row.tier != Tier::Native) {
            bool same_major_cubin =
                std::any_of(targets.begin(), targets.end(), [&](const Target& t) {
                    return t.kind == Kind::Sass && sm_major(t.sm) == sm_major(gpu.sm);
                });
            // Printed by `coverage`, so worded as before: the "tier list" it names is the earlier
            // reading that counted Tegra CCs as same-major native (docs/arch-rules.md).
            if (same_major_cubin)
                row.why += fmt::format("; Tegra CC {} does not run desktop sm_{}x cubins (needs "
                                       "sm_{}; flash-attention #1146, jax #22723; a tier list that "
                                       "counts same-major cubins is wrong here)",
                                       cc_string(gpu.sm), sm_major(gpu.sm), gpu.sm);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::vector<GapFinding> major_gaps(const std::vector<Target>& targets,
                                   const std::vector<Gpu>& gpus) {
    std::set<int> majors;
    for (const auto& t : targets)
        if (t.kind == Kind::Sass) majors.insert(sm_major(t.sm));
    std::vector<GapFinding> out;
    if (majors.size() < 2) return out;
    for (int m = *majors.begin() + 1; m < *majors.rbegin(); ++m) {
        if (majors.count(m)) continue;
        // A major without a GPU of this cell is no gap: nothing there needs the net.
        if (std::none_of(gpus.begin(), gpus.end(),
                         [&](const Gpu& g) { return !g.retired && sm_major(g.sm) == m; }))
            continue;
        GapFinding g;
        g.major = m;
        for (const auto& t : targets)
            if (t.kind == Kind::Sass && t.suffix == Suffix::None && sm_major(t.sm) < m)
                g.suggested_sm = std::max(g.suggested_sm, t.sm);
        int net_sm = 0;
        for (const auto& t : targets) {
            if (t.kind != Kind::Ptx || t.suffix != Suffix::None || sm_major(t.sm) >= m) continue;
            g.has_ptx_net = true;
            if (t.sm > net_sm) {
                net_sm = t.sm;
                g.net = t.name();
            }
            if (t.sm == g.suggested_sm) g.ptx_placed = true;
        }
        out.push_back(g);
    }
    return out;
}

} // namespace forge::arch
