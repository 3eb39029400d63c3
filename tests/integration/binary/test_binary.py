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


# ---- PE/COFF (Windows) ------------------------------------------------------------------------

def kinds(rows):
    return sorted((r["kind"], r["arch"]) for r in rows)


@ft.case("binary.pe.list_fixtures")
def case_pe_list_fixtures(t):
    """The hand-made PE/COFF files (make_pe.py) list exactly the entries of the real fatbins they
    carry, under the section names link.exe or the string table give them."""
    d = fixtures(t)
    a, b = kinds(listing(t, f"{d}/k2.fatbin")), kinds(listing(t, f"{d}/k1_80_90.fatbin"))
    check(a and b and a != b, f"source fatbins {a} {b}")
    soft = ft.Soft()
    want = {
        "amd64.dll": ({".nv_fatb"}, sorted(a + b)),
        "arm64.dll": ({".nv_fatb"}, a),
        "pe32.dll": ({".nv_fatb"}, a),
        "longnames.dll": ({".nv_fatbin"}, a),
        "rdc.obj": ({"__nv_relfatbin"}, a),
        "exec.obj": ({".nv_fatbin"}, b),
        "big.obj": ({"__nv_relfatbin"}, a),
        "kernels.lib": ({"__nv_relfatbin", ".nv_fatbin"}, sorted(a + b)),
    }
    for name, (sections, entries) in want.items():
        rows = listing(t, f"{d}/pe/{name}")
        soft.check_eq(kinds(rows), entries, name)
        soft.check_eq({r["section"] for r in rows}, sections, name)
    lib = listing(t, f"{d}/pe/kernels.lib")
    soft.check_eq(sorted({r["member"] for r in lib}),
            ["exec.obj", "out/x64/release/rdc_with_a_long_name.obj"], "kernels.lib members")
    rc, out, err = run(t, f"{d}/pe/nocode.dll")
    soft.check(rc == 0 and out.strip().endswith("nocode.dll: no device code"), f"{rc} {out} {err}")
    soft.done()


@ft.case("binary.pe.verify_wheel")
def case_pe_verify_wheel(t):
    """A win_amd64 wheel: its .pyd is the extension; all its archs pass, one more fails, named."""
    d = fixtures(t)
    whl = f"{d}/pe/pkg-1.0-cp312-cp312-win_amd64.whl"
    have = sorted({r["arch"] for r in listing(t, whl) if r["kind"] == "sass"})
    check(len(have) >= 2, have)
    r = t.forge("verify", "--arch-list", ",".join(have), "--format", "json", whl).expect_rc(0)
    exts = r.json()["extensions"]
    check(len(exts) == 1 and exts[0]["member"] == "pkg/_C.cp312-win_amd64.pyd", exts)
    r = t.forge("verify", "--arch-list", ",".join(have + ["sm_100"]), whl).expect_rc(1)
    check("missing sm_100" in r.out and "_C.cp312-win_amd64.pyd" in r.out, r.out)


def patched(data, off, fmt, value):
    import struct
    b = bytearray(data)
    struct.pack_into(fmt, b, off, value)
    return bytes(b)


