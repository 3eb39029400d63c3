#!/usr/bin/env python3
"""nvcc-forge lint end to end: the CLI on the fixture trees (tests/fixtures/lint), exit codes, text
and JSON output, lint_ignore from a package file and from --lint-ignore, input errors."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

POLICY_NO_ADA = "8.0 8.6 9.0 10.0 12.0+PTX"


def lint(t, *args):
    return t.forge("lint", *args)


def fx(t, *parts):
    return t.fixtures("lint", *parts)


@ft.case("lint.cli.whitelist_text")
def whitelist_text(t):
    r = lint(t, fx(t, "whitelist"), "--arch-list", POLICY_NO_ADA).expect_rc(1)
    r.expect_out("csrc/qattn/attn_sm89.cu:9: arch-gate: __CUDA_ARCH__ >= 890 (needs 8.9; list has "
                 "8.0 8.6 9.0 10.0 12.0+PTX) — code gated on")
    r.expect_out("csrc/qattn/attn_sm89.cu:10: fp8-type: __nv_fp8_e4m3 (needs 8.9;")
    r.expect_out("csrc/qattn/attn_sm90.cu:6: arch-feature: __CUDA_ARCH_FEAT_SM90_ALL (needs 9.0a;")
    r.expect_out('setup.py:16: script-reads-arch-list: arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "") — ')
    r.expect_out("setup.py:37: explicit-target: 90a (needs 9.0a;")
    r.expect_out("lint: 9 findings, 0 ignored, 5 files scanned")
    # the comment, block comment and printf in attn_sm89.cu never match
    r.expect_not_out("attn_sm89.cu:1:")
    r.expect_not_out("attn_sm89.cu:6:")
    r.expect_not_out("attn_sm89.cu:18:")


@ft.case("lint.cli.whitelist_json")
def whitelist_json(t):
    data = lint(t, fx(t, "whitelist"), "--arch-list", POLICY_NO_ADA, "--format", "json").expect_rc(1).json()
    ft.check(isinstance(data, list) and len(data) == 9, data)
    got = [(f["file"], f["line"], f["rule"], f["needs"]) for f in data]
    ft.check_eq(got[0], ("csrc/qattn/attn_sm80.cu", 4, "arch-gate", "8.9"), "first finding")
    ft.check_in(("csrc/qattn/attn_sm89.cu", 10, "fp8-type", "8.9"), got, "findings")
    ft.check_in(("setup.py", 38, "script-emits-gencode", None), got, "findings")
    for f in data:
        ft.check(set(f) >= {"file", "line", "rule", "needs", "pattern", "why", "ignored"}, f)
        ft.check(f["ignored"] is False and f["why"], f)


@ft.case("lint.cli.declared_list")
def declared_list(t):
    # 8.9 and 9.0a declared: the arch findings go, the script's own decisions stay
    data = lint(t, fx(t, "whitelist"), "--arch-list", "8.0 8.6 8.9 9.0a 10.0 12.0+PTX",
                "--format", "json").expect_rc(1).json()
    got = [(f["file"], f["line"], f["rule"]) for f in data]
    ft.check_eq(got, [("setup.py", 16, "script-reads-arch-list"), ("setup.py", 38, "script-emits-gencode")],
                "findings")


@ft.case("lint.cli.clean_tree")
def clean_tree(t):
    r = lint(t, fx(t, "clean"), "--arch-list", "8.0 8.6 9.0+PTX").expect_rc(0)
    r.expect_out("lint: 0 findings, 0 ignored, 3 files scanned (list: 8.0 8.6 9.0+PTX from --arch-list)")


@ft.case("lint.cli.ladder_exit")
def ladder_exit(t):
    r = lint(t, fx(t, "ladder"), "--arch-list", POLICY_NO_ADA).expect_rc(1)
    r.expect_out("setup.py:10: script-own-arch-knob: FLASH_ATTN_CUDA_ARCHS —")
    # The ladder is one finding in the text; its lines (sm_110 on line 25 ...) stay in the JSON.
    data = lint(t, fx(t, "ladder"), "--arch-list", POLICY_NO_ADA, "--format", "json").json()
    got = [(f["line"], f["rule"], f["needs"]) for f in data]
    ft.check_in((25, "explicit-target", "11.0"), got, "findings")


@ft.case("lint.cli.ladder_block")
def ladder_block(t):
    r = lint(t, fx(t, "ladder"), "--arch-list", POLICY_NO_ADA).expect_rc(1)
    r.expect_out("setup.py:15-28: script-emits-gencode: a target block of lines 15-28: emits "
                 "sm_80 sm_90 sm_100f sm_110f sm_120f; the list wants sm_86 compute_120 that it "
                 "lacks; it adds sm_110f beyond the list — hard-coded nvcc targets")
    r.expect_not_out("setup.py:16:")
    r.expect_not_out("setup.py:25:")
    r.expect_out("lint: 2 findings, 0 ignored, 3 files scanned")
    data = lint(t, fx(t, "ladder"), "--arch-list", POLICY_NO_ADA, "--format", "json").json()
    lines = [f for f in data if f["block"]]
    ft.check(len(lines) > 2, data)  # every line of the block is still there
    for f in lines:
        ft.check_eq((f["block"]["first"], f["block"]["last"]), (15, 28), "block range")


def package_with_separator(t, name, sep):
    d = os.path.join(t.work, "packages", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "arch_override.yml"), "w") as f:
        f.write(f'wrapper:\n  arch_list_separator: "{sep}"\n')
    return ["--package", name, "--packages-dir", os.path.join(t.work, "packages")]


@ft.case("lint.cli.splits_arch_list")
def splits_arch_list(t):
    src = t.fixtures("packages", "lint_split_semicolon")
    r = lint(t, src, "--arch-list", "8.0 8.6 9.0").expect_rc(1)
    r.expect_out("setup.py:9: script-splits-arch-list: for item in requested.replace(\",\", \";\")"
                 ".split(\";\"): — TORCH_CUDA_ARCH_LIST is exported space-separated ('8.0 8.6 9.0'); "
                 "the script splits it with .replace(\",\", \";\").split(\";\") and sees 1 token "
                 "('8.0 8.6 9.0') instead of 3")
    r.expect_out('set wrapper.arch_list_separator: ";"')
    # Exported in the form it parses: nothing to say about the split.
    data = lint(t, src, "--arch-list", "8.0 8.6 9.0", "--format", "json",
                *package_with_separator(t, "semi", ";")).json()
    ft.check_eq([f["rule"] for f in data], ["script-reads-arch-list"], "rules")
    # The mirror image: a plain .split() meets the ';' form.
    plain = t.fixtures("packages", "lint_split_plain")
    lint(t, plain, "--arch-list", "8.0 9.0", "--format", "json").expect_rc(1)
    r = lint(t, plain, "--arch-list", "8.0 9.0", *package_with_separator(t, "semi", ";"))
    r.expect_out("script-splits-arch-list")
    r.expect_out("exported ';'-separated ('8.0;9.0'); the script splits it with .split() and sees "
                 "1 token ('8.0;9.0') instead of 2")
    r.expect_out('set wrapper.arch_list_separator: " "')
    data = lint(t, plain, "--arch-list", "8.0 9.0", "--format", "json").json()
    ft.check("script-splits-arch-list" not in [f["rule"] for f in data], data)


@ft.case("lint.cli.package_lint_ignore")
def package_lint_ignore(t):
    pkg = ["--package", "sage_like", "--packages-dir", fx(t, "packages")]
    r = lint(t, fx(t, "whitelist"), "--arch-list", POLICY_NO_ADA, *pkg)
    r.expect_rc(1)  # the 9.0a feature finding is not ignored
    r.expect_out("csrc/qattn/attn_sm89.cu:10: fp8-type: __nv_fp8_e4m3 (needs 8.9; list has 8.0 8.6 9.0 10.0 "
                 "12.0+PTX) — ignored (lint_ignore: csrc/qattn/*.cu:fp8-type)")
    r.expect_out('setup.py:16: script-reads-arch-list: arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "") — '
                 "ignored (lint_ignore: setup.py)")
    r.expect_out("lint: 1 finding, 8 ignored")
    r = lint(t, fx(t, "whitelist"), "--arch-list", POLICY_NO_ADA, *pkg,
             "--lint-ignore", "csrc/qattn/attn_sm90.cu:arch-feature").expect_rc(0)
    r.expect_out("lint: 0 findings, 9 ignored")


@ft.case("lint.cli.cli_lint_ignore")
def cli_lint_ignore(t):
    r = lint(t, fx(t, "ladder"), "--arch-list", POLICY_NO_ADA, "--lint-ignore", "setup.py",
             "--lint-ignore", "third_party/**").expect_rc(0)
    r.expect_out("ignored (lint_ignore: setup.py)")
    r.expect_out("lint_ignore entry 'third_party/**' matched no finding")


@ft.case("lint.cli.missing_dir")
def missing_dir(t):
    lint(t, fx(t, "does_not_exist"), "--arch-list", "8.0").expect_rc(2).expect_err("does_not_exist")


@ft.case("lint.cli.bad_arch_list")
def bad_arch_list(t):
    lint(t, fx(t, "clean"), "--arch-list", "8.0 8.O").expect_rc(2).expect_err("8.O")


@ft.case("lint.cli.bad_ignore_entry")
def bad_ignore_entry(t):
    r = lint(t, fx(t, "clean"), "--arch-list", "8.0", "--lint-ignore", "csrc/x.cu:fp8").expect_rc(2)
    r.expect_err("csrc/x.cu:fp8")
    r.expect_err("unknown rule 'fp8'")


@ft.case("lint.cli.bad_format")
def bad_format(t):
    lint(t, fx(t, "clean"), "--arch-list", "8.0", "--format", "yaml").expect_rc(2) \
        .expect_err("--format must be text, json or github")


@ft.case("lint.cli.no_src")
def no_src(t):
    lint(t, "--arch-list", "8.0").expect_rc(2).expect_err("no SRC_DIR")


@ft.case("lint.cli.single_file")
def single_file(t):
    r = lint(t, fx(t, "whitelist", "csrc", "qattn", "attn_sm89.cu"), "--arch-list", POLICY_NO_ADA).expect_rc(1)
    r.expect_out("attn_sm89.cu:9: arch-gate: __CUDA_ARCH__ >= 890")
    r.expect_out("lint: 2 findings, 0 ignored, 1 file scanned")


@ft.case("lint.cli.help")
def help(t):
    r = lint(t, "--help").expect_rc(0)
    r.expect_out("Rules: arch-gate fp8-type arch-feature")
    r.expect_out("ignored (lint_ignore: ENTRY)")


if __name__ == "__main__":
    sys.exit(ft.main())
