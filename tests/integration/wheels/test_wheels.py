#!/usr/bin/env python3
"""Wheels end to end: what `list`, `verify`, `stamp` and `audit` do with member names pip refuses
or repeats, a symbolic link under a module's name, a RECORD that lies, zip64 (the counts where an
end record overflows; `unzip -t`, Python's zipfile and pip read what `stamp` writes), a member
larger than memory should hold (peak RSS of the process), and a module declaring 4 GB. The
hostile wheels are tests/fixtures/wheels/hostile (make_hostile.py); large ones are generated
here, store-only, so each case takes seconds."""
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check, check_in  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "fuzz"))
from make_corpus import elf, entry, fatbin  # noqa: E402

WHEEL = "demo-1.0-cp312-cp312-linux_x86_64.whl"
ANY_WHEEL = "demo-1.0-py3-none-any.whl"  # what pip installs whatever the interpreter
ENV = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
CUBIN = elf([(".text.k", 1, b"\0" * 16), (".nv.compat", 0x70000086, bytes([2, 9, 1, 0]))],
            machine=190, e_flags=0x06005A02, abiversion=8)
FATBIN = fatbin([entry(2, 90, 0x100011, CUBIN), entry(1, 120, 0x200011, b"ptx\0" + b"\0" * 4)])
MODULE = elf([(".nv_fatbin", 1, FATBIN)])


def hostile(t, name, as_name=WHEEL):
    """A corpus file copied under a wheel's name (stamp reads the name)."""
    d = t.path(name.replace(".whl", ""))
    os.makedirs(d, exist_ok=True)
    return shutil.copy(t.fixtures("wheels", "hostile", name), os.path.join(d, as_name))


def record_row(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, "sha256=" + digest, str(len(data))]


def commands(wheel):
    return {"list": ["list", wheel], "verify": ["verify", wheel, "--arch-list", "9.0"],
            "audit": ["audit", wheel, "--arch-list", "9.0"],
            "stamp": ["stamp", wheel, "--arch-list", "9.0"]}


def expect_refused(t, wheel, member, says, which=("list", "verify", "audit", "stamp")):
    before = open(wheel, "rb").read()
    for name, argv in commands(wheel).items():
        if name not in which:
            continue
        r = t.forge(*argv, env=ENV)
        out = r.out + r.err
        check(r.rc == 2, f"{name}: exit {r.rc}, expected 2\n{r!r}")
        check_in(f"'{member}'", out, f"{name} names the member")
        check_in(says, out, f"{name} says why")
    check(open(wheel, "rb").read() == before, "a refused wheel was modified")


@ft.case("wheels.names.duplicate_member")
def case_duplicate(t):
    """demo/_C.so twice, the host-only copy last (the one pip keeps): never 'pass'."""
    expect_refused(t, hostile(t, "dup-member.whl"), "demo/_C.so", "a second member for the file demo/_C.so")
    expect_refused(t, hostile(t, "dup-normalized.whl"), "demo/./_C.so", "a second member")


@ft.case("wheels.names.paths_pip_refuses")
def case_paths(t):
    for name, member, says in (("path-dotdot.whl", "../../evil.so", "'..' climbs above"),
                               ("path-absolute.whl", "/abs/x", "absolute path"),
                               ("path-inner-dotdot.whl", "demo/../../x", "'..' climbs above"),
                               ("path-backslash.whl", "demo\\..\\..\\x.so", "backslash"),
                               ("path-drive.whl", "C:/x.so", "drive")):
        expect_refused(t, hostile(t, name), member, says)
    # pip itself refuses the first: what the gate refuses is what cannot be installed.
    venv_pip = shutil.which("pip") or shutil.which("pip3")
    if venv_pip:
        r = t.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                   t.path("target"), hostile(t, "path-dotdot.whl", ANY_WHEEL)], timeout=120)
        check(r.rc != 0 and "outside" in r.out + r.err, f"pip installed a path member\n{r!r}")


