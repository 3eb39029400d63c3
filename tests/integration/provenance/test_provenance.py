#!/usr/bin/env python3
"""nvcc-forge stamp and audit end to end, on wheels wrapping real nvcc-built .so files (built once
per build tree): pip install + pip check of a stamped wheel, RECORD, re-stamp, the ledger, every
audit status, parallel == serial, usage errors. Skipped (exit 77) without nvcc, or venv for the pip
cases."""
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402

T = EXE = POLICY = WORK = CASE = None  # set by setup()
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
ENV = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
for var in ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "CI_PIPELINE_ID", "BUILDKITE_BUILD_ID",
            "CIRCLE_WORKFLOW_ID", "BUILD_BUILDID", "CODEBUILD_BUILD_ID", "TRAVIS_BUILD_ID", "BUILD_ID"):
    ENV.pop(var, None)

KERNEL = r"""
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
extern "C" void launch(float* x) { scale<<<1, 32>>>(x, 2.0f); }
"""


def setup(t):
    global T, EXE, POLICY, WORK, CASE
    T, EXE, WORK, CASE = t, t.forge_exe, t.work_root, t.name
    POLICY = t.src("policy", "arch_policy.yml")
    os.makedirs(WORK, exist_ok=True)


def forge(*args, env=None):
    r = T.forge(*args, env=env or ENV, cwd=WORK)
    return r.rc, r.out, r.err


# ---- fixtures: two tiny real extensions, built once and shared by every case -------------------
SO_FLAGS = {
    # carries sm_80 only
    "a80": ["-gencode=arch=compute_80,code=sm_80"],
    # carries sm_80, sm_90 and compute_90: the list "8.0 9.0+PTX"
    "b80_90ptx": ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=[sm_90,compute_90]"],
}


def build_objects():
    out = os.path.join(WORK, "so")
    if all(os.path.exists(os.path.join(out, n + ".so")) for n in SO_FLAGS):
        return out
    if not os.path.exists(NVCC):
        ft.skip(f"no nvcc at {NVCC}")
    tmp = tempfile.mkdtemp(dir=WORK)
    src = os.path.join(tmp, "k.cu")
    with open(src, "w") as f:
        f.write(KERNEL)
    for name, flags in SO_FLAGS.items():
        p = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", *flags, "-o",
                            os.path.join(tmp, name + ".so"), src], capture_output=True, text=True)
        check(p.returncode == 0, f"nvcc failed: {p.stderr[-2000:]}")
    try:
        os.rename(tmp, out)  # atomic: parallel cases race to publish the same fixtures
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, "sha256=" + digest, str(len(data))]


def host_only_so(path):
    """A host-only shared object the reader accepts (an ELF header, no section table): for the
    cases about the wheel, not its GPU code."""
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    with open(path, "wb") as f:
        f.write(ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0))
    return path


