#!/usr/bin/env bash
# Issue 36, items 10-11, on a real GPU: the fatbin the CUDA runtime registers is the one the
# wrapper records point to, whatever its section is called, and a decoy section nothing points to
# is never what runs. Builds a one-kernel .so with a host entry point, renames its .nv_fatbin
# (the records still point into it), adds a decoy .nv_fatbin for another GPU, and for each file
# prints what `nvcc-forge list` says is registered and what the kernel returns on the GPU.
#   records_trial.sh NVCC_FORGE OUTDIR
set -uo pipefail
F=$1 out=$2
mkdir -p "$out" && cd "$out" || exit 2
cat >k.cu <<'CU'
#include <cuda_runtime.h>
__global__ void k(int* p) { p[threadIdx.x] = 2 * threadIdx.x; }
extern "C" int run() {
    int* d = nullptr;
    if (cudaMalloc(&d, 32 * sizeof(int)) != cudaSuccess) return -1;
    k<<<1, 32>>>(d);
    if (cudaDeviceSynchronize() != cudaSuccess) return -2;
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    int s = 0;
    for (int v : h) s += v;
    return s; // 992
}
CU
nvcc -shared -Xcompiler -fPIC k.cu -o k.so -gencode arch=compute_90,code=sm_90 || exit 2
objcopy --rename-section .nv_fatbin=.rodata.fatx k.so renamed.so || exit 2
nvcc --fatbin k.cu -o decoy.fatbin -gencode arch=compute_100,code=sm_100 || exit 2
objcopy --add-section .nv_fatbin=decoy.fatbin renamed.so decoy.so || exit 2
for so in k.so renamed.so decoy.so; do
  echo "== $so"
  listing=$("$F" list "$so" 2>&1)
  echo "$listing"
  "$F" verify "$so" --arch-list 9.0 --allow-extra >/dev/null 2>&1; echo "verify --arch-list 9.0: exit $?"
  "$F" verify "$so" --arch-list 10.0 >/dev/null 2>&1; echo "verify --arch-list 10.0: exit $?"
  python3 -c "import ctypes,sys; print('kernel on the GPU returned', ctypes.CDLL(sys.argv[1]).run())" "./$so"
done
