#!/usr/bin/env bash
# On the GPU machine: builds a bundle of real kernels with CUDA 12.8 (sm_90/100/120) and 13.0
# (sm_110), checks it with verify-bundle, then loads it with nvcc_forge/load_fatbin.h and runs a
# kernel: an H200 (sm_90) must take the sm_90 cubin built by 12.8 (docs/arch-rules.md).
#
#   usage: bench/bundle/gpu_load.sh NVCC_FORGE CU128 [OUT_DIR]
#     NVCC_FORGE  the nvcc-forge binary
#     CU128       a CUDA 12.8 toolkit: its root, its bin/nvcc, or a pip --target dir holding
#                 nvidia/cuda_nvcc/bin/nvcc. CUDA 13.0 is taken from /usr/local/cuda (or CUDA_13).
#     OUT_DIR     where the header, the program and the log go (default: a temp dir)
#   exit 0 ok; 1 wrong blob or result; 2 no blob loads / bad setup; 3 no GPU
set -euo pipefail
forge=${1:?usage: gpu_load.sh NVCC_FORGE CU128 [OUT_DIR]}
cu128=${2:?usage: gpu_load.sh NVCC_FORGE CU128 [OUT_DIR]}
out=${3:-$(mktemp -d)}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cuda13=${CUDA_13:-/usr/local/cuda}
mkdir -p "$out"
log="$out/gpu_load.log"
exec > >(tee "$log") 2>&1

forge=$(realpath "$forge")
[[ -x $forge ]] || { echo "no nvcc-forge at $forge"; exit 2; }
if [[ -x $cu128/bin/nvcc ]]; then cand=$cu128
elif [[ -x $cu128/nvidia/cuda_nvcc/bin/nvcc ]]; then cand=$cu128/nvidia/cuda_nvcc
elif [[ -f $cu128 && -x $cu128 ]]; then cand=$cu128
else
  echo "no nvcc in $cu128 (note: PyPI's nvidia-cuda-nvcc-cu12 wheels ship ptxas only, no nvcc)"
  exit 2
fi
export NVCC_FORGE_NVCC_CANDIDATES="$cand:$cuda13"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv || true

echo "== toolkits"
"$forge" toolkits

cd "$out"
# Written here, not taken from the install: the bench states exactly what it expects.
cat > sm_toolkit.yml <<'YML'
90: "==12.8"
100: "==12.8"
110: ">=13.0"
120: "==12.8"
YML
cat > layout.yml <<'YML'
blobs:
  - {toolkit: "12.8", sms: [90, 100, 120]}
  - {toolkit: "13.0", sms: [110]}
YML
echo "== bundle"
"$forge" bundle "$repo/tests/fixtures/bundle/kernels.cu" --sm 90,100,110,120 --sm-toolkit sm_toolkit.yml --symbol bundle \
  --out bundle_fatbin.h -v
echo "== verify-bundle"
"$forge" verify-bundle bundle_fatbin.h --layout layout.yml

echo "== build the loader"
libdir=""
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 "$cuda13/lib64/stubs"; do
  if [[ -e $d/libcuda.so || -e $d/libcuda.so.1 ]]; then libdir=$d; break; fi
done
[[ -n $libdir ]] || { echo "no libcuda"; exit 2; }
cudalib=-lcuda
[[ -e $libdir/libcuda.so ]] || cudalib=$libdir/libcuda.so.1
g++ -std=c++17 -O2 -Wall -I"$cuda13/include" -I"$repo/wrapper/include" -I. "$here/gpu_load.cpp" \
  -o gpu_load -L"$libdir" $cudalib

echo "== run"
sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' || true)
expect=""
case $sm in 90|100|120) expect=12.8 ;; 110) expect=13.0 ;; esac
set +e
EXPECT_TOOLKIT=$expect ./gpu_load
rc=$?
set -e
echo "gpu_load exit $rc (log: $log)"
exit $rc
