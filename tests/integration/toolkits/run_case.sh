#!/usr/bin/env bash
# nvcc-forge toolkits / bundle / verify-bundle end to end, with the real toolkits on the machine.
#   run_case.sh FORGE_EXE FIXTURES_DIR SOURCE_ROOT CASE
# Exit 0 pass, 77 skip (a toolkit the case needs is absent), anything else fail.
set -uo pipefail
forge=$1 fx=$2 src_root=$3 case=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL [$case]: $*" >&2; exit 1; }
skip() { echo "SKIP [$case]: $*"; exit 77; }
# expect RC CMD...: runs CMD, keeps stdout+stderr in $work/out, checks the exit code.
expect() {
  local want=$1; shift
  "$@" >"$work/out" 2>&1
  local rc=$?
  if [[ $rc -ne $want ]]; then cat "$work/out" >&2; fail "expected exit $want, got $rc: $*"; fi
}
contains() { grep -qF -- "$1" "$work/out" || { cat "$work/out" >&2; fail "output lacks '$1'"; }; }

# A second toolkit installed by .ci/install-deps.sh (install_cu13x.sh) is found even when the
# environment does not name it.
tools_dir=${NVCC_FORGE_TOOLS_DIR:-$src_root/.tools}
for extra in "$tools_dir/cu131/nvidia/cu13" "$tools_dir/cu128/nvidia/cuda_nvcc"; do
  [[ -x $extra/bin/nvcc ]] && export NVCC_FORGE_NVCC_CANDIDATES="${NVCC_FORGE_NVCC_CANDIDATES:+$NVCC_FORGE_NVCC_CANDIDATES:}$extra"
done

# has_release X.Y: a discovered toolkit of that release can emit every SM in $2 (space separated)
has_release() {
  "$forge" toolkits --format json 2>/dev/null | python3 -c '
import json, sys
rel, sms = sys.argv[1], sys.argv[2].split()
ok = any(t["release"] == rel and all("sm_" + s in t["sass"] for s in sms) for t in json.load(sys.stdin))
sys.exit(0 if ok else 1)' "$1" "$2"
}
need_cuda13() { has_release 13.0 "90 100 110 120" || skip "no CUDA 13.0 toolkit found"; }

case $case in
toolkits_json)
  need_cuda13
  # A symlink named nvcc to the wrapper, first on PATH and in the candidates, must not count.
  mkdir -p shim && ln -s "$forge" shim/nvcc
  PATH="$work/shim:$PATH" NVCC_FORGE_NVCC_CANDIDATES="$work/shim/nvcc" "$forge" toolkits --format json >tk.json ||
    fail "toolkits exited $?"
  python3 - "$forge" tk.json <<'PY' || fail "bad JSON"
import json, os, sys
forge, path = sys.argv[1], sys.argv[2]
tks = json.load(open(path))
assert isinstance(tks, list) and tks, tks
for t in tks:
    for key in ("version", "path", "sass", "ptx"):
        assert key in t, (key, t)
    assert os.path.realpath(t["path"]) != os.path.realpath(forge), t
    assert len(t["version"].split(".")) == 3, t["version"]
paths = [t["path"] for t in tks]
assert len(paths) == len(set(paths)), paths
real = os.path.realpath("/usr/local/cuda/bin/nvcc")
if os.path.exists(real):
    mine = [t for t in tks if t["path"] == real]
    assert len(mine) == 1, (real, paths)
    t = mine[0]
    assert t["version"].startswith("13.0."), t["version"]
    assert "sm_110" in t["sass"] and "sm_100f" in t["sass"] and "sm_60" not in t["sass"], t["sass"]
    assert "compute_120" in t["ptx"], t["ptx"]
PY
  ;;
toolkits_text)
  need_cuda13
  expect 0 "$forge" toolkits
  contains "CUDA 13.0."
  contains "sass: sm_75"
  expect 2 "$forge" toolkits --format yaml
  ;;
