#!/usr/bin/env bash
# run_case.sh <forge-exe> <source-dir> <work-dir> <generator> <case> [find_package]
# Configures and builds tests/integration/cmake/project and checks the outcome of <case>.
set -uo pipefail
exe="$1" src="$2" work="$3" gen="$4" case="$5" mode="${6:-path}"
here="$(cd "$(dirname "$0")" && pwd)"
bdir="$work/${case}-${gen// /_}-${mode}"
rm -rf "$bdir"
mkdir -p "$bdir"
fail() { echo "FAIL: $*"; echo "---- build log"; cat "$bdir/log" 2>/dev/null; exit 1; }

cfg=(-S "$here/project" -B "$bdir/b" -G "$gen" -DCASE="$case"
     -DFORGE_SOURCE_DIR="$src" -DFORGE_PACKAGES_DIR="$src/tests/fixtures/cmake/packages"
     -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
if [ "$mode" = find_package ]; then
  prefix="$bdir/prefix"
  cmake --install "$FORGE_BUILD_DIR" --prefix "$prefix" >"$bdir/install.log" 2>&1 || fail "install"
  [ -x "$prefix/bin/nvcc-forge" ] || fail "install did not produce bin/nvcc-forge"
  [ -f "$prefix/lib/cmake/NvccForge/NvccForgeConfigVersion.cmake" ] || fail "no CMake package version file"
  [ -f "$prefix/share/nvcc-forge/policy/arch_policy.yml" ] || fail "no installed policy data"
  cfg+=(-DUSE_FIND_PACKAGE=ON -DCMAKE_PREFIX_PATH="$prefix")
else
  cfg+=(-DNvccForge_EXECUTABLE="$exe")
fi
cmake "${cfg[@]}" >"$bdir/log" 2>&1 || fail "configure"
cmake --build "$bdir/b" >>"$bdir/log" 2>&1
rc=$?
case "$case" in
  pass)
    [ $rc -eq 0 ] || fail "build should pass"
    grep -q "PASS" "$bdir/log" || fail "no verify table in the build log" ;;
  narrow)
    [ $rc -ne 0 ] || fail "a target that narrows its own CUDA_ARCHITECTURES must fail at POST_BUILD"
    grep -q "missing sm_90" "$bdir/log" || fail "verify table does not name the missing sm_90" ;;
  observe)
    [ $rc -ne 0 ] || fail "observe does not change the build: the gate must still fail"
    grep -q '"missing":\["sm_90"' "$bdir/b/forge-compile.jsonl" \
      || grep -q 'sm_90' "$bdir/b/forge-compile.jsonl" || fail "compile log does not show the drop"
    grep -q 'dropped' "$bdir/log" || fail "no drop line on the compile's stderr" ;;
  inject)
    [ $rc -eq 0 ] || fail "inject mode puts the policy's targets back: the gate must pass"
    grep -q '"action":"injected"' "$bdir/b/forge-compile.jsonl" || fail "log shows no injection" ;;
esac
echo "ok: $case ($gen, $mode)"
