// nvcc_forge/load_fatbin.h: load the right fatbin of an `nvcc-forge bundle` header at run time.
//
//   #include <cuda.h>
//   #include "my_kernels_fatbin.h"          // written by: nvcc-forge bundle ... --symbol
//   my_kernels #include <nvcc_forge/load_fatbin.h>
//
//   // with a current CUDA context:
//   nvcc_forge::FatbinLoad r = nvcc_forge::load_first_matching_fatbin(my_kernels_blobs);
//   if (!r.ok()) { std::fprintf(stderr, "%s\n", r.error.c_str()); ... }
//   CUfunction f; cuModuleGetFunction(&f, r.module, "my_kernel");
//
// A bundle holds one fatbin per CUDA toolkit, each with SASS for the SMs that toolkit builds
// (policy/sm_toolkit.yml). A device loads only the fatbin with SASS for its SM, and only when the
// driver is at least as new as the toolkit that built it, so every blob is tried in order with
// cuModuleLoadData and the first that loads is kept. Header-only, C++11, driver API only (-lcuda).
#ifndef NVCC_FORGE_LOAD_FATBIN_H_
#define NVCC_FORGE_LOAD_FATBIN_H_

#include <cuda.h>

#include <cstddef>
#include <string>

#ifndef NVCC_FORGE_FATBIN_BLOB_DEFINED
#define NVCC_FORGE_FATBIN_BLOB_DEFINED
/* One fatbin of a bundle: built by CUDA `toolkit`, holding SASS for `sms`. Same definition as in
 * the generated headers, so they can be included in either order. */
typedef struct nvcc_forge_fatbin_blob {
    const char* toolkit;
    const int* sms;
    size_t sm_count;
    const unsigned char* data;
    size_t size;
} nvcc_forge_fatbin_blob;
#endif

namespace nvcc_forge {

struct FatbinLoad {
    CUmodule module = nullptr; // owned by the caller (cuModuleUnload) when ok()
    int blob_index = -1;       // which blob loaded
    CUresult result = CUDA_ERROR_NO_BINARY_FOR_GPU; // CUDA_SUCCESS, or the last failure
    std::string error; // empty when ok(): names the device's SM and the SMs bundled
    bool ok() const { return module != nullptr; }
};

namespace detail {

inline std::string cu_error_name(CUresult r) {
    const char* name = nullptr;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr)
        return std::to_string(static_cast<int>(r));
    return name;
}

// "sm_90 (CUDA 12.8.93), sm_100 (CUDA 12.8.93), sm_110 (CUDA 13.0.88)"
inline std::string bundled_sms(const nvcc_forge_fatbin_blob* blobs, std::size_t count) {
    std::string s;
    for (std::size_t i = 0; i < count; ++i)
        for (std::size_t j = 0; j < blobs[i].sm_count; ++j) {
            if (!s.empty()) s += ", ";
            s += "sm_" + std::to_string(blobs[i].sms[j]) + " (CUDA " +
                 (blobs[i].toolkit ? blobs[i].toolkit : "?") + ")";
        }
    return s.empty() ? std::string("none") : s;
}

// The current context's device as "sm_90", or a reason it is unknown.
inline std::string current_device_sm() {
    CUdevice dev = 0;
    const CUresult r = cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS) return "unknown (no current context: " + cu_error_name(r) + ")";
    int major = 0, minor = 0;
    if (cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS ||
        cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
            CUDA_SUCCESS)
        return "unknown";
    return "sm_" + std::to_string(major * 10 + minor);
}

} // namespace detail

// Tries blobs[0..count) in order with cuModuleLoadData in the current context; keeps the first
// module that loads. On failure the error names the device's SM, every SM bundled (with the
// toolkit that built it) and each blob's CUresult -- CUDA_ERROR_INVALID_IMAGE / NO_BINARY_FOR_GPU
// usually mean "no SASS for this SM", CUDA_ERROR_UNSUPPORTED_PTX_VERSION or an INVALID_IMAGE on a
// matching SM usually mean "driver older than the toolkit that built the blob".
inline FatbinLoad load_first_matching_fatbin(const nvcc_forge_fatbin_blob* blobs,
                                             std::size_t count) {
    FatbinLoad out;
    std::string attempts;
    for (std::size_t i = 0; i < count; ++i) {
        CUmodule module = nullptr;
        CUresult r = cuModuleLoadData(&module, blobs[i].data);
        if (r == CUDA_SUCCESS && module != nullptr) {
            out.module = module;
            out.blob_index = static_cast<int>(i);
            out.result = CUDA_SUCCESS;
            out.error.clear();
            return out;
        }
        out.result = r;
        attempts += (attempts.empty() ? "" : "; ") + std::string("blob ") + std::to_string(i) +
                    " (CUDA " + (blobs[i].toolkit ? blobs[i].toolkit : "?") +
                    "): " + detail::cu_error_name(r);
    }
    out.error =
        "nvcc-forge: no bundled fatbin loads on this device (" + detail::current_device_sm() +
        "); bundled: " + detail::bundled_sms(blobs, count) +
        (attempts.empty() ? std::string("; the bundle is empty") : "; tried " + attempts) +
        ". Rebuild the bundle with this SM (nvcc-forge bundle --sm ...) or update the driver.";
    return out;
}

template <std::size_t N>
inline FatbinLoad load_first_matching_fatbin(const nvcc_forge_fatbin_blob (&blobs)[N]) {
    return load_first_matching_fatbin(blobs, N);
}

} // namespace nvcc_forge

#endif // NVCC_FORGE_LOAD_FATBIN_H_
