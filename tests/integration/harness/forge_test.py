"""The integration-test harness: one module every tests/integration/<area>/test_<area>.py imports.

A test file registers cases and ends with ``sys.exit(forge_test.main())``::

    import forge_test as ft

    @ft.case("lint.cli.help")
    def help(t):
        r = t.forge("lint", "--help")
        r.expect_rc(0)
        r.expect_out("Rules: arch-gate")

CTest runs one process per case (tests/CMakeLists.txt, forge_integration_tests()):

    python3 test_x.py --forge EXE --source-dir SRC --build-dir BUILD --work DIR [--nvcc NVCC] NAME

``test_x.py --list`` prints the case names, which are the CTest test names. A case passes when it
returns, fails (exit 1) on ft.Fail / an assertion helper, and is skipped (exit 77, SKIP_RETURN_CODE)
on ft.skip(). Plain Python 3 standard library.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys

SKIP = 77

# ---- outcomes ---------------------------------------------------------------------------------


class Fail(Exception):
    """A failed check; its text is the failure message."""


class Skip(Exception):
    """The case cannot run here (a tool or toolkit is absent): exit 77."""


def fail(msg):
    raise Fail(str(msg))


def skip(msg):
    raise Skip(str(msg))


def _show(x, limit=4000):
    s = x if isinstance(x, str) else repr(x)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s) - limit} more characters)"


def check(cond, msg="check failed"):
    """Fails with `msg` (any value; repr'd unless a string) when `cond` is false."""
    if not cond:
        fail(_show(msg))


def check_eq(got, want, what="value"):
    if got != want:
        fail(f"{what}: got {_show(got)}, expected {_show(want)}")


def check_ne(got, unwanted, what="value"):
    if got == unwanted:
        fail(f"{what}: must not be {_show(unwanted)}")


def check_in(needle, haystack, what="text"):
    if needle not in haystack:
        fail(f"{what} lacks {_show(needle)}:\n{_show(haystack)}")


def check_not_in(needle, haystack, what="text"):
    if needle in haystack:
        fail(f"{what} has {_show(needle)}:\n{_show(haystack)}")


def check_subset(small, big, what="set"):
    small, big = set(small), set(big)
    if not small <= big:
        fail(f"{what}: {sorted(small - big)} missing from {sorted(big)}")


class Soft:
    """Soft assertions, as GoogleTest's EXPECT_*: each failed check is recorded and the case goes
    on; done() (or leaving a `with Soft() as s:` block) fails with all of them."""

    def __init__(self):
        self.errors = []

    def check(self, cond, msg="check failed"):
        if not cond:
            self.errors.append(_show(msg))
        return bool(cond)

    def check_eq(self, got, want, what="value"):
        return self.check(got == want, f"{what}: got {_show(got)}, expected {_show(want)}")

    def done(self):
        if self.errors:
            fail(f"{len(self.errors)} check(s) failed:\n" + "\n".join("- " + e for e in self.errors))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.done()
        elif issubclass(kind, Fail) and self.errors:
            raise Fail("\n".join(["- " + e for e in self.errors] + [str(value)])) from None
        return False


# ---- processes --------------------------------------------------------------------------------


class Result:
    """A finished process: rc (also returncode), out/err (text, undecodable bytes replaced), and
    stdout/stderr: bytes, or the same text as out/err when run with text=True."""

    def __init__(self, argv, rc, stdout, stderr, text=False):
        self.argv = [str(a) for a in argv]
        self.rc = self.returncode = rc
        self.out = (stdout or b"").decode(errors="replace")
        self.err = (stderr or b"").decode(errors="replace")
        self.stdout = self.out if text else stdout or b""
        self.stderr = self.err if text else stderr or b""

    def __repr__(self):
        return (f"$ {' '.join(self.argv)}\nexit {self.rc}\n--- stdout\n{_show(self.out)}"
                f"\n--- stderr\n{_show(self.err)}")

    def expect_rc(self, want):
        if self.rc != want:
            fail(f"exit code {self.rc}, expected {want}\n{self!r}")
        return self

    def expect_ok(self):
        return self.expect_rc(0)

    def expect_out(self, needle):
        if needle not in self.out:
            fail(f"stdout lacks: {needle}\n{self!r}")
        return self

    def expect_not_out(self, needle):
        if needle in self.out:
            fail(f"stdout has: {needle}\n{self!r}")
        return self

    def expect_err(self, needle):
        if needle not in self.err:
            fail(f"stderr lacks: {needle}\n{self!r}")
        return self

    def expect_output(self, needle):
        """stdout and stderr together (as `cmd >out 2>&1` would keep them) contain `needle`."""
        if needle not in self.out + self.err:
            fail(f"output lacks '{needle}'\n{self!r}")
        return self

    def json(self):
        try:
            return json.loads(self.out)
        except ValueError as e:
            fail(f"stdout is not JSON ({e})\n{self!r}")


def run(argv, env=None, cwd=None, stdin=None, input=None, timeout=300, text=False):
    """Runs argv (stdin /dev/null unless `stdin`/`input` given); a timeout is a failure. See
    Result for `text`."""
    argv = [str(a) for a in argv]
    try:
        p = subprocess.run(argv, env=env, cwd=cwd, input=input,
                           stdin=None if input is not None else (stdin or subprocess.DEVNULL),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout} s: {' '.join(argv)}")
    except OSError as e:
        fail(f"cannot run {' '.join(argv)}: {e}")
    return Result(argv, p.returncode, p.stdout, p.stderr, text)


# ---- files and JSON ---------------------------------------------------------------------------


def write(path, text, mode=None):
    """Writes text (or bytes) to path, creating its directory; returns path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb" if isinstance(text, bytes) else "w") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)
    return path


def read(path):
    with open(path) as f:
        return f.read()


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not readable JSON: {e}")


def jsonl(path):
    """The records of a JSON-lines file ([] when it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def only(items, pred=lambda x: True, what="record"):
    sel = [x for x in items if pred(x)]
    if len(sel) != 1:
        fail(f"expected one {what}, got {len(sel)}: {_show(items)}")
    return sel[0]


def free_loopback_port():
    """A TCP port on 127.0.0.1 free right now (for a private server a case starts: sccache)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sccache_server(exe, env, cwd=None, attempts=3):
    """`exe --start-server` for a private server (env names its port and directory). The client
    waits a fixed time for the server it spawned (10 s in the releases the suite runs) and
    gives up while a loaded CI host may still be starting it; a server that came up late
    answers --show-stats, else the start is tried again (as sccache's own CI does around its
    startup race, mozilla/sccache issue 2076). The last Result: rc 0 once a server answers."""
    r = None
    for _ in range(attempts):
        r = run([exe, "--start-server"], env=env, cwd=cwd, timeout=120)
        if r.rc == 0:
            return r
        if run([exe, "--show-stats"], env=env, cwd=cwd, timeout=120).rc == 0:
            return Result(r.argv, 0, r.stdout, r.stderr)
    return r


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---- the tools the tests need (as .ci/env.sh exports them) -----------------------------------


def tools_dir(source_dir):
    """NVCC_FORGE_TOOLS_DIR (set by .ci/env.sh), else SOURCE/.tools."""
    return os.environ.get("NVCC_FORGE_TOOLS_DIR") or os.path.join(source_dir, ".tools")


def cuobjdump():
    """NVCC_FORGE_CUOBJDUMP, else cuobjdump on PATH, else None."""
    c = os.environ.get("NVCC_FORGE_CUOBJDUMP")
    if c and os.access(c, os.X_OK):
        return c
    return shutil.which("cuobjdump")


def nvcc_release(nvcc):
    """'13.0' from `nvcc --version`."""
    out = run([nvcc, "--version"]).out
    return out.split("release ")[1].split(",")[0]


# ---- the per-case context ---------------------------------------------------------------------


class Case:
    """What a case gets: paths (forge, source, build, work), the real nvcc, runners."""

    def __init__(self, args, name):
        self.name = name
        self.args = args
        self.forge_exe = os.path.abspath(args.forge) if args.forge else None
        self.source = os.path.abspath(args.source_dir) if args.source_dir else None
        self.build = os.path.abspath(args.build_dir) if args.build_dir else None
        self.work_root = os.path.abspath(args.work) if args.work else None
        self._work = None
        self._nvcc_arg = args.nvcc

    # paths
    @property
    def work(self):
        """WORK/<case name>, emptied at the case's first use."""
        if self._work is None:
            check(self.work_root, "no --work given")
            self._work = fresh_dir(os.path.join(self.work_root, self.name))
        return self._work

    def path(self, *parts):
        """A path under the case's work directory."""
        return os.path.join(self.work, *parts)

    def fixtures(self, *parts):
        """SOURCE/tests/fixtures/<parts>."""
        return os.path.join(self.source, "tests", "fixtures", *parts)

    def binary_fixtures(self, out=None, timeout=900):
        """The nvcc-built binary fixtures (fixtures/binary/make_fixtures.sh: idempotent, locked),
        by default in the build tree where the unit tests build them; skips without nvcc."""
        out = out or os.path.join(self.build, "tests", "binary-fixtures")
        r = self.run(["bash", self.fixtures("binary", "make_fixtures.sh"), out], timeout=timeout)
        if r.rc == SKIP:
            skip("nvcc not available")
        check(r.rc == 0, f"fixture build failed: {r.err[-2000:]}")
        return out

    def src(self, *parts):
        return os.path.join(self.source, *parts)

    @property
    def tools_dir(self):
        return tools_dir(self.source)

    # the real nvcc
    def nvcc(self, required=True):
        """The real nvcc: FORGE_REAL_NVCC, else NVCC, else --nvcc (CMake's find_program), else
        /usr/local/cuda/bin/nvcc. Skips the case when it is not executable (unless not required:
        then None)."""
        for c in (os.environ.get("FORGE_REAL_NVCC"), os.environ.get("NVCC"), self._nvcc_arg,
                  "/usr/local/cuda/bin/nvcc"):
            if c:
                if os.access(c, os.X_OK):
                    return c
                break
        if required:
            skip(f"no nvcc at {c}")
        return None

    # runners
    def env(self, base=None, **kw):
        """A copy of the environment (or `base`) with kw set; a None value unsets."""
        e = dict(os.environ if base is None else base)
        for k, v in kw.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
        return e

    def run(self, argv, env=None, cwd=None, **kw):
        """Runs argv in the case's work directory (unless cwd)."""
        return run(argv, env=env, cwd=cwd or self.work, **kw)

    def forge(self, *args, env=None, cwd=None, **kw):
        """Runs `nvcc-forge ARGS...`."""
        return self.run([self.forge_exe, *args], env=env, cwd=cwd, **kw)

    def forge_json(self, *args, env=None, rc=0):
        """Runs nvcc-forge, checks the exit code, returns stdout parsed as JSON."""
        return self.forge(*args, env=env).expect_rc(rc).json()


# ---- registration and main --------------------------------------------------------------------

CASES = {}


def case(name):
    """Decorator: registers fn(t) as the case (and CTest test) `name`."""
    def deco(fn):
        add_case(name, fn)
        return fn
    return deco


def add_case(name, fn):
    if name in CASES:
        raise ValueError(f"case {name} registered twice")
    CASES[name] = fn


def main(argv=None, setup=None):
    """Parses the CTest command line, runs one case; returns the exit code (0, 1 or 77).
    `setup(args)`, if given, runs first (with the parsed arguments) and may skip."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--forge", help="the nvcc-forge executable")
    ap.add_argument("--source-dir", help="the source tree")
    ap.add_argument("--build-dir", help="the build tree")
    ap.add_argument("--work", help="a directory for the case's files")
    ap.add_argument("--nvcc", help="the nvcc CMake found (FORGE_REAL_NVCC and NVCC come first)")
    ap.add_argument("case", nargs="?")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(CASES))
        return 0
    if args.case not in CASES:
        print(f"unknown case {args.case}; cases: {' '.join(CASES)}", file=sys.stderr)
        return 2
    t = Case(args, args.case)
    try:
        if setup:
            setup(t)
        CASES[args.case](t)
    except Skip as e:
        print(f"SKIP [{args.case}]: {e}")
        return SKIP
    except Fail as e:
        print(f"FAIL [{args.case}]: {e}", file=sys.stderr)
        return 1
    print(f"ok [{args.case}]")
    return 0
