#!/usr/bin/env python3
"""nvcc-forge list end to end. Usage: test_list_cli.py NVCC_FORGE MAKE_FIXTURES OUTDIR CASE.
Exit 0 pass, 1 fail, 77 skip (no nvcc for the fixtures, or no cuobjdump for its cases)."""
import json
import os
import subprocess
import sys

EXE, MAKE, OUT, CASE = sys.argv[1:5]
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(*args, env=None):
    p = subprocess.run([EXE, "list", *args], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def fixtures():
    rc = subprocess.run(["bash", MAKE, OUT], capture_output=True, text=True)
    if rc.returncode == SKIP:
        print("SKIP: nvcc not available")
        sys.exit(SKIP)
    check(rc.returncode == 0, f"fixture build failed: {rc.stderr[-2000:]}")
    return OUT


def listing(*files, extra=()):
    rc, out, err = run("--format", "json", *extra, *files)
    check(rc == 0, f"list {files} exited {rc}: {err}")
    return json.loads(out)


def nvcc_release():
    out = subprocess.run([os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"), "--version"],
                         capture_output=True, text=True).stdout
    return out.split("release ")[1].split(",")[0]


def case_json_keys(d):
    rows = listing(f"{d}/multi.so", f"{d}/lto.o")
    required = {"file", "member", "section", "kind", "arch", "compression", "stub", "toolkit"}
    for r in rows:
        check(required <= set(r), f"missing keys in {r}")
        check(r["kind"] in ("sass", "ptx", "lto"), r)
        check(r["compression"] in ("none", "lz4", "zstd"), r)
        check(isinstance(r["stub"], bool), r)
        check(r["member"] is None, r)
        check(r["toolkit"] is None, "toolkit without --toolkit")
    multi = sorted((r["fatbin"], r["kind"], r["arch"], r["stub"]) for r in rows if r["file"].endswith("multi.so"))
    want = sorted([(0, "sass", "sm_80", True), (0, "sass", "sm_90a", True), (0, "sass", "sm_100f", True)] +
                  [(i, k, a, False) for i in (1, 2) for k, a in
                   (("sass", "sm_80"), ("sass", "sm_90a"), ("sass", "sm_100f"), ("ptx", "compute_120"))])
    check(multi == want, f"multi.so rows {multi} != {want}")
    lto = sorted((r["section"], r["kind"], r["arch"]) for r in rows if r["file"].endswith("lto.o"))
    check(lto == sorted([("__nv_relfatbin", "sass", "sm_90a"), ("__nv_relfatbin", "ptx", "compute_90a"),
                         ("__nv_relfatbin", "lto", "lto_80")]), lto)


    # Names that need JSON escaping round-trip.
    os.makedirs(OUT + "-misc", exist_ok=True)  # kept out of the fixture dir other cases scan
    odd = os.path.join(OUT + "-misc", 'odd "name" \\ tab\t.fatbin')
    with open(f"{d}/k2.fatbin", "rb") as src, open(odd, "wb") as dst:
        dst.write(src.read())
    rows = listing(odd)
    check(len(rows) == 2 and all(r["file"] == odd for r in rows), rows)


def case_text_table(d):
    rc, out, err = run(f"{d}/arch90a.o", f"{d}/nokernels.o")
    check(rc == 0, err)
    lines = out.strip().splitlines()
    check(lines[0].split()[:7] == ["FILE", "MEMBER", "SECTION", "FATBIN", "OFFSET", "KIND", "ARCH"], lines[0])
    check(len(lines) == 1 + 3 + 2, f"expected 5 rows: {out}")
    arch_col = lines[0].index("ARCH")
    archs = sorted(l[arch_col:].split()[0] for l in lines[1:])
    check(archs == sorted(["compute_90", "sm_90a", "compute_90a", "sm_80", "compute_80"]), archs)


def case_toolkit(d):
    rel = nvcc_release()
    rows = listing(f"{d}/cm_size.o", f"{d}/cm_all_speed.o", f"{d}/k2_120.cubin", extra=("--toolkit",))
    for r in rows:
        if r["kind"] == "sass":
            check(r["toolkit"] == rel, f"toolkit {r['toolkit']} != {rel}: {r}")
            check(r["kernels"] == (1 if r["file"].endswith(".cubin") else 2), r)
        else:
            check(r["toolkit"] is None, r)


def case_exit_codes(d):
    os.makedirs(OUT + "-misc", exist_ok=True)
    bad = os.path.join(OUT + "-misc", "not-a-binary.txt")
    with open(bad, "w") as f:
        f.write("hello\n")
    rc, out, err = run("--format", "json", f"{d}/k2.fatbin", bad, f"{d}/missing.so")
    check(rc == 2, f"exit {rc}")
    rows = json.loads(out)
    check(len(rows) == 2 and all(r["file"].endswith("k2.fatbin") for r in rows), "others still listed")
    check("not-a-binary.txt" in err and "byte 0" in err, err)
    check("missing.so" in err, err)
    rc, _, err = run("--format", "yaml", f"{d}/k2.fatbin")
    check(rc == 2, "bad --format")
    rc, _, _ = run()
    check(rc == 2, "no file")
    rc, out, _ = run(EXE)  # a host-only ELF: no rows, exit 0
    check(rc == 0 and "no device code" in out, f"host-only ELF: {rc} {out}")


def case_wheel(d):
    rows = listing(f"{d}/pkg-1.0-cp312-cp312-linux_x86_64.whl")
    members = sorted({r["member"] for r in rows})
    check(members == ["pkg/_C.so", "pkg/lib/libstatic.a(cm_speed.o)", "pkg/lib/libstatic.a(lto.o)",
                      "pkg/lib/libstatic.a(nokernels.o)"], members)
    so = [r for r in rows if r["member"] == "pkg/_C.so"]
    direct = listing(f"{d}/multi.so")
    key = lambda r: (r["fatbin"], r["offset"], r["arch"], r["compression"], r["stub"])
    check(sorted(map(key, so)) == sorted(map(key, direct)), "wheel member lists like the file")


def cuobjdump_or_skip():
    rc, _, err = run("--backend", "cuobjdump", EXE)
    if rc != 0 and "cuobjdump not found" in err:
        print("SKIP: cuobjdump not available")
        sys.exit(SKIP)


def case_cuobjdump_backend(d):
    cuobjdump_or_skip()
    rows = listing(f"{d}/multi.so", extra=("--backend", "cuobjdump"))
    got = sorted((r["kind"], r["arch"]) for r in rows)
    # cuobjdump names the family cubin sm_100 and lists the stub fatbin too.
    want = sorted([("sass", a) for a in ("sm_80", "sm_90a", "sm_100")] * 3 + [("ptx", "compute_120")] * 2)
    check(got == want, f"{got} != {want}")
    rdc = listing(f"{d}/rdc.so", extra=("--backend", "cuobjdump"))
    check(len(rdc) == 1, f"cuobjdump lists only the executable fatbin: {rdc}")
    rdc_all = listing(f"{d}/rdc.so", extra=("--backend", "cuobjdump", "--all"))
    check(len(rdc_all) == 5, f"-all lists the relocatable fatbins too: {rdc_all}")


def case_both_backend(d):
    cuobjdump_or_skip()
    files = [f"{d}/{f}" for f in sorted(os.listdir(d))
             if f.endswith((".o", ".so", ".a", ".cubin", ".fatbin")) and f != "libbsd.a"]
    for extra in ((), ("--all",)):
        rc, out, err = run("--backend", "both", "--format", "json", *extra, *files)
        check(rc == 0, f"native and cuobjdump differ {extra}: {err}")
    # A difference is reported and exits 2: cuobjdump cannot read BSD long-name archives.
    rc, _, err = run("--backend", "both", f"{d}/libbsd.a")
    check(rc == 2 and "differs from cuobjdump" in err, f"{rc} {err}")


if __name__ == "__main__":
    d = fixtures()
    globals()["case_" + CASE](d)
    print("PASS", CASE)