@ft.case("binary.pe.malformed")
def case_pe_malformed(t):
    """A PE file that cannot be read is an error with its byte offset (exit 2), never "no device
    code"; Mach-O is named as a host format not read. Also inside a wheel, and for verify."""
    import struct
    import zipfile
    d = fixtures(t)
    good = open(f"{d}/pe/amd64.dll", "rb").read()
    lfanew = struct.unpack_from("<I", good, 0x3C)[0]
    coff = lfanew + 4
    opt_size = struct.unpack_from("<H", good, coff + 16)[0]
    sec0 = coff + 20 + opt_size
    fat = sec0 + 40  # the .nv_fatb section header (make_pe.py: .text first)
    cases = {
        "truncated_dos": good[:0x30],
        "lfanew_past_end": patched(good, 0x3C, "<I", len(good) + 8),
        "bad_signature": patched(good, lfanew, "<I", 0x454E),
        "truncated_sections": good[:sec0 + 20],
        "huge_section_count": patched(good, coff + 2, "<H", 0xFFFF),
        "section_past_end": patched(good, fat + 20, "<I", len(good) - 16),
        "bad_optional_magic": patched(good, coff + 20, "<H", 0x107),
        "long_name_no_strtab": patched(good, fat, "<8s", b"/4"),
        "unknown_machine": patched(good, coff, "<H", 0x1234),
    }
    longnames = open(f"{d}/pe/longnames.dll", "rb").read()
    lcoff = struct.unpack_from("<I", longnames, 0x3C)[0] + 4
    lsec0 = lcoff + 20 + struct.unpack_from("<H", longnames, lcoff + 16)[0]
    cases["long_name_out_of_range"] = patched(longnames, lsec0, "<8s", b"/999999")
    cases["strtab_past_end"] = patched(longnames, lcoff + 8, "<I", len(longnames) - 2)
    soft = ft.Soft()
    for name, data in cases.items():
        p = t.path(f"{name}.dll")
        with open(p, "wb") as f:
            f.write(data)
        rc, out, err = run(t, p)
        soft.check(rc == 2 and "at byte" in err and "no device code" not in out,
                   f"{name}: rc {rc} out {out!r} err {err!r}")
    macho = t.path("lib.dylib")
    with open(macho, "wb") as f:
        f.write(struct.pack("<IiiIIII", 0xFEEDFACF, 0x01000007, 3, 6, 0, 0, 0) + b"\0" * 64)
    whl = t.path("pkg-1.0-cp312-cp312-win_amd64.whl")
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("pkg/_C.pyd", cases["section_past_end"])
    mac_whl = t.path("pkg-1.0-cp312-cp312-macosx_11_0_arm64.whl")
    with zipfile.ZipFile(mac_whl, "w") as z:
        z.writestr("pkg/_C.so", open(macho, "rb").read())
    for p, words in ((macho, "Mach-O"), (whl, "_C.pyd"), (mac_whl, "Mach-O")):
        rc, out, err = run(t, p)
        soft.check(rc == 2 and words in err and "no device code" not in out, f"{p}: {rc} {out} {err}")
        r = t.forge("verify", "--arch-list", "sm_80", p)
        soft.check(r.rc == 2 and words in r.err, f"verify {p}: {r.rc} {r.out} {r.err}")
    soft.done()


@ft.case("binary.pe.both_backend")
def case_pe_both_backend(t):
    """cuobjdump on Linux reads no PE: --backend both says so instead of reporting a difference."""
    d = fixtures(t)
    cuobjdump_or_skip(t)
    rc, out, err = run(t, "--backend", "both", f"{d}/pe/amd64.dll")
    check(rc == 2 and "cannot read PE" in err and "differs" not in err, f"{rc} {err}")
    check("sm_80" in out, f"the native rows are still listed: {out}")


@ft.case("binary.pe.curand_truth")
def case_pe_curand_truth(t):
    """NVIDIA ships one release for both systems: the device code of curand64_10.dll (PE, in the
    win_amd64 wheel) equals libcurand.so.10's (ELF, manylinux wheel), entry for entry."""
    import collections
    import glob
    cache = os.path.join(t.tools_dir, "pe-truth")
    r = t.run(["bash", t.src("tests", "integration", "binary", "fetch_pe_truth.sh"), cache])
    if r.rc != 0:
        ft.skip(f"cannot download nvidia-curand-cu12==10.3.10.19 from PyPI into {cache}: {r.err[-300:]}")
    rows = {}
    for platform in ("win_amd64", "manylinux_2_27_x86_64"):
        (whl,) = glob.glob(os.path.join(cache, f"nvidia_curand_cu12-10.3.10.19-*-{platform}.whl"))
        rows[platform] = listing(t, whl)
    win, lin = rows["win_amd64"], rows["manylinux_2_27_x86_64"]
    check({r["member"] for r in win} == {"nvidia/curand/bin/curand64_10.dll"}, {r["member"] for r in win})
    check({r["member"] for r in lin} == {"nvidia/curand/lib/libcurand.so.10"}, {r["member"] for r in lin})
    check({r["section"] for r in win} == {".nv_fatb"}, {r["section"] for r in win})
    w = collections.Counter((r["kind"], r["arch"]) for r in win)
    l = collections.Counter((r["kind"], r["arch"]) for r in lin)
    check(w == l, f"DLL and .so differ: only DLL {w - l}, only .so {l - w}")
    check(len(win) == 153 and len(lin) == 153, f"{len(win)} DLL entries, {len(lin)} .so entries")
    check(len({r["fatbin"] for r in win}) == 11, "11 fatbins in the DLL")


if __name__ == "__main__":
    sys.exit(ft.main())
