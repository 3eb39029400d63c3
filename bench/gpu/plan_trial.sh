#!/usr/bin/env bash
# issue 14 on the GPU machine (torch there): `nvcc-forge plan` on a real public torch extension
# whose setup.py hard-codes or filters its targets, side by side with its real build through the
# shim, same list and mode, plan's stub cache empty: both verdicts and the wall-time ratio, one
# summary line (for bench/RESULTS.md, "plan").
#   bench/gpu/plan_trial.sh SRC [GATE_GLOB] [LIST]
# SRC: the extension's source tree, carried (the machine has no internet), e.g. a `fetch` of
# Dao-AILab/fast-hadamard-transform or Dao-AILab/causal-conv1d copied under .devcarry/src/.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/carry.sh"
src=$(realpath "$1")
gate=${2:-'build/lib*/**/*.so'}
list=${3:-$(NVCC_FORGE_REAL_NVCC="$real_cuda/bin/nvcc" "$F" resolve)}
work=/tmp/forge-plan-trial
rm -rf "$work" && mkdir -p "$work"
cp -r "$src" "$work/real" && cp -r "$src" "$work/plan"
"$F" shim --cuda-home "$real_cuda" --out "$work/shim" >/dev/null
export MAX_JOBS=${MAX_JOBS:-$(nproc)} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$list}
# The wrapper's caps and plan's stubs start empty: the plan measured is a first one.
export NVCC_FORGE_CACHE_DIR="$work/cache"
echo "list: $list; TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST; MAX_JOBS=$MAX_JOBS;" \
     "NVCC_APPEND_FLAGS=${NVCC_APPEND_FLAGS:-}; $(uptime)"

t0=$(date +%s.%N)
(cd "$work/real" && PATH="$work/shim/bin:$PATH" CUDA_HOME="$work/shim" CUDA_PATH="$work/shim" \
   NVCC_FORGE_ARCH_LIST="$list" NVCC_FORGE_LOG="$OUT/plan_trial_real.jsonl" \
   python3 setup.py build_ext > "$OUT/plan_trial_real.log" 2>&1)
real_rc=$?
t1=$(date +%s.%N)
(cd "$work/plan" && "$F" plan --arch-list "$list" --gate "$gate" --format json \
   -- python3 setup.py build_ext > "$OUT/plan_trial_plan.json" 2> "$OUT/plan_trial_plan.log")
plan_rc=$?
t2=$(date +%s.%N)

(cd "$work/real" && shopt -s globstar && "$F" verify $gate --arch-list "$list" --format json \
   > "$OUT/plan_trial_verify.json")
verify_rc=$?
python3 - "$t0" "$t1" "$t2" "$OUT" "$real_rc" "$plan_rc" "$verify_rc" <<'PY'
import json, sys
t0, t1, t2 = map(float, sys.argv[1:4])
out, real_rc, plan_rc, verify_rc = sys.argv[4:]
plan = json.load(open(f"{out}/plan_trial_plan.json"))
real = json.load(open(f"{out}/plan_trial_verify.json"))
stub = max((c["duration_ms"] for c in plan["calls"] if c.get("sources")), default=0) / 1000
print(f"real {t1 - t0:.1f} s (exit {real_rc}), plan {t2 - t1:.1f} s (exit {plan_rc}; slowest "
      f"compile call {stub:.1f} s), plan/real {100 * (t2 - t1) / (t1 - t0):.2f}%; verdict: plan "
      f"gate {plan['gate']['verdict'] if plan['gate'] else None}, verify on the real build "
      f"{real['verdict']} (exit {verify_rc}); plan {plan['verdict']}: {plan['reason']}")
PY
