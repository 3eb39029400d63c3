#!/usr/bin/env bash
# Downloads (once; cached in DIR) the two wheels of one NVIDIA library release whose device code
# the binary.pe.curand_truth case compares: Windows DLL against Linux .so. Used by
# .ci/install-deps.sh and, when the cache is empty, by the case itself. Exit 0 when both wheels
# are in DIR, 1 when they cannot be fetched (no network): the case then skips, saying why.
#   fetch_pe_truth.sh DIR
set -euo pipefail
dir="${1:?usage: fetch_pe_truth.sh DIR}"
spec="nvidia-curand-cu12==10.3.10.19"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
for platform in win_amd64 manylinux_2_27_x86_64; do
  if ! compgen -G "$dir/nvidia_curand_cu12-10.3.10.19-*-$platform.whl" >/dev/null; then
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform "$platform" -d "$dir" "$spec" || exit 1
  fi
done
