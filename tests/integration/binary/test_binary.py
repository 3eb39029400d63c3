#!/usr/bin/env python3
"""nvcc-forge list end to end: the CLI on nvcc-built fixtures (tests/fixtures/binary), JSON keys and
values, the text table, --toolkit, exit codes, and the cuobjdump backends. Skipped (exit 77) when
nvcc is absent for the fixtures, or cuobjdump for its cases."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402


def run(t, *args, env=None):
    r = t.forge("list", *args, env=env)
    return r.rc, r.out, r.err


def fixtures(t):
    """Builds (once per build tree, shared by every case) the fixtures; make_fixtures.sh exits 77
    without nvcc."""
    out = os.path.join(t.work_root, "fixtures")
    r = t.run(["bash", t.fixtures("binary", "make_fixtures.sh"), out])
    if r.rc == ft.SKIP:
        ft.skip("nvcc not available")
    check(r.rc == 0, f"fixture build failed: {r.err[-2000:]}")
    return out


def listing(t, *files, extra=()):
    rc, out, err = run(t, "--format", "json", *extra, *files)
    check(rc == 0, f"list {files} exited {rc}: {err}")
    return json.loads(out)


@ft.case("binary.list.json_keys")
def case_json_keys(t):
    d = fixtures(t)
    rows = listing(t, f"{d}/multi.so", f"{d}/lto.o")
    required = {"file", "member", "section", "kind", "arch", "compression", "stub", "toolkit"}
    for r in rows:
        check(required <= set(r), f"missing keys in {r}")
        check(r["kind"] in ("sass", "ptx", "lto"), r)
        check(r["compression"] in ("none", "lz4", "zstd"), r)
        # a compressed cubin is unknown (null) until --toolkit decompresses it
        check(isinstance(r["stub"], bool) or
              (r["stub"] is None and r["kind"] == "sass" and r["compression"] != "none"), r)
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
    odd = os.path.join(t.work, 'odd "name" \\ tab\t.fatbin')
    with open(f"{d}/k2.fatbin", "rb") as src, open(odd, "wb") as dst:
        dst.write(src.read())
    rows = listing(t, odd)
    check(len(rows) == 2 and all(r["file"] == odd for r in rows), rows)


@ft.case("binary.list.text_table")
def case_text_table(t):
    d = fixtures(t)
    rc, out, err = run(t, f"{d}/arch90a.o", f"{d}/nokernels.o")
    check(rc == 0, err)
    lines = out.strip().splitlines()
    check(lines[0].split()[:7] == ["FILE", "MEMBER", "SECTION", "FATBIN", "OFFSET", "KIND", "ARCH"], lines[0])
    check(len(lines) == 1 + 3 + 2, f"expected 5 rows: {out}")
    arch_col = lines[0].index("ARCH")
    archs = sorted(l[arch_col:].split()[0] for l in lines[1:])
    check(archs == sorted(["compute_90", "sm_90a", "compute_90a", "sm_80", "compute_80"]), archs)


@ft.case("binary.list.toolkit")
def case_toolkit(t):
    d = fixtures(t)
    rel = ft.nvcc_release(os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"))
    rows = listing(t, f"{d}/cm_size.o", f"{d}/cm_all_speed.o", f"{d}/k2_120.cubin", extra=("--toolkit",))
    for r in rows:
        if r["kind"] == "sass":
            check(r["toolkit"] == rel, f"toolkit {r['toolkit']} != {rel}: {r}")
            check(r["kernels"] == (1 if r["file"].endswith(".cubin") else 2), r)
        else:
            check(r["toolkit"] is None, r)


@ft.case("binary.list.exit_codes")
def case_exit_codes(t):
    d = fixtures(t)
    bad = os.path.join(t.work, "not-a-binary.txt")
    with open(bad, "w") as f:
        f.write("hello\n")
    rc, out, err = run(t, "--format", "json", f"{d}/k2.fatbin", bad, f"{d}/missing.so")
    check(rc == 2, f"exit {rc}")
    rows = json.loads(out)
    check(len(rows) == 2 and all(r["file"].endswith("k2.fatbin") for r in rows), "others still listed")
    check("not-a-binary.txt" in err and "byte 0" in err, err)
    check("missing.so" in err, err)
    rc, _, err = run(t, "--format", "yaml", f"{d}/k2.fatbin")
    check(rc == 2, "bad --format")
    rc, _, _ = run(t)
    check(rc == 2, "no file")
    rc, out, _ = run(t, t.forge_exe)  # a host-only ELF: no rows, exit 0
    check(rc == 0 and "no device code" in out, f"host-only ELF: {rc} {out}")


@ft.case("binary.list.wheel")
def case_wheel(t):
    d = fixtures(t)
    rows = listing(t, f"{d}/pkg-1.0-cp312-cp312-linux_x86_64.whl")
    members = sorted({r["member"] for r in rows})
    check(members == ["pkg/_C.so", "pkg/lib/libstatic.a(cm_speed.o)", "pkg/lib/libstatic.a(lto.o)",
                      "pkg/lib/libstatic.a(nokernels.o)"], members)
    so = [r for r in rows if r["member"] == "pkg/_C.so"]
    direct = listing(t, f"{d}/multi.so")
    key = lambda r: (r["fatbin"], r["offset"], r["arch"], r["compression"], r["stub"])
    check(sorted(map(key, so)) == sorted(map(key, direct)), "wheel member lists like the file")


def cuobjdump_or_skip(t):
    rc, _, err = run(t, "--backend", "cuobjdump", t.forge_exe)
    if rc != 0 and "cuobjdump not found" in err:
        ft.skip("cuobjdump not available")


@ft.case("binary.list.cuobjdump_backend")
def case_cuobjdump_backend(t):
    d = fixtures(t)
    cuobjdump_or_skip(t)
    rows = listing(t, f"{d}/multi.so", extra=("--backend", "cuobjdump"))
    got = sorted((r["kind"], r["arch"]) for r in rows)
    # cuobjdump names the family cubin sm_100 and lists the stub fatbin too.
    want = sorted([("sass", a) for a in ("sm_80", "sm_90a", "sm_100")] * 3 + [("ptx", "compute_120")] * 2)
    check(got == want, f"{got} != {want}")
    rdc = listing(t, f"{d}/rdc.so", extra=("--backend", "cuobjdump"))
    check(len(rdc) == 1, f"cuobjdump lists only the executable fatbin: {rdc}")
    rdc_all = listing(t, f"{d}/rdc.so", extra=("--backend", "cuobjdump", "--all"))
    check(len(rdc_all) == 5, f"-all lists the relocatable fatbins too: {rdc_all}")


@ft.case("binary.list.both_backend")
def case_both_backend(t):
    d = fixtures(t)
    cuobjdump_or_skip(t)
    files = [f"{d}/{f}" for f in sorted(os.listdir(d))
             if f.endswith((".o", ".so", ".a", ".cubin", ".fatbin")) and f != "libbsd.a"]
    for extra in ((), ("--all",)):
        rc, out, err = run(t, "--backend", "both", "--format", "json", *extra, *files)
        check(rc == 0, f"native and cuobjdump differ {extra}: {err}")
    # A difference is reported and exits 2: cuobjdump cannot read BSD long-name archives.
    rc, _, err = run(t, "--backend", "both", f"{d}/libbsd.a")
    check(rc == 2 and "differs from cuobjdump" in err, f"{rc} {err}")


if __name__ == "__main__":
    sys.exit(ft.main())
