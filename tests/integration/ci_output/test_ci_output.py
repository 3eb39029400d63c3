#!/usr/bin/env python3
"""CI-native output end to end (docs/ci-output.md): `--format github` of verify, lint and
log summarize (GitHub Actions workflow commands, one per finding, then one plain summary line),
and `verify --junit FILE`. Each case asserts the exact lines, the escaping of hostile names, and
that the exit code is the one the text format gives. The verify cases use the nvcc-built binary
fixtures (tests/fixtures/binary/make_fixtures.sh; skipped, exit 77, without nvcc); the lint and
log cases need no nvcc."""
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check, check_eq  # noqa: E402

LINT_LIST = "8.0 8.6 9.0 10.0 12.0+PTX"
# What multi.so carries (make_fixtures.sh, step 1): exactly this list passes.
MULTI = "sm_80 sm_90a sm_100f compute_120"


def lines(r):
    return r.out.splitlines()


# ---- lint ---------------------------------------------------------------------------------------

def lint_json(t, *args, cwd):
    return json.loads(t.forge("lint", *args, "--format", "json", cwd=cwd).out)


@ft.case("ci_output.lint.github_exact")
def lint_github_exact(t):
    src = t.path("src")
    os.makedirs(src)
    shutil.copy(t.fixtures("lint", "whitelist", "csrc", "qattn", "attn_sm89.cu"), src)
    args = ["--arch-list", LINT_LIST]
    why = {(f["line"], f["rule"]): f["why"] for f in lint_json(t, "src", *args, cwd=t.work)}
    check_eq(sorted(why), [(9, "arch-gate"), (10, "fp8-type")], "findings")
    want = [
        "::error file=src/attn_sm89.cu,line=9,title=lint arch-gate::__CUDA_ARCH__ >= 890 "
        f"(needs 8.9; list has {LINT_LIST}) \u2014 {why[(9, 'arch-gate')]}",
        "::error file=src/attn_sm89.cu,line=10,title=lint fp8-type::__nv_fp8_e4m3 "
        f"(needs 8.9; list has {LINT_LIST}) \u2014 {why[(10, 'fp8-type')]}",
        f"lint: 2 findings, 0 ignored, 1 file scanned (list: {LINT_LIST} from --arch-list)",
    ]
    # The directory, the one file, and the directory as an absolute path under the current one
    # all name the file relative to the current directory, as GitHub wants it.
    for target in ("src", "src/attn_sm89.cu", src):
        r = t.forge("lint", target, *args, "--format", "github", cwd=t.work).expect_rc(1)
        check_eq(lines(r), want, f"lint {target} --format github")
    # From a directory the tree is not under, the file keeps the path it was given (absolute).
    os.makedirs(t.path("elsewhere"))
    r = t.forge("lint", src, *args, "--format", "github", cwd=t.path("elsewhere")).expect_rc(1)
    check_eq(lines(r)[0].split(",")[0], f"::error file={src}/attn_sm89.cu", "outside the cwd")


@ft.case("ci_output.lint.github_escaping_ignored_unused")
def lint_github_escaping(t):
    gate = "#if __CUDA_ARCH__ >= 890\nint x;\n#endif\n"
    ft.write(t.path("tree", "a,b:c%.cu"), gate)
    ft.write(t.path("tree", "k.cu"), gate)
    args = ["--arch-list", "8.0", "--lint-ignore", "k.cu", "--lint-ignore", "none.cu"]
    why = lint_json(t, "tree", *args, cwd=t.work)[0]["why"]
    r = t.forge("lint", "tree", *args, "--format", "github", cwd=t.work).expect_rc(1)
    check_eq(lines(r), [
        # ',' ':' '%' in a property are escaped; in the message only '%' would be.
        "::error file=tree/a%2Cb%3Ac%25.cu,line=1,title=lint arch-gate::__CUDA_ARCH__ >= 890 "
        f"(needs 8.9; list has 8.0) \u2014 {why.replace('%', '%25')}",
        "::notice file=tree/k.cu,line=1,title=lint arch-gate::__CUDA_ARCH__ >= 890 (needs 8.9; "
        "list has 8.0) \u2014 ignored (lint_ignore: k.cu)",
        "::warning title=lint lint_ignore::lint_ignore entry 'none.cu' matched no finding",
        "lint: 1 finding, 1 ignored, 2 files scanned (list: 8.0 from --arch-list)",
    ], "lint --format github")
    # Everything ignored: exit 0 as in text, the notices stay.
    r = t.forge("lint", "tree", "--arch-list", "8.0", "--lint-ignore", "*.cu", "--format", "github",
                cwd=t.work).expect_rc(0)
    check_eq([ln.split("::")[1].split(" ")[0] for ln in lines(r)[:-1]], ["notice", "notice"],
             "severities")
    # A clean tree: only the summary line.
    ft.write(t.path("clean", "ok.cu"), "int y;\n")
    r = t.forge("lint", "clean", "--arch-list", "8.0", "--format", "github", cwd=t.work).expect_rc(0)
    check_eq(lines(r), ["lint: 0 findings, 0 ignored, 1 file scanned (list: 8.0 from --arch-list)"],
             "clean")
    t.forge("lint", "clean", "--arch-list", "8.0", "--format", "gitlab").expect_rc(2) \
        .expect_err("text, json or github")