def make_wheel(directory, dist, so_path, version="1.0", stored=False):
    """A minimal valid wheel: <dist>/__init__.py + _C.so, dist-info with a correct RECORD."""
    name = f"{dist}-{version}-cp311-cp311-linux_x86_64.whl"
    path = os.path.join(directory, name)
    di = f"{dist}-{version}.dist-info"
    with open(so_path, "rb") as f:
        so = f.read()
    members = [
        (f"{dist}/__init__.py", b"# demo\n"),
        (f"{dist}/_C.so", so),
        (f"{di}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()),
        (f"{di}/WHEEL", b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                        b"Tag: cp311-cp311-linux_x86_64\n"),
        (f"{di}/top_level.txt", f"{dist}\n".encode()),
    ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for n, d in members:
        w.writerow(record_line(n, d))
    w.writerow([f"{di}/RECORD", "", ""])
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members:
            z.writestr(n, d, compress_type=zipfile.ZIP_STORED if stored and n.endswith(".so")
                       else zipfile.ZIP_DEFLATED)
        z.writestr(f"{di}/RECORD", buf.getvalue(), compress_type=zipfile.ZIP_DEFLATED)
    return path


def fresh_dir(name):
    return ft.fresh_dir(os.path.join(WORK, CASE, name))


def check_record(wheel):
    """Every RECORD line matches its member; every member is listed once; RECORD's hash empty."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        check(len(names) == len(set(names)), f"duplicate members in {wheel}: {names}")
        rec_name = [n for n in names if n.endswith(".dist-info/RECORD")][0]
        rows = list(csv.reader(io.StringIO(z.read(rec_name).decode())))
        listed = [r[0] for r in rows]
        check(len(listed) == len(set(listed)), f"duplicate RECORD lines: {listed}")
        check(sorted(listed) == sorted(names), f"RECORD lists {listed}, wheel has {names}")
        for path, h, size in rows:
            if path == rec_name:
                check(h == "" and size == "", f"RECORD's own line must be empty: {h} {size}")
                continue
            check([path, h, size] == record_line(path, z.read(path)), f"bad RECORD line for {path}")


# ---- stamp -------------------------------------------------------------------------------------
@ft.case("provenance.cli.stamp_round_trip")
def case_stamp_round_trip(t):
    so = build_objects()
    d = fresh_dir("w")
    wheel = make_wheel(d, "demo_ext", os.path.join(so, "b80_90ptx.so"), stored=True)
    with zipfile.ZipFile(wheel) as z:
        before = {i.filename: (i.compress_type, i.CRC, i.compress_size) for i in z.infolist()}
        order = z.namelist()
    env = dict(ENV, GITHUB_RUN_ID="123", GITHUB_RUN_ATTEMPT="1")
    rc, out, err = forge("stamp", wheel, "--arch-list", "8.0 9.0+PTX", "--cuda", "13.0",
                         "--format", "json", env=env)
    check(rc == 0, f"stamp exited {rc}: {err}")
    rec = json.loads(out)
    for key in ("arch_list", "tokens", "targets", "policy_file", "policy_sha256", "build_epoch",
                "cuda", "torch", "platform", "package", "nvcc_forge_version", "run_id", "time",
                "inferred"):
        check(key in rec, f"record lacks {key}: {rec}")
    check(rec["run_id"] == "123/1" and rec["cuda"] == "13.0" and rec["inferred"] is False, rec)
    check(rec["time"] == "2023-11-14T22:13:20Z", rec["time"])
    check_record(wheel)
    with zipfile.ZipFile(wheel) as z:
        after = {i.filename: (i.compress_type, i.CRC, i.compress_size) for i in z.infolist()}
        check(z.namelist()[:len(order)] == order, "member order changed")
        check(json.loads(z.read("demo_ext/_build_info.json")) == rec, "stamp differs from --format json")
    for n, v in before.items():
        if not n.endswith("RECORD"):
            check(after[n] == v, f"{n} changed: {v} -> {after[n]}")

    # pip installs it and pip check accepts the environment.
    venv = os.path.join(d, "venv")
    p = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if p.returncode != 0:
        ft.skip(f"python3 -m venv unavailable: {p.stderr[-500:]}")
    py = os.path.join(venv, "bin", "python")
    p = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", wheel],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"pip install failed: {p.stdout[-1500:]} {p.stderr[-1500:]}")
    p = subprocess.run([py, "-m", "pip", "check"], capture_output=True, text=True)
    check(p.returncode == 0, f"pip check failed: {p.stdout} {p.stderr}")
    p = subprocess.run([py, "-c", "import demo_ext, json, os; print(open(os.path.join("
                        "os.path.dirname(demo_ext.__file__), '_build_info.json')).read())"],
                       capture_output=True, text=True)
    check(p.returncode == 0 and json.loads(p.stdout)["arch_list"] == "8.0 9.0+PTX",
          f"installed stamp unreadable: {p.stdout} {p.stderr}")
    # pip verified the wheel's RECORD against the files on install? It does not; the installed
    # RECORD must still list the stamp with the right hash (pip copies the wheel's lines).
    site = subprocess.run([py, "-c", "import demo_ext, os; print(os.path.dirname(os.path.dirname("
                           "demo_ext.__file__)))"], capture_output=True, text=True).stdout.strip()
    installed = open(os.path.join(site, "demo_ext-1.0.dist-info", "RECORD")).read()
    data = open(os.path.join(site, "demo_ext", "_build_info.json"), "rb").read()
    check(",".join(record_line("demo_ext/_build_info.json", data)) in installed, installed)
    p = subprocess.run([py, "-m", "pip", "uninstall", "-y", "demo_ext"], capture_output=True, text=True)
    check(p.returncode == 0 and not os.path.exists(os.path.join(site, "demo_ext", "_build_info.json")),
          "pip uninstall left the stamp behind (RECORD does not list it)")
    # `wheel unpack` checks every RECORD hash, when the wheel tool is importable.
    if subprocess.run([sys.executable, "-c", "import wheel"], capture_output=True).returncode == 0:
        p = subprocess.run([sys.executable, "-m", "wheel", "unpack", "-d", os.path.join(d, "unpacked"),
                            wheel], capture_output=True, text=True)
        check(p.returncode == 0, f"wheel unpack rejected the stamped wheel: {p.stderr}")


@ft.case("provenance.cli.restamp_and_ledger")
def case_restamp_and_ledger(t):
    so = build_objects()
    d = fresh_dir("w")
    wheel = make_wheel(d, "demo_ext", os.path.join(so, "a80.so"))
    ledger = os.path.join(d, "ledger.jsonl")
    rc, _, err = forge("stamp", wheel, "--arch-list", "8.0", "--ledger", ledger)
    check(rc == 0, err)
    rc, out, err = forge("stamp", wheel, "--arch-list", "8.0 9.0", "--ledger", ledger,
                         "--policy", POLICY)
    check(rc == 0, err)
    check("restamped" in out, out)
    check_record(wheel)
    with zipfile.ZipFile(wheel) as z:
        check(z.namelist().count("demo_ext/_build_info.json") == 1, z.namelist())
        stamp = json.loads(z.read("demo_ext/_build_info.json"))
    lines = [json.loads(l) for l in open(ledger).read().splitlines()]
    check(len(lines) == 2, lines)
    check(all(l["wheel"] == os.path.basename(wheel) for l in lines), lines)
    check(lines[0]["arch_list"] == "8.0" and lines[1]["arch_list"] == "8.0 9.0", lines)
    check({k: v for k, v in lines[1].items() if k != "wheel"} == stamp, "ledger line != stamp")
    check(isinstance(stamp["build_epoch"], int) and stamp["policy_sha256"] ==
          hashlib.sha256(open(POLICY, "rb").read()).hexdigest(), stamp)


@ft.case("provenance.cli.resolve_options")
def case_resolve_options(t):
    """stamp and audit with the resolver (no --arch-list): the record names the policy file."""
    so = build_objects()
    d = fresh_dir("w")
    wheel = make_wheel(d, "demo_ext", os.path.join(so, "b80_90ptx.so"))
    opts = ["--cuda", "12.8", "--torch", "2.9", "--policy", POLICY]
    rc, out, err = forge("resolve", *opts, "--format", "json")
    check(rc == 0, f"resolve: {err}")
    resolved = json.loads(out)
    rc, out, err = forge("stamp", wheel, *opts, "--format", "json")
    check(rc == 0, err)
    rec = json.loads(out)
    check(rec["list_source"] != "--arch-list" and rec["cuda"] == "12.8" and rec["torch"] == "2.9", rec)
    check(os.path.samefile(rec["policy_file"], POLICY), rec["policy_file"])
    check(rec["policy_sha256"] == hashlib.sha256(open(POLICY, "rb").read()).hexdigest(), rec)
    check(isinstance(rec["build_epoch"], int), rec)
    flat = json.dumps(resolved)
    check(all(t in flat for t in rec["tokens"]), f"stamped tokens {rec['tokens']} not in resolve output")
    # The wheel carries 8.0 9.0+PTX, not the resolved 12.8 list: wrong against its own ask.
    rc, out, err = forge("audit", d, *opts, "--format", "json")
    check(rc == 1, err)
    doc = json.loads(out)
    rows = doc["entries"]
    check([r["status"] for r in rows] == ["wheel-wrong"], rows)
    check(doc["policy"]["arch_list"] == rec["arch_list"], doc["policy"])


@ft.case("provenance.cli.stamp_errors")
def case_stamp_errors(t):
    d = fresh_dir("w")
    text = os.path.join(d, "notes-1.0-py3-none-any.whl")
    open(text, "w").write("not a zip\n")
    rc, _, err = forge("stamp", text, "--arch-list", "8.0")
    check(rc == 2 and text in err, f"non-zip: rc {rc}, {err}")
    check(open(text).read() == "not a zip\n", "the input was modified")
    rc, _, err = forge("stamp", os.path.join(d, "missing-1.0-py3-none-any.whl"), "--arch-list", "8.0")
    check(rc == 2 and "missing" in err, err)
    norec = os.path.join(d, "norec-1.0-py3-none-any.whl")
    with zipfile.ZipFile(norec, "w") as z:
        z.writestr("norec/__init__.py", "")
    rc, _, err = forge("stamp", norec, "--arch-list", "8.0")
    check(rc == 2 and "RECORD" in err, err)
    rc, _, err = forge("stamp", norec, "--arch-list", "banana")
    check(rc == 2 and "banana" in err, err)
    rc, _, err = forge("stamp", "--arch-list", "8.0")
    check(rc == 2 and "WHEEL" in err, err)
    valid = make_wheel(d, "valid", host_only_so(os.path.join(d, "host.so")))
    before = open(valid, "rb").read()
    rc, _, err = forge("stamp", valid, "--arch-list", "8.0", env=dict(ENV, SOURCE_DATE_EPOCH="soon"))
    check(rc == 2 and "SOURCE_DATE_EPOCH" in err, err)
    check(open(valid, "rb").read() == before, "a failed stamp modified the wheel")
    # A module the reader cannot read is not stamped with `modules: null` (exit 2, named).
    fake_so = os.path.join(d, "fake.so")
    open(fake_so, "wb").write(b"\x7fELF not really")
    fake = make_wheel(d, "fake", fake_so)
    before = open(fake, "rb").read()
    ledger = os.path.join(d, "ledger.jsonl")
    rc, _, err = forge("stamp", fake, "--arch-list", "8.0", "--ledger", ledger)
    check(rc == 2 and "'fake/_C.so'" in err, err)
    check(open(fake, "rb").read() == before and not os.path.exists(ledger), "a refused stamp wrote")
    check(not [f for f in os.listdir(d) if ".stamp-" in f], os.listdir(d))


def stamp_of(wheel):
    with zipfile.ZipFile(wheel) as z:
        return [n for n in z.namelist() if n.endswith("/_build_info.json")]


@ft.case("provenance.cli.stamp_refuses_members_leaving_the_wheel")
def case_stamp_escaping_members(t):
    """A wheel whose only extension sits under ../ would get ../_build_info.json: refused (exit 2),
    the wheel untouched and nothing written outside it."""
    d = fresh_dir("w")
    for bad in ("../evil/_C.so", "/abs/_C.so", "pkg/../../_C.so"):
        wheel = os.path.join(d, "evil-1.0-py3-none-any.whl")
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(bad, b"\x7fELF")
            z.writestr("evil-1.0.dist-info/RECORD", "")
        before = open(wheel, "rb").read()
        rc, _, err = forge("stamp", wheel, "--arch-list", "8.0")
        check(rc == 2 and "leaves the directory the wheel is installed into" in err and f"'{bad}'" in err,
              f"{bad}: rc {rc}, {err}")
        check(open(wheel, "rb").read() == before, f"{bad}: the wheel was modified")
        check(stamp_of(wheel) == [], f"{bad}: stamped")


@ft.case("provenance.cli.stamp_through_links")
def case_stamp_through_links(t):
    """A symlinked wheel is stamped where it lives (the link stays a link); a hard-linked one keeps
    its links; owner and mode are kept; a wheel the caller could not write is refused."""
    d = fresh_dir("w")
    fake_so = host_only_so(os.path.join(d, "fake.so"))
    real_dir = os.path.join(d, "store")
    os.makedirs(real_dir)
    real = make_wheel(real_dir, "linked", fake_so)
    link = os.path.join(d, os.path.basename(real))
    os.symlink(real, link)
    rc, out, err = forge("stamp", link, "--arch-list", "8.0")
    check(rc == 0, err)
    check(os.path.islink(link) and os.readlink(link) == real, "the symlink was replaced")
    check(stamp_of(real) == ["linked/_build_info.json"], "the link's target is not stamped")
    check(not [f for f in os.listdir(d) + os.listdir(real_dir) if ".stamp-" in f], "temp left")
    check_record(real)

    hard_dir = os.path.join(d, "hard")
    os.makedirs(hard_dir)
    first = make_wheel(hard_dir, "hard", fake_so)
    second = os.path.join(d, os.path.basename(first))
    os.link(first, second)
    os.chmod(first, 0o640)
    rc, _, err = forge("stamp", second, "--arch-list", "8.0")
    check(rc == 0, err)
    check(os.stat(first).st_ino == os.stat(second).st_ino and os.stat(first).st_nlink == 2,
          "the hard link was broken")
    check(stamp_of(first) == ["hard/_build_info.json"], "the other name does not see the stamp")
    check(os.stat(first).st_mode & 0o777 == 0o640, oct(os.stat(first).st_mode))
    check_record(first)

    if os.geteuid() == 0:
        # Root stamps a wheel owned by someone else: the owner is kept.
        owned = make_wheel(fresh_dir("owned"), "owned", fake_so)
        os.chown(owned, 4242, 4243)
        rc, _, err = forge("stamp", owned, "--arch-list", "8.0")
        check(rc == 0, err)
        st = os.stat(owned)
        check((st.st_uid, st.st_gid) == (4242, 4243), f"owner changed to {st.st_uid}:{st.st_gid}")
        check(stamp_of(owned) == ["owned/_build_info.json"], "not stamped")

    # A 0444 wheel in a directory anyone may write: renaming over it would work, writing it
    # would not. Run as an unprivileged user when this is root (root may write anything).
    open_dir = fresh_dir("open")
    os.chmod(open_dir, 0o777)
    locked = make_wheel(open_dir, "locked", fake_so)
    os.chmod(locked, 0o444)
    before = open(locked, "rb").read()
    owner = os.stat(locked).st_uid

    def as_nobody():
        os.setgid(65534)
        os.setuid(65534)

    p = subprocess.run([EXE, "stamp", locked, "--arch-list", "8.0"], capture_output=True,
                       text=True, env=ENV, cwd=open_dir,
                       preexec_fn=as_nobody if os.geteuid() == 0 else None)
    check(p.returncode == 2 and "cannot write" in p.stderr, f"rc {p.returncode}: {p.stderr}")
    check(open(locked, "rb").read() == before and os.stat(locked).st_uid == owner,
          "an unwritable wheel was replaced")


@ft.case("provenance.cli.stamp_in_another_users_directory")
def case_stamp_swap_race(t):
    """Issue 36, 4: root stamps a wheel in a directory another user owns while that user swaps
    every temporary file that shows up there for a symbolic link to root's 0600 file (30 rounds).
    Root's file never changes owner, mode or bytes, the wheel is never left a link, and the stamp
    goes through: in a directory another user can write it is written into the wheel open as a
    descriptor, never renamed by name."""
    if os.geteuid() != 0:
        ft.skip("needs root to run the directory's owner as a second user (uid 65534)")
    d = fresh_dir("race")
    secret_dir = fresh_dir("root-only")
    secret = os.path.join(secret_dir, "secret")
    with open(secret, "wb") as f:
        f.write(b"root's\n")
    os.chmod(secret, 0o600)
    hostile = os.path.join(d, "hostile")
    os.makedirs(hostile)
    # A large stored member: writing the new wheel takes long enough for the swap to land.
    big_so = host_only_so(os.path.join(d, "big.so"))
    with open(big_so, "ab") as f:
        f.write(os.urandom(4 << 20))
    wheel = make_wheel(hostile, "raced", big_so, stored=True)
    os.chown(hostile, 65534, 65534)
    os.chown(wheel, 65534, 65534)
    os.chmod(wheel, 0o644)
    # The directory's owner (a forked child, uid 65534): swaps each `.<wheel>.stamp-*` for a link
    # to root's file until killed.
    racer = os.fork()
    if racer == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            while True:
                for n in os.listdir(hostile):
                    p = os.path.join(hostile, n)
                    if ".stamp-" in n and not os.path.islink(p):
                        try:
                            os.unlink(p)
                            os.symlink(secret, p)
                        except OSError:
                            pass
        finally:
            os._exit(0)
    try:
        with ft.Soft() as soft:
            for round_ in range(30):
                rc, _, err = forge("stamp", wheel, "--arch-list", "8.0")
                st = os.stat(secret)
                soft.check((st.st_uid, st.st_mode & 0o7777) == (0, 0o600),
                           f"round {round_}: root's file became {st.st_uid} {oct(st.st_mode)}")
                soft.check(open(secret, "rb").read() == b"root's\n", f"round {round_}: written")
                soft.check(not os.path.islink(wheel), f"round {round_}: the wheel is a link")
                soft.check(rc == 0, f"round {round_}: rc {rc}: {err}")
                if rc != 0 or os.path.islink(wheel):
                    break
    finally:
        os.kill(racer, signal.SIGKILL)
        os.waitpid(racer, 0)
    st = os.stat(wheel)
    check((st.st_uid, st.st_mode & 0o7777) == (65534, 0o644), f"{st.st_uid} {oct(st.st_mode)}")
    check(stamp_of(wheel) == ["raced/_build_info.json"], "not stamped")
    check_record(wheel)


# ---- audit -------------------------------------------------------------------------------------
def fleet():
    """One file per status (and no-provenance both ways); returns (dir, ledger, expected)."""
    so = build_objects()
    d = fresh_dir("fleet")
    ledger = os.path.join(d, "ledger.jsonl")
    epoch1 = os.path.join(d, "policy_epoch1.yml")
    epoch2 = os.path.join(d, "policy_epoch2.yml")
    text = open(POLICY).read()
    check(re.search(r"^build_epoch: \d+$", text, re.M), "policy has no build_epoch line")
    open(epoch1, "w").write(re.sub(r"^build_epoch: \d+$", "build_epoch: 1", text, flags=re.M))
    open(epoch2, "w").write(re.sub(r"^build_epoch: \d+$", "build_epoch: 2", text, flags=re.M))
    a80, b = os.path.join(so, "a80.so"), os.path.join(so, "b80_90ptx.so")
    current = ["--arch-list", "8.0 9.0+PTX", "--policy", epoch2]
    expected = {}

    def stamped(dist, so_path, arch_list, policy, status, ledger_only=False):
        sub = os.path.join(d, "wheels", status)
        os.makedirs(sub, exist_ok=True)
        w = make_wheel(sub, dist, so_path)
        if ledger_only:
            # Stamp a copy, keep the ledger line, ship the unstamped wheel.
            tmp = os.path.join(d, "tmp")
            os.makedirs(tmp, exist_ok=True)
            c = shutil.copy(w, tmp)
            rc, _, err = forge("stamp", c, "--arch-list", arch_list, "--policy", policy,
                               "--ledger", ledger)
            shutil.rmtree(tmp)
        else:
            rc, _, err = forge("stamp", w, "--arch-list", arch_list, "--policy", policy)
        check(rc == 0, err)
        expected[w] = status
        return w

    stamped("okpkg", b, "8.0 9.0+PTX", epoch2, "ok")
    stamped("wrongpkg", a80, "8.0 9.0+PTX", epoch2, "wheel-wrong")
    stamped("movedpkg", a80, "8.0", epoch2, "config-moved")
    stamped("stalepkg", b, "8.0 9.0+PTX", epoch1, "stale-epoch")
    stamped("ledgerpkg", a80, "8.0", epoch2, "config-moved", ledger_only=True)
    stamped("ledgerwrong", a80, "9.0", epoch2, "wheel-wrong", ledger_only=True)
    bare = os.path.join(d, "loose", "deep", "dir")
    os.makedirs(bare)
    match = shutil.copy(b, os.path.join(bare, "match.so"))
    miss = shutil.copy(a80, os.path.join(bare, "miss.so"))
    expected[match] = "no-provenance"
    expected[miss] = "no-provenance"
    corrupt = os.path.join(d, "wheels", "corrupt-1.0-cp311-cp311-linux_x86_64.whl")
    scratch = os.path.join(d, "scratch")
    os.makedirs(scratch)
    with open(make_wheel(scratch, "corrupt", b), "rb") as f:
        data = f.read()
    shutil.rmtree(scratch)
    with open(corrupt, "wb") as f:
        f.write(data[: len(data) // 2])  # the central directory is gone
    expected[corrupt] = "unreadable"
    open(os.path.join(d, "wheels", "README.txt"), "w").write("not audited\n")
    return d, ledger, current, expected, (match, miss)


def audit_json(*args, doc=False):
    """(exit code, the entries), or the whole report with doc=True: {"policy", "files",
    "entries", "counts", "narrowed", "audited", "interrupted"} (docs/policy.md, "audit")."""
    rc, out, err = forge("audit", *args, "--format", "json")
    check(rc in (0, 1, 2), f"audit exited {rc}: {err}")
    report = json.loads(out)
    return rc, report if doc else report["entries"]


@ft.case("provenance.cli.audit_statuses")
def case_audit_statuses(t):
    d, ledger, current, expected, (match, miss) = fleet()
    rc, report = audit_json(d, "--ledger", ledger, *current, "--jobs", "2", doc=True)
    check(rc == 2, "a fleet with an unreadable file must exit 2 (unusable input)")
    rows = report["entries"]
    got = {r["file"]: r for r in rows}
    # The policy and the file count once at the top, the counts after the entries.
    check(list(report)[:3] == ["policy", "files", "entries"], list(report))
    check(report["policy"]["build_epoch"] == 2, report["policy"])
    check(report["files"] == len(expected) and report["audited"] == len(expected), report["files"])
    check(report["interrupted"] is False, report)
    for s in set(expected.values()):
        check(report["counts"][s] == sum(1 for v in expected.values() if v == s), (s, report["counts"]))
    check(sorted(got) == sorted(expected), f"audited {sorted(got)}, expected {sorted(expected)}")
    for f, status in expected.items():
        check(got[f]["status"] == status, f"{f}: {got[f]['status']} != {status}: {got[f]['details']}")
        for key in ("file", "status", "carries", "provenance", "details"):
            check(key in got[f], f"{f} lacks {key}")
        check("policy" not in got[f], "the policy is written once, at the top")
    check(got[match]["inferred"] is True and got[match]["inferred_match"] is True, got[match])
    check(got[miss]["inferred"] is True and got[miss]["inferred_match"] is False, got[miss])
    for f, r in got.items():
        if r["status"] != "no-provenance":
            check(r["inferred"] is False and "inferred_match" not in r, r)
        if r["status"] == "unreadable":
            check("byte" in r["error"] or "zip" in r["error"], r["error"])
        elif r["status"] != "no-provenance":
            src = "ledger" if "ledger" in os.path.basename(f) else "stamp"
            check(r["provenance"]["source"] == src, (f, r["provenance"]))
    okf = [f for f, s in expected.items() if s == "ok"][0]
    check(sorted(got[okf]["carries"]["targets"]) == ["compute_90", "sm_80", "sm_90"], got[okf]["carries"])
    stale = [f for f, s in expected.items() if s == "stale-epoch"][0]
    check(got[stale]["provenance"]["build_epoch"] == 1, got[stale]["provenance"])

    # Text: the summary counts and one line per file that is not ok.
    rc, out, err = forge("audit", d, "--ledger", ledger, *current)
    check(rc == 2, err)
    check(err == "", f"no progress bar when stderr is not a terminal: {err!r}")
    counts = {}
    for s in expected.values():
        counts[s] = counts.get(s, 0) + 1
    for s, n in counts.items():
        check(any(l.split() == [s, str(n)] for l in out.splitlines()), f"no '{s} {n}' row:\n{out}")
    for f, s in expected.items():
        if s != "ok":
            check(any(l.startswith(s) and f in l for l in out.splitlines()), f"{f} not listed:\n{out}")

    # Without the ledger the ledger-only wheels have no provenance.
    rc, rows = audit_json(d, *current)
    for r in rows:
        if "ledger" in os.path.basename(r["file"]):
            check(r["status"] == "no-provenance", r)

    # Only ok files: exit 0; findings without an unreadable file: exit 1; an unreadable file
    # decides exit 2 whatever else is found.
    rc, rows = audit_json(okf, *current)
    check(rc == 0 and [r["status"] for r in rows] == ["ok"], rows)
    wrong = [f for f, s in expected.items() if s == "wheel-wrong" and "ledger" not in f][0]
    rc, rows = audit_json(okf, wrong, *current)
    check(rc == 1 and sorted(r["status"] for r in rows) == ["ok", "wheel-wrong"], rows)
    corrupt = [f for f, s in expected.items() if s == "unreadable"][0]
    rc, rows = audit_json(okf, corrupt, *current)
    check(rc == 2 and sorted(r["status"] for r in rows) == ["ok", "unreadable"], rows)


@ft.case("provenance.cli.audit_parallel")
def case_audit_parallel(t):
    d, ledger, current, expected, _ = fleet()
    # More files so the workers really interleave.
    src = os.path.join(d, "wheels")
    for i in range(40):
        for f in list(expected):
            if f.endswith(".whl"):
                base = os.path.basename(f)
                dst = os.path.join(d, "copies", str(i), base)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(f, dst)
    copies = 40 * sum(1 for f in expected if f.endswith(".whl"))
    outs = []
    for jobs in ("1", "2", "8"):
        rc, out, err = forge("audit", d, "--ledger", ledger, *current, "--jobs", jobs, "--format", "json")
        check(rc == 2, err)
        outs.append(out)
    check(outs[0] == outs[1] == outs[2], "parallel audit differs from serial")
    rows = json.loads(outs[0])["entries"]
    check(len(rows) == len(expected) + copies, (len(rows), len(expected), copies))
    check(sum(r["status"] == "unreadable" for r in rows) == 41, "the corrupt wheel and its copies")
    # On a terminal (util-linux `script` provides one) the progress bar is drawn on stderr.
    if shutil.which("script"):
        cmd = " ".join(["'%s'" % a for a in [EXE, "audit", d, *current, "--format", "json"]])
        p = subprocess.run(["script", "-qec", cmd + " >/dev/null", "/dev/null"], capture_output=True,
                           env=ENV)
        check(f"/{len(rows)}".encode() in p.stdout and b"\r[" in p.stdout,
              f"no progress bar on a tty: {p.stdout[-300:]!r}")
        check(b" files/s, " in p.stdout and b" left" in p.stdout,
              f"the progress bar shows no rate and time left: {p.stdout[-300:]!r}")


@ft.case("provenance.cli.audit_progress_cleared")
def case_audit_progress_cleared(t):
    """Report and bar on one terminal: the bar is taken off its line before each report line, so
    a report line never runs on from the bar's text ("... 3 s leftno-provenance x.whl")."""
    if not shutil.which("script"):
        ft.skip("no util-linux script (a terminal for the audit)")
    d, ledger, current, expected, _ = fleet()
    cmd = " ".join(["'%s'" % a for a in [EXE, "audit", d, "--ledger", ledger, *current, "--jobs", "1"]])
    p = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, env=ENV)
    bars = 0
    for piece in p.stdout.split(b"\r"):
        if re.search(rb"\] \d+/\d+", piece):
            bars += 1
            check(piece.endswith(b"\x1b[K"), f"text after the bar on its line: {piece!r}")
    check(bars > 0, f"no progress bar on the terminal: {p.stdout[-300:]!r}")
    check(b"no-provenance " in p.stdout and b"  status " in p.stdout,
          f"the report is not on the terminal: {p.stdout[-300:]!r}")


@ft.case("provenance.cli.audit_usage")
def case_audit_usage(t):
    d = fresh_dir("w")
    rc, _, err = forge("audit", os.path.join(d, "nope"), "--arch-list", "8.0")
    check(rc == 2 and "nope" in err, err)
    rc, _, err = forge("audit", "--arch-list", "8.0")
    check(rc == 2, err)
    rc, _, err = forge("audit", d, "--arch-list", "8.0", "--jobs", "0")
    check(rc == 2 and "jobs" in err, err)
    rc, _, err = forge("audit", d, "--arch-list", "8.0", "--format", "xml")
    check(rc == 2, err)
    bad = os.path.join(d, "ledger.jsonl")
    open(bad, "w").write('{"wheel": "a.whl", "arch_list": "8.0"}\n{oops\n')
    rc, _, err = forge("audit", d, "--arch-list", "8.0", "--ledger", bad)
    check(rc == 2 and "ledger.jsonl:2" in err, err)
    rc, _, err = forge("audit", d, "--arch-list", "8.0", "--ledger", os.path.join(d, "none.jsonl"))
    check(rc == 2 and "none.jsonl" in err, err)
    # An empty directory audits nothing and finds nothing wrong.
    rc, out, err = forge("audit", d, "--arch-list", "8.0", "--format", "json")
    check(rc == 0 and json.loads(out)["entries"] == [] and json.loads(out)["files"] == 0,
          (rc, out, err))


@ft.case("provenance.cli.audit_empty_and_cut_files")
def case_audit_empty_and_cut(t):
    """An empty file is said to be empty; a zip without its end record names where it looked."""
    d = fresh_dir("w")
    empty = os.path.join(d, "empty-1.0-py3-none-any.whl")
    open(empty, "wb").close()
    cut = os.path.join(d, "cut-1.0-py3-none-any.whl")
    with zipfile.ZipFile(cut, "w") as z:
        z.writestr("cut/__init__.py", "x = 1\n" * 100)
    data = open(cut, "rb").read()
    open(cut, "wb").write(data[:-40])
    rc, rows = audit_json(d, "--arch-list", "8.0")
    check(rc == 2, rows)
    by = {os.path.basename(r["file"]): r for r in rows}
    check("an empty file (0 bytes)" in by[os.path.basename(empty)]["error"], by)
    err = by[os.path.basename(cut)]["error"]
    check(f"in none of the last {len(data) - 40} bytes (0x0..0x{len(data) - 40:x})" in err, err)


def many_wheels(d, n):
    """`n` small wheels without GPU code (no nvcc needed): enough for an audit to take a while."""
    for i in range(n):
        with zipfile.ZipFile(os.path.join(d, f"p{i:04d}-1.0-py3-none-any.whl"), "w") as z:
            z.writestr(f"p{i:04d}/__init__.py", "")
            z.writestr(f"p{i:04d}-1.0.dist-info/RECORD", f"p{i:04d}/__init__.py,,\n")


def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finish_or_describe(p, timeout=120):
    """communicate(), or (once past the timeout) a failure that says what each of the audit's
    threads was doing: its state, kernel wait channel, system call and kernel stack."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        where = []
        for tid in sorted(os.listdir(f"/proc/{p.pid}/task")):
            base = f"/proc/{p.pid}/task/{tid}"
            parts = []
            for name in ("stat", "wchan", "syscall", "stack"):
                try:
                    with open(os.path.join(base, name)) as f:
                        parts.append(f"{name}: {f.read().strip()}")
                except OSError as e:
                    parts.append(f"{name}: ({e.strerror})")
            where.append(f"thread {tid}:\n  " + "\n  ".join(parts))
        p.kill()
        out, err = p.communicate()
        check(False, f"the audit did not end {timeout} s after SIGINT:\n" + "\n".join(where)
              + f"\nstderr: {err[-2000:]!r}\nstdout tail: {out[-500:]!r}")


@ft.case("provenance.cli.audit_interrupted")
def case_audit_interrupted(t):
    """SIGINT: the report is closed for the files audited (JSON still parses, says how far it
    got), the process ends by the signal, and stderr names how far it got. stdout is a pipe the
    test stops reading: the audit stalls on it, so the signal lands mid-run whatever the speed."""
    d = fresh_dir("w")
    many_wheels(d, 1000)
    # bufsize=0: the lines read here are all that leaves the pipe before communicate() drains it.
    # SIGINT as a terminal delivers it: a test run in the background may inherit it ignored.
    p = subprocess.Popen([EXE, "audit", d, "--arch-list", "8.0", "--format", "json", "--jobs", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=WORK, bufsize=0,
                         preexec_fn=default_sigint)
    first = p.stdout.readline() + p.stdout.readline() + p.stdout.readline()
    check(b'"policy"' in first, first)
    time.sleep(0.5)  # the pipe is full: the workers wait for it
    p.send_signal(signal.SIGINT)
    rest, err = finish_or_describe(p)
    check(p.returncode == -signal.SIGINT, f"exit {p.returncode}, expected death by SIGINT: {err!r}")
    doc = json.loads(first + rest)
    check(doc["interrupted"] is True, {k: v for k, v in doc.items() if k != "entries"})
    check(0 < doc["audited"] < 1000 and len(doc["entries"]) == doc["audited"], doc["audited"])
    check(doc["files"] == 1000, doc["files"])
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    check([e["file"] for e in doc["entries"]] == files[:doc["audited"]], "not the first files, in order")
    check(f"interrupted (Interrupt) after {doc['audited']} of 1000 file(s)".encode() in err, err)
    # Text: the table of counts still ends the report, and says how far it got.
    p = subprocess.Popen([EXE, "audit", d, "--arch-list", "8.0", "--jobs", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=WORK, bufsize=0,
                         preexec_fn=default_sigint)
    head = p.stdout.readline()
    check(b"audit: 1000 file(s)" in head, head)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    rest, err = finish_or_describe(p)
    check(p.returncode == -signal.SIGINT, f"exit {p.returncode}: {err!r}")
    check(b"interrupted: " in rest and b"of 1000 file(s) audited" in rest, rest[-500:])


if __name__ == "__main__":
    sys.exit(ft.main(setup=setup))
