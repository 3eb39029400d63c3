# Sourced by the GPU-machine scripts (bench/gpu/device_run.sh, bench/gpu/plan_trial.sh): the
# carried install prefix in .devcarry/ (bin/nvcc-forge, libexec/nvcc-forge-tools, share/nvcc-forge,
# lib/*.so* the tools need), the output directory and the real toolkit.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
carry="$repo/.devcarry"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
F="$carry/bin/nvcc-forge"
OUT="${OUT:-/tmp/forge-out}"
mkdir -p "$OUT"
real_cuda="${CUDA_HOME:-/usr/local/cuda}"