bundle_missing_toolkit)
  # 90 pinned to a toolkit nobody has: exit 2 before compiling, naming what is missing and found.
  printf '90: "==11.0"\n110: ">=13.0"\n' > pin.yml
  expect 2 "$forge" bundle "$fx/kernels.cu" --sm 90,110,121 --sm-toolkit pin.yml --symbol k --out k.h
  contains "sm_90: needs CUDA ==11.0"
  contains "sm_121: no toolkit spec"
  contains "discovered toolkits:"
  contains "nothing was compiled"
  [[ ! -e k.h ]] || fail "a header was written"
  ;;
bundle_bad_policy)
  expect 2 "$forge" bundle "$fx/kernels.cu" --sm 90 --sm-toolkit "$fx/sm_toolkit_bad_spec.yml" --symbol k --out k.h
  contains "sm_toolkit_bad_spec.yml:3"
  expect 2 "$forge" bundle "$fx/kernels.cu" --sm 90 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol 9k --out k.h
  expect 2 "$forge" bundle "$fx/kernels.cu" --sm hopper --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol k --out k.h
  expect 2 "$forge" bundle "$fx/missing.cu" --sm 90 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol k --out k.h
  ;;
bundle_compile_error)
  need_cuda13
  printf 'extern "C" __global__ void k(int* p) { p[0] = undefined_name; }\n' > broken.cu
  echo "previous" > k.h
  expect 2 "$forge" bundle broken.cu --sm 90 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol k --out k.h
  contains "undefined_name"
  contains "arch=compute_90,code=sm_90"
  [[ $(cat k.h) == previous ]] || fail "a failed bundle replaced the header"
  ;;
bundle_deterministic)
  need_cuda13
  expect 0 "$forge" bundle "$fx/kernels.cu" --sm 90,100,110,120 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol kernels --out a.h
  mkdir -p elsewhere && cp "$fx/kernels.cu" elsewhere/
  expect 0 "$forge" bundle elsewhere/kernels.cu --sm 120,110,100,90 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol kernels --out b.h
  cmp a.h b.h || fail "two runs gave different headers"
  grep -q "$work" a.h && fail "the header contains the work path"
  grep -q "NVCC_FORGE_BUNDLE_KERNELS_H_" a.h || fail "no include guard"
  expect 0 "$forge" verify-bundle a.h --layout "$fx/layout_13_ok.yml"
  contains "sm_110 built by CUDA 13.0"
  ;;
verify_bundle_mismatch)
  need_cuda13
  expect 0 "$forge" bundle "$fx/kernels.cu" --sm 90,100,110,120 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol kernels --out a.h
  expect 1 "$forge" verify-bundle a.h --layout "$fx/layout_13_wrong_toolkit.yml"
  contains "sm_90 cubin"
  contains "was built by CUDA 13.0, the layout expects CUDA 12.8"
  expect 1 "$forge" verify-bundle a.h --layout "$fx/layout_13_wrong_sms.yml"
  contains "sm_110 cubin"
  contains "is not in the layout"
  expect 2 "$forge" verify-bundle a.h --layout "$fx/layout_bad.yml"
  contains "layout_bad.yml:2"
  # clang-format on a committed header must not break the check
  if command -v clang-format >/dev/null; then
    cp a.h f.h && clang-format -i f.h
    expect 0 "$forge" verify-bundle f.h --layout "$fx/layout_13_ok.yml"
  fi
  # a header someone edited by hand: the table's SM count no longer matches its array
  sed 's/kernels_blob0_sms, 4,/kernels_blob0_sms, 3,/' a.h > edited.h
  expect 2 "$forge" verify-bundle edited.h --layout "$fx/layout_13_ok.yml"
  contains "edited.h:"
  # a byte of the fatbin magic changed: unreadable blob
  awk 'NR==1,/_blob0\[/ {print; next} !done && /0x50, 0xed/ {sub(/0x50, 0xed/, "0x51, 0xed"); done=1} {print}' a.h > corrupt.h
  cmp -s a.h corrupt.h && fail "corruption did not apply"
  expect 2 "$forge" verify-bundle corrupt.h --layout "$fx/layout_13_ok.yml"
  contains "corrupt.h[blob 0]"
  ;;
