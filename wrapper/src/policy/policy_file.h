// policy/arch_policy.yml and policy/gpus.yml, loaded strictly: unknown keys, rows without a reason
// and tokens that do not parse are errors naming file:line. Layout: see the file's own header.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "core/result.h"

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace forge::policy {

// One arch-list row: arch_policy[12.8], arch_exceptions[12.8/2.9], arch_policy_aarch64[13.0].
struct PolicyRow {
    std::string text; // as written ("7.5;8.0;9.0+PTX")
    arch::ArchList list;
    std::string reason;
    int line = 0;
};

// What one toolkit can emit, read off the real toolkit.
struct NvccRow {
    std::set<arch::Target> emittable; // sm_/compute_/lto_ incl. a/f
    std::string read_from;            // "nvcc 13.0.88 --list-gpu-code / --help" ...
    std::string reason;
    int line = 0;
};

// What one torch build ships: SASS cubins and PTX.
struct TorchBuild {
    std::vector<arch::Target> targets;
    std::string reason;
    int line = 0;
};

// torch_runnable[cuda]: the index's torch releases, its usual build and per-release exceptions.
struct TorchIndex {
    std::vector<std::string> releases; // torch minors published on this CUDA index
    TorchBuild base;
    std::map<std::string, TorchBuild> by_torch;
    int line = 0;
    [[nodiscard]] const TorchBuild& build_for(const std::string& torch_minor) const;
};

struct PolicyData {
    std::string file;
    std::string sha256; // of the file's bytes
    long build_epoch = 0;
    std::map<std::string, PolicyRow> arch_policy;         // linux_x86_64 + win_amd64
    std::map<std::string, PolicyRow> arch_exceptions;     // "<cuda>/<torch minor>", add-only
    std::map<std::string, PolicyRow> arch_policy_aarch64; // linux_aarch64
    std::map<std::string, NvccRow> nvcc_supported;
    std::map<std::string, TorchIndex> torch_runnable; // PyTorch's Linux x86-64/Windows wheels
    std::map<std::string, TorchIndex> torch_runnable_aarch64; // SBSA wheels (rows only where known)
};

Result<PolicyData> load_policy(const std::filesystem::path& file);
Result<PolicyData> parse_policy(std::string_view text, const std::string& file);

// Whether the table holds gpus.yml's `retired:` entries too (flagged Gpu::retired): the lint asks
// for them (a build script may name a Kepler CC); what reasons about a built wheel does not.
enum class Retired : std::uint8_t { Skip, Include };

// policy/gpus.yml: every CC with its products, sorted by CC.
Result<std::vector<arch::Gpu>> load_gpus(const std::filesystem::path& file,
                                         Retired retired = Retired::Skip);
Result<std::vector<arch::Gpu>> parse_gpus(std::string_view text, const std::string& file,
                                          Retired retired = Retired::Skip);

// The parts a cell of `platform` and CUDA `cuda` can meet (gpus.yml `platforms:`, `since_cuda:`,
// `until_cuda:`; docs/arch-rules.md, "The GPUs of a cell"): no Jetson CC on x86-64 or Windows,
// Thor as 10.1 up to CUDA 12.9 and as 11.0 from 13.0. An empty platform or cuda does not filter
// on that axis (a list given without --cuda shows both names of Thor). The Tegra set is still
// the whole table's: a Tegra cubin runs only on its SoC wherever the list was built.
std::vector<arch::Gpu> gpus_for(const std::vector<arch::Gpu>& gpus, std::string_view platform,
                                std::string_view cuda);

// Parses a CC key "8.7" -> 87.
Result<int> parse_cc(std::string_view text, std::string_view origin);

} // namespace forge::policy
