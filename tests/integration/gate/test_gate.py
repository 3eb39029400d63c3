#!/usr/bin/env python3
"""The gate's green must be the truth: verify and `coverage FILE` on small .so files and wheels
built with the real nvcc (a/f PTX, coverage-preserving folding, kernel-less PTX, waivers, host-only
libraries, pure-Python wheels), and resolve's normalisation (narrowed, the second PTX). Cases that
build device code skip (exit 77) without nvcc."""
import json
import os
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check, check_eq, check_in, check_not_in  # noqa: E402

KERNELS = "__global__ void k_add(float* x) { x[threadIdx.x] += 1.0f; }\n"
NO_KERNELS = "int host_only(int a) { return a + 1; }\n"


def build(t, name, gencode, *, sources=None):
    """nvcc -shared NAME from sources {file: text} (default one TU with a kernel), one gencode
    list for every TU; returns the path."""
    nvcc = t.nvcc()
    sources = sources or {"k.cu": KERNELS}
    objs = []
    for src, text in sources.items():
        if isinstance(text, tuple):
            text, codes = text
        else:
            codes = gencode
        ft.write(t.path(src), text)
        obj = t.path(src + ".o")
        argv = [nvcc, "-c", "-Xcompiler", "-fPIC", "-o", obj, t.path(src)]
        for g in codes:
            argv += ["-gencode", g]
        t.run(argv).expect_ok()
        objs.append(obj)
    out = t.path(name)
    t.run([nvcc, "-shared", "-o", out, *objs]).expect_ok()
    return out


def wheel(t, name, members):
    path = t.path(name)
    with zipfile.ZipFile(path, "w") as z:
        for arc, src in members.items():
            if src is None:
                z.writestr(arc, "print('hi')\n")
            else:
                z.write(src, arc)
    return path


def verify(t, *args):
    return t.forge("verify", *args)


@ft.case("gate.verify.suffixed_ptx_is_no_tail")
def case_suffixed_ptx(t):
    so = build(t, "a.so", ["arch=compute_80,code=sm_80",
                           "arch=compute_90a,code=[sm_90a,compute_90a]"])
    r = verify(t, so, "--arch-list", "8.0 9.0+PTX").expect_rc(1)
    check_in("missing PTX compute_90", r.out)
    check_in("present: compute_90a", r.out)
    check_in("lost      10.0", r.out)
    j = verify(t, so, "--arch-list", "8.0 9.0+PTX", "--format", "json").expect_rc(1).json()
    ext = j["extensions"][0]
    check_eq(ext["missing_ptx"], ["compute_90"], "missing_ptx")
    check("10.0" in [g["cc"] for g in ext["lost_gpus"]], ext["lost_gpus"])
    # the binary's own coverage agrees: nothing above 9.0 is reached
    cov = t.forge("coverage", so, "--format", "json").expect_ok().json()
    rows = cov["extensions"][0]["coverage"]
    check_eq(rows["9.0"]["tier"], "native", "9.0")
    check_eq(rows["10.0"]["tier"], "dead", "10.0")
    check_eq(rows["12.0"]["tier"], "dead", "12.0")


@ft.case("gate.verify.folding_keeps_coverage")
def case_folding(t):
    so = build(t, "sage.so", ["arch=compute_90a,code=sm_90a", "arch=compute_100a,code=sm_100a",
                              "arch=compute_120a,code=sm_120a", "arch=compute_121a,code=sm_121a"])
    r = verify(t, so, "--arch-list", "9.0 10.0 12.0 12.1").expect_rc(1)
    check_in("missing sm_100", r.out)
    check_in("lost      10.3", r.out)
    check_not_in("lost      12.1", r.out)
    cov = t.forge("coverage", so, "--format", "json").expect_ok().json()
    rows = cov["extensions"][0]["coverage"]
    check_eq(rows["10.3"]["tier"], "dead", "10.3 from what the binary carries")
    check_eq(rows["12.1"]["tier"], "native", "12.1")
    # the package declares 10.3 now: its promise names the GPU the wheel loses
    pc = t.forge("coverage", "--package", "sageattention", "--cuda", "13.0", "--format",
                 "json").expect_ok().json()
    check("sm_103" in pc["10.3"]["via"], pc["10.3"])


@ft.case("gate.verify.kernel_less_ptx")
def case_kernel_less_ptx(t):
    sass = ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"]
    so = build(t, "mixed.so", sass, sources={
        "k.cu": KERNELS, "empty.cu": (NO_KERNELS, ["arch=compute_90,code=compute_90"])})
    r = verify(t, so, "--arch-list", "8.0 9.0+PTX").expect_rc(1)
    check_in("missing PTX compute_90", r.out)
    check_in("no-entry  compute_90", r.out)
    # PTX with a kernel counts, and its kernels are reported like a cubin's
    good = build(t, "good.so", ["arch=compute_80,code=sm_80",
                                "arch=compute_90,code=[sm_90,compute_90]"])
    j = verify(t, good, "--arch-list", "8.0 9.0+PTX", "--format", "json").expect_ok().json()
    check_eq(j["extensions"][0]["kernels"].get("compute_90"), 1, "compute_90 kernels")


