#!/usr/bin/env bash
# Benchmark of `nvcc-forge audit`: generates a fleet of COUNT wheels (small .so files with real
# fatbins, built once with nvcc and copied with per-wheel variation), stamps some, puts some in
# the ledger only, corrupts a few, then times `audit --jobs 1` and `audit --jobs 2` over the same
# fleet in one run and writes wheels/second to the "Audit" section of bench/RESULTS.md.
#   bench/audit/run.sh NVCC_FORGE [WORKDIR]
# Env: COUNT (500), REPEAT (3, best of), NVCC (/usr/local/cuda/bin/nvcc), RESULTS (the
# RESULTS.md to update; default bench/RESULTS.md next to this script), MEMORY_COUNTS (e.g.
# "680 6800": peak memory of `audit --format json` at those fleet sizes) with BEFORE (another
# nvcc-forge measured beside this one). No assertions: numbers.
set -euo pipefail
FORGE="$(realpath "${1:?usage: run.sh NVCC_FORGE [WORKDIR]}")"
WORK="${2:-/tmp/nvcc-forge-bench-audit}"
COUNT="${COUNT:-500}"; REPEAT="${REPEAT:-3}"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
HERE="$(cd "$(dirname "$0")" && pwd)"
RESULTS="${RESULTS:-$HERE/../RESULTS.md}"
mkdir -p "$WORK/so"

# Two real extensions: one carrying "8.0 9.0+PTX", one carrying only sm_80 (a wrong wheel).
if [[ ! -f "$WORK/so/good.so" || ! -f "$WORK/so/narrow.so" ]]; then
  cat > "$WORK/so/k.cu" <<'EOF'
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
__global__ void shift(float* x, float b) { x[threadIdx.x] += b; }
extern "C" void launch(float* x) { scale<<<1, 32>>>(x, 2.0f); shift<<<1, 32>>>(x, 1.0f); }
EOF
  echo "== nvcc: building the two extensions" >&2
  "$NVCC" -shared -cudart shared -Xcompiler -fPIC -o "$WORK/so/good.so" "$WORK/so/k.cu" \
    -gencode arch=compute_80,code=sm_80 -gencode "arch=compute_90,code=[sm_90,compute_90]"
  "$NVCC" -shared -cudart shared -Xcompiler -fPIC -o "$WORK/so/narrow.so" "$WORK/so/k.cu" \
    -gencode arch=compute_80,code=sm_80
fi

# make_fleet COUNT FLEET LEDGER: COUNT wheels in FLEET, a quarter stamped, a quarter in LEDGER.
make_fleet() {
  local count="$1" fleet="$2" ledger="$3" stamped=0 w
  rm -rf "$fleet" "$ledger"
  echo "== generating $count wheels in $fleet" >&2
  python3 - "$WORK/so" "$fleet" "$ledger" "$count" <<'EOF'
import base64, csv, hashlib, io, json, os, sys, zipfile
so_dir, fleet, ledger, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
good = open(os.path.join(so_dir, "good.so"), "rb").read()
narrow = open(os.path.join(so_dir, "narrow.so"), "rb").read()

def line(name, data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, "sha256=" + h, str(len(data))]

stamp_list, ledger_lines = [], []
for i in range(count):
    dist = f"pkg{i:04d}"
    # Every 10th wheel is wrong (sm_80 only); the .so gets a per-wheel trailer so no two are equal.
    so = (narrow if i % 10 == 3 else good) + f"\0variant {i}\0".encode()
    di = f"{dist}-1.0.dist-info"
    members = [(f"{dist}/__init__.py", f"# {dist}\n".encode()), (f"{dist}/_C.so", so),
               (f"{dist}/ops/_ops.so", so), (f"{di}/METADATA", f"Name: {dist}\nVersion: 1.0\n".encode()),
               (f"{di}/WHEEL", b"Wheel-Version: 1.0\n"), (f"{di}/top_level.txt", f"{dist}\n".encode())]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for n, d in members: w.writerow(line(n, d))
    w.writerow([f"{di}/RECORD", "", ""])
    sub = os.path.join(fleet, f"batch{i // 100}")
    os.makedirs(sub, exist_ok=True)
    name = f"{dist}-1.0-cp312-cp312-linux_x86_64.whl"
    path = os.path.join(sub, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members: z.writestr(n, d)
        z.writestr(f"{di}/RECORD", buf.getvalue())
    kind = i % 4
    if i % 50 == 7:  # a few corrupt wheels: the central directory cut off
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])
    elif kind == 0:
        stamp_list.append(path)
    elif kind == 1:
        ledger_lines.append(json.dumps({"wheel": name, "arch_list": "8.0 9.0+PTX", "build_epoch": 1}))
    # kind 2, 3: no provenance
open(ledger, "w").write("\n".join(ledger_lines) + "\n")
open(fleet + ".to_stamp.txt", "w").write("\n".join(stamp_list) + "\n")
EOF
  while read -r w; do
    [[ -z "$w" ]] && continue
    "$FORGE" stamp "$w" --arch-list "8.0 9.0+PTX" >/dev/null
    stamped=$((stamped + 1))
  done < "$fleet.to_stamp.txt"
  echo "== stamped $stamped wheels, $(wc -l < "$ledger") ledger lines" >&2
}

