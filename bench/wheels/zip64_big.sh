#!/usr/bin/env bash
# zip64 past 4 GiB, end to end (docs/wheels.md): a wheel whose first member is 4.2 GiB of zeros
# (stored: its size needs zip64) and whose module comes after it (its offset needs zip64) is
# stamped, then read by `list` and `verify` (RECORD checked over all 4.2 GiB), `unzip -t` and
# Python's zipfile (every member's CRC). Too large for the test command (8.5 GB written, a minute
# or two); run by hand where the disk has room:
#   bench/wheels/zip64_big.sh NVCC_FORGE [WORKDIR]
# Prints what each step says; exit 1 when one fails. No timing assertions.
set -euo pipefail
FORGE="$(realpath "${1:?usage: zip64_big.sh NVCC_FORGE [WORKDIR]}")"
WORK="${2:-/tmp/nvcc-forge-zip64-big}"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$WORK"
export TMPDIR="$WORK"
wheel="$WORK/big-1.0-py3-none-any.whl"
rm -f "$wheel"
echo "== writing $wheel" >&2
python3 - "$wheel" "$HERE/../fuzz" <<'PY'
import base64, hashlib, sys, zipfile
sys.path.insert(0, sys.argv[2])
from make_corpus import elf, entry, fatbin
cubin = elf([(".text.k", 1, b"\0" * 16), (".nv.compat", 0x70000086, bytes([2, 9, 1, 0]))],
            machine=190, e_flags=0x06005A02, abiversion=8)
module = elf([(".nv_fatbin", 1, fatbin([entry(2, 90, 0x100011, cubin)]))])
def row(name, h, n):
    return f"{name},sha256={base64.urlsafe_b64encode(h.digest()).rstrip(b'=').decode()},{n}\n"
size = (4 << 30) + (192 << 20)  # a whole number of chunks
chunk = b"\0" * (64 << 20)
rows = ""
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    h = hashlib.sha256()
    with z.open(zipfile.ZipInfo("big/zeros.bin"), "w", force_zip64=True) as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
            h.update(chunk)
    rows += row("big/zeros.bin", h, size)
    z.writestr("big/_C.so", module)
    rows += row("big/_C.so", hashlib.sha256(module), len(module))
    metadata = b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\n"
    z.writestr("big-1.0.dist-info/METADATA", metadata)
    rows += row("big-1.0.dist-info/METADATA", hashlib.sha256(metadata), len(metadata))
    z.writestr("big-1.0.dist-info/RECORD", rows + "big-1.0.dist-info/RECORD,,\n")
PY
status=0
step() { # NAME CMD...
  local name="$1"
  shift
  if out="$("$@" 2>&1)"; then echo "ok    $name" >&2; else echo "FAIL  $name (exit $?)" >&2; status=1; fi
  tail -n 3 <<<"$out" | sed 's/^/      /' >&2
}
step "stamp" "$FORGE" stamp "$wheel" --arch-list 9.0
step "list (the module past 4 GiB)" "$FORGE" list "$wheel"
step "verify (RECORD over 4.2 GiB)" "$FORGE" verify "$wheel" --arch-list 9.0
step "unzip -t" unzip -tq "$wheel"
step "python zipfile -t" python3 -m zipfile -t "$wheel"
python3 - "$wheel" <<'PY' >&2 || status=1
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist():
    print(f"      {i.filename}: {i.file_size} bytes at offset {i.header_offset}")
so = z.getinfo("big/_C.so")
assert so.header_offset > 0xFFFFFFFF and z.getinfo("big/zeros.bin").file_size > 0xFFFFFFFF
print("ok    Python's zipfile reads the module's offset past 4 GiB and the 4.2 GiB size")
PY
rm -f "$wheel"
exit $status
