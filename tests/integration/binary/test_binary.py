#!/usr/bin/env python3
"""nvcc-forge list end to end: the CLI on nvcc-built fixtures (tests/fixtures/binary), JSON keys and
values, the text table, --toolkit, exit codes, and the cuobjdump backends. Skipped (exit 77) when
nvcc is absent for the fixtures, or cuobjdump for its cases."""
import base64
import hashlib
import json
import os
import struct
import sys
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402


def run(t, *args, env=None):
    r = t.forge("list", *args, env=env)
    return r.rc, r.out, r.err


def fixtures(t):
    """The fixtures the build tree's tests share (built once: ~25 nvcc calls), read only here."""
    return t.binary_fixtures()


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


@ft.case("binary.list.toolkit_cache")
def case_toolkit_cache(t):
    """--toolkit keeps each image's answer in $NVCC_FORGE_CACHE_DIR/toolkit: the second run prints
    the same; a changed compressed byte is never answered from it (the run answers as one without
    the cache); a corrupt cache file is named on stderr and rebuilt; audit fills the same cache."""
    d = fixtures(t)
    lib = t.path("cm_size.o")
    with open(f"{d}/cm_size.o", "rb") as f:
        data = bytearray(f.read())
    open(lib, "wb").write(data)
    cache = t.path("cache")

    def toolkit(path, cache_dir):
        return t.forge("list", "--toolkit", "--format", "json", path,
                       env=dict(os.environ, NVCC_FORGE_CACHE_DIR=cache_dir))

    first = toolkit(lib, cache).expect_rc(0)
    packs = os.listdir(os.path.join(cache, "toolkit"))
    check(len(packs) == 1 and packs[0].endswith(".pack"), packs)
    pack = os.path.join(cache, "toolkit", packs[0])
    second = toolkit(lib, cache).expect_rc(0)
    check(second.stdout == first.stdout and second.err == "", f"second run: {second!r}")
    # One byte inside the first ZSTD frame (magic 28 b5 2f fd), every size kept.
    at = data.index(b"\x28\xb5\x2f\xfd") + 12
    data[at] ^= 0xff
    open(lib, "wb").write(data)
    cached, fresh = toolkit(lib, cache), toolkit(lib, t.path("fresh"))
    check(cached.rc == fresh.rc and cached.stdout == fresh.stdout,
          f"changed byte: cached {cached!r}\nwithout the cache {fresh!r}")
    check(cached.rc != 0 or cached.stdout != first.stdout, f"the change went unseen: {cached!r}")
    # A corrupt cache file: named, not trusted, rebuilt.
    with open(f"{d}/cm_size.o", "rb") as f:
        open(lib, "wb").write(f.read())
    toolkit(lib, cache).expect_rc(0)
    open(pack, "wb").write(b"NVFTKC01" + b"\0" * 200)
    r = toolkit(lib, cache).expect_rc(0)
    check(r.stdout == first.stdout, f"answers after a corrupt cache file: {r!r}")
    check(pack in r.err and "corrupt" in r.err, f"the corrupt file is not named: {r!r}")
    check(open(pack, "rb").read(8) == b"NVFTKC01" and os.path.getsize(pack) != 208, "not rebuilt")
    check(toolkit(lib, cache).err == "", "warned again after the rebuild")
    # audit reads the same way, through the same cache.
    audit_cache = t.path("audit-cache")
    t.forge("audit", "--arch-list", "8.0", f"{d}/pkg-1.0-cp312-cp312-linux_x86_64.whl",
            env=dict(os.environ, NVCC_FORGE_CACHE_DIR=audit_cache))
    check(os.listdir(os.path.join(audit_cache, "toolkit")), "audit kept no answer")


