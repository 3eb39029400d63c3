#!/usr/bin/env bash
# plan vs the real build, side by side in one run: the same build command (nvcc -shared per heavy
# TU, a seven-target -gencode list), once for real through the wrapper's shim and once under
# `nvcc-forge plan`; wall seconds of each and their ratio (issue: plan <= 5% of the real build).
#   bench/plan/run.sh [FORGE] [TUS] [KERNELS] [DEPTH]
# FORGE defaults to build/dev/wrapper/nvcc-forge. Prints one summary line and the verdicts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
forge=${1:-$here/../../build/dev/wrapper/nvcc-forge}
forge=$(realpath "$forge")
tus=${2:-2} kernels=${3:-2} depth=${4:-300}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuda=$(dirname "$(dirname "$(realpath "$nvcc")")")
work=$(mktemp -d /tmp/forge-plan-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
list="7.5 8.0 8.6 8.9 9.0 10.0 12.0"

python3 "$here/make_heavy.py" "$work/src" "$tus" "$kernels" "$depth"
cat > "$work/build.py" <<PY
import os, subprocess, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
gencode = []
for cc in "75 80 86 89 90 100 120".split():
    gencode += ["-gencode", f"arch=compute_{cc},code=sm_{cc}"]
for f in sorted(os.listdir(src)):
    cmd = ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3", "-ftemplate-depth=2000",
           os.path.join(src, f), "-o", os.path.join(out, f[:-3] + ".so")] + gencode
    if subprocess.call(cmd) != 0:
        sys.exit(1)
PY
"$forge" shim --cuda-home "$cuda" --out "$work/shim" >/dev/null

echo "load before: $(uptime)"
t0=$(date +%s.%N)
PATH="$work/shim/bin:$PATH" CUDA_HOME="$work/shim" NVCC_FORGE_ARCH_LIST="$list" \
    python3 "$work/build.py" "$work/src" "$work/real"
t1=$(date +%s.%N)
(cd "$work" && "$forge" plan --arch-list "$list" --gate 'plan/*.so' --format json \
    -- python3 "$work/build.py" "$work/src" "$work/plan" > "$work/plan.json") || true
t2=$(date +%s.%N)
echo "load after: $(uptime)"

real_v=$("$forge" verify "$work"/real/*.so --arch-list "$list" --format json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["verdict"])' || true)
plan_v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gate"]["verdict"])' \
    "$work/plan.json")
python3 - "$t0" "$t1" "$t2" "$tus" "$kernels" "$depth" "$real_v" "$plan_v" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:4])
real, plan = t1 - t0, t2 - t1
print(f"TUs={sys.argv[4]} kernels={sys.argv[5]} depth={sys.argv[6]} targets=7: "
      f"real {real:.1f} s, plan {plan:.1f} s, plan/real {100 * plan / real:.2f}%; "
      f"verdict real={sys.argv[7]} plan={sys.argv[8]}")
PY
