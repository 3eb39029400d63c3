// What an arch list really buys: for every GPU, native (a cubin runs it), jit (only a PTX tail
// reaches it) or dead. The rules (docs/arch-rules.md, "What a cubin or a PTX image reaches"):
//  - plain or family (f) cubin sm_X.y: CC X.z for z >= y (same major);
//  - arch-specific (a) cubin: exactly its CC;
//  - Tegra CCs run only their own cubin, and a Tegra cubin runs only its SoC: an sm_80 cubin gives
//    "no kernel image" on Orin 8.7 (flash-attention #1146, jax #22723). Which CCs are Tegra is
//    data, policy/gpus.yml's `tegra: true`, handed in as a TegraSet;
//  - PTX compute_X JITs onto every CC >= X; compute_Xa only onto X; compute_Xf only onto later
//    minors of X's major.
// A fourth tier, dead (torch), is the policy's: a GPU the paired torch build itself cannot run
// (policy::torch_runs, the same function as resolve's torch clamp) is dead inside that torch
// process whatever the extension carries.
#pragma once

#include "arch/arch.h"

#include <set>
#include <string>
#include <vector>

namespace forge::arch {

enum class Tier : std::uint8_t { Native, Jit, Dead, TorchDead };
std::string_view tier_string(Tier t); // "native", "jit", "dead", "dead (torch)"

struct Gpu {
    int sm = 0;                        // CC as an SM number
    std::vector<std::string> products; // "H100", "H200"
    bool tegra = false;                // integrated (Jetson/DRIVE) part: own cubins only
    std::string note;                  // why the entry is special, shown in coverage output
    // A real part no supported nvcc emits for (Kepler): gpus.yml's `retired:`. Known to the lint
    // (a build script may still name it); coverage, which reasons about built wheels, skips it.
    bool retired = false;
    // Where the part exists (gpus.yml `platforms:`, `since_cuda:`, `until_cuda:`): the platforms
    // it runs ("linux_aarch64" for Jetson/DRIVE; empty: every platform) and the CUDA releases that
    // name it with this CC (Thor is 10.1 up to CUDA 12.9 and 11.0 from 13.0; empty: every one).
    // policy::gpus_for() reads them; arch/ only carries them.
    std::vector<std::string> platforms{};
    std::string since_cuda{};
    std::string until_cuda{};
};

// The CCs of integrated (Jetson/DRIVE) parts. arch/ keeps no list of them: the set is read off a
// GPU table (policy/gpus.yml, loaded by policy::load_gpus), so adding a SoC is one line of data.
class TegraSet {
  public:
    TegraSet() = default;
    explicit TegraSet(const std::vector<Gpu>& gpus); // the entries marked tegra
    [[nodiscard]] bool contains(int sm) const;

  private:
    std::vector<int> sms_;
};

// `tegra` decides whether `cubin` was built for a SoC (then it runs on that CC only).
bool sass_runs_on(const Target& cubin, const Gpu& gpu, const TegraSet& tegra);
bool ptx_jits_on(const Target& ptx, const Gpu& gpu);

// The one answer to "does what a binary or a call carries cover this wanted target?"
// (docs/arch-rules.md, "One coverage rule"). The gate, `coverage FILE`, `plan`, the wrapper's
// compare (and so `strict` and the injection) and the lint ask it; nothing else folds suffixes.
//  - a target is covered by itself;
//  - a wanted plain cubin sm_X is covered by suffixed cubins of its SM (sm_Xa, sm_Xf) when, with
//    every cubin of `have`, each GPU of `gpus` that sm_X runs on still runs natively: sm_90a
//    stands in for sm_90 (major 9 has one CC), sm_100a not for sm_100 unless 10.3 has its own
//    cubin, sm_100f always (a family cubin covers the family);
//  - a wanted `a`/`f` target, and any PTX, only by itself (compute_90a JITs onto one CC only: it
//    is not the forward tail a 9.0+PTX promises).
// `gpus` should name every CC of `have` and `want` (judged_gpus()).
bool covers(const std::set<Target>& have, const Target& want, const std::vector<Gpu>& gpus,
            const TegraSet& tegra);
// Whether a carried target is one the list asks for: itself, or a suffixed image of a plain
// target of the list (which either stands in for it or is reported as not covering it).
bool asked_for(const Target& carried, const std::set<Target>& want);
// `table` plus a GPU for each CC that `targets` name and the table lacks, so that a suffixed
// cubin is never judged against an empty world.
std::vector<Gpu> judged_gpus(const std::vector<Gpu>& table, const std::vector<Target>& targets);

struct CoverageRow {
    Gpu gpu;
    Tier tier = Tier::Dead;
    std::vector<std::string> via; // the targets that reach it: cubins for native, PTX for jit
    std::string why;              // one sentence: why this tier (always set)
};

// One row per entry of `gpus` that is not retired, in order. The Tegra set is `gpus`' own unless
// given.
std::vector<CoverageRow> coverage(const std::vector<Target>& targets, const std::vector<Gpu>& gpus);
std::vector<CoverageRow> coverage(const std::vector<Target>& targets, const std::vector<Gpu>& gpus,
                                  const TegraSet& tegra);

// PTX below every gap (docs/arch-rules.md, "PTX once per major"). A gap is a major that has GPUs
// in `gpus` (the cell's own: a platform without Thor has no major 11) but no cubin, between the
// lowest and the highest cubin major. Its GPUs are reached only by a plain PTX below it, and the
// rule puts that PTX on the highest plain cubin below the gap: one finding per gap. `resolve`
// adds +PTX where `ptx_placed` is false and `coverage` advises it, both from this function.
struct GapFinding {
    int major = 0;        // the major with no cubin (e.g. 11)
    int suggested_sm = 0; // highest plain cubin below the gap: where +PTX belongs (0: none)
    bool has_ptx_net = false;
    std::string net;         // the PTX the driver JITs there (the highest plain one below), if any
    bool ptx_placed = false; // the suggested arch carries its plain PTX
};
std::vector<GapFinding> major_gaps(const std::vector<Target>& targets,
                                   const std::vector<Gpu>& gpus);

} // namespace forge::arch