@ft.case("wheels.names.symlink_module")
def case_symlink(t):
    wheel = hostile(t, "symlink-module.whl")
    r = t.forge("verify", wheel, "--arch-list", "9.0", "--expect-extension", "demo/_C.so", env=ENV)
    check(r.rc == 2, f"exit {r.rc}\n{r!r}")
    check_in("a symbolic link to 'libreal.so'", r.out + r.err)
    check_in("unreadable     demo/_C.so  not read:", r.out)
    check("never built" not in r.out + r.err, f"a symlink is not a module never built\n{r!r}")
    expect_refused(t, wheel, "demo/_C.so", "symbolic link", which=("list", "audit", "stamp"))
    # A link that is not a library's name is none of the gate's business.
    t.forge("list", hostile(t, "symlink-data.whl")).expect_rc(0)


@ft.case("wheels.record.mismatch")
def case_record(t):
    for name, member, says in (("record-hash.whl", "demo/_C.so", "the member's bytes hash to"),
                               ("record-size.whl", "demo/_C.so", "the member holds"),
                               ("record-unlisted.whl", "demo/__init__.py", "not listed in"),
                               ("record-nohash.whl", "demo/_C.so", "without its hash")):
        wheel = hostile(t, name)
        expect_refused(t, wheel, member, says, which=("verify", "stamp"))
        t.forge("list", wheel).expect_rc(0)  # listing is not judging
    # A wheel whose RECORD is right is stamped, and the RECORD it gets is right for every member.
    wheel = hostile(t, "ok-record.whl")
    t.forge("stamp", wheel, "--arch-list", "9.0", env=ENV).expect_rc(0)
    with zipfile.ZipFile(wheel) as z:
        rows = list(csv.reader(io.StringIO(z.read("demo-1.0.dist-info/RECORD").decode())))
        for path, h, size in rows:
            if path.endswith("/RECORD"):
                continue
            check([path, h, size] == record_row(path, z.read(path)), f"RECORD row {path}")
        check(sorted(r[0] for r in rows) == sorted(z.namelist()), "RECORD lists every member")
    t.forge("verify", wheel, "--arch-list", "9.0").expect_rc(0)  # the RECORD stamp wrote is right


@ft.case("wheels.stamp.declared_4gb")
def case_declared_4gb(t):
    """A module declaring 4 GB inflated: stamp exits 2 (not 0 with `modules: null`)."""
    wheel = hostile(t, "declared-4gb.whl")
    ledger = t.path("ledger.jsonl")
    r = t.forge("stamp", wheel, "--arch-list", "9.0", "--ledger", ledger, env=ENV)
    check(r.rc == 2, f"exit {r.rc}\n{r!r}")
    check_in("demo/_C.so", r.err)
    check_in("4000000000", r.err)
    check(not os.path.exists(ledger), "a refused stamp wrote the ledger")


