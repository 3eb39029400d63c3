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
for spec in nvidia-cufft-cu12==11.4.1.4 nvidia-cusparse-cu12==12.5.10.65; do
  for platform in win_amd64 manylinux2014_x86_64; do
    python3 -m pip download -q --disable-pip-version-check --no-cache-dir --no-deps \
      --only-binary=:all: --platform "$platform" -d "$dir/wheels" "$spec" || exit 1
  done
done
# One member each, streamed out of its wheel (zipfile reads the member, not the archive).
python3 - "$dir" <<'PY' || exit 1
import glob, os, shutil, sys, zipfile
d = sys.argv[1]
want = {"libcufft.so.11", "cufft64_11.dll", "libcusparse.so.12", "cusparse64_12.dll"}
for whl in glob.glob(os.path.join(d, "wheels", "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = os.path.basename(info.filename)
            if name in want:
                tmp = os.path.join(d, "lib", name + ".part")
                with z.open(info) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(tmp, os.path.join(d, "lib", name))
PY
rm -rf "$dir/wheels"
have
