#!/usr/bin/env bash
# Does the PTX that -rdc objects carry (their __nv_relfatbin sections) run on a GPU newer than the
# device link's cubins? Builds caller.cu + helper.cu as in the conformance cell rdc_cross_tu
# (-arch=sm_80: SASS and PTX in each object; the device link's own fatbin), a host entry point,
# and runs it on this GPU; prints what `coverage` says of this GPU and what the runtime did.
#   rdc_ptx_trial.sh NVCC_FORGE OUTDIR
set -uo pipefail
F=$1 out=$2 src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../tests/fixtures/binary/conformance" && pwd)"
mkdir -p "$out" && cd "$out" || exit 2
cat >entry.cu <<'CU'
#include <cuda_runtime.h>
__global__ void call_helper(float* v);
extern "C" int run() {
    float* d = nullptr;
    if (cudaMalloc(&d, 32 * sizeof(float)) != cudaSuccess) return -1;
    cudaMemset(d, 0, 32 * sizeof(float));
    call_helper<<<1, 32>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    cudaFree(d);
    return static_cast<int>(e); // 0: ran; 209: cudaErrorNoKernelImageForDevice
}
CU
for arch in "-arch=sm_80" "-gencode=arch=compute_80,code=[sm_80,compute_80]"; do
  rm -f *.o x.so
  nvcc -c -rdc=true "$src/caller.cu" -o caller.o $arch -Xcompiler -fPIC &&
  nvcc -c -rdc=true "$src/helper.cu" -o helper.o $arch -Xcompiler -fPIC &&
  nvcc -c -rdc=true entry.cu -o entry.o $arch -Xcompiler -fPIC &&
  nvcc -dlink caller.o helper.o entry.o -o dl.o $arch -Xcompiler -fPIC &&
  g++ -shared caller.o helper.o entry.o dl.o -o x.so -L/usr/local/cuda/lib64 -lcudart_static -lcudadevrt || exit 2
  echo "== $arch"
  "$F" list x.so
  "$F" coverage x.so --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("coverage of 9.0:", [m["coverage"]["9.0"]["tier"] for m in d["extensions"] if m.get("coverage")])'
  python3 -c "import ctypes,sys; print('the kernel on this GPU: cudaError', ctypes.CDLL(sys.argv[1]).run())" ./x.so
done