def big_count_wheel(path, files, dirs=0):
    """A store-only wheel of `files` empty files (and `dirs` directory entries) with a correct
    RECORD: the counts where an end record overflows, written in seconds."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        rows = []
        for i in range(dirs):
            z.writestr(zipfile.ZipInfo(f"demo/d{i}/"), b"")
        for i in range(files):
            name = f"demo/f{i}.py"
            z.writestr(name, b"")
            rows.append(record_row(name, b""))
        z.writestr("demo/_C.so", MODULE)
        rows.append(record_row("demo/_C.so", MODULE))
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerows(rows)
        w.writerow(["demo-1.0.dist-info/RECORD", "", ""])
        z.writestr("demo-1.0.dist-info/RECORD", buf.getvalue())
    return path


def zip64_end_present(path):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (1 << 17)))
        tail = f.read()
    return b"PK\x06\x06" in tail and b"PK\x06\x07" in tail


def stamp_count(t, members, python_test=False):
    """A wheel of `members` entries (files) stamped: one more entry; zip64 where the count needs
    it; every reader, unzip -t and Python's zipfile (its directory; with `python_test` every
    member's CRC too, `python -m zipfile -t`: seconds) accept it."""
    d = t.path("w")
    os.makedirs(d, exist_ok=True)
    # members = files + _C.so + RECORD
    wheel = big_count_wheel(os.path.join(d, WHEEL), members - 2)
    t.forge("stamp", wheel, "--arch-list", "9.0", env=ENV).expect_rc(0)
    with zipfile.ZipFile(wheel) as z:
        check(len(z.infolist()) == members + 1, f"{len(z.infolist())} entries, expected {members + 1}")
    check(zip64_end_present(wheel) == (members + 1 >= 0xFFFF), "zip64 end record where the count needs it")
    r = t.run(["unzip", "-tq", wheel], timeout=120)
    check(r.rc == 0, f"unzip -t refuses the stamped wheel\n{r!r}")
    if python_test:
        r = t.run([sys.executable, "-m", "zipfile", "-t", wheel], timeout=120)
        check(r.rc == 0, f"python -m zipfile -t refuses the stamped wheel\n{r!r}")
    t.forge("list", wheel).expect_rc(0).expect_out("sm_90a")
    t.forge("verify", wheel, "--arch-list", "9.0a 12.0+PTX", "--allow-extra", env=ENV)
    r = t.forge("audit", wheel, "--arch-list", "9.0", "--format", "json", env=ENV)
    check(r.rc in (0, 1), f"audit exit {r.rc}\n{r!r}")
    doc = r.json()
    check(doc["entries"][0]["provenance"]["source"] == "stamp", doc["entries"][0])
    t.forge("stamp", wheel, "--arch-list", "9.0", env=ENV).expect_rc(0)  # restamp reads it back
    return wheel


@ft.case("wheels.zip64.stamp_65535")
def case_zip64_65535(t):
    stamp_count(t, 65535)


@ft.case("wheels.zip64.stamp_65537")
def case_zip64_65537(t):
    stamp_count(t, 65537)


@ft.case("wheels.zip64.stamp_100005")
def case_zip64_100005(t):
    stamp_count(t, 100005, python_test=True)


@ft.case("wheels.zip64.pip_installs_stamped")
def case_zip64_pip(t):
    """pip installs a stamped wheel of 65,537 entries (directory entries, so that the install
    writes a few files, not 65,537)."""
    d = t.path("w")
    os.makedirs(d, exist_ok=True)
    wheel = big_count_wheel(os.path.join(d, ANY_WHEEL), 2, dirs=65533)
    with zipfile.ZipFile(wheel, "a") as z:
        z.writestr("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        z.writestr("demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    # RECORD must list what was appended: rewrite it.
    rebuilt = os.path.join(d, "rebuilt", ANY_WHEEL)
    os.makedirs(os.path.dirname(rebuilt))
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(rebuilt, "w", zipfile.ZIP_STORED) as dst:
        rows = []
        for i in src.infolist():
            if i.filename.endswith("/RECORD"):
                continue
            data = src.read(i)
            dst.writestr(i, data)
            if not i.filename.endswith("/"):
                rows.append(record_row(i.filename, data))
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerows(rows)
        w.writerow(["demo-1.0.dist-info/RECORD", "", ""])
        dst.writestr("demo-1.0.dist-info/RECORD", buf.getvalue())
    t.forge("stamp", rebuilt, "--arch-list", "9.0", env=ENV).expect_rc(0)
    check(zip64_end_present(rebuilt), "65,538 entries need the zip64 end record")
    target = t.path("target")
    r = t.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
               "--ignore-requires-python", "--target", target, rebuilt], timeout=240)
    if r.rc != 0 and "No module named pip" in r.err:
        ft.skip("no pip for this python")
    check(r.rc == 0, f"pip refuses the stamped wheel\n{r!r}")
    check(os.path.exists(os.path.join(target, "demo", "_build_info.json")), "the stamp was installed")


