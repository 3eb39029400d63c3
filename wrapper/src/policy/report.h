// Renderings of a resolution and its coverage (resolve --format json, coverage text/markdown/json,
// coverage --matrix html/json). Kept in the library so the output is unit-tested.
#pragma once

#include "arch/coverage.h"
#include "policy/resolve.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace forge::policy {

nlohmann::ordered_json resolution_json(const Resolution& r);

// TORCH_CUDA_ARCH_LIST in the form the package's build script splits (wrapper.arch_list_separator,
// " " by default); an error when an entry has no torch spelling.
Result<std::string> torch_arch_list(const Resolution& r);

struct CoverageReport {
    std::vector<arch::CoverageRow> rows;
    std::vector<arch::GapFinding> gaps; // majors with no cubin; has_ptx_net=false is a finding
};
// The coverage of a resolved cell, the one computation behind `coverage`, the matrix and its
// page: what the package's build compiles (Resolution::builds_as(), its target_forms), on the GPUs
// of the cell's platform and CUDA (gpus_for), with the paired torch's ceiling: a GPU that torch
// cannot run is `dead (torch)` (torch_ceiling_reason, the reason resolve clamps with). `gpus` is
// the whole table (its Tegra flags decide what a Tegra cubin runs on).
CoverageReport coverage_report(const Resolution& r, const std::vector<arch::Gpu>& gpus);

// {"8.9": {"tier": "native", "products": [...], "via": [...], "why": "...", "tegra": false}, ...}
nlohmann::ordered_json coverage_json(const CoverageReport& report);
std::string coverage_text(const Resolution& r, const CoverageReport& report);
// The GPU rows and the native/jit/dead summary alone (coverage of a list or of a binary).
std::string coverage_rows_text(const CoverageReport& report);
std::string coverage_markdown(const Resolution& r, const CoverageReport& report);

// One cell of the policy matrix: CUDA x torch x platform(s), resolved or failed.
struct MatrixCell {
    std::string cuda, torch;
    std::vector<std::string> platforms; // lanes that resolve identically share a row
    std::optional<Resolution> resolution;
    std::string error; // when resolution is empty
    CoverageReport coverage;
};
// Every cell of the policy: x86/Windows rows of arch_policy x torch_runnable releases, aarch64 rows
// of arch_policy_aarch64 (x torch_runnable_aarch64 releases where known). `package` may be null.
std::vector<MatrixCell> policy_matrix(const PolicyData& policy, const PackageOverride* package,
                                      const std::vector<arch::Gpu>& gpus);
std::string matrix_html(const PolicyData& policy, const std::vector<MatrixCell>& cells,
                        const std::vector<arch::Gpu>& gpus, const std::string& title);
nlohmann::ordered_json matrix_json(const std::vector<MatrixCell>& cells);

} // namespace forge::policy