@ft.case("gate.verify.waiver_on_its_line")
def case_waiver(t):
    so = build(t, "w.so", ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"])
    r = verify(t, so, "--arch-list", "8.0 9.0 10.0", "--allow-missing", "sm_100").expect_ok()
    line = [ln for ln in r.out.splitlines() if ". sass" in ln]
    check(line and "ok (waived: sm_100 — --allow-missing)" in line[0], r.out)
    check_in("2 of 3 cubin arch(es) as asked", line[0])
    check_not_in("ok    3 cubin arch(es) as asked", r.out)


@ft.case("gate.verify.host_only_library")
def case_host_only(t):
    so = build(t, "_C.so", ["arch=compute_80,code=sm_80"])
    ft.write(t.path("gomp.c"), "int gomp_stand_in(void) { return 1; }\n")
    gomp = t.path("libgomp-a34b3233.so.1.0.0")
    t.run(["cc", "-shared", "-fPIC", "-o", gomp, t.path("gomp.c")]).expect_ok()
    whl = wheel(t, "pkg-1.0-cp312-cp312-linux_x86_64.whl", {
        "pkg/_C.cpython-312-x86_64-linux-gnu.so": so, "pkg.libs/libgomp-a34b3233.so.1.0.0": gomp,
        "pkg/__init__.py": None})
    r = verify(t, whl, "--arch-list", "8.0").expect_ok()
    check_in("HOST  ", r.out)
    check_in("libgomp", r.out)
    j = verify(t, whl, "--arch-list", "8.0", "--format", "json").expect_ok().json()
    host = [e for e in j["extensions"] if e["host_only"]]
    check_eq(len(host), 1, "host-only entries")
    check_eq(host[0]["source"], "none", "source of an unmeasured file")
    # a Python extension module without device code still fails
    bad = wheel(t, "bad-1.0-cp312-cp312-linux_x86_64.whl",
                {"pkg/_C.cpython-312-x86_64-linux-gnu.so": gomp})
    verify(t, bad, "--arch-list", "8.0").expect_rc(1)


@ft.case("gate.verify.pure_python")
def case_pure_python(t):
    whl = wheel(t, "W3-1.0-py3-none-any.whl", {"w3/__init__.py": None})
    r = verify(t, whl, "--arch-list", "8.0").expect_rc(1)
    check_in("no extension module", r.out)
    r = verify(t, whl, "--arch-list", "8.0", "--allow-pure-python").expect_ok()
    check_in("verdict: pass", r.out)
    check_in("allow_pure_python", r.out)


def package(t, name, arch_override):
    d = t.path("packages", name)
    os.makedirs(d, exist_ok=True)
    ft.write(os.path.join(d, "arch_override.yml"), arch_override)
    return t.path("packages")


@ft.case("gate.resolve.narrowed")
def case_narrowed(t):
    pk = package(t, "narrow", 'arch_list:\n  list: "8.0 9.0+PTX"\n'
                              '  reason: "the build failed on 10.0 and 12.0"\n'
                              '  source: "a test"\n')
    args = ["--package", "narrow", "--packages-dir", pk, "--cuda", "13.0"]
    j = t.forge_json("resolve", *args, "--format", "json")
    check_eq([n["token"] for n in j["narrowed"]], ["7.5", "8.6", "10.0", "12.0+PTX"], "narrowed")
    check_eq(j["narrowed"][0]["reason"], "the build failed on 10.0 and 12.0", "reason")
    t.forge("resolve", *args).expect_ok().expect_err("narrowed 7.5: dropped against "
                                                     "arch_policy[13.0]")
    cov = t.forge("coverage", *args).expect_ok()
    cov.expect_out("Narrowed against arch_policy[13.0]")
    cov.expect_out("10.0 B200, GB200: native -> jit")
    cov.expect_out("7.5 ")
    so = build(t, "n.so", ["arch=compute_80,code=sm_80", "arch=compute_90,code=[sm_90,compute_90]"])
    v = verify(t, so, *args, "--format", "json").expect_ok().json()
    check(any(n.startswith("10.0 ") for n in v["narrowed"]), v["narrowed"])
    verify(t, so, *args).expect_ok().expect_out("narrowed  7.5 (dropped against arch_policy[13.0]")


@ft.case("gate.resolve.major_gap_ptx")
def case_gap(t):
    pk = package(t, "gappy", 'arch_list:\n  list: "8.0 10.0 12.0"\n  reason: "floor"\n'
                             '  source: "a test"\n')
    args = ["--package", "gappy", "--packages-dir", pk, "--cuda", "13.0"]
    j = t.forge_json("resolve", *args, "--format", "json")
    check_eq(j["arch_list"], "8.0+PTX 10.0 12.0+PTX", "arch_list")
    check_eq(j["ptx_added"], ["12.0", "8.0"], "ptx_added")
    check(any("major 9 has no cubin" in n and "jit" in n for n in j["notes"]), j["notes"])
    cov = t.forge_json("coverage", *args, "--format", "json")
    check_eq(cov["9.0"]["tier"], "jit", "H100 with the second PTX")


@ft.case("gate.resolve.target_forms_lost_lines")
def case_target_forms(t):
    # A SageAttention-like package: 9.0 and 10.0 are built as a targets, 10.3 is asked for but the
    # build skips it. The gate expects the forms, so the only finding is the GPU really lost.
    pk = package(t, "akern", 'arch_list:\n  list: "8.0 9.0 10.0 10.3"\n  reason: "r"\n'
                             '  source: "a test"\n'
                             'target_forms:\n  reason: "a kernels"\n  source: "a test"\n'
                             '  forms:\n    "9.0": {sass: sm_90a, ptx: compute_90a}\n'
                             '    "10.0": {sass: sm_100a, ptx: compute_100a}\n'
                             'forward_ptx: {value: false, reason: "a kernels"}\n')
    args = ["--package", "akern", "--packages-dir", pk, "--cuda", "13.0"]
    j = t.forge_json("resolve", *args, "--format", "json")
    check_eq(j["builds_as"], ["sm_80", "sm_90a", "sm_100a", "sm_103"], "builds_as")
    check_eq(j["arch_list"], "8.0 9.0 10.0 10.3", "the request stays plain")
    so = build(t, "akern.so", ["arch=compute_80,code=sm_80", "arch=compute_90a,code=sm_90a",
                               "arch=compute_100a,code=sm_100a"])
    v = verify(t, so, *args, "--format", "json").expect_rc(1).json()
    (e,) = v["extensions"]
    check_eq(sorted(e["expected"]), ["sm_100a", "sm_103", "sm_80", "sm_90a"], "expected")
    check_eq(e["missing_sass"], ["sm_103"], "only 10.3 is missing, not a plain sm_100")
    check_eq([g["cc"] for g in e["lost_gpus"]], ["10.3"], "lost")
    verify(t, so, *args).expect_rc(1).expect_out("10.3 (B300, GB300): native -> dead")
    # coverage of the same cell says the same: B300 is served only by the sm_103 it asks for
    cov = t.forge_json("coverage", *args, "--format", "json")
    check_eq(cov["10.3"]["via"], ["sm_103"], "10.3 via")
    check_eq(cov["10.0"]["via"], ["sm_100a"], "10.0 via")


@ft.case("gate.coverage.major_boundary")
def case_major_boundary(t):
    # Thor (11.0) is an aarch64 part named 11.0 from CUDA 13.0
    cov = t.forge_json("coverage", "--arch-list", "8.0 10.0+PTX", "--platform", "linux_aarch64",
                       "--cuda", "13.0", "--format", "json")
    row = cov["11.0"]
    check_eq(row["tier"], "jit", "11.0 through compute_100")
    check_in("compute_100", row["why"])
    check_not_in("compute_100/compute_120 PTX cannot", row.get("note", ""))


@ft.case("gate.cli.small")
def case_small(t):
    h = verify(t, "--help").expect_ok()
    check_not_in("| cuobjdump", h.out)
    verify(t, "x.so", "--arch-list", "8.0", "--backend", "cuobjdump").expect_rc(2)
    r = t.forge("resolve", "--cuda", "12.8", "--torch", "2.9.1+cu126").expect_rc(2)
    check_in("built for CUDA 12.6", r.err)
    t.forge("resolve", "--cuda", "13").expect_ok().expect_err("--cuda 13 read as CUDA 13.0")


@ft.case("gate.list.stub_unknown_until_decompressed")
def case_stub_unknown(t):
    nvcc = t.nvcc()
    ft.write(t.path("nk.cu"), NO_KERNELS)
    obj = t.path("nk.o")
    t.run([nvcc, "-c", "-o", obj, t.path("nk.cu"), "-gencode", "arch=compute_80,code=sm_80",
           "--compress-mode=size", "-Xfatbin", "-compress-all"]).expect_ok()
    rows = json.loads(t.forge("list", "--format", "json", obj).expect_ok().out)
    sass = [r for r in rows if r["kind"] == "sass"]
    check(sass and sass[0]["compression"] != "none", rows)
    check_eq(sass[0]["stub"], None, "stub without --toolkit")
    t.forge("list", obj).expect_ok().expect_out("unknown")
    rows = json.loads(t.forge("list", "--format", "json", "--toolkit", obj).expect_ok().out)
    check_eq([r["stub"] for r in rows if r["kind"] == "sass"][0], True, "stub with --toolkit")


sys.exit(ft.main())