FLEET="$WORK/fleet"
LEDGER="$WORK/ledger.jsonl"
make_fleet "$COUNT" "$FLEET" "$LEDGER"

# best_ms JOBS -> best wall milliseconds of REPEAT runs
best_ms() {
  local best="" t0 t1 ms
  for _ in $(seq 1 "$REPEAT"); do
    t0="$(date +%s%N)"
    "$FORGE" audit "$FLEET" --ledger "$LEDGER" --arch-list "8.0 9.0+PTX" --jobs "$1" \
      --format json > "$WORK/audit_$1.json" 2>/dev/null || true
    t1="$(date +%s%N)"
    ms="$(( (t1 - t0) / 1000000 ))"
    [[ -z "$best" || "$ms" -lt "$best" ]] && best="$ms"
  done
  echo "$best"
}
ms1="$(best_ms 1)"
ms2="$(best_ms 2)"
cmp -s "$WORK/audit_1.json" "$WORK/audit_2.json" || echo "WARNING: --jobs 1 and --jobs 2 differ" >&2
summary="$(python3 -c '
import collections, json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["entries"] if isinstance(doc, dict) else doc  # the streamed report, or a flat array
c = collections.Counter(r["status"] for r in rows)
print(", ".join(f"{k} {v}" for k, v in sorted(c.items())))' "$WORK/audit_1.json")"
files="$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(len(d["entries"] if isinstance(d, dict) else d))' "$WORK/audit_1.json")"
rate() { python3 -c "print(f'{$files / max($1, 1) * 1000:.0f}')"; }
wps1="$(rate "$ms1")"; wps2="$(rate "$ms2")"
cpus="$(nproc)"
load="$(cut -d' ' -f1-3 /proc/loadavg)"
build="$(grep -m1 CMAKE_BUILD_TYPE "$(dirname "$FORGE")/../CMakeCache.txt" 2>/dev/null | cut -d= -f2 || true)"
printf "%-10s %10s %14s\n" "jobs" "best ms" "wheels/s"
printf "%-10s %10s %14s\n" 1 "$ms1" "$wps1" 2 "$ms2" "$wps2"
echo "statuses: $summary"

# Peak memory by fleet size: `audit --format json --jobs 2` at each of MEMORY_COUNTS, this build
# and (BEFORE=path) another one side by side; /usr/bin/time's maximum resident set.
memory_rows=""
for n in ${MEMORY_COUNTS:-}; do
  make_fleet "$n" "$WORK/fleet-$n" "$WORK/ledger-$n.jsonl"
  for which in ${BEFORE:+before} after; do
    exe="$FORGE"
    [[ "$which" == before ]] && exe="$BEFORE"
    /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$exe" audit "$WORK/fleet-$n" --ledger \
      "$WORK/ledger-$n.jsonl" --arch-list "8.0 9.0+PTX" --jobs 2 --format json >/dev/null 2>&1 || true
    read -r wall kb < <(tail -n 1 "$WORK/time.txt") # after "Command exited with ..."
    echo "memory: $n wheels, $which: ${wall} s, $((kb >> 10)) MiB" >&2
    memory_rows+="| $n | $which | $wall | $((kb >> 10)) |"$'\n'
  done
done
memory_table=""
if [[ -n "$memory_rows" ]]; then
  memory_table="
Peak memory by fleet size (\`MEMORY_COUNTS\`, \`audit --format json --jobs 2\`, maximum resident
set from /usr/bin/time, one run each; \`before\`: \`BEFORE\`, a build that held every result to the
end and repeated the policy in each):

| wheels | build | wall (s) | peak (MiB) |
|-------:|-------|---------:|-----------:|
$memory_rows"
fi

section="$(cat <<EOF
## Audit

\`bench/audit/run.sh\` ($(date -u +%Y-%m-%d), $cpus CPUs shared with other builds, load average
$load at the end, ${build:-unknown} build, best of $REPEAT runs, one command run for both rows):
$files generated wheels, each with two copies of a small real .so ($(stat -c %s "$WORK/so/good.so") bytes,
\`-cudart shared\`, fatbin sm_80 + sm_90 + compute_90, or sm_80 only for every 10th wheel, built
once with nvcc and varied per wheel); a quarter stamped, a quarter in the ledger only, every 50th
cut in half. Statuses: $summary.

| jobs | wall (ms) | wheels/s |
|-----:|----------:|---------:|
| 1 | $ms1 | $wps1 |
| 2 | $ms2 | $wps2 |
$memory_table
EOF
)"
python3 - "$RESULTS" "$section" <<'EOF'
import os, re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pattern = re.compile(r"^## Audit\n.*?(?=^## |\Z)", re.S | re.M)
if pattern.search(text):
    text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
else:
    text = text.rstrip() + "\n\n" + section
open(path, "w").write(text)
EOF
echo "== wrote the Audit section of $RESULTS" >&2