@ft.case("ci_output.lint.github_block_range")
def lint_github_block(t):
    shutil.copytree(t.fixtures("lint", "ladder"), t.path("ladder"))
    r = t.forge("lint", "ladder", "--arch-list", LINT_LIST, "--format", "github", cwd=t.work)
    r.expect_rc(1)
    block = [ln for ln in lines(r) if "endLine=" in ln]
    check_eq(len(block), 1, f"one command for the block: {r.out}")
    check(block[0].startswith("::error file=ladder/setup.py,line=15,endLine=28,"
                              "title=lint script-emits-gencode::a target block of lines 15-28: "
                              "emits sm_80 sm_90 sm_100f sm_110f sm_120f; the list wants sm_86 "
                              "compute_120 that it lacks; it adds sm_110f beyond the list \u2014 "
                              "hard-coded nvcc targets"), block[0])
    check_eq(lines(r)[-1], f"lint: 2 findings, 0 ignored, 3 files scanned (list: {LINT_LIST} from "
             "--arch-list)", "summary")
    check_eq(sum(1 for ln in lines(r) if ln.startswith("::error ")), 2, "one error per finding")


# ---- log summarize ------------------------------------------------------------------------------

def record(cwd, sources, action, missing=(), injected=(), extra=()):
    return json.dumps({"cwd": cwd, "sources": list(sources), "output": "", "policy": ["sm_80"],
                       "requested": [], "missing": list(missing), "extra": list(extra),
                       "injected": list(injected), "clamped": [], "arch_specific": False,
                       "mode": "inject", "action": action, "exit_code": 0, "duration_ms": 1})


@ft.case("ci_output.log.github_exact")
def log_github(t):
    build = t.path("build")
    os.makedirs(build)
    log = ft.write(t.path("forge.log"), "\n".join([
        record(build, ["../csrc/a.cu"], "compared", missing=["sm_100", "sm_90"]),
        record(build, ["../csrc/b,c.cu"], "injected", missing=["sm_100"], injected=["sm_100"],
               extra=["sm_75"]),
        record("/elsewhere", ["x.cu"], "compared", missing=["sm_120"]),
        record(build, [], "compared", missing=["sm_80"]),
        record(build, ["evil\n::error::x.cu"], "compared", missing=["sm_90"]),
        record(build, ["ok.cu"], "passthrough"),
    ]) + "\n")
    dropped = "title=nvcc-forge dropped targets::"
    want = {
        "(link)": [f"::warning {dropped}(link): dropped sm_80 (policy targets missing from the "
                   "output)"],
        "/elsewhere/x.cu": [f"::warning file=/elsewhere/x.cu,{dropped}/elsewhere/x.cu: dropped "
                            "sm_120 (policy targets missing from the output)"],
        f"{build}/../csrc/a.cu": [f"::warning file=csrc/a.cu,{dropped}csrc/a.cu: dropped sm_90, "
                                  "sm_100 (policy targets missing from the output)"],
        f"{build}/../csrc/b,c.cu": [
            "::warning file=csrc/b%2Cc.cu,title=nvcc-forge extra targets::csrc/b,c.cu: requested "
            "sm_75 beyond the policy (the gate's extra check fails the binary)",
            "::notice file=csrc/b%2Cc.cu,title=nvcc-forge injected targets::csrc/b,c.cu: did not "
            "request sm_100; the wrapper injected it"],
        # A newline in a source name cannot start a second command.
        f"{build}/evil\n::error::x.cu": [
            f"::warning file=build/evil%0A%3A%3Aerror%3A%3Ax.cu,{dropped}build/evil%0A::error::x.cu"
            ": dropped sm_90 (policy targets missing from the output)"],
    }
    expected = [ln for tu in sorted(want) for ln in want[tu]] + ["6 calls, 4 with drops"]
    r = t.forge("log", "summarize", log, "--format", "github", cwd=t.work).expect_rc(0)
    check_eq(lines(r), expected, "log summarize --format github")
    # --fail-on-drop: the drops are errors and the exit code is 1, as in text.
    r = t.forge("log", "summarize", log, "--format", "github", "--fail-on-drop", cwd=t.work)
    r.expect_rc(1)
    check_eq(lines(r), [ln.replace(f"::warning {dropped}", f"::error {dropped}").replace(
        f"::warning file=/elsewhere/x.cu,{dropped}", f"::error file=/elsewhere/x.cu,{dropped}")
        .replace(f"::warning file=csrc/a.cu,{dropped}", f"::error file=csrc/a.cu,{dropped}")
        .replace("::warning file=build/evil", "::error file=build/evil") for ln in expected],
        "--fail-on-drop")
    check(not any(ln.startswith("::error::") for ln in lines(r)), "no forged command")
    # No drops: the counts alone.
    clean = ft.write(t.path("clean.log"), record(build, ["ok.cu"], "passthrough") + "\n")
    r = t.forge("log", "summarize", clean, "--format", "github", "--fail-on-drop").expect_rc(0)
    check_eq(lines(r), ["1 calls, 0 with drops"], "clean log")
    t.forge("log", "summarize", clean, "--format", "xml").expect_rc(2)


