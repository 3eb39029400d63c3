#!/usr/bin/env bash
# Downloads (once; cached in DIR) the Windows and Linux wheels of cuFFT 11.4.1.4 and cuSPARSE
# 12.5.10.65, whose libraries carry fatbin containers outside the registered sections
# (docs/fatbin-format.md, "Fatbins outside the registered sections"), and extracts the four
# libraries the binary.embedded.* cases read into DIR/lib; the wheels (1.1 GB) are then deleted,
# so the cache holds only what the cases read (1.5 GB). Used by .ci/install-deps.sh and, when the
# cache is empty, by the cases themselves. Exit 0 when the four libraries are in DIR/lib, 1 when
# they cannot be fetched (no network): the cases then skip, saying why.
#   fetch_embedded_truth.sh DIR
set -euo pipefail
dir="${1:?usage: fetch_embedded_truth.sh DIR}"
mkdir -p "$dir/lib"
exec 9>"$dir/.lock"
flock 9
want=(libcufft.so.11 cufft64_11.dll libcusparse.so.12 cusparse64_12.dll)
have() { for f in "${want[@]}"; do [ -s "$dir/lib/$f" ] || return 1; done; }
have && exit 0
only=()
for f in "${want[@]}"; do only+=(--only "$f"); done
wheels=()
for spec in nvidia-cufft-cu12==11.4.1.4 nvidia-cusparse-cu12==12.5.10.65; do
  wheels+=("$spec@win_amd64" "$spec@manylinux2014_x86_64")
done
python3 "$(dirname "${BASH_SOURCE[0]}")/wheel_libs.py" "$dir/lib" "${only[@]}" "${wheels[@]}" || exit 1
have
