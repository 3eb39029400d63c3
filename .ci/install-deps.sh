#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine of this kind:
# Debian packages (compilers and libraries) and, from PyPI, the NVIDIA tools the tests use as a
# reference reader (cuobjdump) and as a second toolkit (CUDA 12.8). Idempotent.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
tools_dir="${NVCC_FORGE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcc-forge-tools}"

apt_pkgs=(build-essential cmake ninja-build pkg-config ccache git python3 python3-pip
          libyaml-cpp-dev libboost-program-options-dev libboost-dev
          libfmt-dev nlohmann-json3-dev liblz4-dev libzstd-dev libzip-dev
          libgtest-dev libgmock-dev clang-14 clang-tidy-14 clang-format-14 libclang-rt-14-dev zip unzip util-linux python3-yaml python3-venv
          sccache)
# The aarch64 lane (.ci/cross-aarch64): the cross compiler, qemu-user and the arm64 builds of the
# libraries. libyaml-cpp-dev is missing here: it is not Multi-Arch: same, so its arm64 package
# would replace the x86-64 one; it is unpacked into the tools directory below instead.
apt_pkgs+=(crossbuild-essential-arm64 qemu-user-static
           libyaml-cpp0.7:arm64 libboost-program-options-dev:arm64 libboost-dev:arm64 libfmt-dev:arm64
           liblz4-dev:arm64 libzstd-dev:arm64 libzip-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
           libc6-dev:arm64)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: dpkg --add-architecture arm64"
  dpkg --add-architecture arm64
fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: no CUDA toolkit (nvcc) found; this machine kind ships CUDA 13.0 at /usr/local/cuda" >&2
  exit 2
fi

py=python3
mkdir -p "$tools_dir"
# libyaml-cpp-dev:arm64 (headers, libyaml-cpp.a, its CMake package) unpacked, not installed.
yaml_arm64="$tools_dir/aarch64-yaml-cpp"
if [ ! -f "$yaml_arm64/usr/lib/aarch64-linux-gnu/libyaml-cpp.a" ]; then
  echo "install-deps: apt-get download libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64 -> $yaml_arm64"
  debs="$(mktemp -d)"
  (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64)
  rm -rf "$yaml_arm64.tmp"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$yaml_arm64.tmp"; done
  rm -rf "$debs" "$yaml_arm64"
  mv "$yaml_arm64.tmp" "$yaml_arm64"
fi
# cuobjdump: the reference reader the fatbin tests compare against.
if [ ! -x "$tools_dir/cuobjdump/nvidia/cu13/bin/cuobjdump" ] && [ ! -x "$tools_dir/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump" ]; then
  echo "install-deps: pip install nvidia-cuda-cuobjdump -> $tools_dir/cuobjdump"
  $py -m pip install -q --disable-pip-version-check --no-deps --target "$tools_dir/cuobjdump" nvidia-cuda-cuobjdump
fi
# A second, older toolkit for the multi-toolkit bundle tests.
if [ -x "$root/tests/integration/toolkits/install_cu128.sh" ] || [ -f "$root/tests/integration/toolkits/install_cu128.sh" ]; then
  bash "$root/tests/integration/toolkits/install_cu128.sh" "$tools_dir/cu128" >/dev/null
fi
# A second CUDA 13.x toolkit (13.1) for the two-toolkit bundle tests: PyPI has no CUDA 12.8 nvcc
# (the nvidia-cuda-nvcc-cu12 wheels ship ptxas and libnvvm only), the 13.x wheels are complete.
if [ -f "$root/tests/integration/toolkits/install_cu13x.sh" ]; then
  bash "$root/tests/integration/toolkits/install_cu13x.sh" "$tools_dir/cu131" >/dev/null
fi
# The 12.x/13.2 compilers whose --list-gpu-code / ptxas tables policy/arch_policy.yml records:
# the policy.nvcc_tables test checks every nvcc_supported row against them.
if [ -f "$root/tests/integration/policy/install_nvcc_tables.sh" ]; then
  bash "$root/tests/integration/policy/install_nvcc_tables.sh" "$tools_dir/nvcc-tables" >/dev/null
fi
# The Windows/Linux wheel pair of one NVIDIA release (about 140 MB, cached): the PE reader's
# truth test (binary.pe.curand_truth) compares their device code entry for entry.
bash "$root/tests/integration/binary/fetch_pe_truth.sh" "$tools_dir/pe-truth" \
  || echo "install-deps: cannot fetch the PE truth wheels; binary.pe.curand_truth will skip" >&2
echo "install-deps: ok"
