#!/usr/bin/env bash
# Downloads (once; cached in DIR) NVIDIA library wheels with device code for CUDA 12 and 13 and
# three platforms, and keeps only their shared libraries, in DIR/lib/<wheel tag>/ (the wheels are
# deleted). binary.conformance.libraries holds list, list --toolkit and coverage FILE against
# cuobjdump on each (docs/fatbin-format.md, "The conformance matrix": why this set). With the
# cuFFT/cuSPARSE libraries of fetch_embedded_truth.sh it covers CUDA 12 and 13, Linux x86_64 and
# aarch64 and Windows. Exit 0 when DIR/lib/.complete matches this script, 1 when the wheels cannot
# be fetched (no network): the case then skips, saying why.
#   fetch_library_truth.sh DIR
set -euo pipefail
dir="${1:?usage: fetch_library_truth.sh DIR}"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
# spec, then the pip platforms it is fetched for (about 330 MB of wheels, 525 MB kept).
wanted=(
  "nvidia-nvjpeg==13.3.2.43 manylinux2014_x86_64 manylinux2014_aarch64 win_amd64 win_arm64"
  "nvidia-nvjpeg-cu12==12.4.0.76 manylinux2014_x86_64 manylinux2014_aarch64 win_amd64"
  "nvidia-curand==10.4.5.25 manylinux_2_27_x86_64 manylinux_2_27_aarch64 win_amd64"
  "nvidia-curand-cu12==10.3.10.19 manylinux_2_27_aarch64"
)
stamp="$(printf '%s\n' "${wanted[@]}" | sha256sum | cut -d' ' -f1)"
[ -f "$dir/lib/.complete" ] && [ "$(cat "$dir/lib/.complete")" = "$stamp" ] && exit 0
rm -rf "$dir/lib"
wheels=()
for row in "${wanted[@]}"; do
  read -r spec platforms <<<"$row"
  for platform in $platforms; do wheels+=("$spec@$platform"); done
done
python3 "$(dirname "${BASH_SOURCE[0]}")/wheel_libs.py" "$dir/lib" --by-wheel "${wheels[@]}" || exit 1
echo "$stamp" > "$dir/lib/.complete"
