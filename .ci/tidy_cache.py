#!/usr/bin/env python3
"""Runs clang-tidy over .ci/tidy_units.py's translation units, N at a time, with a result cache.

    tidy_cache.py --tidy CLANG_TIDY --units OUT_DIR [-j N] [--root DIR] UNIT...
    tidy_cache.py --trim [--keep N]

A unit whose check came out clean is not checked again while nothing it was checked with changed,
as ccache does for a compile. The key of a unit (sha256) covers:
  - clang-tidy itself: its --version and the sha256 of its binary;
  - the configuration in force for the unit: `clang-tidy --dump-config UNIT` (every .clang-tidy
    up the tree, merged, every check option spelled out), and the arguments clang-tidy is given;
  - the unit's compile command (compile_commands.json: the flags, the directory);
  - the environment variables that change where headers are found (CPATH, ...);
  - the preprocessor's input: the unit's own text and the text of every file clang-tidy read for
    it. That list comes from clang-tidy itself (`-H`, the header each #include entered, its
    resource headers included): the PyPI wheel ships no preprocessor of its own version, and
    another compiler's `-E` would key on what that compiler sees, not on what clang-tidy read.
    Stored per unit as a manifest (the files and their sha256), checked on lookup: ccache's direct
    mode. What no key of this kind sees is a header that does not exist yet and would be found
    first if it did; ccache's direct mode has the same limit.
Paths under --root (the clone) are keyed relative to it, so a clone in another directory hits.
Only clean results are stored (exit 0); a unit with findings is checked again on every run.

The cache is FORGE_TIDY_CACHE_DIR, else $XDG_CACHE_HOME/nvcc-forge-tidy (~/.cache, as ccache's);
FORGE_TIDY_CACHE_DIR=none turns it off. --trim keeps the N most recently used manifests.

Prints each unit's clang-tidy output as clang-tidy printed it (the -H list taken out), then one
line per unit (hit or the CPU seconds of its check, the slowest first) and a summary. Exits 1 if
clang-tidy reported anything or failed on a unit, 2 if it cannot run.
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

VERSION = "nvcc-forge tidy cache 1"
INCLUDE_ENV = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "GCC_EXEC_PREFIX",
               "COMPILER_PATH", "SDKROOT")
HEADER = re.compile(r"^\.+ (.+)$")  # a line of clang's -H listing: depth dots, the path
KEEP = 200  # manifests --trim keeps (about 20 KB each)


def cache_dir():
    d = os.environ.get("FORGE_TIDY_CACHE_DIR")
    if d == "none":
        return None
    if not d:
        d = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nvcc-forge-tidy")
    return d


def sha256_file(path, memo, lock):
    with lock:
        if path in memo:
            return memo[path]
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
    except OSError:
        digest = "absent"
    with lock:
        memo[path] = digest
    return digest


class Keyer:
    """Everything one run's units share: clang-tidy's identity, the root, the hashed files."""

    def __init__(self, tidy, root, tidy_args):
        self.tidy, self.root, self.tidy_args = tidy, os.path.realpath(root), tidy_args
        r = subprocess.run([tidy, "--version"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{tidy} --version exited {r.returncode}: {r.stderr.strip()}")
        self.memo, self.lock = {}, threading.Lock()
        self.tool = r.stdout + sha256_file(tidy, self.memo, self.lock)
        self.configs = {}

    def rel(self, text):
        """`text` with the clone's root spelled as <root>: a clone elsewhere keys the same."""
        return text.replace(self.root + os.sep, "<root>/").replace(self.root, "<root>")

    def config(self, unit):
        d = os.path.dirname(unit)
        with self.lock:
            if d in self.configs:
                return self.configs[d]
        r = subprocess.run([self.tidy, *self.tidy_args, "--dump-config", unit], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{self.tidy} --dump-config {unit} exited {r.returncode}: {r.stderr.strip()}")
        with self.lock:
            self.configs[d] = r.stdout
        return r.stdout

    def base_key(self, unit, entry):
        """The key of everything but the files the preprocessor reads: names the unit's manifest."""
        h = hashlib.sha256()
        with open(unit, "rb") as f:
            text = f.read().decode("utf-8", errors="surrogateescape")
        command = entry.get("arguments") or entry.get("command")
        parts = [VERSION, self.tool, self.config(unit), self.tidy_args, command, entry.get("directory", ""),
                 os.path.relpath(unit, entry.get("directory", "/")), text,
                 {k: os.environ.get(k) for k in INCLUDE_ENV}]
        h.update(self.rel(json.dumps(parts, sort_keys=True)).encode("utf-8", errors="surrogateescape"))
        return h.hexdigest()

    def dep_digests(self, deps):
        """[[path as keyed, sha256]] of the files clang-tidy read."""
        return [[self.rel(os.path.normpath(p)), sha256_file(os.path.normpath(p), self.memo, self.lock)]
                for p in sorted(set(deps))]

    def unkeyed(self, keyed_path):
        return keyed_path.replace("<root>", self.root, 1) if keyed_path.startswith("<root>") else keyed_path


def load_manifest(path):
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, EOFError):
        return []


