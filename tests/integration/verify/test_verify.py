#!/usr/bin/env python3
"""nvcc-forge verify end to end, as CI runs the gate: every input kind (.so, .o, .a, .cubin,
.fatbin, .whl), every option (--arch-list, --package/--cuda/--torch resolution, package waivers,
--allow-missing, --allow-extra, --allow-pure-python, --max-toolkit, --format json), and the exit
codes (0 pass, 1 fail, 2 unreadable input or usage). Each case asserts the verdict, the targets it
names and the exit code. The fixtures are tests/fixtures/binary/make_fixtures.sh's (built once per
build tree, shared with the binary unit tests); skipped (exit 77) without nvcc."""
import json
import os
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check, check_eq, check_in  # noqa: E402

# What multi.so carries (make_fixtures.sh, step 1): exactly this list passes.
MULTI = "sm_80 sm_90a sm_100f compute_120"




def verify(t, *args, rc):
    """`verify --format json ARGS`: checks the exit code, returns the parsed report."""
    r = t.forge("verify", "--format", "json", *args)
    r.expect_rc(rc)
    return r.json()


def one(report):
    check_eq(len(report["extensions"]), 1, "extensions")
    return report["extensions"][0]


def check_by_name(ext, name):
    return ft.only(ext["checks"], lambda c: c["check"] == name, f"check {name}")


@ft.case("verify.so.exact_list_passes")
def case_so_pass(t):
    d = t.binary_fixtures()
    rep = verify(t, f"{d}/multi.so", "--arch-list", MULTI, rc=0)
    check_eq(rep["verdict"], "pass", "verdict")
    e = one(rep)
    check_eq(sorted(e["expected"]), sorted(MULTI.split()), "expected")
    check_eq(sorted(e["sass"]), ["sm_100f", "sm_80", "sm_90a"], "sass")
    check_eq(e["ptx"], ["compute_120"], "ptx")
    check_eq(e["source"], "native", "source")
    check_eq(e["verdict"], "pass", "extension verdict")
    r = t.forge("verify", f"{d}/multi.so", "--arch-list", MULTI).expect_rc(0)
    r.expect_out("PASS").expect_out("verdict: pass")


@ft.case("verify.so.missing_sass_fails")
def case_so_missing(t):
    d = t.binary_fixtures()
    rep = verify(t, f"{d}/multi.so", "--arch-list", MULTI + " sm_86", rc=1)
    check_eq(rep["verdict"], "fail", "verdict")
    e = one(rep)
    check_eq(e["missing_sass"], ["sm_86"], "missing_sass")
    check_eq(check_by_name(e, "sass")["ok"], False, "sass check")
    r = t.forge("verify", f"{d}/multi.so", "--arch-list", MULTI + " sm_86").expect_rc(1)
    r.expect_out("FAIL").expect_out("sm_86").expect_out("verdict: FAIL")


@ft.case("verify.so.suffix_folding")
def case_so_folding(t):
    d = t.binary_fixtures()
    # sm_90a and sm_100f satisfy the plain 9.0 and 10.0 the list asks for ...
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "8.0 9.0 10.0 compute_120", rc=0))
    check_eq(e["missing_sass"], [], "missing_sass")
    # ... but an a/f target is satisfied only by itself: sm_100f is not sm_100a, and a plain
    # sm_120 is not sm_120a.
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_90a sm_100a compute_120", rc=1))
    check_eq(e["missing_sass"], ["sm_100a"], "missing_sass")
    e = one(verify(t, f"{d}/cm_size.o", "--arch-list", "sm_80 compute_80 sm_120a", rc=1))
    check_eq(e["missing_sass"], ["sm_120a"], "missing_sass")
    check_eq(e["extra"], ["sm_120"], "extra")
    one(verify(t, f"{d}/cm_size.o", "--arch-list", "sm_80 compute_80 sm_120", rc=0))


@ft.case("verify.so.missing_ptx_tail")
def case_so_ptx(t):
    d = t.binary_fixtures()
    # 10.0+PTX asks for compute_100, which multi.so does not carry (its PTX is compute_120).
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_90a 10.0+PTX compute_120", rc=1))
    check_eq(e["missing_ptx"], ["compute_100"], "missing_ptx")
    check_eq(e["missing_sass"], [], "missing_sass")
    check_eq(check_by_name(e, "ptx")["ok"], False, "ptx check")


