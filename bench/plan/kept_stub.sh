#!/usr/bin/env bash
# The cost of a kept stub (a cache hit of plan's stand-in), for two nvcc-forge binaries side by
# side in one run: BEFORE (e.g. main's build) and AFTER. Each plans the same build, TUS calls of
# one flag set (`nvcc -shared`, seven -gencode targets: a one-megabyte stub), once to fill its
# stub cache, then ROUNDS times alternated with the other; every call of those rounds is a cache
# hit. Prints, per binary, the mean, median and 90th percentile of the calls' duration_ms (the
# compile log's own timing of one stand-in call, whole milliseconds) and the median wall time of
# a whole plan run, and the ratio AFTER / BEFORE of that median.
#   bench/plan/kept_stub.sh BEFORE AFTER [TUS] [ROUNDS]
set -euo pipefail
before=$(realpath "$1") after=$(realpath "$2") tus=${3:-20} rounds=${4:-5}
work=$(mktemp -d /tmp/forge-kept-stub.XXXXXX)
trap 'rm -rf "$work"' EXIT
list="7.5 8.0 8.6 8.9 9.0 10.0 12.0"
gencode=""
for cc in 75 80 86 89 90 100 120; do gencode="$gencode -gencode arch=compute_$cc,code=sm_$cc"; done
mkdir -p "$work/src"
for i in $(seq "$tus"); do printf '#error never compiled under plan\n' > "$work/src/k$i.cu"; done
cat > "$work/build.sh" <<SH
for f in "$work"/src/*.cu; do
  nvcc -shared -Xcompiler -fPIC $gencode "\$f" -o "\$1/\$(basename "\$f" .cu).so" || exit 1
done
SH
plan() { # plan FORGE NAME ROUND
    mkdir -p "$work/out-$2-$3"
    local t0 t1
    t0=$(date +%s.%N)
    NVCC_FORGE_CACHE_DIR="$work/cache-$2" "$1" plan --arch-list "$list" --format json \
        -- sh "$work/build.sh" "$work/out-$2-$3" > "$work/$2-$3.json"
    t1=$(date +%s.%N)
    echo "$t0 $t1" > "$work/$2-$3.wall"
}
echo "load before: $(uptime)"
plan "$before" before warm
plan "$after" after warm
for r in $(seq "$rounds"); do
    plan "$before" before "$r"
    plan "$after" after "$r"
done
echo "load after: $(uptime)"
python3 - "$work" "$rounds" "$tus" <<'PY'
import json, statistics, sys
work, rounds, tus = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def durations(name):
    out = []
    for r in range(1, rounds + 1):
        j = json.load(open(f"{work}/{name}-{r}.json"))
        assert j["verdict"] == "pass", j["reason"]
        out += [c["duration_ms"] for c in j["calls"]]
    return sorted(out)
wall = {}
for name in ("before", "after"):
    d = durations(name)
    runs = [open(f"{work}/{name}-{r}.wall").read().split() for r in range(1, rounds + 1)]
    wall[name] = statistics.median(float(b) - float(a) for a, b in runs)
    print(f"{name}: {len(d)} kept-stub calls ({tus} TUs x {rounds} rounds): mean "
          f"{statistics.mean(d):.2f} ms, median {statistics.median(d):.1f} ms, p90 "
          f"{d[int(0.9 * (len(d) - 1))]} ms; a plan run {wall[name]:.3f} s (median)")
print(f"after / before (a plan run, median): {wall['after'] / wall['before']:.2f}")
PY