def lookup(keyer, path):
    """The stored output of the first manifest entry whose files all still hash the same."""
    for entry in load_manifest(path):
        if all(sha256_file(keyer.unkeyed(p), keyer.memo, keyer.lock) == digest for p, digest in entry["deps"]):
            os.utime(path)  # most recently used, for --trim
            return entry
    return None


def store(path, entry):
    """Adds `entry` in front of the manifest's (up to 4: a header that changes back and forth)."""
    entries = [entry] + [e for e in load_manifest(path) if e["deps"] != entry["deps"]][:3]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(entries).encode("utf-8", errors="surrogateescape"))
    os.replace(tmp, path)


def run_measured(argv):
    """(stdout, stderr, exit code, CPU seconds) of one process: its own rusage from wait4. The
    RUSAGE_CHILDREN difference around a call counts every child that ended meanwhile, so with
    two workers each unit was charged its neighbour's units too (the sum was twice the CPU)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = []
    drain = threading.Thread(target=lambda: out.append(p.stderr.read()))
    drain.start()
    stdout = p.stdout.read()
    drain.join()
    p.stdout.close()
    p.stderr.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return stdout, out[0], p.returncode, usage.ru_utime + usage.ru_stime


def check_unit(keyer, cache, unit, entry, tidy_args):
    """(status, cpu seconds, output, clang-tidy's exit code) of one unit."""
    manifest = None
    if cache:
        key = keyer.base_key(unit, entry)
        manifest = os.path.join(cache, key[:2], key + ".json.gz")
        hit = lookup(keyer, manifest)
        if hit is not None:
            return "hit", 0.0, keyer.rel(hit["out"]).replace("<root>", keyer.root), 0
    stdout, stderr, returncode, cpu = run_measured([keyer.tidy, *tidy_args, "--extra-arg=-H", unit])
    deps, err = [], []
    for line in stderr.decode("utf-8", errors="surrogateescape").splitlines(keepends=True):
        m = HEADER.match(line.rstrip("\n"))
        if m:
            deps.append(m.group(1))
        else:
            err.append(line)
    out = stdout.decode("utf-8", errors="surrogateescape") + "".join(err)
    if manifest and returncode == 0:
        store(manifest, {"deps": keyer.dep_digests(deps + [unit]), "out": keyer.rel(out)})
    return "checked", cpu, out, returncode


def trim(keep):
    cache = cache_dir()
    if not cache or not os.path.isdir(cache):
        return 0
    files = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs if f.endswith(".json.gz")]
    files.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    for p in files[keep:]:
        os.unlink(p)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tidy")
    ap.add_argument("--units", help="the directory tidy_units.py wrote (its compile_commands.json)")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--trim", action="store_true")
    ap.add_argument("--keep", type=int, default=KEEP)
    ap.add_argument("unit", nargs="*")
    args = ap.parse_args()
    if args.trim:
        return trim(args.keep)
    if not args.tidy or not args.units:
        ap.error("--tidy and --units are required")
    db_path = os.path.join(args.units, "compile_commands.json")
    try:
        with open(db_path, encoding="utf-8") as f:
            db = {os.path.realpath(os.path.join(e["directory"], e["file"])): e for e in json.load(f)}
    except (OSError, ValueError) as e:
        print(f"tidy_cache: {db_path}: {e}", file=sys.stderr)
        return 2
    tidy_args = ["-p", args.units, "--quiet"]
    try:
        keyer = Keyer(args.tidy, args.root, tidy_args)
    except (OSError, RuntimeError) as e:
        print(f"tidy_cache: {e}", file=sys.stderr)
        return 2
    cache = cache_dir()
    units = [os.path.realpath(u) for u in args.unit]
    missing = [u for u in units if u not in db]
    if missing:
        print(f"tidy_cache: {', '.join(missing)}: not in {db_path}", file=sys.stderr)
        return 2
    start = time.monotonic()
    results, failed = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        futures = {pool.submit(check_unit, keyer, cache, u, db[u], tidy_args): u for u in units}
        for f in concurrent.futures.as_completed(futures):
            unit = futures[f]
            status, cpu, out, rc = f.result()
            sys.stdout.write(out)
            sys.stdout.flush()
            failed += rc != 0
            results.append((cpu, status, os.path.relpath(unit, args.root)))
    for cpu, status, unit in sorted(results, reverse=True):
        print(f"tidy: {unit}: " + ("cached" if status == "hit" else f"{cpu:.1f} s of CPU"))
    hits = sum(1 for _, s, _ in results if s == "hit")
    print(f"tidy: {len(results)} units, {hits} from the cache"
          + ("" if cache else " (off)") + f", {sum(c for c, _, _ in results):.0f} s of CPU checking"
          f" the rest, {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
