// For the GPU machine (bench/bundle/gpu_load.sh builds and runs it): loads the bundle with
// nvcc_forge/load_fatbin.h, reports which blob the device took and the toolkit that built it,
// launches add_one from it and checks the result.
//   exit 0: loaded, ran, and (with EXPECT_TOOLKIT set) the blob was built by that release
//   exit 1: wrong blob / wrong result; 2: no blob loads; 3: no usable GPU
#include "bundle_fatbin.h"
#include <nvcc_forge/load_fatbin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static bool check(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return true;
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s: %s\n", what, name ? name : "?");
    return false;
}

int main() {
    CUdevice dev;
    CUcontext ctx;
    if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        !check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return 3;
    int major = 0, minor = 0, driver = 0;
    char name[256] = {0};
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    cuDeviceGetName(name, sizeof(name), dev);
    cuDriverGetVersion(&driver);
    const int sm = major * 10 + minor;
    std::printf("device: %s, sm_%d; driver CUDA %d.%d\n", name, sm, driver / 1000,
                (driver % 1000) / 10);
    for (std::size_t i = 0; i < bundle_blob_count; ++i) {
        std::string sms;
        for (std::size_t j = 0; j < bundle_blobs[i].sm_count; ++j)
            sms += " sm_" + std::to_string(bundle_blobs[i].sms[j]);
        std::printf("bundled blob %zu: CUDA %s,%s, %zu bytes\n", i, bundle_blobs[i].toolkit,
                    sms.c_str(), bundle_blobs[i].size);
    }

    nvcc_forge::FatbinLoad r = nvcc_forge::load_first_matching_fatbin(bundle_blobs);
    if (!r.ok()) {
        std::printf("load failed: %s\n", r.error.c_str());
        return 2;
    }
    const char* toolkit = bundle_blobs[r.blob_index].toolkit;
    std::printf("loaded blob %d, built by CUDA %s\n", r.blob_index, toolkit);

    CUfunction add_one;
    if (!check(cuModuleGetFunction(&add_one, r.module, "add_one"), "cuModuleGetFunction")) return 1;
    const int n = 4096;
    std::vector<int> host(n);
    for (int i = 0; i < n; ++i)
        host[i] = i;
    CUdeviceptr d;
    if (!check(cuMemAlloc(&d, n * sizeof(int)), "cuMemAlloc") ||
        !check(cuMemcpyHtoD(d, host.data(), n * sizeof(int)), "cuMemcpyHtoD"))
        return 1;
    int count = n;
    void* args[] = {&d, &count};
    if (!check(cuLaunchKernel(add_one, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
               "cuLaunchKernel") ||
        !check(cuCtxSynchronize(), "cuCtxSynchronize") ||
        !check(cuMemcpyDtoH(host.data(), d, n * sizeof(int)), "cuMemcpyDtoH"))
        return 1;
    for (int i = 0; i < n; ++i)
        if (host[i] != i + 1) {
            std::printf("add_one gave %d at %d\n", host[i], i);
            return 1;
        }
    std::printf("add_one ran on sm_%d from the CUDA %s cubin: ok\n", sm, toolkit);
    cuMemFree(d);
    cuModuleUnload(r.module);

    if (const char* want = std::getenv("EXPECT_TOOLKIT"); want && *want) {
        if (std::strncmp(toolkit, want, std::strlen(want)) != 0 ||
            toolkit[std::strlen(want)] != '.') {
            std::printf("expected the blob built by CUDA %s, got %s\n", want, toolkit);
            return 1;
        }
        std::printf("as expected: sm_%d took the CUDA %s build\n", sm, want);
    }
    return 0;
}
