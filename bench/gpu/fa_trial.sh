#!/usr/bin/env bash
# issue 26 on the GPU machine (torch 2.11+cu130, CUDA 13.0): flash-attention's real setup.py as it is
# today (its own FLASH_ATTN_CUDA_ARCHS, family targets `arch=compute_100f,code=sm_100`), for the
# summary lines of bench/RESULTS.md, "flash-attention's real setup.py".
#   bench/gpu/fa_trial.sh SRC [plan|tu|all]   (default all)
# SRC: flash-attention's source tree, carried (the machine has no internet): setup.py, README.md,
# flash_attn/__init__.py, csrc/flash_attn/, and csrc/cutlass/include at the submodule commit the
# tree pins (.fa-carry/flash-attention, prepared on the CPU machine, never committed).
#   plan: `nvcc-forge plan --package flash_attn` in inject mode, `python3 setup.py build_ext`, for
#         the x86 lane and the aarch64 13.0 row: the knob plan sets, every TU's targets, the TUs
#         with not_restored targets (none expected), the gate on the module.
#   tu:   one real TU (flash_fwd_hdim64_fp16_sm80.cu) compiled through the wrapper (nvcc-forge shim,
#         inject mode) with the exact flags setup.py wrote into the plan's build.ninja for the lane
#         (the x86 lane's plan runs first when this machine has none yet):
#         the log record, and each image of the object with its kernel count (expected: the
#         injected sm_86 and compute_90 beside the ladder's images, every one with kernels).
set -uo pipefail
# shellcheck source=bench/gpu/carry.sh
source "$(dirname "${BASH_SOURCE[0]}")/carry.sh"
src=$(realpath "$1")
step=${2:-all}
tu=flash_fwd_hdim64_fp16_sm80.cu
work=/tmp/forge-fa-trial
mkdir -p "$work"
export MAX_JOBS=${MAX_JOBS:-$(nproc)} BUILD_TARGET=cuda NVCC_FORGE_CACHE_DIR="$work/cache"
unset FLASH_ATTN_CUDA_ARCHS TORCH_CUDA_ARCH_LIST

echo "== machine"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null || true
"$F" --version
"$real_cuda/bin/nvcc" --version | tail -2
python3 - <<'PY'
import importlib, torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
for m in ("setuptools", "wheel", "packaging", "ninja", "psutil"):
    try:
        importlib.import_module(m)
        print(m, "ok")
    except ImportError as e:
        print(m, "MISSING:", e)
PY
# setup.py imports `wheel.bdist_wheel`; where the wheel package is absent, setuptools' own class
# stands in (only `build_ext` runs here).
if ! python3 -c 'import wheel.bdist_wheel' 2>/dev/null; then
  mkdir -p "$work/pyshim/wheel"
  : > "$work/pyshim/wheel/__init__.py"
  echo 'from setuptools.command.bdist_wheel import bdist_wheel  # noqa: F401' \
    > "$work/pyshim/wheel/bdist_wheel.py"
  export PYTHONPATH="$work/pyshim${PYTHONPATH:+:$PYTHONPATH}"
  echo "wheel.bdist_wheel: setuptools' class stands in"
fi

lane_args() { [ "$1" = aarch64 ] && echo "--platform linux_aarch64"; }

plan_lane() {
  local lane=$1 dir="$work/plan-$1"
  rm -rf "$dir" && cp -r "$src" "$dir"
  echo "== plan, $lane lane"
  # shellcheck disable=SC2046
  NVCC_FORGE_REAL_NVCC="$real_cuda/bin/nvcc" "$F" resolve --package flash_attn $(lane_args "$lane") \
    --format json > "$OUT/fa_resolve_$lane.json"
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2046
  (cd "$dir" && NVCC_FORGE_MODE=inject "$F" plan --package flash_attn $(lane_args "$lane") \
     --gate 'build/lib*/flash_attn_2_cuda*.so' --format json -- python3 setup.py build_ext \
     > "$OUT/fa_plan_$lane.json" 2> "$OUT/fa_plan_$lane.log")
  local rc=$?
  t1=$(date +%s.%N)
  python3 - "$OUT/fa_resolve_$lane.json" "$OUT/fa_plan_$lane.json" "$lane" "$rc" "$t0" "$t1" <<'PY'
import collections, json, sys
res, plan = (json.load(open(p)) for p in sys.argv[1:3])
lane, rc, t0, t1 = sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
print(f"list {res['arch_list']}; knob {[(k['variable'], k['value']) for k in res['arch_knobs']]}; "
      f"knob_cannot_express {[g['token'] for g in res['knob_cannot_express']]}")
print(f"plan exit {rc} in {t1 - t0:.1f} s: {plan['verdict']} ({plan['reason']}); "
      f"knob as the build saw it {plan['arch_knobs']}")
tus = plan["tus"]
shapes = collections.Counter((tuple(t["requested"]), tuple(t["injected"]), tuple(t["not_restored"]),
                              t.get("arch_rule")) for t in tus)
print(f"{len(tus)} TUs compared; TUs with not_restored targets: "
      f"{sum(1 for t in tus if t['not_restored'])}")
for (req, inj, lost, rule), n in shapes.most_common():
    print(f"  {n} TU(s): requested {' '.join(req)}; injected {' '.join(inj) or '-'}; "
          f"not_restored {' '.join(lost) or '-'}; rule {rule}")
gate = plan.get("gate") or {}
for e in gate.get("extensions", []):
    print(f"  gate {e['verdict']}: {e['file'].split('/')[-1]} sass {' '.join(e['sass'])} ptx "
          f"{' '.join(e['ptx'])} extra {' '.join(e['extra']) or '-'}")
print(f"gate verdict {gate.get('verdict')}")
PY
}