@ft.case("verify.so.extra_and_allow_extra")
def case_so_extra(t):
    d = t.binary_fixtures()
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_90a sm_100f", rc=1))
    check_eq(e["extra"], ["compute_120"], "extra")
    check_eq(check_by_name(e, "extra")["ok"], False, "extra check")
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_90a sm_100f", "--allow-extra", rc=0))
    check_eq(e["extra"], ["compute_120"], "extra is still reported")
    check_eq(check_by_name(e, "extra")["ok"], True, "extra check with --allow-extra")
    # --allow-extra does not excuse a missing target.
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_86 sm_90a sm_100f", "--allow-extra", rc=1))
    check_eq(e["missing_sass"], ["sm_86"], "missing_sass")


@ft.case("verify.so.allow_missing")
def case_so_allow_missing(t):
    d = t.binary_fixtures()
    lst = MULTI + " sm_86 sm_89"
    rep = verify(t, f"{d}/multi.so", "--arch-list", lst, "--allow-missing", "sm_86,sm_89", rc=0)
    e = one(rep)
    check_eq(rep["verdict"], "pass", "verdict")
    check_eq(e["missing_sass"], [], "missing_sass")
    check_eq(sorted(e["waived"]), ["sm_86 (--allow-missing)", "sm_89 (--allow-missing)"], "waived")
    # Repeated options compose; a waiver for one target does not waive another.
    e = one(verify(t, f"{d}/multi.so", "--arch-list", lst, "--allow-missing", "sm_86", rc=1))
    check_eq(e["missing_sass"], ["sm_89"], "missing_sass")
    one(verify(t, f"{d}/multi.so", "--arch-list", lst, "--allow-missing", "sm_86",
               "--allow-missing", "sm_89", rc=0))
    # A SASS waiver is not a PTX waiver.
    e = one(verify(t, f"{d}/multi.so", "--arch-list", "sm_80 sm_90a 10.0+PTX compute_120",
                   "--allow-missing", "sm_100", rc=1))
    check_eq(e["missing_ptx"], ["compute_100"], "missing_ptx")
    # The text report prints every waiver used.
    r = t.forge("verify", f"{d}/multi.so", "--arch-list", lst, "--allow-missing", "sm_86,sm_89")
    r.expect_rc(0).expect_out("waived").expect_out("sm_89 (--allow-missing)")
    t.forge("verify", f"{d}/multi.so", "--arch-list", lst, "--allow-missing", "bogus").expect_rc(2)


@ft.case("verify.cubin.max_toolkit")
def case_max_toolkit(t):
    d = t.binary_fixtures()
    rel = ft.nvcc_release(t.nvcc())
    major, minor = (int(x) for x in rel.split("."))
    f = f"{d}/k2_120.cubin"
    for spec in (f"120={rel}", f"*={rel}", f"90={major - 1}.0"):
        e = one(verify(t, f, "--arch-list", "sm_120", "--max-toolkit", spec, rc=0))
        check_eq(e["toolkit_violations"], [], f"violations with {spec}")
        check_eq(check_by_name(e, "toolkit")["ok"], True, f"toolkit check with {spec}")
    older = f"{major - 1}.9" if minor == 0 else f"{major}.{minor - 1}"
    for spec in (f"120={older}", f"*={older}"):
        e = one(verify(t, f, "--arch-list", "sm_120", "--max-toolkit", spec, rc=1))
        check_eq(e["toolkit_violations"], [f"sm_120: built by CUDA {rel} > {older}"], f"violations {spec}")
    # Without --max-toolkit there is no toolkit check at all.
    e = one(verify(t, f, "--arch-list", "sm_120", rc=0))
    check(all(c["check"] != "toolkit" for c in e["checks"]), e["checks"])
    for bad in ("12.8", "120=", "x=12.8", "120=12", "5=12.8"):
        r = t.forge("verify", f, "--arch-list", "sm_120", "--max-toolkit", bad).expect_rc(2)
        r.expect_err("--max-toolkit")


@ft.case("verify.pure_python")
def case_pure_python(t):
    d = t.binary_fixtures()
    # nokernels.so carries only kernel-less cubins: no device code.
    e = one(verify(t, f"{d}/nokernels.so", "--arch-list", "8.0", rc=1))
    check_eq(e["device_code"], False, "device_code")
    check_eq(check_by_name(e, "device-code")["ok"], False, "device-code check")
    check_eq(e["stub_only"], ["sm_80"], "stub_only")
    e = one(verify(t, f"{d}/nokernels.so", "--arch-list", "8.0", "--allow-pure-python", rc=0))
    check_eq(check_by_name(e, "device-code")["ok"], True, "device-code check allowed")
    # A host-only ELF (the wrapper itself) has no device code either.
    e = one(verify(t, t.forge_exe, "--arch-list", "8.0", rc=1))
    check_eq(e["device_code"], False, "host ELF device_code")
    one(verify(t, t.forge_exe, "--arch-list", "8.0", "--allow-pure-python", rc=0))


