// The gate (docs/arch-rules.md, "The gate"): what a binary really carries vs the arch list it was
// asked to carry. Pure logic over the reader's entries, so every check is unit-testable.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "binary/reader.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace forge::verify {

struct Waiver {
    arch::Target target; // sm_100 / compute_90 (suffix-folded when compared)
    std::string source;  // "--allow-missing", "packages/x/arch_override.yml (evidence: ...)"
};

struct MaxToolkit {
    int sm = 0; // cubins of this SM (suffix folded); 0 = every cubin
    int major = 0, minor = 0;
    std::string spec; // "120=12.8" as given
};

struct Options {
    std::vector<Waiver> waivers;
    bool allow_pure_python = false;
    bool allow_extra = false;
    std::vector<MaxToolkit> max_toolkit;
    // The GPU table (policy/gpus.yml): which CCs exist decides whether a suffixed cubin keeps the
    // coverage of the plain one it stands in for. Empty: the CCs the list and the binary name.
    std::vector<arch::Gpu> gpus;
    // Fatbin containers embedded outside the registered sections (binary::Found::Embedded) count
    // as carried code (packages/<pkg>/arch_override.yml `verify.embedded_fatbins: judge`); by
    // default they are reported apart and not judged.
    bool judge_embedded = false;
};

// What a file really carries, as the gate counts it: cubins and PTX with kernels; kernel-less
// images apart (they prove nothing and run nothing).
struct Carried {
    std::set<arch::Target> sass, ptx, lto, stub_sass, empty_ptx;
    std::map<std::string, int> kernels; // per cubin / PTX arch, summed over TUs
    [[nodiscard]] std::vector<arch::Target> runnable() const; // sass + ptx: what coverage reads
};
// Embedded entries count only when `judge_embedded`.
Carried classify(const binary::Extension& ext, bool judge_embedded = false);

// A Python extension module by its name (`*.cpython-*.so`, `*.abi3.so`, `*.pyd`) and not in an
// auditwheel `*.libs/` folder. Anything else without a fatbin is a host-only library.
bool is_python_extension(std::string_view path);
// A shared library (by name) that is not a Python extension module and carries no fatbin the
// gate judges (embedded ones count only when `judge_embedded`).
bool is_host_only(const binary::Extension& ext, bool judge_embedded = false);

// Parses "120=12.8" or "*=12.8".
Result<MaxToolkit> parse_max_toolkit(std::string_view spec);

struct Check {
    std::string name; // "family", "sass", "ptx", "extra", "device-code", "toolkit"
    bool ok = true;
    std::string detail;              // one line for people
    std::vector<std::string> waived; // "sm_100 — --allow-missing": why an ok is not "as asked"
};

// A GPU the list promises that the binary does not reach as promised (native -> jit/dead, or
// jit -> dead), from the coverage of what the binary really carries.
struct LostGpu {
    int sm = 0;
    std::vector<std::string> products;
    arch::Tier promised = arch::Tier::Native;
    arch::Tier actual = arch::Tier::Dead;
    bool waived = false;                        // lost only through a waived target
    [[nodiscard]] std::string describe() const; // "10.3 (B300): native -> dead"
};

// The fatbin containers found outside the registered sections (binary::Found::Embedded), with
// their targets, LTO-IR included: reported apart from the registered ones unless judged.
struct EmbeddedReport {
    bool judged = false;
    std::size_t containers = 0;
    std::size_t entries = 0;
    std::vector<std::string> sections; // ".ldata", ".rdata"
    std::vector<std::string> sass, ptx, lto;
    [[nodiscard]] std::string describe() const; // "24453 containers (24453 entries) in .ldata: ..."
};
EmbeddedReport embedded_report(const binary::Extension& ext, bool judged);

struct ExtensionReport {
    std::string file;
    std::optional<std::string> member;
    std::vector<std::string> expected;            // nvcc target names the list asks for
    std::vector<std::string> sass;                // cubins present with kernels (names as stored)
    std::vector<std::string> ptx;                 // PTX present
    std::vector<std::string> lto;                 // LTO-IR present (reported, not judged)
    std::vector<std::string> stub_only;           // arches present only as kernel-less cubins
    std::vector<std::string> ptx_without_kernels; // PTX entries with no .entry (not counted)
    std::vector<std::string> missing_sass;
    std::vector<std::string> missing_ptx;
    std::vector<std::string> extra;
    std::vector<std::string> waived;           // waivers that were used, with their source
    std::vector<std::string> missing_families; // "sm_10x"
    std::map<std::string, int> kernels;        // per cubin / PTX arch: kernels summed over TUs
    std::vector<LostGpu> lost;                 // GPUs promised by the list, not reached
    EmbeddedReport embedded;                   // containers outside the registered sections
    std::vector<std::string> toolkit_violations;
    bool device_code = false;
    // A shared library that is not a Python extension module and has no fatbin (libgomp vendored
    // by auditwheel): listed, never judged.
    bool host_only = false;
    std::string source; // "native" / "cuobjdump"
    bool pass = false;
    std::vector<Check> checks; // [device-code,] family, sass, ptx, extra[, toolkit]
};

ExtensionReport verify_extension(const binary::Extension& ext, const arch::ArchList& expected,
                                 const Options& opts);

// The verdict over every report of a run: at least one judged extension and all passing, or, with
// the pure-Python allowance, no extension with device code at all. `reason` says why either way.
struct Verdict {
    bool pass = false;
    std::string reason;
};
Verdict verdict(const std::vector<ExtensionReport>& reports, const Options& opts);

} // namespace forge::verify