@ft.case("binary.list.threads_env")
def case_threads_env(t):
    """NVCC_FORGE_LIST_THREADS sets --toolkit's workers: the same rows for any count; a value
    that is not a count from 1 to 16 is a usage error (exit 2) naming the variable."""
    d = fixtures(t)
    files = (f"{d}/cm_size.o", f"{d}/cm_all.o", f"{d}/size.so")
    want = listing(t, *files, extra=("--toolkit",))
    for n in ("1", "3", "16"):
        rc, out, err = run(t, "--toolkit", "--format", "json", *files,
                           env=dict(os.environ, NVCC_FORGE_LIST_THREADS=n))
        check(rc == 0 and json.loads(out) == want, f"{n} workers: exit {rc} {err}")
    for bad in ("0", "17", "two", "4x", ""):
        rc, out, err = run(t, "--toolkit", f"{d}/cm_size.o",
                           env=dict(os.environ, NVCC_FORGE_LIST_THREADS=bad))
        check(rc == 2 and "NVCC_FORGE_LIST_THREADS" in err and out == "", f"{bad!r}: {rc} {out} {err}")


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


@ft.case("binary.list.json_not_utf8")
def case_json_not_utf8(t):
    """Names that are not UTF-8 (a path, a wheel member) are written into JSON under the one rule
    of core/json.h, each invalid byte as U+FFFD: valid UTF-8 JSON, never an abort (issue 30)."""
    import zipfile
    d = fixtures(t)

    def strict_json(*args):
        r = t.forge(*args)
        check(r.rc in (0, 1), f"exit {r.rc}\n{r!r}")
        try:
            return json.loads(r.stdout.decode("utf-8"))  # strict: a raw 0xff fails here
        except ValueError as e:
            ft.fail(f"not UTF-8 JSON ({e})\n{r!r}")

    odd = os.fsdecode(os.path.join(os.fsencode(t.work), b"odd\xff.fatbin"))
    with open(f"{d}/k2.fatbin", "rb") as src, open(odd, "wb") as dst:
        dst.write(src.read())
    rows = strict_json("list", "--format", "json", odd)
    check(len(rows) == 2 and all(r["file"].endswith("odd\ufffd.fatbin") for r in rows), rows)
    # A wheel whose extension's name has a byte 0xFF in it (patched in the local and the central
    # header alike, as a zip written by another tool can have it).
    whl = t.path("w-1.0-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        with open(f"{d}/multi.so", "rb") as f:
            z.writestr("w/_CX.so", f.read())
    data = open(whl, "rb").read()
    check(data.count(b"w/_CX.so") == 2, "the member name in both headers")
    open(whl, "wb").write(data.replace(b"w/_CX.so", b"w/_C\xff.so"))
    rows = strict_json("list", "--format", "json", "--toolkit", whl)
    check(rows and all(r["member"] == "w/_C\ufffd.so" for r in rows), rows)
    have = sorted({r["arch"] for r in rows if r["kind"] == "sass"})
    for target in (whl, odd):
        report = strict_json("verify", "--arch-list", ",".join(have), "--format", "json", target)
        check("\ufffd" in json.dumps(report, ensure_ascii=False), f"verify {target}: {report}")


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


@ft.case("binary.list.cuobjdump_unparseable_output")
def case_cuobjdump_unparseable(t):
    """A backend whose output is not cuobjdump's listing is exit 2 naming what it could not read,
    never "no device code" (issue 30: NVCC_FORGE_CUOBJDUMP=/bin/echo said so for 6 cubins)."""
    d = fixtures(t)
    silent = t.path("silent-cuobjdump")
    ft.write(silent, "#!/bin/sh\nexit 0\n", mode=0o755)
    for tool, says in (("/bin/echo", "cannot parse cuobjdump's output, line 1: '--list-elf"),
                       (silent, "listed no image and did not say")):
        for backend in ("cuobjdump", "both"):
            rc, out, err = run(t, "--backend", backend, f"{d}/multi.so",
                               env=dict(os.environ, NVCC_FORGE_CUOBJDUMP=tool))
            check(rc == 2, f"{tool} --backend {backend}: exit {rc}: {out} {err}")
            check("no device code" not in out, f"{tool} --backend {backend}: {out}")
            check(says in err and "multi.so" in err, f"{tool} --backend {backend}: {err}")


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


# ---- hostile files, built here (no nvcc needed) -----------------------------------------------
# The layouts are those of docs/fatbin-format.md; each file is a few bytes that claim much more.

def fatbin_entry(kind=2, arch=80, flags=0x11, payload=b"", compressed=0, uncompressed=0):
    head = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 0x40, len(payload), compressed, 0, 0, 8,
                       arch, 0, 0, flags, 0, uncompressed)
    return head + payload