def wheel(t, name, members):
    path = t.path(name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, src in members.items():
            if isinstance(src, str) and os.path.exists(src):
                z.write(src, arc)
            else:
                z.writestr(arc, src)
    return path


@ft.case("verify.wheel.members")
def case_wheel(t):
    d = t.binary_fixtures()
    whl = f"{d}/pkg-1.0-cp312-cp312-linux_x86_64.whl"
    rep = verify(t, whl, "--arch-list", MULTI, rc=1)
    check_eq(rep["verdict"], "fail", "verdict")
    by_member = {e["member"]: e for e in rep["extensions"]}
    check(all(e["file"] == whl for e in rep["extensions"]), "file is the wheel")
    check_in("pkg/_C.so", by_member, "members")
    check_eq(by_member["pkg/_C.so"]["verdict"], "pass", "pkg/_C.so verdict")
    failing = sorted(m for m, e in by_member.items() if e["verdict"] == "fail")
    check(failing and all(m.startswith("pkg/lib/libstatic.a") for m in failing),
          f"only the static library's members fail: {failing}")
    # A wheel of only the passing extension passes; one with a narrowed copy fails naming it.
    good = wheel(t, "good-1.0-py3-none-any.whl", {"good/_C.so": f"{d}/multi.so",
                                                  "good/__init__.py": "\n"})
    e = one(verify(t, good, "--arch-list", MULTI, rc=0))
    check_eq(e["member"], "good/_C.so", "member")
    mixed = wheel(t, "mixed-1.0-py3-none-any.whl", {"mixed/_C.so": f"{d}/multi.so",
                                                    "mixed/_old.so": f"{d}/nokernels.so"})
    rep = verify(t, mixed, "--arch-list", MULTI, rc=1)
    verdicts = {e["member"]: e["verdict"] for e in rep["extensions"]}
    check_eq(verdicts, {"mixed/_C.so": "pass", "mixed/_old.so": "fail"}, "per-member verdicts")
    r = t.forge("verify", mixed, "--arch-list", MULTI).expect_rc(1)
    r.expect_out("[mixed/_old.so]")


@ft.case("verify.wheel.without_extensions")
def case_wheel_empty(t):
    # A wheel with no binary at all: nothing was verified, which is not a pass.
    whl = wheel(t, "pure-1.0-py3-none-any.whl", {"pure/__init__.py": "x = 1\n"})
    rep = verify(t, whl, "--arch-list", "8.0", rc=1)
    check_eq(rep["verdict"], "fail", "verdict")
    check_eq(rep["extensions"], [], "extensions")


def packages(t, name, text):
    ft.write(t.path("packages", name, "arch_override.yml"), text)
    return t.path("packages")


def resolved(t, *args):
    return t.forge_json("resolve", "--format", "json", *args)


@ft.case("verify.resolve.cuda_torch_package")
def case_resolution(t):
    # Without --arch-list, verify checks against what `resolve` gives for the same options.
    d = t.binary_fixtures()
    pk = packages(t, "mypkg", 'arch_list:\n  list: "8.0 9.0a 10.0f"\n  reason: "test"\n  source: "test"\n')
    combos = [("--cuda", "12.8"), ("--cuda", "12.8", "--torch", "2.9"), ("--cuda", "12.4"),
              ("--cuda", "13.0", "--package", "mypkg", "--packages-dir", pk)]
    seen = set()
    for opts in combos:
        want = sorted(resolved(t, *opts)["targets"])
        r = t.forge("verify", "--format", "json", f"{d}/multi.so", *opts)
        r.expect_rc(1)  # none of these lists is what multi.so carries
        e = one(r.json())
        check_eq(sorted(e["expected"]), want, f"expected for {opts}")
        seen.add(tuple(want))
    check(len(seen) == len(combos), f"every resolution gives its own list: {seen}")


@ft.case("verify.resolve.package_passes")
def case_package_pass(t):
    d = t.binary_fixtures()
    pk = packages(t, "mypkg", 'arch_list:\n  list: "9.0a 12.0a"\n  reason: "test"\n  source: "test"\n')
    opts = ("--package", "mypkg", "--packages-dir", pk)
    # CUDA 12.4 cannot emit sm_120a: the clamp leaves sm_90a, which k2_90a.cubin carries.
    e = one(verify(t, f"{d}/k2_90a.cubin", "--cuda", "12.4", *opts, rc=0))
    check_eq(e["expected"], ["sm_90a"], "expected after the clamp")
    # CUDA 13.0 keeps sm_120a, which the cubin lacks.
    e = one(verify(t, f"{d}/k2_90a.cubin", "--cuda", "13.0", *opts, rc=1))
    check_eq(e["missing_sass"], ["sm_120a"], "missing_sass")
    r = t.forge("verify", f"{d}/k2_90a.cubin", "--cuda", "13.0", *opts).expect_rc(1)
    r.expect_out("packages/mypkg/arch_override.yml")


@ft.case("verify.resolve.package_waivers")
def case_package_waivers(t):
    d = t.binary_fixtures()
    pk = packages(t, "waivy",
                  'arch_list:\n  list: "sm_80 sm_86 sm_90a sm_100f compute_120"\n  reason: "test"\n'
                  '  source: "test"\n'
                  'verify:\n  allow_missing_archs:\n    - {arch: sm_86, evidence: "test: upstream has no sm_86"}\n')
    rep = verify(t, f"{d}/multi.so", "--arch-list", MULTI + " sm_86", "--package", "waivy",
                 "--packages-dir", pk, rc=0)
    e = one(rep)
    check_eq(e["missing_sass"], [], "missing_sass")
    check_eq(len(e["waived"]), 1, "waived")
    check_in("packages/waivy/arch_override.yml", e["waived"][0], "waiver source")
    check(e["waived"][0].startswith("sm_86 "), e["waived"])
    # Without the package the same list fails on sm_86.
    e = one(verify(t, f"{d}/multi.so", "--arch-list", MULTI + " sm_86", rc=1))
    check_eq(e["missing_sass"], ["sm_86"], "missing_sass without the package")


@ft.case("verify.resolve.package_pure_python")
def case_package_pure_python(t):
    d = t.binary_fixtures()
    pk = packages(t, "hostonly", 'verify:\n  allow_pure_python: true\n')
    one(verify(t, f"{d}/nokernels.so", "--arch-list", "8.0", "--package", "hostonly",
               "--packages-dir", pk, rc=0))
    one(verify(t, f"{d}/nokernels.so", "--arch-list", "8.0", rc=1))


@ft.case("verify.json.data_block")
def case_json(t):
    d = t.binary_fixtures()
    rep = verify(t, f"{d}/arch90a.o", f"{d}/k2.fatbin", "--arch-list", "sm_75 compute_75", rc=1)
    check_eq(set(rep), {"verdict", "reason", "narrowed", "extensions", "missing_extensions",
                        "expected_extensions"}, "top-level keys")
    check_eq(rep["verdict"], "fail", "verdict")
    keys = {"file", "member", "expected", "sass", "ptx", "lto", "missing_sass", "missing_ptx",
            "missing_families", "extra", "waived", "stub_only", "kernels", "toolkit_violations",
            "device_code", "source", "verdict", "checks", "ptx_without_kernels", "lost_gpus",
            "host_only", "embedded"}
    by_file = {}
    for e in rep["extensions"]:
        check_eq(set(e), keys, f"keys of {e['file']}")
        check(e["member"] is None, e)
        for c in e["checks"]:
            check_eq(set(c), {"check", "ok", "detail", "waived"}, "check keys")
            check(isinstance(c["ok"], bool) and c["detail"], c)
        by_file[os.path.basename(e["file"])] = e
    fat = by_file["k2.fatbin"]
    check_eq(fat["verdict"], "pass", "k2.fatbin")
    check_eq((fat["sass"], fat["ptx"], fat["kernels"]), (["sm_75"], ["compute_75"], {"sm_75": 1, "compute_75": 1}), "k2.fatbin")
    obj = by_file["arch90a.o"]
    check_eq(obj["verdict"], "fail", "arch90a.o")
    check_eq((obj["sass"], obj["ptx"]), (["sm_90a"], ["compute_90", "compute_90a"]), "arch90a.o")
    check_eq(obj["missing_sass"], ["sm_75"], "missing_sass")
    check_eq(obj["missing_ptx"], ["compute_75"], "missing_ptx")
    check_eq(obj["missing_families"], ["sm_7x"], "missing_families")
    check_eq(sorted(obj["extra"]), ["compute_90", "compute_90a", "sm_90a"], "extra")
    check_eq([c["check"] for c in obj["checks"]], ["family", "sass", "ptx", "extra"], "check order")
    check_eq([c["ok"] for c in obj["checks"]], [False, False, False, False], "check results")
    # nvcc's own objects hold fatbins only in the registered sections.
    check_eq(obj["embedded"], {"judged": False, "containers": 0, "entries": 0, "sections": [],
                               "sass": [], "ptx": [], "lto": []}, "embedded")


@ft.case("verify.exit.unreadable_input")
def case_unreadable(t):
    d = t.binary_fixtures()
    junk = ft.write(t.path("junk.so"), "not an ELF\n")
    trunc = t.path("trunc.so")
    with open(f"{d}/multi.so", "rb") as src:
        ft.write(trunc, src.read()[:200])
    for files in ([junk], [t.path("missing.so")], [trunc], [f"{d}/multi.so", junk]):
        r = t.forge("verify", *files, "--arch-list", MULTI)
        r.expect_rc(2)
        bad = [f for f in files if not f.endswith("multi.so")][0]
        r.expect_err(os.path.basename(bad))
    # The readable file is still reported, and reported as passing.
    r = t.forge("verify", "--format", "json", f"{d}/multi.so", junk, "--arch-list", MULTI).expect_rc(2)
    rep = r.json()
    check_eq([e["verdict"] for e in rep["extensions"]], ["pass"], "the readable file")
    r = t.forge("verify", junk, "--arch-list", MULTI).expect_rc(2)
    r.expect_err("byte 0")
    # A hostile file: a fatbin whose size runs past its end names the offset.
    with open(f"{d}/k2.fatbin", "rb") as src:
        data = bytearray(src.read())
    data[8:16] = (len(data) * 4).to_bytes(8, "little")
    hostile = ft.write(t.path("hostile.fatbin"), bytes(data))
    t.forge("verify", hostile, "--arch-list", "sm_75").expect_rc(2).expect_err("byte 8")


@ft.case("verify.exit.usage")
def case_usage(t):
    d = t.binary_fixtures()
    t.forge("verify", "--arch-list", "8.0").expect_rc(2).expect_err("no FILE")
    t.forge("verify", f"{d}/multi.so", "--arch-list", "8.0", "--format", "yaml").expect_rc(2)
    # --backend accepted one value and changed nothing (issue 40): an unknown option now
    t.forge("verify", f"{d}/multi.so", "--arch-list", "8.0", "--backend", "native").expect_rc(2)
    t.forge("verify", f"{d}/multi.so", "--arch-list", "9.9.9").expect_rc(2)
    t.forge("verify", f"{d}/multi.so", "--cuda", "99.0").expect_rc(2)
    t.forge("verify", f"{d}/multi.so", "--arch-list", "8.0", "--no-such-option").expect_rc(2)


@ft.case("verify.inputs.every_kind")
def case_kinds(t):
    d = t.binary_fixtures()
    cases = [("k2.fatbin", "sm_75 compute_75"), ("k2_90a.cubin", "sm_90a"), ("k2_100f.cubin", "sm_100f"),
             ("cm_size.o", "sm_80 compute_80 sm_120"), ("lto.o", "sm_90a compute_90a"),
             ("size.so", "sm_80 sm_100f")]
    for f, lst in cases:
        e = one(verify(t, f"{d}/{f}", "--arch-list", lst, rc=0))
        check_eq(e["verdict"], "pass", f)
    # A static library is one extension: its members together (cm_speed.o, lto.o, the
    # kernel-less nokernels.o).
    e = one(verify(t, f"{d}/libstatic.a", "--arch-list", "sm_80 compute_80 sm_120 sm_90a compute_90a", rc=0))
    check_eq(e["member"], None, "member")
    # PTX images count their .entry kernels as cubins do.
    check_eq(e["kernels"], {"compute_80": 2, "compute_90a": 2, "sm_120": 2, "sm_80": 2, "sm_90a": 2},
             "kernels")
    e = one(verify(t, f"{d}/libstatic.a", "--arch-list", "sm_80 compute_80 sm_120", rc=1))
    check_eq(sorted(e["extra"]), ["compute_90a", "sm_90a"], "extra")


if __name__ == "__main__":
    sys.exit(ft.main())