# ---- verify -------------------------------------------------------------------------------------



def dist(t):
    """multi.so as dist/multi.so under the case's directory (the cwd of every run)."""
    d = t.binary_fixtures()
    os.makedirs(t.path("dist"), exist_ok=True)
    shutil.copy(f"{d}/multi.so", t.path("dist", "multi.so"))
    return "dist/multi.so"


def verify_json(t, *args, rc):
    r = t.forge("verify", "--format", "json", *args, cwd=t.work).expect_rc(rc)
    return r.json()


@ft.case("ci_output.verify.github_exact")
def verify_github(t):
    so = dist(t)
    # Passing: no command, the verdict line.
    r = t.forge("verify", so, "--arch-list", MULTI, "--format", "github", cwd=t.work).expect_rc(0)
    check_eq(lines(r), ["verdict: pass (1 extension)"], "pass")
    # Failing: one error per failed check, on the file, with the check's detail.
    args = [so, "--arch-list", MULTI + " sm_86"]
    ext = verify_json(t, *args, rc=1)["extensions"][0]
    failed = [c for c in ext["checks"] if not c["ok"]]
    check([c["check"] for c in failed] == ["sass"] or "sass" in [c["check"] for c in failed], failed)
    r = t.forge("verify", *args, "--format", "github", cwd=t.work).expect_rc(1)
    want = [f"::error file=dist/multi.so,title=verify {c['check']}::dist/multi.so: {c['detail']}"
            for c in failed]
    check_eq(lines(r)[:-1], want, "errors")
    check("sm_86" in next(ln for ln in lines(r) if "title=verify sass" in ln), r.out)
    check(lines(r)[-1].startswith("verdict: FAIL (1 extension)"), r.out)
    # Waived: passes, with a warning that names the waiver.
    args = [so, "--arch-list", MULTI + " sm_86", "--allow-missing", "sm_86"]
    ext = verify_json(t, *args, rc=0)["extensions"][0]
    sass = ft.only(ext["checks"], lambda c: c["check"] == "sass")
    check(sass["waived"] and "--allow-missing" in sass["waived"][0], sass)
    r = t.forge("verify", *args, "--format", "github", cwd=t.work).expect_rc(0)
    check_eq(lines(r), [f"::warning file=dist/multi.so,title=verify sass waived::dist/multi.so: "
                        f"waived: {'; '.join(sass['waived'])}", "verdict: pass (1 extension)"],
             "waived")


