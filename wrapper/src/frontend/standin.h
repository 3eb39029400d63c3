// `nvcc-forge plan`'s stand-in for nvcc: the wrapper, started from a plan's shadow CUDA root,
// parses and compares each call as usual (compare.h, the same log record), applies the mode's
// injection to the plan, and then, instead of compiling the TU, builds a tiny stub kernel with the
// call's final target flags and the flags that decide the output's kind, once per distinct flag
// set, and copies it to every output the call names (dependency files included), so that make,
// ninja and setuptools carry on. Links of objects run for real: their inputs are stubs already.
// Facts and decisions: docs/plan.md.
#pragma once

#include "core/result.h"
#include "frontend/config.h"
#include "nvcc/cmdline.h"
#include "toolkit/caps.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::frontend {

// Written by `nvcc-forge plan` into its shadow root's bin/ (beside toolkit::kRealNvccMarker): a
// wrapper started from that bin/ is a stand-in. A file, not a variable, so that the build's
// environment differs from the caller's only by the shadow root's paths.
inline constexpr const char* kPlanConfigFile = ".nvcc-forge-plan";

struct PlanConfig {
    // What the wrapper compares against, as the NVCC_FORGE_* variables would say it.
    std::string arch_list;
    std::string package;
    std::string policy_file;
    std::string packages_dir;
    std::string mode;                // "observe" | "inject" | "strict"
    std::string log;                 // the compile log (one record per call)
    std::filesystem::path state_dir; // the stub source and this run's stub cache
    // Stubs kept across plan runs (cache_dir(env)/plan); empty: this run's state_dir/stubs only.
    std::filesystem::path stub_cache;
};

std::string plan_config_json(const PlanConfig& config);
Result<PlanConfig> read_plan_config(const std::filesystem::path& file);
// The wrapper's configuration under a plan: the plan's policy, mode and log replace the caller's
// NVCC_FORGE_* settings for them (the build was started with the caller's environment).
void apply_plan_config(const PlanConfig& config, FrontendEnv& env);
// Writes the config and the stub source into a shadow root made by make_shim.
Status write_plan_files(const std::filesystem::path& shim_root, const PlanConfig& config);

// The stub's source: one kernel with real code (so the gate counts its images as device code),
// the plan mark (core/plan_marker.h) and a weak main (an executable links with or without one).
std::string stub_source();
std::filesystem::path stub_source_path(const std::filesystem::path& state_dir);

// nvcc has the host compiler preprocess every device pass with `-include cuda_runtime.h`, and
// cicc then parses all of it once per virtual target: most of a stub compile's time. The stub
// compile puts this directory first on its include path: its cuda_runtime.h is the toolkit's own
// (`#include_next`) for the host pass and only the keyword macros for the device passes, which is
// all the stub's kernel uses. The device code is byte for byte what the full header gives
// (docs/plan.md, "The stub").
std::string stub_header();
std::filesystem::path stub_include_dir(const std::filesystem::path& state_dir);

// CMake's configure probes (compiler ABI, try_compile scratch projects) read what they build:
// they get the real nvcc.
bool is_configure_probe(const std::string& source);

// How the stand-in answers one call, from the call as it will run (after the mode's rewrite).
struct StubPlan {
    std::vector<std::string> flags;   // for the stub compile: targets and output kind, as written
    std::vector<std::string> outputs; // what the call writes, as it names them
    // Dependency files (-MD/-MMD), one per output, with the rule's target as nvcc writes it.
    struct Depfile {
        std::string path;
        std::string target;
    };
    std::vector<Depfile> depfiles;
    // An -rdc object: nvlink refuses two copies of one module in a link, so each output gets its
    // own stub compile.
    bool per_output = false;
    // The call (or the environment's flags) sets nvcc's --threads itself: the stub compile keeps
    // that choice rather than adding its own.
    bool threads_given = false;
};
StubPlan plan_stub(const nvcc::Invocation& inv);

// make's rule for one output: "target: source..." (sources escaped as make reads them).
std::string depfile_text(const std::string& target, const std::vector<std::string>& sources);

