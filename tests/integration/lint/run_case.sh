#!/usr/bin/env bash
# run_case.sh NVCC_FORGE FIXTURES CASE: one CLI case of `nvcc-forge lint`; exits non-zero with a
# message when the exit code or the output is not what the case expects.
set -u
exe=$1 fx=$2 case=$3
policy_no_ada="8.0 8.6 9.0 10.0 12.0+PTX"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

run() { "$exe" lint "$@" >"$out" 2>"$err"; rc=$?; }
fail() { echo "FAIL [$case]: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"; }
expect_out() { grep -qF -- "$1" "$out" || fail "stdout lacks: $1"; }
expect_not_out() { ! grep -qF -- "$1" "$out" || fail "stdout has: $1"; }
expect_err() { grep -qF -- "$1" "$err" || fail "stderr lacks: $1"; }

case $case in
whitelist_text)
  run "$fx/whitelist" --arch-list "$policy_no_ada"
  expect_rc 1
  expect_out "csrc/qattn/attn_sm89.cu:9: arch-gate: __CUDA_ARCH__ >= 890 (needs 8.9; list has 8.0 8.6 9.0 10.0 12.0+PTX) — code gated on"
  expect_out "csrc/qattn/attn_sm89.cu:10: fp8-type: __nv_fp8_e4m3 (needs 8.9;"
  expect_out "csrc/qattn/attn_sm90.cu:6: arch-feature: __CUDA_ARCH_FEAT_SM90_ALL (needs 9.0a;"
  expect_out "setup.py:16: script-reads-arch-list: arch_list = os.environ.get(\"TORCH_CUDA_ARCH_LIST\", \"\") — "
  expect_out "setup.py:37: explicit-target: 90a (needs 9.0a;"
  expect_out "lint: 9 findings, 0 ignored, 5 files scanned"
  # the comment, block comment and printf in attn_sm89.cu never match
  expect_not_out "attn_sm89.cu:1:"
  expect_not_out "attn_sm89.cu:6:"
  expect_not_out "attn_sm89.cu:18:"
  ;;
whitelist_json)
  run "$fx/whitelist" --arch-list "$policy_no_ada" --format json
  expect_rc 1
  python3 - "$out" <<'PY' || fail "JSON check"
import json, sys
data = json.load(open(sys.argv[1]))
assert isinstance(data, list) and len(data) == 9, data
got = [(f["file"], f["line"], f["rule"], f["needs"]) for f in data]
assert got[0] == ("csrc/qattn/attn_sm80.cu", 4, "arch-gate", "8.9"), got[0]
assert ("csrc/qattn/attn_sm89.cu", 10, "fp8-type", "8.9") in got
assert ("setup.py", 38, "script-emits-gencode", None) in got
for f in data:
    assert set(f) >= {"file", "line", "rule", "needs", "pattern", "why", "ignored"}, f
    assert f["ignored"] is False and f["why"], f
PY
  ;;
declared_list)
  # 8.9 and 9.0a declared: the arch findings go, the script's own decisions stay
  run "$fx/whitelist" --arch-list "8.0 8.6 8.9 9.0a 10.0 12.0+PTX" --format json
  expect_rc 1
  python3 - "$out" <<'PY' || fail "JSON check"
import json, sys
got = [(f["file"], f["line"], f["rule"]) for f in json.load(open(sys.argv[1]))]
assert got == [("setup.py", 16, "script-reads-arch-list"), ("setup.py", 38, "script-emits-gencode")], got
PY
  ;;
clean_tree)
  run "$fx/clean" --arch-list "8.0 8.6 9.0+PTX"
  expect_rc 0
  expect_out "lint: 0 findings, 0 ignored, 3 files scanned (list: 8.0 8.6 9.0+PTX from --arch-list)"
  ;;
ladder_exit)
  run "$fx/ladder" --arch-list "$policy_no_ada"
  expect_rc 1
  expect_out "setup.py:25: explicit-target: sm_110 (needs 11.0;"
  expect_out "setup.py:10: script-own-arch-knob: FLASH_ATTN_CUDA_ARCHS —"
  ;;
package_lint_ignore)
  run "$fx/whitelist" --arch-list "$policy_no_ada" --package sage_like --packages-dir "$fx/packages"
  expect_rc 1 # the 9.0a feature finding is not ignored
  expect_out "csrc/qattn/attn_sm89.cu:10: fp8-type: __nv_fp8_e4m3 (needs 8.9; list has 8.0 8.6 9.0 10.0 12.0+PTX) — ignored (lint_ignore: csrc/qattn/*.cu:fp8-type)"
  expect_out "setup.py:16: script-reads-arch-list: arch_list = os.environ.get(\"TORCH_CUDA_ARCH_LIST\", \"\") — ignored (lint_ignore: setup.py)"
  expect_out "lint: 1 finding, 8 ignored"
  run "$fx/whitelist" --arch-list "$policy_no_ada" --package sage_like --packages-dir "$fx/packages" \
      --lint-ignore "csrc/qattn/attn_sm90.cu:arch-feature"
  expect_rc 0
  expect_out "lint: 0 findings, 9 ignored"
  ;;
cli_lint_ignore)
  run "$fx/ladder" --arch-list "$policy_no_ada" --lint-ignore setup.py --lint-ignore "third_party/**"
  expect_rc 0
  expect_out "ignored (lint_ignore: setup.py)"
  expect_out "lint_ignore entry 'third_party/**' matched no finding"
  ;;
missing_dir)
  run "$fx/does_not_exist" --arch-list "8.0"
  expect_rc 2
  expect_err "does_not_exist"
  ;;
bad_arch_list)
  run "$fx/clean" --arch-list "8.0 8.O"
  expect_rc 2
  expect_err "8.O"
  ;;
bad_ignore_entry)
  run "$fx/clean" --arch-list "8.0" --lint-ignore "csrc/x.cu:fp8"
  expect_rc 2
  expect_err "csrc/x.cu:fp8"
  expect_err "unknown rule 'fp8'"
  ;;
bad_format)
  run "$fx/clean" --arch-list "8.0" --format yaml
  expect_rc 2
  expect_err "--format must be text or json"
  ;;
no_src)
  run --arch-list "8.0"
  expect_rc 2
  expect_err "no SRC_DIR"
  ;;
single_file)
  run "$fx/whitelist/csrc/qattn/attn_sm89.cu" --arch-list "$policy_no_ada"
  expect_rc 1
  expect_out "attn_sm89.cu:9: arch-gate: __CUDA_ARCH__ >= 890"
  expect_out "lint: 2 findings, 0 ignored, 1 file scanned"
  ;;
help)
  run --help
  expect_rc 0
  expect_out "Rules: arch-gate fp8-type arch-feature"
  expect_out "ignored (lint_ignore: ENTRY)"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
echo "ok [$case]"