def fatbin(*entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 0x10, len(body)) + body


def limited(t, *args, mib=1024):
    """nvcc-forge under an address-space limit: an allocation on a file's word dies of
    bad_alloc (SIGABRT) there instead of swapping the machine."""
    return t.run(["sh", "-c", f'ulimit -v {mib * 1024} && exec "$@"', "sh", t.forge_exe, *args],
                 timeout=120)


def lying_zip(path, name, data, declared):
    """A zip whose one deflated member inflates to `data` but declares `declared` bytes."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = comp.compress(data) + comp.flush()
    crc = zlib.crc32(data)
    n = name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(raw), declared,
                        len(n), 0) + n + raw
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(raw),
                          declared, len(n), 0, 0, 0, 0, 0, 0) + n
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local), 0)
    with open(path, "wb") as f:
        f.write(local + central + end)
    return path


@ft.case("binary.hostile.declared_sizes_bounded_memory")
def case_declared_sizes(t):
    """Sizes a file declares are checked against what its bytes can hold before anything is
    allocated: under a 1 GiB address space these exit 2 with the offset, not SIGABRT."""
    with ft.Soft() as soft:
        # 88-byte LZ4 entry declaring 3 GiB; zstd entry of a few dozen bytes declaring 4 GiB.
        lz4 = ft.write(os.path.join(t.work, "lz4.fatbin"),
                       fatbin(fatbin_entry(flags=0x2011, payload=b"\x10" * 8, compressed=8,
                                           uncompressed=3 << 30)))
        zstd = ft.write(os.path.join(t.work, "zstd.fatbin"),
                        fatbin(fatbin_entry(flags=0x8011, payload=bytes.fromhex(
                            "28b52ffd0000" "0100" "00000000" "00000000" "0000000000000000"),
                            compressed=24, uncompressed=4 << 30)))
        for f in (lz4, zstd):
            r = limited(t, "list", "--toolkit", f)
            soft.check(r.rc == 2 and "at byte" in r.err and "expand to at most" in r.err,
                       f"list --toolkit {f}: {r!r}")
            r = limited(t, "verify", f, "--arch-list", "8.0")
            soft.check(r.rc == 2 and "expand to at most" in r.err, f"verify {f}: {r!r}")
        # A 130-byte wheel whose member declares 4 GiB (minus a little: no zip64 needed).
        elf = b"\x7fELF\x02\x01\x01" + bytes(57)
        wheel = lying_zip(os.path.join(t.work, "bomb-1.0-py3-none-any.whl"), "pkg/_C.so", elf,
                          0xFFFFFF00)
        soft.check(os.path.getsize(wheel) < 200, os.path.getsize(wheel))
        r = limited(t, "list", wheel)
        soft.check(r.rc == 2 and "pkg/_C.so" in r.err and "more than they can hold" in r.err,
                   f"list {wheel}: {r!r}")


@ft.case("binary.hostile.sparse_section_table")
def case_sparse_section_table(t):
    """A sparse 256 MiB ELF (a few KB on disk) whose extended section count claims the 4 Mi zero
    headers it holds: refused from the header, not decoded into memory (exit 2, e_shnum)."""
    path = os.path.join(t.work, "sparse.so")
    n = (256 << 20) // 64 - 1
    head = (b"\x7fELF\x02\x01\x01" + bytes(9) +
            struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 64, 0, 64, 0, 0, 64, 0, 0))
    with open(path, "wb") as f:
        f.write(head)
        f.write(struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, n, 0, 0, 0, 0))  # section 0: the count
        f.truncate(64 + 64 * n)
    r = limited(t, "list", path)
    check(r.rc == 2 and "sections, over the limit" in r.err and "0x3c" in r.err, repr(r))


@ft.case("binary.hostile.fifo_and_special_files")
def case_fifo(t):
    """A FIFO is not a regular file: list, verify and audit say so at once (exit 2) instead of
    waiting in open() for a writer that never comes."""
    fifo = os.path.join(t.work, "wheel-1.0-py3-none-any.whl")
    os.mkfifo(fifo)
    with ft.Soft() as soft:
        for args in (["list", fifo], ["verify", fifo, "--arch-list", "8.0"],
                     ["audit", fifo, "--arch-list", "8.0"]):
            r = t.forge(*args, timeout=60)
            soft.check(r.rc == 2 and "not a regular file" in r.out + r.err, f"{args}: {r!r}")


@ft.case("binary.list.text_escapes_control_characters")
def case_text_escapes(t):
    """Names in the text table are escaped (a newline or ESC in a member name cannot forge a row
    or drive the terminal); JSON keeps the name exact."""
    fb = fatbin(fatbin_entry(kind=1, arch=80))
    # A BSD ar member: its name is the first bytes of its data, any bytes at all.
    name = b"a\nsm_90 FORGED\x1b[31m.fatbin"
    data = name + fb
    head = (b"#1/%d" % len(name)).ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + \
        b"644".ljust(8) + str(len(data)).encode().ljust(10) + b"`\n"
    lib = ft.write(os.path.join(t.work, "odd.a"), b"!<arch>\n" + head + data + b"\n" * (len(data) % 2))
    r = t.forge("list", lib).expect_rc(0)
    rows = r.out.splitlines()
    check(len(rows) == 2, f"a forged row: {rows}")
    check("\x1b" not in r.out and "a\\nsm_90 FORGED\\x1b[31m.fatbin" in r.out, r.out)
    j = t.forge("list", "--format", "json", lib).expect_rc(0).json()
    check([e["member"] for e in j] == [name.decode()], j)


# ---- fatbins outside the registered sections, on real NVIDIA libraries ------------------------

def embedded_truth(t):
    """The four libraries of fetch_embedded_truth.sh (cached), or a skip saying why not."""
    cache = os.path.join(t.tools_dir, "embedded-truth")
    r = t.run(["bash", t.src("tests", "integration", "binary", "fetch_embedded_truth.sh"), cache])
    if r.rc != 0:
        ft.skip(f"cannot download the cuFFT/cuSPARSE wheels from PyPI into {cache}: {r.err[-300:]}")
    return os.path.join(cache, "lib")


def by_found(rows):
    import collections
    out = collections.defaultdict(list)
    for r in rows:
        out[r["found"]].append(r)
    return out


@ft.case("binary.embedded.real_twins")
def case_embedded_real_twins(t):
    """cuFFT 11.4.1.4 and cuSPARSE 12.5.10.65 hand fatbin containers to the driver themselves:
    `list` finds them outside the registered sections (.ldata/.data, .rodata/.rdata), the same
    (kind, arch) multiset in the Windows DLL as in the Linux .so, and the registered fatbins are
    listed as before (docs/fatbin-format.md, "Fatbins outside the registered sections")."""
    import collections
    lib = embedded_truth(t)
    want = {  # library: (registered entries, embedded containers, embedded entries, sections)
        "libcufft.so.11": (1, 24453, 24453, {".ldata"}),
        "cufft64_11.dll": (1, 24453, 24453, {".data"}),
        "libcusparse.so.12": (1862, 34, 476, {".rodata"}),
        "cusparse64_12.dll": (1862, 34, 476, {".rdata"}),
    }
    soft = ft.Soft()
    counts = {}
    for name, (registered, containers, entries, sections) in want.items():
        rows = by_found(listing(t, os.path.join(lib, name)))
        soft.check_eq(len(rows["registered"]), registered, f"{name} registered entries")
        emb = rows["embedded"]
        soft.check_eq(len({r["fatbin_offset"] for r in emb}), containers, f"{name} containers")
        soft.check_eq(len(emb), entries, f"{name} embedded entries")
        soft.check_eq({r["section"] for r in emb}, sections, f"{name} sections")
        soft.check_eq(set(rows) - {"registered", "embedded"}, set(), f"{name} other rows")
        counts[name] = collections.Counter((r["kind"], r["arch"]) for r in emb)
    for so, dll in (("libcufft.so.11", "cufft64_11.dll"), ("libcusparse.so.12", "cusparse64_12.dll")):
        soft.check(counts[so] == counts[dll],
                   f"{so} vs {dll}: only .so {counts[so] - counts[dll]}, only DLL {counts[dll] - counts[so]}")
    cufft = counts["libcufft.so.11"]
    soft.check_eq(cufft[("sass", "sm_87")], 155, "cuFFT sm_87 containers")
    soft.check_eq(cufft[("lto", "lto_50")], 11651, "cuFFT lto_50 entries")
    soft.done()


@ft.case("binary.embedded.verify_reports_apart")
def case_embedded_verify(t):
    """verify judges the registered fatbins as before and reports the embedded ones apart (text
    and JSON, LTO included); a package with `verify.embedded_fatbins: judge` counts them."""
    lib = embedded_truth(t)
    so = os.path.join(lib, "libcusparse.so.12")
    sass = sorted({r["arch"] for r in listing(t, so) if r["found"] == "registered" and r["kind"] == "sass"})
    arch_list = ",".join(sass)
    r = t.forge("verify", "--arch-list", arch_list, "--format", "json", so)
    (ext,) = r.json()["extensions"]
    emb = ext["embedded"]
    soft = ft.Soft()
    soft.check_eq((emb["judged"], emb["containers"], emb["entries"], emb["sections"]),
                  (False, 34, 476, [".rodata"]), "embedded report")
    soft.check("lto_50" in emb["lto"] and "compute_100" in emb["ptx"] and "sm_100" in emb["sass"], emb)
    soft.check("compute_70" not in ext["ptx"] and "compute_70" not in ext["extra"],
               f"embedded PTX judged: {ext['ptx']} {ext['extra']}")
    text = t.forge("verify", "--arch-list", arch_list, so).out
    soft.check("embedded  34 fatbin containers (476 entries) in .rodata" in text and
               "not judged" in text, text)
    pkgs = os.path.join(t.work, "packages")
    os.makedirs(os.path.join(pkgs, "cusparse"))
    ft.write(os.path.join(pkgs, "cusparse", "arch_override.yml"),
             "verify:\n  embedded_fatbins: judge\n")
    j = t.forge("verify", "--arch-list", arch_list, "--package", "cusparse", "--packages-dir", pkgs,
                "--format", "json", so).json()["extensions"][0]
    soft.check(j["embedded"]["judged"] and "compute_70" in j["ptx"], j["ptx"])
    ft.write(os.path.join(pkgs, "cusparse", "arch_override.yml"), "verify:\n  embedded_fatbins: yes\n")
    bad = t.forge("verify", "--arch-list", arch_list, "--package", "cusparse", "--packages-dir", pkgs, so)
    soft.check(bad.rc == 2 and "embedded_fatbins" in bad.err, f"{bad.rc} {bad.err}")
    soft.done()


# ---- the conformance matrix (issue 34; tests/fixtures/binary/conformance/cells.json) ----------


def matrix_toolkits(t):
    """The nvccs the matrix compiles with: the real one (skips without it), and the suite's
    second CUDA 13.x (tests/integration/toolkits/install_cu13x.sh) when it is installed."""
    nvccs = [t.nvcc()]
    second = os.path.join(t.tools_dir, "cu131", "nvidia", "cu13", "bin", "nvcc")
    if os.access(second, os.X_OK):
        nvccs.append(second)
    return nvccs


def conformance_products(t, nvcc=None):
    """The matrix's products by `nvcc` (the real one by default), built once per build tree and
    toolkit by conformance/build.py (2 jobs, stamped, locked): (cells, [(cell, path, arch list,
    true verdict)]). Skips without nvcc."""
    nvcc = nvcc or t.nvcc()
    out = os.path.join(t.build, "tests", f"conformance-products-{ft.nvcc_release(nvcc)}")
    r = t.run([sys.executable, t.fixtures("binary", "conformance", "build.py"), out, "--jobs", "2"],
              env=t.env(NVCC=nvcc), timeout=900)
    if r.rc == ft.SKIP:
        ft.skip("nvcc not available")
    check(r.rc == 0, f"conformance build failed: {r.err[-3000:]}")
    cells = ft.load_json(t.fixtures("binary", "conformance", "cells.json"))["cells"]
    products = []
    for c in cells:
        for rel, want in c["products"].items():
            want = want if isinstance(want, dict) else {"arch_list": want, "verdict": "pass"}
            products.append((c["name"], os.path.join(out, c["name"], rel), want["arch_list"],
                             want["verdict"]))
    return cells, products


def cuobjdump_kernels(cuobjdump, path):
    """Kernels cuobjdump sees in every cubin of every fatbin (-elf -all): `.text.<name>` PROGBITS
    sections of its section tables."""
    r = ft.run([cuobjdump, "-elf", "-all", path])
    check(r.rc == 0, f"cuobjdump -elf -all {path}: {r.err}")
    n = 0
    for line in r.out.splitlines():
        f = line.split()
        if len(f) > 2 and "PROGBITS" in f and f[-1].startswith(".text."):
            n += 1
    return n


def cuobjdump_mismatches(t, name, path):
    """`list --backend both` with cuobjdump's default view and with -all: each exit that is not 0
    (a difference from cuobjdump, or a file not read)."""
    bad = []
    for extra in ((), ("--all",)):
        r = t.forge("list", "--backend", "both", "--format", "json", *extra, path)
        if r.rc != 0:
            bad.append(f"{name}: list --backend both {' '.join(extra)} exited {r.rc}: {r.err[-600:]}")
    return bad


def coverage_mismatches(t, name, path, rows):
    """coverage FILE reads the targets `list` reads (`rows`): the registered fatbins' (those
    outside the registered sections are reported apart, not rated), LTO-IR aside."""
    r = t.forge("coverage", path, "--format", "json")
    if r.rc != 0:
        return [f"{name}: coverage exited {r.rc}: {r.err[-600:]}"]
    seen = {a for e in json.loads(r.out)["extensions"] for a in e["carries"] + e["kernel_less"]}
    listed = {x["arch"] for x in rows if x["kind"] != "lto" and x["found"] == "registered"}
    return [] if seen == listed else [f"{name}: coverage reads {sorted(seen)}, list {sorted(listed)}"]


def conformance_cell(t, release, cuobjdump, cell, path, arch_list, verdict):
    """Every mismatch of one product: the entries against cuobjdump (registered and -all), the
    kernels counted, the toolkit read, the gate's verdict and coverage FILE's targets."""
    name = f"{cell}/{os.path.basename(path)}"
    bad = cuobjdump_mismatches(t, name, path)
    r = t.forge("list", "--toolkit", "--format", "json", path)
    if r.rc != 0:
        return bad + [f"{name}: list --toolkit exited {r.rc}: {r.err}"], 0
    rows = json.loads(r.out)
    sass = [x for x in rows if x["kind"] == "sass"]
    for x in sass:
        if x["toolkit"] != release:
            bad.append(f"{name}: {x['section']} {x['arch']} toolkit {x['toolkit']}, not {release}")
    kernels = sum(x["kernels"] or 0 for x in sass if x["found"] == "registered")
    want_kernels = cuobjdump_kernels(cuobjdump, path)
    if kernels != want_kernels:
        bad.append(f"{name}: {kernels} kernels, cuobjdump -elf -all sees {want_kernels}")
    r = t.forge("verify", path, "--arch-list", arch_list)
    if r.rc != (0 if verdict == "pass" else 1):
        bad.append(f"{name}: verify --arch-list {arch_list} exited {r.rc}, the true verdict is "
                   f"{verdict}: {r.out[-600:]} {r.err}")
    return bad + coverage_mismatches(t, name, path, rows), len(rows)


@ft.case("binary.conformance.matrix")
def case_conformance_matrix(t):
    """Every product of every cell (nvcc 13.0 features real builds use) read as cuobjdump reads
    it: the same entries (registered and -all), kernels counted as its section tables do, the
    toolkit, the gate's true verdict and coverage FILE's targets. Prints the counts."""
    cuobjdump = ft.cuobjdump()
    if not cuobjdump:
        ft.skip("cuobjdump not available")
    bad, entries, products, releases = [], 0, 0, []
    for nvcc in matrix_toolkits(t):
        cells, made = conformance_products(t, nvcc)
        release = ft.nvcc_release(nvcc)
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda p: conformance_cell(t, release, cuobjdump, *p), made))
        bad += [f"CUDA {release}: {m}" for b, _ in results for m in b]
        entries += sum(n for _, n in results)
        products += len(made)
        releases.append(release)
    print(f"conformance: {len(cells)} cells x {len(releases)} toolkits ({' '.join(releases)}), "
          f"{products} products, {entries} entries, {len(bad)} mismatch(es)")
    check(not bad, "\n".join(bad))


def corrupt_first_fatbin(src, dst):
    """A copy of `src` whose first fatbin header claims a size past the end; returns the offset of
    that field (u64 fat_size, 8 bytes into the header)."""
    with open(src, "rb") as f:
        b = bytearray(f.read())
    at = b.find(struct.pack("<I", 0xBA55ED50))
    check(at >= 0, f"no fatbin in {src}")
    b[at + 8:at + 16] = struct.pack("<Q", 1 << 40)
    with open(dst, "wb") as f:
        f.write(b)
    return at + 8


def wheel_with(path, name, so):
    """A wheel (RECORD and all) holding `so` as NAME/_C.cpython-312-x86_64-linux-gnu.so."""
    with open(so, "rb") as f:
        files = {f"{name}/_C.cpython-312-x86_64-linux-gnu.so": f.read(), f"{name}/__init__.py": b"",
                 f"{name}-1.0.dist-info/METADATA": f"Name: {name}\nVersion: 1.0\n".encode()}
    digest = lambda b: "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()  # noqa: E731
    record = "".join(f"{k},{digest(v)},{len(v)}\n" for k, v in files.items())
    whl = os.path.join(path, f"{name}-1.0-cp312-cp312-linux_x86_64.whl")
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{name}-1.0.dist-info/RECORD", record + f"{name}-1.0.dist-info/RECORD,,\n")
    return whl


# What a command must never conclude about a file it could not read.
FALSE_CONCLUSIONS = ("no extension module", "nothing carries GPU code", "pure-Python", "pure Python",
                     "host-only", "0 extensions", "no device code")


@ft.case("binary.conformance.unreadable_is_never_no_device_code")
def case_unreadable_never_no_device_code(t):
    """A file one of whose fatbins cannot be read (the matrix's rdc.so, its first fatbin header
    made to lie): verify, coverage FILE, audit, stamp and plan --gate each say so, naming the
    file and the offset, exit non-zero and conclude nothing about its device code."""
    _, products = conformance_products(t)
    so = next(p for c, p, _, _ in products if c == "rdc_dlink_static_shared" and p.endswith("rdc.so"))
    bad = t.path("bad.so")
    at = corrupt_first_fatbin(so, bad)
    whl_dir = t.path("wheels")
    os.makedirs(whl_dir)
    whl = wheel_with(whl_dir, "badpkg", bad)
    where = f"0x{at:x}"
    runs = {
        "verify": (t.forge("verify", bad, "--arch-list", "9.0"), 2),
        "verify --allow-pure-python": (t.forge("verify", bad, "--arch-list", "9.0",
                                               "--allow-pure-python"), 2),
        "verify wheel": (t.forge("verify", whl, "--arch-list", "9.0"), 2),
        "coverage FILE": (t.forge("coverage", bad), 2),
        "audit": (t.forge("audit", bad, "--arch-list", "9.0", "--jobs", "1"), 2),
        "audit wheel": (t.forge("audit", whl_dir, "--arch-list", "9.0", "--jobs", "1"), 2),
        "stamp": (t.forge("stamp", whl, "--arch-list", "9.0", "--ledger", t.path("ledger.jsonl")), 2),
        "plan --gate": (t.forge("plan", "--arch-list", "9.0", "--gate", "out.so", "--", "cp", bad,
                                "out.so"), 2),
    }
    with ft.Soft() as soft:
        for what, (r, rc) in runs.items():
            text = r.out + r.err
            soft.check(r.rc == rc, f"{what}: exit {r.rc}, expected {rc}: {text}")
            soft.check(where in text, f"{what}: the offset {where} is not named: {text}")
            for phrase in FALSE_CONCLUSIONS:
                soft.check(phrase not in text, f"{what} says '{phrase}' of a file it could not "
                           f"read: {text}")
        soft.check(not os.path.exists(t.path("ledger.jsonl")), "stamp wrote a record")


def truth_libraries(t):
    """The real libraries of the matrix: fetch_library_truth.sh's (nvJPEG and cuRAND, CUDA 12 and
    13, x86_64, aarch64 and Windows) and fetch_embedded_truth.sh's (cuFFT and cuSPARSE, CUDA 12,
    Linux and Windows), fetched once into NVCC_FORGE_TOOLS_DIR. Skips when they cannot be."""
    libs = []
    for script, sub in (("fetch_library_truth.sh", "library-truth"),
                        ("fetch_embedded_truth.sh", "embedded-truth")):
        d = os.path.join(t.tools_dir, sub)
        r = t.run(["bash", t.src("tests", "integration", "binary", script), d], timeout=1200)
        if r.rc != 0:
            ft.skip(f"{script} cannot fetch the wheels: {r.err[-500:]}")
        for root, _, files in os.walk(os.path.join(d, "lib")):
            libs += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
    return sorted(libs)


def library_cell(t, path):
    """One real library: list (and --all) the same as cuobjdump for an ELF file (cuobjdump on
    Linux reads no PE: a DLL's entries are held to its Linux x86_64 twin's), list --toolkit reads
    every cubin's toolkit, coverage FILE reads the targets list reads."""
    name = os.path.relpath(path, t.tools_dir)
    bad = [] if path.endswith(".dll") else cuobjdump_mismatches(t, name, path)
    r = t.forge("list", "--toolkit", "--format", "json", path)
    if r.rc != 0:
        return bad + [f"{name}: list --toolkit exited {r.rc}: {r.err[-600:]}"], []
    rows = json.loads(r.out)
    if not rows:
        bad.append(f"{name}: no entries")
    # A kernel-less stub may carry no note saying which toolkit built it (CUDA 12's nvlink).
    untold = [x["arch"] for x in rows if x["kind"] == "sass" and not x["stub"] and not x["toolkit"]]
    if untold:
        bad.append(f"{name}: {len(untold)} cubin(s) with kernels without a toolkit: "
                   f"{sorted(set(untold))}")
    return bad + coverage_mismatches(t, name, path, rows), rows


