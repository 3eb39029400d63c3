// The gate (docs/arch-rules.md, "The gate"): what a binary really carries vs the arch list it was
// asked to carry. Pure logic over the reader's entries, so every check is unit-testable.
#pragma once

#include "arch/arch.h"
#include "binary/reader.h"

#include <map>
#include <optional>
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
    std::string source = "native"; // which reader measured: "native" or "cuobjdump"
};

// Parses "120=12.8" or "*=12.8".
Result<MaxToolkit> parse_max_toolkit(std::string_view spec);

struct Check {
    std::string name; // "family", "sass", "ptx", "extra", "device-code", "toolkit"
    bool ok = true;
    std::string detail; // one line for people
};

struct ExtensionReport {
    std::string file;
    std::optional<std::string> member;
    std::vector<std::string> expected;  // nvcc target names the list asks for
    std::vector<std::string> sass;      // cubins present with kernels (names as stored)
    std::vector<std::string> ptx;       // PTX present
    std::vector<std::string> lto;       // LTO-IR present (reported, not judged)
    std::vector<std::string> stub_only; // arches present only as kernel-less cubins
    std::vector<std::string> missing_sass;
    std::vector<std::string> missing_ptx;
    std::vector<std::string> extra;
    std::vector<std::string> waived;           // waivers that were used, with their source
    std::vector<std::string> missing_families; // "sm_10x"
    std::map<std::string, int> kernels;        // per cubin arch: kernels summed over TUs
    std::vector<std::string> toolkit_violations;
    bool device_code = false;
    std::string source; // "native" / "cuobjdump"
    bool pass = false;
    std::vector<Check> checks; // [device-code,] family, sass, ptx, extra[, toolkit]
};

ExtensionReport verify_extension(const binary::Extension& ext, const arch::ArchList& expected,
                                 const Options& opts);

} // namespace forge::verify