@ft.case("ci_output.verify.github_unreadable_and_nothing_verified")
def verify_github_edges(t):
    so = dist(t)
    ft.write(t.path("junk.so"), "not an ELF\n")
    r = t.forge("verify", so, "junk.so", "--arch-list", MULTI, "--format", "github", cwd=t.work)
    r.expect_rc(2)
    check_eq(len(lines(r)), 2, r.out)
    check(lines(r)[0].startswith("::error file=junk.so,title=verify unreadable::"), r.out)
    check("byte 0" in lines(r)[0], r.out)
    # The readable file still passes; the input not read is counted, never as an extension.
    check_eq(lines(r)[1], "verdict: pass (1 extension, 1 input(s) not read)",
             "the readable file still passes")
    # A wheel without any binary: nothing verified is a failure, and says so.
    whl = t.path("pure-1.0-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("pure/__init__.py", "x = 1\n")
    reason = verify_json(t, whl, "--arch-list", "8.0", rc=1)["reason"]
    check(reason, "a reason")
    r = t.forge("verify", whl, "--arch-list", "8.0", "--format", "github", cwd=t.work).expect_rc(1)
    check_eq(lines(r), [f"::error title=verify::verdict: FAIL (0 extensions): {reason}",
                        f"verdict: FAIL (0 extensions): {reason}"], "nothing verified")


def junit(path):
    root = ET.parse(path).getroot()
    check_eq(root.tag, "testsuites", "root")
    suite = ft.only(list(root), what="testsuite")
    cases = []
    for c in suite.findall("testcase"):
        status = [e for e in c if e.tag in ("failure", "error", "skipped")]
        cases.append((c.get("classname"), c.get("name"), status[0].tag if status else "pass",
                      status[0].get("message") if status else None))
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    return counts, cases


@ft.case("ci_output.verify.junit")
def verify_junit(t):
    so = dist(t)
    ft.write(t.path("junk&<x>.so"), "not an ELF\n")
    args = [so, "junk&<x>.so", "--arch-list", MULTI + " sm_86"]
    ext = verify_json(t, *args, rc=2)["extensions"][0]
    # Every format keeps its exit code with --junit (2: an unreadable input).
    for fmt in ("text", "json", "github"):
        t.forge("verify", *args, "--format", fmt, "--junit", "r.xml", cwd=t.work).expect_rc(2)
    counts, cases = junit(t.path("r.xml"))
    want = [(so, c["check"], "pass" if c["ok"] else "failure", None if c["ok"] else c["detail"])
            for c in ext["checks"]]
    check_eq([c[:3] for c in cases[:1]], [("junk&<x>.so", "read", "error")], "the unreadable input")
    check("byte 0" in cases[0][3], cases[0])
    check_eq(cases[1:-1], want, "a case per check")
    check_eq(cases[-1][:3], ("verify", "verdict", "failure"), "the verdict case")
    n_fail = sum(1 for c in cases if c[2] == "failure")
    check_eq(counts, {"tests": len(cases), "failures": n_fail, "errors": 1, "skipped": 0}, "counts")
    check(n_fail >= 2, cases)
    # A passing run: every case passes.
    t.forge("verify", so, "--arch-list", MULTI, "--junit", "ok.xml", cwd=t.work).expect_rc(0)
    counts, cases = junit(t.path("ok.xml"))
    check_eq(counts["failures"] + counts["errors"], 0, "counts")
    check(all(c[2] == "pass" for c in cases) and len(cases) >= 2, cases)
    check_eq(cases[-1], ("verify", "verdict", "pass", None), "the verdict case")
    # A report that cannot be written is unusable output: exit 2.
    t.forge("verify", so, "--arch-list", MULTI, "--junit", "no/such/dir/r.xml", cwd=t.work) \
        .expect_rc(2).expect_err("JUnit")
    # A symbolic link at the report's path is refused, its target left alone; a device is
    # written through (docs/ci-output.md).
    ft.write(t.path("theirs.xml"), "theirs\n")
    os.symlink(t.path("theirs.xml"), t.path("linked.xml"))
    t.forge("verify", so, "--arch-list", MULTI, "--junit", "linked.xml", cwd=t.work) \
        .expect_rc(2).expect_err("a symbolic link: not followed")
    check_eq(ft.read(t.path("theirs.xml")), "theirs\n", "the link's target")
    t.forge("verify", so, "--arch-list", MULTI, "--junit", "/dev/null", cwd=t.work).expect_rc(0)


if __name__ == "__main__":
    sys.exit(ft.main())
