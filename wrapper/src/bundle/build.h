// `nvcc-forge bundle`: one fatbin per toolkit, each holding the SMs policy/sm_toolkit.yml pins to
// that toolkit, written as one deterministic C header (bundle_header.h).
#pragma once

#include "bundle/header.h"
#include "bundle/pin.h"
#include "core/result.h"

#include <string>
#include <vector>

namespace forge::bundle {

struct BundleOptions {
    std::string source;                    // the .cu file
    bool rdc = false;                      // relocatable compile + device link
    std::vector<std::string> devlink_libs; // "cudadevrt" -> -lcudadevrt on the device link
    std::vector<std::string> nvcc_args;    // extra arguments for every compile (-O3, -I...)
};

// The nvcc argv (without the nvcc path) of each step for one toolkit's SMs, writing `fatbin_out`
// (and `object_out` for the relocatable compile). Whole program: one step, `-fatbin` with one
// -gencode per SM. --rdc: `-rdc=true -c` to an object, then `-dlink -fatbin` with -l<lib>.
std::vector<std::vector<std::string>> bundle_steps(const BundleOptions& opts,
                                                   const std::vector<int>& sms,
                                                   const std::string& object_out,
                                                   const std::string& fatbin_out);

// Compiles every group of `plan` (in a fresh temporary directory, removed afterwards) and returns
// the bundle, blobs in plan order. A failed nvcc is an Error with its command line and output.
// `log` receives each command as it runs.
Result<Bundle> build_bundle(const BundleOptions& opts, const ToolkitPlan& plan,
                            const std::string& symbol, std::string* log = nullptr);

} // namespace forge::bundle