bundle_rdc_cudadevrt)
  need_cuda13
  expect 0 "$forge" bundle "$fx/graph_cond.cu" --sm 90,110 --sm-toolkit "$fx/sm_toolkit_13.yml" --rdc --devlink-lib cudadevrt --symbol graph_cond --out g.h -v
  contains "-rdc=true"
  contains "-lcudadevrt"
  expect 0 "$forge" verify-bundle g.h --layout "$fx/layout_13_rdc.yml"
  expect 2 "$forge" bundle "$fx/graph_cond.cu" --sm 90 --sm-toolkit "$fx/sm_toolkit_13.yml" --devlink-lib cudadevrt --symbol g --out g2.h
  ;;
load_fatbin_compiles)
  need_cuda13
  cuda_inc=/usr/local/cuda/include
  [[ -f $cuda_inc/cuda.h ]] || skip "no $cuda_inc/cuda.h"
  expect 0 "$forge" bundle "$fx/kernels.cu" --sm 90,110 --sm-toolkit "$fx/sm_toolkit_13.yml" --symbol kernels --out kernels_fatbin.h
  libs=()
  if [[ -f /usr/local/cuda/lib64/stubs/libcuda.so ]]; then libs=(-L/usr/local/cuda/lib64/stubs -lcuda); fi
  flags=(-I"$cuda_inc" -I"$src_root/wrapper/include" -I. -DBUNDLE_HEADER='"kernels_fatbin.h"' -DBUNDLE_SYMBOL=kernels_blobs)
  for std in c++11 c++17 c++20; do
    g++ -std=$std -Wall -Wextra -Werror "${flags[@]}" "$fx/load_test.cpp" -o load_$std "${libs[@]}" ||
      fail "load_test.cpp does not compile with -std=$std"
  done
  gcc -std=c11 -Wall -Werror -Wno-unused-const-variable "${flags[@]}" -DBUNDLE_COUNT=kernels_blob_count "$fx/load_test.c" -o load_c ||
    fail "the header is not valid C11"
  ./load_c || fail "C view of the table is wrong"
  # nvcc compiles it too (a .cu translation unit including both headers)
  cp "$fx/load_test.cpp" load_test.cu
  /usr/local/cuda/bin/nvcc -std=c++17 "${flags[@]}" -c load_test.cu -o load_test.o || fail "nvcc cannot compile it"
  ;;
bundle_two_toolkits_13x)
  need_cuda13
  has_release 13.1 "110" || skip "no CUDA 13.1 toolkit (tests/integration/toolkits/install_cu13x.sh installs one)"
  expect 0 "$forge" bundle "$fx/kernels.cu" --sm 90,100,110,120 --sm-toolkit "$fx/sm_toolkit_13_two.yml" --symbol kernels --out two.h
  expect 0 "$forge" verify-bundle two.h --layout "$fx/layout_two13_ok.yml"
  contains "blob 1: sm_110 built by CUDA 13.1"
  expect 1 "$forge" verify-bundle two.h --layout "$fx/layout_two13_wrong.yml"
  contains "sm_110 cubin"
  contains "no sm_120 cubin"
  expect 1 "$forge" verify-bundle two.h --layout "$fx/layout_13_ok.yml"
  contains "2 blob(s)"
  ;;
bundle_cu128)
  need_cuda13
  has_release 12.8 "90 100 120" || skip "no CUDA 12.8 toolkit with nvcc (PyPI's nvidia-cuda-nvcc-cu12 ships none; point NVCC_FORGE_NVCC_CANDIDATES at one)"
  # the shipped policy/sm_toolkit.yml: 12.8 for 90/100/120, >=13.0 for 110
  expect 0 "$forge" bundle "$fx/kernels.cu" --sm 90,100,110,120 --symbol kernels --out k.h
  expect 0 "$forge" bundle "$fx/graph_cond.cu" --sm 90,100,110,120 --rdc --devlink-lib cudadevrt --symbol graph_cond --out g.h
  for h in k.h g.h; do
    expect 0 "$forge" verify-bundle $h --layout "$fx/layout_128_ok.yml"
    contains "sm_120 built by CUDA 12.8"
    expect 1 "$forge" verify-bundle $h --layout "$fx/layout_128_wrong_toolkit.yml"
    contains "sm_120 cubin"
    expect 1 "$forge" verify-bundle $h --layout "$fx/layout_128_wrong_sms.yml"
  done
  ;;
*) fail "unknown case" ;;
esac
echo "PASS [$case]"
