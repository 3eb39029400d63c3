#!/usr/bin/env bash
# Installs CUDA 12.8's compiler packages from PyPI into DIR (idempotent) and prints the nvcc to put
# in NVCC_FORGE_NVCC_CANDIDATES -- when there is one.
#
#   usage: install_cu128.sh DIR        exit 0: stdout is the nvcc path, or empty when the
#                                              packages hold no nvcc (see below; stderr says so)
#                                      exit 2: pip failed
#
# What PyPI has (checked 2026-11 with pip, for every 12.x release of nvidia-cuda-nvcc-cu12,
# 12.0.76 .. 12.9.86): the wheel ships nvidia/cuda_nvcc/bin/ptxas, nvvm/lib64/libnvvm.so,
# nvvm/libdevice and include/crt -- but NO bin/nvcc, no cicc, cudafe++, fatbinary or nvlink. So
# no CUDA 12.x toolkit that can compile a .cu file can be installed from PyPI; bundle tests that
# need 12.8 skip unless a real 12.8 toolkit (runfile/deb/conda) is pointed at by
# NVCC_FORGE_NVCC_CANDIDATES. From CUDA 13.0 on, the unsuffixed wheels (nvidia-cuda-nvcc,
# nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime, nvidia-cuda-cccl) do form a working toolkit
# under nvidia/cu13/: see install_cu13x.sh.
set -euo pipefail
dir=${1:?usage: install_cu128.sh DIR}
py=${PYTHON:-python3}
pkgs=(nvidia-cuda-nvcc-cu12==12.8.93 nvidia-cuda-runtime-cu12==12.8.90 nvidia-cuda-cccl-cu12==12.8.90)
stamp="$dir/.nvcc-forge-cu128-installed"
if [[ ! -f $stamp ]]; then
  mkdir -p "$dir"
  if ! "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir" "${pkgs[@]}" >&2; then
    echo "install_cu128.sh: pip install ${pkgs[*]} failed" >&2
    exit 2
  fi
  printf '%s\n' "${pkgs[@]}" > "$stamp"
fi
for nvcc in "$dir/nvidia/cuda_nvcc/bin/nvcc" "$dir/nvidia/cu12/bin/nvcc"; do
  if [[ -x $nvcc ]] && grep -q 'release 12\.8' <<<"$("$nvcc" --version 2>/dev/null)"; then
    echo "$nvcc"
    exit 0
  fi
done
echo "install_cu128.sh: ${pkgs[0]} installed in $dir but holds no nvcc" \
     "(only $(cd "$dir/nvidia/cuda_nvcc" 2>/dev/null && ls bin 2>/dev/null | tr '\n' ' ')): no 12.8 compiler from PyPI" >&2
exit 0
