// What one CUDA toolkit is: its release and what its nvcc can emit. The policy resolver, the nvcc
// command-line model, the front end and `bundle` all read this one type; toolkit/probe.h fills it
// from the nvcc binary itself (docs/nvcc-command-line.md says which outputs are read).
#pragma once

#include "arch/arch.h"

#include <compare>
#include <optional>
#include <set>
#include <string>

namespace forge::toolkit {

// A CUDA release as nvcc reports it ("release 13.0, V13.0.88"). patch < 0: not known (an nvcc
// without the V-string, or caps read back from the front end's cache, which keeps X.Y only).
struct CudaVersion {
    int major = 0, minor = 0, patch = -1;
    [[nodiscard]] std::string release() const; // "13.0"
    [[nodiscard]] std::string full() const;    // "13.0.88", or release() when patch is unknown
    auto operator<=>(const CudaVersion&) const = default;
};

struct ToolkitCaps {
    std::string nvcc;                 // the nvcc that was probed ("" when not from a probe)
    CudaVersion version{13, 0};       // CUDA release of that nvcc
    std::set<arch::Target> emittable; // every sm_/compute_/lto_ target nvcc accepts (a/f incl.)
    int default_sm = 75;              // nvcc's default arch when no target flag is given
    std::optional<int> native_sm;     // what -arch=native resolves to (nullopt: no GPU -> default)
};

} // namespace forge::toolkit
