#!/usr/bin/env bash
# issue 14 on the GPU machine (torch there): `nvcc-forge plan` on a real public torch extension
# whose setup.py hard-codes or filters its targets, side by side with its real build through the
# shim, same list and mode: both verdicts and the wall-time ratio (for bench/RESULTS.md, "plan").
#   bench/gpu/plan_trial.sh SRC [GATE_GLOB] [LIST]
# SRC: the extension's source tree, carried (the machine has no internet), e.g. a `fetch` of
# Dao-AILab/fast-hadamard-transform or Dao-AILab/causal-conv1d copied under .devcarry/src/.
# Expects the carried install prefix in .devcarry/ as bench/gpu/device_run.sh does.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
carry="$repo/.devcarry"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
F="$carry/bin/nvcc-forge"
OUT="${OUT:-/tmp/forge-out}"
src=$(realpath "$1")
gate=${2:-'build/lib*/**/*.so'}
real_cuda="${CUDA_HOME:-/usr/local/cuda}"
list=${3:-$(NVCC_FORGE_REAL_NVCC="$real_cuda/bin/nvcc" "$F" resolve)}
mkdir -p "$OUT"
work=/tmp/forge-plan-trial
rm -rf "$work" && mkdir -p "$work"
cp -r "$src" "$work/real" && cp -r "$src" "$work/plan"
"$F" shim --cuda-home "$real_cuda" --out "$work/shim" >/dev/null
export MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$list}
echo "list: $list; TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST; $(uptime)"

t0=$(date +%s.%N)
(cd "$work/real" && PATH="$work/shim/bin:$PATH" CUDA_HOME="$work/shim" CUDA_PATH="$work/shim" \
   NVCC_FORGE_ARCH_LIST="$list" NVCC_FORGE_LOG="$OUT/plan_trial_real.jsonl" \
   python3 setup.py build_ext > "$OUT/plan_trial_real.log" 2>&1)
echo "real build exit $?"
t1=$(date +%s.%N)
(cd "$work/plan" && "$F" plan --arch-list "$list" --gate "$gate" --format json \
   -- python3 setup.py build_ext > "$OUT/plan_trial_plan.json" 2> "$OUT/plan_trial_plan.log")
echo "plan exit $?"
t2=$(date +%s.%N)

(cd "$work/real" && shopt -s globstar && "$F" verify $gate --arch-list "$list" --format json \
   > "$OUT/plan_trial_verify.json")
echo "verify on the real build exit $?"
python3 - "$t0" "$t1" "$t2" "$OUT" <<'PY'
import json, sys
t0, t1, t2 = map(float, sys.argv[1:4])
out = sys.argv[4]
plan = json.load(open(f"{out}/plan_trial_plan.json"))
real = json.load(open(f"{out}/plan_trial_verify.json"))
print(f"real {t1 - t0:.1f} s, plan {t2 - t1:.1f} s, plan/real {100 * (t2 - t1) / (t1 - t0):.2f}%")
print(f"verdict: plan gate {plan['gate']['verdict'] if plan['gate'] else None}, "
      f"verify on the real build {real['verdict']}; plan {plan['verdict']}: {plan['reason']}")
PY
