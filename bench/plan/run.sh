#!/usr/bin/env bash
# plan vs the real build, side by side in one run: the same build command (nvcc -shared per heavy
# TU, a seven-target -gencode list, JOBS TUs at a time as ninja or MAX_JOBS would), once for real
# through the wrapper's shim and once under `nvcc-forge plan` with an empty stub cache; then plan
# once more, its stubs kept from the first (issue: plan <= 5% of the real build).
#   bench/plan/run.sh [FORGE] [TUS] [KERNELS] [DEPTH] [JOBS]
# FORGE defaults to build/dev/wrapper/nvcc-forge, JOBS to the number of CPUs. Prints one summary
# line: real s, plan s, ratio, the stub compile's duration_ms, the second plan, both verdicts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
forge=${1:-$here/../../build/dev/wrapper/nvcc-forge}
forge=$(realpath "$forge")
# A carried install prefix (the GPU machine's .devcarry/bin/nvcc-forge): its libraries beside it.
[ -d "$(dirname "$forge")/../lib" ] &&
    export LD_LIBRARY_PATH="$(dirname "$forge")/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tus=${2:-2} kernels=${3:-2} depth=${4:-300} jobs=${5:-$(nproc)}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuda=$(dirname "$(dirname "$(realpath "$nvcc")")")
work=$(mktemp -d /tmp/forge-plan-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
list="7.5 8.0 8.6 8.9 9.0 10.0 12.0"
# Both runs' caches (the wrapper's caps, plan's stubs) start empty, here, not in the caller's.
export NVCC_FORGE_CACHE_DIR="$work/cache"

python3 "$here/make_heavy.py" "$work/src" "$tus" "$kernels" "$depth"
cat > "$work/build.py" <<PY
import os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
src, out, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
gencode = []
for cc in "75 80 86 89 90 100 120".split():
    gencode += ["-gencode", f"arch=compute_{cc},code=sm_{cc}"]
def build(f):
    return subprocess.call(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3",
                            "-ftemplate-depth=2000", os.path.join(src, f), "-o",
                            os.path.join(out, f[:-3] + ".so")] + gencode)
with ThreadPoolExecutor(jobs) as pool:
    sys.exit(1 if any(pool.map(build, sorted(os.listdir(src)))) else 0)
PY
"$forge" shim --cuda-home "$cuda" --out "$work/shim" >/dev/null

echo "load before: $(uptime)"
t0=$(date +%s.%N)
PATH="$work/shim/bin:$PATH" CUDA_HOME="$work/shim" NVCC_FORGE_ARCH_LIST="$list" \
    python3 "$work/build.py" "$work/src" "$work/real" "$jobs"
t1=$(date +%s.%N)
(cd "$work" && "$forge" plan --arch-list "$list" --gate 'plan/*.so' --format json \
    -- python3 "$work/build.py" "$work/src" "$work/plan" "$jobs" > "$work/plan.json") || true
t2=$(date +%s.%N)
rm -rf "$work/plan"
(cd "$work" && "$forge" plan --arch-list "$list" --gate 'plan/*.so' --format json \
    -- python3 "$work/build.py" "$work/src" "$work/plan" "$jobs" > "$work/plan2.json") || true
t3=$(date +%s.%N)
echo "load after: $(uptime)"

real_v=$("$forge" verify "$work"/real/*.so --arch-list "$list" --format json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["verdict"])' || true)
python3 - "$t0" "$t1" "$t2" "$t3" "$tus" "$kernels" "$depth" "$jobs" "$real_v" "$work" <<'PY'
import json, sys
t0, t1, t2, t3 = map(float, sys.argv[1:5])
tus, kernels, depth, jobs, real_v, work = sys.argv[5:]
plans = [json.load(open(f"{work}/{n}.json")) for n in ("plan", "plan2")]
verdict = [(p["gate"] or {}).get("verdict") for p in plans]
stub_s = max(c["duration_ms"] for c in plans[0]["calls"]) / 1000
real, plan, plan2 = t1 - t0, t2 - t1, t3 - t2
print(f"TUs={tus} kernels={kernels} depth={depth} targets=7 jobs={jobs}: real {real:.1f} s, "
      f"plan {plan:.1f} s (slowest call {stub_s:.1f} s), plan/real {100 * plan / real:.2f}%; "
      f"second plan (stubs kept) {plan2:.1f} s, {100 * plan2 / real:.2f}%; "
      f"verdict real={real_v} plan={verdict[0]} plan2={verdict[1]}")
PY
