#!/usr/bin/env bash
# Installs a second, pip-only CUDA 13.x toolkit into DIR (idempotent) and prints its nvcc path,
# for the two-toolkit bundle test beside the machine's /usr/local/cuda (13.0).
#
#   usage: install_cu13x.sh DIR [VERSION]     VERSION: 13.1 (default; full versions pinned below)
#   exit 0: stdout is the nvcc path; 2: pip failed; 3: installed but nvcc does not compile
#
# Layout (nvidia-cuda-nvcc 13.x): DIR/nvidia/cu13/{bin/nvcc,bin/nvcc.profile,bin/ptxas,nvvm/bin/cicc,
# include,lib/libcudadevrt.a}. nvcc.profile finds everything relative to itself; no environment
# needed. nvidia-nvvm and nvidia-cuda-crt must be pinned to the same version: left to pip they
# resolve to the newest (13.5), which does not match nvcc 13.1.
set -euo pipefail
dir=${1:?usage: install_cu13x.sh DIR [13.1]}
want=${2:-13.1}
py=${PYTHON:-python3}
case $want in
  13.1) pkgs=(nvidia-cuda-nvcc==13.1.115 nvidia-nvvm==13.1.115 nvidia-cuda-crt==13.1.115
              nvidia-cuda-runtime==13.1.80 nvidia-cuda-cccl==13.1.115) ;;
  *) echo "install_cu13x.sh: no pinned package set for $want" >&2; exit 2 ;;
esac
stamp="$dir/.nvcc-forge-cu$want-installed"
if [[ ! -f $stamp ]]; then
  mkdir -p "$dir"
  if ! "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir" "${pkgs[@]}" >&2; then
    echo "install_cu13x.sh: pip install ${pkgs[*]} failed" >&2
    exit 2
  fi
  printf '%s\n' "${pkgs[@]}" > "$stamp"
fi
nvcc="$dir/nvidia/cu13/bin/nvcc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'extern "C" __global__ void k(int* p) { p[threadIdx.x] += 1; }' > "$tmp/k.cu"
if ! "$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -o "$tmp/k.fatbin" "$tmp/k.cu" >&2; then
  echo "install_cu13x.sh: $nvcc cannot compile" >&2
  exit 3
fi
echo "$nvcc"