// The stub compile's own arguments before the source: the plan's flags, `--threads 0` (cicc and
// ptxas run once per target; in parallel they cost one target's time; nvcc has it from CUDA 11.2;
// never on the build's own calls) and, unless `full_header`, the stub's include directory.
std::vector<std::string> stub_compile_args(const StubPlan& plan,
                                           const std::filesystem::path& state_dir,
                                           const toolkit::CudaVersion& cuda, bool full_header);

// Held while one stub is looked up and built: the calls of one flag set that a parallel build
// starts together (ninja -j, MAX_JOBS) compile it once, the others wait for it and copy it. An
// flock(2) on `file`, released by the destructor (and by the kernel if the process dies); when
// the file cannot be opened, nothing is held and each call builds its own, as without the lock.
class StubLock {
  public:
    explicit StubLock(const std::filesystem::path& file);
    ~StubLock();
    StubLock(const StubLock&) = delete;
    StubLock& operator=(const StubLock&) = delete;
    StubLock(StubLock&&) = delete;
    StubLock& operator=(StubLock&&) = delete;

  private:
    int fd_ = -1;
};

// What identifies the toolkit a stub comes from: the real nvcc and the programs and files of its
// root that take part in a compile (file_stamp of each: path, core/file_stamp.h's fields). A stub
// kept across plan runs is served only to the toolkit that built it.
std::string toolkit_identity(const std::filesystem::path& nvcc);

// The stub cache's key for one compile: the toolkit's identity, the flags, the environment's
// flags and, for a per-output stub, the output.
std::string stub_cache_key(const std::string& toolkit, const std::vector<std::string>& flags,
                           const std::string& prepend, const std::string& append,
                           const std::string& unique);

// A stub, open for reading. What was checked is what is copied: the outputs are written from
// this descriptor (copy_file_range, in the kernel), whatever replaces its name meanwhile.
class StubFile {
  public:
    static Result<StubFile> open(const std::filesystem::path& path);
    StubFile(StubFile&& other) noexcept;
    StubFile& operator=(StubFile&&) = delete;
    StubFile(const StubFile&) = delete;
    StubFile& operator=(const StubFile&) = delete;
    ~StubFile();
    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] std::uint64_t size() const { return size_; }
    // Its mode: an executable stays one in every output.
    [[nodiscard]] std::filesystem::perms perms() const { return perms_; }
    // Device, inode, size, change and modification times: any write, truncation, or copy or
    // move over it changes the change time, which no one sets back (touch and cp -p restore the
    // modification time only).
    [[nodiscard]] const std::string& identity() const { return identity_; }
    [[nodiscard]] Result<std::string> read_all() const;

  private:
    StubFile() = default;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::filesystem::perms perms_ = std::filesystem::perms::none;
    std::string identity_;
    std::filesystem::path path_;
};

// The kept stubs (stub_cache_key): `<key>.out`, and beside it `<key>.sum` naming the key, the
// size and the sha256 of the stub, and the stub file's identity when the sum was written. A stub
// is served only when its sum names its key and size, and the file is still the one the sum was
// written for (no hash on every call: a shared library's stub is a megabyte) or its content has
// the sum's sha256. Junk or an empty file over a stub, or another key's stub copied or moved in
// its place (with its sum or without), is refused. The stub is renamed into place, then its sum.
struct KeptStub {
    std::optional<StubFile> stub; // kept and sound
    std::string problem;          // a kept entry refused, and why ("" = none kept, or sound)
};
KeptStub read_kept_stub(const std::filesystem::path& dir, const std::string& key);
// Removes a refused entry (stub and sum).
void drop_kept_stub(const std::filesystem::path& dir, const std::string& key);
// Keeps the stub compiled into `compiled` (a file in `dir`, renamed into place).
Result<StubFile> keep_stub(const std::filesystem::path& dir, const std::string& key,
                           const std::filesystem::path& compiled);
// What `<key>.sum` holds for these bytes, before the file's identity line.
std::string stub_sum(const std::string& key, const std::string& bytes);
// Writes a stub to `output` (through a temporary name beside it and a rename), with its mode.
Status write_stub_output(const StubFile& stub, const std::string& output);

// The object links the stand-in runs for real: an executable gets its unresolved symbols
// forgiven (the TUs' host functions were never compiled); everything else is the call as it is.
std::vector<std::string> link_args(const nvcc::Invocation& inv,
                                   const std::vector<std::string>& args);

} // namespace forge::frontend