def large_member_wheel(path, filler):
    """A wheel whose one module is an ELF of `filler` bytes of zeros, then the fatbin section and
    the section table at the end (where a linker puts it), deflated; with a correct RECORD."""
    names = b"\0.text\0.nv_fatbin\0.shstrtab\0"
    text_off = 64
    fat_off = text_off + filler
    str_off = fat_off + len(FATBIN) + (-len(FATBIN) % 8)
    sh_off = str_off + len(names) + (-len(names) % 8)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0, 0]) + b"\0" * 7
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_off, 0, 64, 0, 0, 64, 4, 3)
    sh = b"\0" * 64
    sh += struct.pack("<IIQQQQIIQQ", 1, 1, 6, 0, text_off, filler, 0, 0, 16, 0)
    # Mapped where it lies, as a linked file's loaded sections are (at address 0 it would not be).
    sh += struct.pack("<IIQQQQIIQQ", 7, 1, 2, fat_off, fat_off, len(FATBIN), 0, 0, 8, 0)
    sh += struct.pack("<IIQQQQIIQQ", 18, 3, 0, 0, str_off, len(names), 0, 0, 1, 0)
    tail = (FATBIN + b"\0" * (-len(FATBIN) % 8) + names + b"\0" * (-len(names) % 8) + sh)
    sha = hashlib.sha256()
    size = 0
    zi = zipfile.ZipInfo("demo/_C.so")
    zi.compress_type = zipfile.ZIP_DEFLATED
    chunk = b"\0" * (1 << 20)
    with zipfile.ZipFile(path, "w", compresslevel=1) as z:
        with z.open(zi, "w", force_zip64=False) as f:
            for part in [ehdr] + [chunk] * (filler >> 20) + [b"\0" * (filler & ((1 << 20) - 1)), tail]:
                f.write(part)
                sha.update(part)
                size += len(part)
        digest = base64.urlsafe_b64encode(sha.digest()).rstrip(b"=").decode()
        z.writestr("demo-1.0.dist-info/RECORD",
                   f"demo/_C.so,sha256={digest},{size}\ndemo-1.0.dist-info/RECORD,,\n")
    return path, size


def peak_rss_mib(t, argv):
    """Runs nvcc-forge ARGV; (its exit code, its peak resident set in MiB, stdout)."""
    p = subprocess.Popen([t.forge_exe, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd=t.work, env=dict(ENV, TMPDIR=t.work))
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss / 1024, out.decode() + err.decode()


@ft.case("wheels.memory.large_member_bounded")
def case_large_member(t):
    """A 320 MiB module: list and verify keep what they hold far below it (it used to be inflated
    whole into memory), and read it right."""
    wheel, size = large_member_wheel(t.path(WHEEL), 320 << 20)
    for argv in (["list", wheel, "--format", "json"],
                 ["verify", wheel, "--arch-list", "9.0"]):
        rc, rss, out = peak_rss_mib(t, argv)
        check(rc == 0, f"{argv[0]}: exit {rc}\n{out}")
        check(rss < 96, f"{argv[0]} of a wheel with a {size >> 20} MiB member peaked at {rss:.0f} MiB")
        if argv[0] == "list":
            rows = json.loads(out[:out.rindex("]") + 1])
            check(sorted(r["arch"] for r in rows) == ["compute_120f", "sm_90a"], rows)
    check(os.listdir(t.work) == [WHEEL], f"a spilled member was left behind: {os.listdir(t.work)}")


@ft.case("wheels.zip_differential")
def case_zip_differential(t):
    """The zip reader against Python's zipfile as pip 23 reads a wheel (bench/fuzz/zip_diff.py):
    4,000 mutated wheels, a fixed seed, no divergence (the reader before issue 36's fixes diverged
    on 184 of these). The campaign of a million is in bench/RESULTS.md."""
    exe = os.path.join(t.build, "bench", "fuzz", "forge-zip-diff")
    if not os.path.exists(exe):
        ft.skip(f"{exe} is not built (it is built with the tests)")
    r = t.run([sys.executable, os.path.join(t.source, "bench", "fuzz", "zip_diff.py"), "--exe", exe,
               "--execs", "4000", "--seed", "1", "--quiet", "--save", t.path("divergent")],
              timeout=240)
    check(r.rc == 0, f"the zip reader and zipfile diverge:\n{r.out}{r.err}")


if __name__ == "__main__":
    sys.exit(ft.main())