tu_lane() {
  local lane=$1 dir="$work/plan-$1" shim="$work/shim"
  echo "== one real TU through the wrapper, $lane lane: $tu"
  local ninja found
  found=("$dir"/build/temp*/build.ninja)
  if [ ! -f "${found[0]}" ]; then
    plan_lane "$lane" # the flags come from the build.ninja setup.py writes under plan
    found=("$dir"/build/temp*/build.ninja)
  fi
  ninja=${found[0]}
  if [ ! -f "$ninja" ]; then
    echo "no build.ninja under $dir/build (torch writes one only when ninja is installed)"
    return 1
  fi
  "$F" shim --cuda-home "$real_cuda" --out "$shim" > /dev/null
  local list
  # shellcheck disable=SC2046
  list=$(NVCC_FORGE_REAL_NVCC="$real_cuda/bin/nvcc" "$F" resolve --package flash_attn $(lane_args "$lane"))
  rm -f "$OUT/fa_tu_$lane.jsonl"
  local t0
  t0=$(date +%s)
  python3 - "$ninja" "$shim/bin/nvcc" "$tu" "$work/$lane-$tu.o" <<'PY' > "$work/tu_$lane.argv"
import shlex, sys
ninja, nvcc, name, out = sys.argv[1:]
var, src = {}, None
for line in open(ninja):
    key, eq, value = line.partition(" = ")
    if eq and not line.startswith(" "):
        var[key.strip()] = value.strip().replace("$$", "$")
    if line.startswith("build ") and line.rstrip().endswith(name):
        src = line.split()[-1]
# The plan's shadow root (gone now) in the flags becomes the shim's root.
shadow = var["nvcc"].rsplit("/bin/", 1)[0]
shim = nvcc.rsplit("/bin/", 1)[0]
argv = [nvcc, *shlex.split(var["cuda_cflags"]), "-c", src, "-o", out,
        *shlex.split(var["cuda_post_cflags"])]
print("\n".join(a.replace(shadow, shim) for a in argv))
PY
  mapfile -t argv < "$work/tu_$lane.argv"
  echo "ladder flags: $(grep -A1 -- '-gencode' "$work/tu_$lane.argv" | grep arch= | tr '\n' ' ')"
  NVCC_FORGE_ARCH_LIST="$list" NVCC_FORGE_PACKAGE=flash_attn NVCC_FORGE_MODE=inject \
    NVCC_FORGE_LOG="$OUT/fa_tu_$lane.jsonl" CUDA_HOME="$shim" "${argv[@]}" \
    > "$OUT/fa_tu_$lane.log" 2>&1
  local rc=$?
  echo "compile exit $rc in $(( $(date +%s) - t0 )) s (log: fa_tu_$lane.log)"
  grep 'nvcc-forge' "$OUT/fa_tu_$lane.log" || true
  python3 - "$OUT/fa_tu_$lane.jsonl" <<'PY'
import json, sys
for rec in map(json.loads, open(sys.argv[1])):
    print(f"log: action {rec['action']}, rule {rec.get('arch_rule')}, requested "
          f"{' '.join(rec['requested'])}, injected {' '.join(rec['injected']) or '-'}, "
          f"exit {rec['exit_code']}")
PY
  "$F" list --format json "$work/$lane-$tu.o" > "$OUT/fa_tu_$lane.list.json"
  python3 - "$OUT/fa_tu_$lane.list.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    print(f"  {e['arch']:<12} kernels {e.get('kernels')}")
PY
  if [ -x "$real_cuda/bin/cuobjdump" ]; then
    "$real_cuda/bin/cuobjdump" --list-elf --list-ptx "$work/$lane-$tu.o"
  fi
}

if [ "$step" = all ] || [ "$step" = plan ]; then
  plan_lane x86
  plan_lane aarch64
fi
if [ "$step" = all ] || [ "$step" = tu ]; then
  tu_lane x86
fi