@ft.case("binary.conformance.libraries")
def case_conformance_libraries(t):
    """NVIDIA's library wheels read as cuobjdump reads them (docs/fatbin-format.md, "The
    conformance matrix": which wheels and why). Prints the count of libraries and entries."""
    cuobjdump = ft.cuobjdump()
    if not cuobjdump:
        ft.skip("cuobjdump not available")
    libs = truth_libraries(t)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(libs, pool.map(lambda p: library_cell(t, p), libs)))
    bad = [m for b, _ in results.values() for m in b]
    # A DLL's entries (x86-64 or ARM64) against its Linux x86_64 twin (same wheel release, read by
    # cuobjdump above).
    for path, (_, rows) in results.items():
        if not path.endswith(".dll"):
            continue
        folder = os.path.dirname(path)
        linux = "manylinux2014_x86_64" if "nvjpeg" in folder else "manylinux_2_27_x86_64"
        twin_dir = folder.replace("win_amd64", linux).replace("win_arm64", linux)
        twins = [p for p in results if os.path.dirname(p) == twin_dir]
        if "embedded-truth" in path:
            stem = os.path.basename(path).split("64_")[0]
            twins = [p for p in results if os.path.basename(p).startswith(f"lib{stem}.so")]
        if len(twins) != 1:
            bad.append(f"{path}: no Linux twin among {sorted(results)}")
            continue
        key = lambda rs: sorted((x["kind"], x["arch"], x["found"]) for x in rs)  # noqa: E731
        if key(rows) != key(results[twins[0]][1]):
            bad.append(f"{path}: entries differ from its Linux twin {twins[0]}")
    entries = sum(len(rows) for _, rows in results.values())
    print(f"conformance: {len(libs)} libraries, {entries} entries, {len(bad)} mismatch(es)")
    check(not bad, "\n".join(bad))


if __name__ == "__main__":
    sys.exit(ft.main())
