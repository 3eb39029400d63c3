#!/usr/bin/env python3
"""nvcc-forge's nvcc front end end to end: the real nvcc on tiny kernels, driven by fixture build
scripts that select archs the way real packages do (tests/fixtures/frontend), through all three
placements (PATH symlink, shim CUDA root, launcher). Skipped (exit 77) without nvcc."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check as expect, only  # noqa: E402


POLICY_FA = "8.0 9.0+PTX 10.0 11.0 12.0+PTX"


def setup(t):
    """Every case needs the real nvcc (skipped without it) and an output directory."""
    t.nvcc()
    os.makedirs(out_dir(t))


def nvcc_real(t):
    return os.path.realpath(t.nvcc())


def cuda_home(t):
    return os.path.dirname(os.path.dirname(nvcc_real(t)))


def kernel_dir(t):
    return t.fixtures("frontend", "kernels")


def out_dir(t):
    return t.path("out")


def log_file(t):
    return t.path("log.jsonl")


def clean_env(t, **kw):
    """The environment without the front end's and nvcc's own variables, plus kw."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("NVCC_FORGE_") and k not in (
             "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "TORCH_CUDA_ARCH_LIST", "CUDA_HOME",
             "CUDA_PATH")}
    e["NVCC_FORGE_CACHE_DIR"] = os.path.join(t.work_root, "cache")
    for k, v in kw.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def run_in(t, cmd, env=None, cwd=None, stdin=subprocess.DEVNULL, timeout=300):
    """Runs cmd in the case's directory, by default with clean_env(t)."""
    return ft.run(cmd, env=env if env is not None else clean_env(t), cwd=cwd or t.work,
                  stdin=stdin, timeout=timeout)


def wrapper_dir(t, name="wrapbin"):
    """A directory whose nvcc is a symlink to the front end (the PATH placement)."""
    d = t.path(name)
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, "nvcc")
    if not os.path.lexists(link):
        os.symlink(t.forge_exe, link)
    return d


def fake_nvcc(t, where="fake"):
    """tests/fixtures/frontend/fake_nvcc.sh as `<t.work>/<where>/nvcc`."""
    fake = os.path.join(t.work, where, "nvcc")
    os.makedirs(os.path.dirname(fake), exist_ok=True)
    shutil.copy(t.fixtures("frontend", "fake_nvcc.sh"), fake)
    os.chmod(fake, 0o755)
    return fake


def shim_root(t):
    d = t.path("shim")
    p = run_in(t, [t.forge_exe, "shim", "--cuda-home", cuda_home(t), "--out", d])
    expect(p.returncode == 0, f"shim failed: {p.err}")
    return d


def log_records(t):
    return ft.jsonl(log_file(t))


def targets_of(t, obj):
    p = run_in(t, [t.forge_exe, "list", "--format", "json", obj])
    expect(p.returncode == 0, f"nvcc-forge list {obj} failed: {p.err}")
    return {e["arch"] for e in json.loads(p.out)}


def run_script(t, script, env):
    return run_in(t, [sys.executable, t.fixtures("frontend", script), kernel_dir(t), out_dir(t)],
                  env=env)


# ---- the real-world families ---------------------------------------------------------------

@ft.case("frontend.flash_ladder_observe")
def flash_ladder_observe(t):
    shim = shim_root(t)
    env = clean_env(t, CUDA_HOME=shim, NVCC_FORGE_ARCH_LIST=POLICY_FA, NVCC_FORGE_MODE="observe",
                NVCC_FORGE_LOG=log_file(t), TORCH_CUDA_ARCH_LIST=POLICY_FA)
    p = run_script(t, "build_flash_attn.py", env)
    expect(p.returncode == 0, f"build failed: {p.err}")
    r = only(log_records(t))
    expect(r["action"] == "compared" and r["mode"] == "observe", r)
    expect(r["missing"] == ["sm_110", "compute_90", "compute_120"], r["missing"])
    expect(r["requested"] == ["sm_80", "sm_90", "sm_100", "sm_120"], r["requested"])
    expect(r["injected"] == [] and r["clamped"] == [], r)
    expect("nvcc-forge: k.cu: dropped sm_110, compute_90, compute_120 (policy 8.0 9.0+PTX 10.0 "
           "11.0 12.0+PTX; requested 8.0 9.0 10.0 12.0)" in p.err, p.err)
    got = targets_of(t, os.path.join(out_dir(t), "flash_fwd.o"))
    expect(got == {"sm_80", "sm_90", "sm_100", "sm_120"}, got)


@ft.case("frontend.flash_ladder_inject")
def flash_ladder_inject(t):
    shim = shim_root(t)
    env = clean_env(t, CUDA_HOME=shim, NVCC_FORGE_ARCH_LIST=POLICY_FA, NVCC_FORGE_LOG=log_file(t))
    p = run_script(t, "build_flash_attn.py", env)
    expect(p.returncode == 0, f"build failed: {p.err}")
    r = only(log_records(t))
    expect(r["action"] == "injected" and r["mode"] == "inject", r)
    expect(r["injected"] == ["sm_110", "compute_90", "compute_120"], r["injected"])
    # The build log shows what the script dropped and that it was put back.
    expect("nvcc-forge: k.cu: dropped sm_110, compute_90, compute_120 -> injected (policy 8.0 "
           "9.0+PTX 10.0 11.0 12.0+PTX; requested 8.0 9.0 10.0 12.0)\n" in p.err, p.err)
    got = targets_of(t, os.path.join(out_dir(t), "flash_fwd.o"))
    expect(got == {"sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_90", "compute_120"},
           got)
    # NVCC_FORGE_QUIET=1: drops that were all injected back say nothing.
    env["NVCC_FORGE_QUIET"] = "1"
    p = run_script(t, "build_flash_attn.py", env)
    expect(p.returncode == 0, f"build failed: {p.err}")
    expect("nvcc-forge" not in p.err, p.err)


@ft.case("frontend.sageattention_whitelist")
def sageattention_whitelist(t):
    policy = "8.0 9.0 10.0 11.0 12.0+PTX"
    env = clean_env(t, CUDA_HOME=shim_root(t), NVCC_FORGE_ARCH_LIST=policy, NVCC_FORGE_LOG=log_file(t),
                TORCH_CUDA_ARCH_LIST=policy)
    p = run_script(t, "build_sageattention.py", env)
    expect(p.returncode == 0, f"build failed: {p.err}")
    recs = log_records(t)
    base = lambda r: [os.path.basename(x) for x in r["sources"]]
    main = only(recs, lambda r: base(r) == ["k.cu"], "main TU")
    expect(main["requested"] == ["sm_80", "sm_100", "sm_120"], main)
    expect(main["missing"] == ["sm_90", "sm_110", "compute_120"], main)
    expect(main["action"] == "injected" and main["injected"] == main["missing"], main)
    got = targets_of(t, os.path.join(out_dir(t), "qattn_sm80.o"))
    expect({"sm_110", "sm_90", "compute_120"} <= got, got)
    expect(main["arch_rule"] == "plain-target" and main["arch_specific"] is False, main)
    # The sm_90a TU: every target `a`, so arch-specific: its drops logged by name and rule,
    # nothing injected (a plain pass of it would not compile).
    h = only(recs, lambda r: base(r) == ["sm90a.cu"], "sm90a TU")
    expect(h["arch_specific"] is True and h["injected"] == [] and h["action"] == "compared", h)
    expect(h["arch_rule"] == "a-only", h)
    expect(h["missing"] == ["sm_80", "sm_100", "sm_110", "sm_120", "compute_120"], h)
    expect("nvcc-forge: sm90a.cu: dropped sm_80, sm_100, sm_110, sm_120, compute_120 (policy "
           f"{policy}; requested 9.0a); arch-specific TU: every target is `a`; nothing "
           "injected; the gate will report sass: missing sm_80 sm_100 sm_110 sm_120, ptx: missing "
           "PTX compute_120 unless another object of the binary carries them\n" in p.err, p.err)
    obj = os.path.join(out_dir(t), "qattn_sm90.o")
    expect(targets_of(t, obj) == {"sm_90a"}, "sm90 TU changed")
    # The gate's verdict is the truth about the object: it fails against the policy, naming
    # what the TU lacks, and passes against what it was built for.
    v = run_in(t, [t.forge_exe, "verify", obj, "--arch-list", policy, "--format", "json"])
    expect(v.returncode == 1, v.out)
    mod = only(json.loads(v.out)["extensions"], what="module")
    expect(mod["missing_sass"] == ["sm_80", "sm_100", "sm_110", "sm_120"], mod)
    expect(mod["missing_ptx"] == ["compute_120"], mod)
    v = run_in(t, [t.forge_exe, "verify", obj, "--arch-list", "9.0a"])
    expect(v.returncode == 0, v.out)


@ft.case("frontend.pointnet2_clamp")
def pointnet2_clamp(t):
    policy = "8.0 9.0+PTX"
    shim = shim_root(t)
    # observe leaves the fatal list alone: nvcc's own failure comes back.
    env = clean_env(t, CUDA_HOME=shim, NVCC_FORGE_ARCH_LIST=policy, NVCC_FORGE_MODE="observe",
                NVCC_FORGE_LOG=log_file(t))
    p = run_script(t, "build_pointnet2.py", env)
    expect(p.returncode != 0 and "compute_37" in p.err, f"observe should fail like nvcc: {p.err}")
    real = run_in(t, [nvcc_real(t), "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", os.path.join(out_dir(t), "x.o"),
                  "-gencode=arch=compute_37,code=sm_37"])
    expect(real.returncode != 0, "nvcc 13 accepted compute_37?")
    os.remove(log_file(t))
    env["NVCC_FORGE_MODE"] = "inject"
    p = run_script(t, "build_pointnet2.py", env)
    expect(p.returncode == 0, f"inject should clamp and build: {p.err}")
    r = only(log_records(t))
    expect(r["action"] == "injected", r)
    expect(set(r["clamped"]) == {"sm_37", "compute_37", "sm_50", "sm_60", "sm_61", "sm_62",
                                 "sm_70"}, r["clamped"])
    expect(r["injected"] == ["sm_80", "sm_90", "compute_90"], r["injected"])
    got = targets_of(t, os.path.join(out_dir(t), "pointnet2.o"))
    expect(got == {"sm_75", "sm_80", "sm_90", "compute_90"}, got)
    # The clamp is on stderr like the drops, and stays there under NVCC_FORGE_QUIET=1.
    clamp = ("nvcc-forge: k.cu: clamped sm_37, sm_50, sm_60, sm_61, sm_62, sm_70, compute_37 -> "
             "removed (policy 8.0 9.0+PTX; requested ")
    expect(clamp in p.err and "nvcc cannot emit them" in p.err, p.err)
    expect("dropped sm_80, sm_90, compute_90 -> injected" in p.err, p.err)
    env["NVCC_FORGE_QUIET"] = "1"
    p = run_script(t, "build_pointnet2.py", env)
    expect(p.returncode == 0 and clamp in p.err and "-> injected" not in p.err, p.err)
    # log summarize lists, per target, the TUs that asked for more than the policy.
    p = run_in(t, [t.forge_exe, "log", "summarize", log_file(t)])
    expect(p.returncode == 0 and "sm_75: requested beyond the policy by 1 TU\n" in p.out, p.out)
    j = json.loads(run_in(t, [t.forge_exe, "log", "summarize", log_file(t), "--format", "json"]).out)
    expect(sorted(j["extra"]) == sorted(["sm_37", "compute_37", "sm_50", "sm_60", "sm_61",
                                         "sm_62", "sm_70", "sm_75"]), j["extra"])


@ft.case("frontend.arch_specific_sm90a")
def arch_specific_sm90a(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0+PTX",
                NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "h.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "sm90a.cu"), "-o", obj,
               "-gencode", "arch=compute_90a,code=sm_90a"], env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["arch_specific"] and r["injected"] == [] and r["action"] == "compared", r)
    expect(r["arch_rule"] == "a-only", r)
    expect(r["missing"] == ["sm_80", "compute_90"], r["missing"])  # sm_90a satisfies sm_90
    expect("sm90a.cu: dropped sm_80, compute_90 (policy 8.0 9.0+PTX; requested 9.0a); "
           "arch-specific TU: every target is `a`; nothing injected" in p.err, p.err)
    expect(targets_of(t, obj) == {"sm_90a"}, targets_of(t, obj))
    # A package opting in via wrapper.arch_specific_sources marks a plain-looking TU the same way.
    pkgs = os.path.join(t.work, "packages")
    os.makedirs(os.path.join(pkgs, "fa3"))
    with open(os.path.join(pkgs, "fa3", "arch_override.yml"), "w") as f:
        f.write("arch_list: \"8.0 9.0\"\nwrapper:\n  arch_specific_sources: [\"k*.cu\"]\n")
    env.update(NVCC_FORGE_PACKAGE="fa3", NVCC_FORGE_PACKAGES_DIR=pkgs)
    os.remove(log_file(t))
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj, "-arch=sm_90"], env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["arch_specific"] and r["injected"] == [] and r["missing"] == ["sm_80"], r)
    expect(r["arch_rule"] == "arch_specific_sources", r)
    expect("arch-specific TU: wrapper.arch_specific_sources names it (k*.cu); nothing injected"
           in p.err, p.err)
    # wrapper.inject_arch_specific opts a package's a/f TUs in: then they get the policy's targets.
    os.makedirs(os.path.join(pkgs, "optin"))
    with open(os.path.join(pkgs, "optin", "arch_override.yml"), "w") as f:
        f.write("arch_list: \"8.0 9.0\"\nwrapper:\n  inject_arch_specific: true\n")
    env.update(NVCC_FORGE_PACKAGE="optin")
    os.remove(log_file(t))
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj,
               "-gencode", "arch=compute_90a,code=sm_90a"], env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["arch_specific"] and r["action"] == "injected" and "sm_80" in r["injected"], r)
    expect("the package opts in: wrapper.inject_arch_specific" in p.err, p.err)
    expect({"sm_80", "sm_90a"} <= targets_of(t, obj), targets_of(t, obj))
    # A plain target beside an `a` one: generic, so the package's default injects into it.
    env.pop("NVCC_FORGE_PACKAGE")
    os.remove(log_file(t))
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj,
               "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90a,code=sm_90a"],
              env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(not r["arch_specific"] and r["arch_rule"] == "plain-target", r)
    expect(r["action"] == "injected" and r["injected"] == ["compute_90"], r)
    expect("generic TU: plain sm_80 beside sm_90a" in p.err, p.err)


@ft.case("frontend.sage_a_only_kernels")
def sage_a_only_kernels(t):
    """SageAttention's 90a/100a/120a kernels in one call: every target `a`, so nothing is injected
    (a plain pass would not compile), the drop line names the rule, and the gate tells the truth
    about the object: against the policy it fails naming what it lacks (100a runs on 10.0 only,
    120a on 12.0 only, so 10.3 and 12.1 lose their cubin), against what was built it passes."""
    policy = "8.0 9.0 10.0 12.0+PTX"
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST=policy,
                NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "qattn_a.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "a_only.cu"), "-o", obj,
               "-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
               "arch=compute_100a,code=sm_100a", "-gencode", "arch=compute_120a,code=sm_120a"],
              env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["arch_specific"] is True and r["arch_rule"] == "a-only", r)
    expect(r["action"] == "compared" and r["injected"] == [], r)
    # The compare folds by coverage, as the gate does: 100a and 120a do not cover 10.0 and 12.0.
    expect(r["missing"] == ["sm_80", "sm_100", "sm_120", "compute_120"], r["missing"])
    expect("nvcc-forge: a_only.cu: dropped sm_80, sm_100, sm_120, compute_120 (policy 8.0 9.0 10.0 "
           "12.0+PTX; requested 9.0a 10.0a 12.0a); arch-specific TU: every target is `a`; nothing "
           "injected; the gate will report sass: missing sm_80 sm_100 sm_120, ptx: missing PTX "
           "compute_120 unless another object of the binary carries them\n" in p.err, p.err)
    expect(targets_of(t, obj) == {"sm_90a", "sm_100a", "sm_120a"}, targets_of(t, obj))
    v = run_in(t, [t.forge_exe, "verify", obj, "--arch-list", policy, "--format", "json"])
    expect(v.returncode == 1, v.out)
    mod = only(json.loads(v.out)["extensions"], what="module")
    expect(mod["missing_sass"] == ["sm_80", "sm_100", "sm_120"], mod)
    expect(mod["missing_ptx"] == ["compute_120"], mod)
    lost = {g["cc"] for g in mod["lost_gpus"]}
    expect({"10.3", "12.1"} <= lost, mod["lost_gpus"])
    v = run_in(t, [t.forge_exe, "verify", obj, "--arch-list", "9.0a 10.0a 12.0a"])
    expect(v.returncode == 0, v.out)


@ft.case("frontend.injection_failed")
def injection_failed(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "n.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "needs_sm90.cu"), "-o", obj,
               "-gencode", "arch=compute_90,code=sm_90"], env=env)
    expect(p.returncode == 0, f"the original call must win: {p.err}")
    r = only(log_records(t))
    expect(r["action"] == "injection-failed" and r["injected"] == ["sm_80"], r)
    expect(r["exit_code"] == 0, r)
    expect("injection failed" in p.err and "needs sm_90 or newer" in p.err, p.err)
    expect("dropped sm_80" in p.err, p.err)
    expect(targets_of(t, obj) == {"sm_90"}, targets_of(t, obj))


@ft.case("frontend.fallback_own_failure")
def fallback_own_failure(t):
    """inject: the rewritten call fails for a reason of the call's own (an output nvcc cannot
    write), and the caller's call fails the same way: the log says call-failed, not
    injection-failed, stderr says so, and exit code and nvcc's output are the caller's own."""
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_LOG=log_file(t))
    # Writable by nobody, root included: a directory that does not exist.
    cmd = ["-c", os.path.join(kernel_dir(t), "k.cu"), "-o", os.path.join(out_dir(t), "no_dir", "k.o"),
           "-gencode", "arch=compute_90,code=sm_90"]
    real = run_in(t, [nvcc_real(t)] + cmd)
    expect(real.returncode != 0, f"the real nvcc must fail: {real.err}")
    p = run_in(t, ["nvcc"] + cmd, env=env)
    expect(p.returncode == real.returncode, (p.returncode, real.returncode))
    expect(p.stdout == real.stdout, "stdout differs")
    expect(p.stderr.startswith(real.stderr), f"nvcc's own diagnostics first:\n{p.err}")
    r = only(log_records(t))
    expect(r["action"] == "call-failed" and r["exit_code"] == real.returncode, r)
    expect(r["injected"] == ["sm_80"], r)
    expect("its own failure, not the injection's" in p.err, p.err)
    expect("injection failed" not in p.err, p.err)


@ft.case("frontend.packages_dir_unusable_warns")
def packages_dir_unusable_warns(t):
    """NVCC_FORGE_PACKAGES_DIR naming no usable directory: the wrapper warns naming it and the
    call runs as without the variable (the bundled packages/), never failing a build."""
    w = wrapper_dir(t)
    bad_file = os.path.join(t.work, "not_a_dir")
    ft.write(bad_file, "a file\n")
    values = {"missing": os.path.join(t.work, "no", "such", "dir"), "a file": bad_file,
              "130000 bytes": "/" + "d" * 129999, "a newline": t.work + "\n"}
    obj = os.path.join(out_dir(t), "k.o")
    for what, value in values.items():
        env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0",
                    NVCC_FORGE_PACKAGE="flash_attn", NVCC_FORGE_PACKAGES_DIR=value)
        # One real compile; the other values show the warning on a call nvcc answers at once.
        args = (["-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj, "-gencode",
                 "arch=compute_80,code=sm_80"] if what == "missing" else ["--version"])
        p = run_in(t, ["nvcc"] + args, env=env)
        expect(p.returncode == 0, f"{what}: the call must run: {p.err[:2000]}")
        expect("warning" in p.err and "NVCC_FORGE_PACKAGES_DIR" in p.err and value[:20] in p.err,
               f"{what}: no warning naming it: {p.err[:2000]}")
        expect(len(p.err) < 2000, f"{what}: the warning must not repeat the whole value")
        if what == "missing":
            expect(targets_of(t, obj) == {"sm_80"}, targets_of(t, obj))
        else:
            expect("Cuda compilation tools" in p.out, p.out)


@ft.case("frontend.rdc_dlink")
def rdc_dlink(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0+PTX",
                NVCC_FORGE_LOG=log_file(t))
    g = ["-gencode", "arch=compute_80,code=sm_80"]
    a, b = os.path.join(out_dir(t), "a.o"), os.path.join(out_dir(t), "b.o")
    for src, obj in (("rdc_a.cu", a), ("rdc_b.cu", b)):
        p = run_in(t, ["nvcc", "-dc", os.path.join(kernel_dir(t), src), "-o", obj] + g, env=env)
        expect(p.returncode == 0, p.err)
    link = os.path.join(out_dir(t), "dlink.o")
    p = run_in(t, ["nvcc", "-dlink", a, b, "-o", link] + g, env=env)
    expect(p.returncode == 0, p.err)
    expect("not found in" not in p.err, f"nvlink lacked an arch: {p.err}")
    recs = log_records(t)
    expect(len(recs) == 3, recs)
    for r in recs[:2]:
        expect(r["action"] == "injected" and r["injected"] == ["sm_90", "compute_90"], r)
    # The device link makes SASS only: the PTX is in the objects, not missing from the link.
    expect(recs[2]["missing"] == ["sm_90"] and recs[2]["injected"] == ["sm_90"], recs[2])
    expect("compute_90" not in p.err, p.err)
    expect(targets_of(t, a) >= {"sm_80", "sm_90", "compute_90"}, targets_of(t, a))
    expect({"sm_80", "sm_90"} <= targets_of(t, link), targets_of(t, link))


@ft.case("frontend.options_file")
def options_file(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t))
    rsp = os.path.join(t.work, "flags.rsp")
    with open(rsp, "w") as f:
        f.write("-gencode arch=compute_80,code=[sm_80,compute_80]\n-O2\n")
    obj = os.path.join(out_dir(t), "o.o")
    for spelling in (["--options-file", rsp], ["-optf=" + rsp]):
        p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj] + spelling, env=env)
        expect(p.returncode == 0, p.err)
    for r in log_records(t):
        expect(r["requested"] == ["sm_80", "compute_80"] and r["missing"] == ["sm_90"], r)
        expect(r["extra"] == ["compute_80"], r)


@ft.case("frontend.flag_spellings")
def flag_spellings(t):
    """Each spelling's logged `requested` set, checked against what nvcc -dryrun really plans."""
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="9.0",
                NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t))
    k = os.path.join(kernel_dir(t), "k.cu")
    spellings = [
        ["-arch=sm_80"], ["-arch", "sm_80"], ["--gpu-architecture=sm_80"],
        ["--gpu-architecture", "sm_80"], ["-arch=compute_80"],
        ["-arch=compute_80", "-code=sm_80,compute_80"],
        ["--gpu-architecture=compute_80", "--gpu-code", "sm_80,sm_86"],
        ["-gencode=arch=compute_80,code=sm_80"], ["-gencode", "arch=compute_80,code=[sm_80,compute_80]"],
        ["--generate-code=arch=compute_80,code=sm_80"], ["--generate-code", "code=sm_86,arch=compute_80"],
        ['-gencode=arch=compute_80,code="sm_80,compute_80"'],
        ["-arch=sm_90a"], [], ["-arch=all-major"],
        ["-Xptxas", "-arch=sm_86", "-arch=sm_80"],
        ["-arch=sm_80", "-arch=sm_86"],
    ]
    for s in spellings:
        if os.path.exists(log_file(t)):
            os.remove(log_file(t))
        cmd = ["-dryrun", "-c", k, "-o", os.path.join(out_dir(t), "s.o")] + s
        p = run_in(t, ["nvcc"] + cmd, env=env)
        expect(p.returncode == 0, f"{s}: {p.err}")
        r = only(log_records(t))
        # The plan: SASS from ptxas -arch=sm_X, PTX from fatbinary kind=ptx images.
        plan = run_in(t, [nvcc_real(t)] + cmd)
        sass, ptx = set(), set()
        for line in plan.err.splitlines():
            if line.startswith("#$ fatbinary"):
                for part in line.split('"'):
                    if part.startswith("--image3=kind="):
                        kv = dict(x.split("=", 1) for x in part[len("--image3="):].split(","))
                        (sass if kv["kind"] == "elf" else ptx).add(
                            ("sm_" if kv["kind"] == "elf" else "compute_") + kv["sm"])
        planned = sass | ptx
        expect(set(r["requested"]) == planned,
               f"{s}: logged {r['requested']}, nvcc plans {sorted(planned)}")


# ---- untouched calls, exit codes, output ---------------------------------------------------

@ft.case("frontend.version_byte_identical")
def version_byte_identical(t):
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    calls = [["--version"], ["-V"], ["--list-gpu-arch"], ["--list-gpu-code"],
             ["-E", k, "-arch=sm_80"], ["-M", k], ["-v", "__cmake_determine_cuda"]]
    for extra in ({}, {"NVCC_FORGE_ARCH_LIST": POLICY_FA, "NVCC_FORGE_LOG": log_file(t)}):
        env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], **extra)
        # The nvcc the wrapper finds, spelled as found (argv[0] decides nvcc's toolkit root).
        direct = shutil.which("nvcc", path=os.environ["PATH"]) or nvcc_real(t)
        for c in calls:
            mine = run_in(t, ["nvcc"] + c, env=env)
            real = run_in(t, [direct] + c, env=env)
            expect(mine.returncode == real.returncode, f"{c}: rc {mine.returncode} vs {real.returncode}")
            expect(mine.stdout == real.stdout, f"{c}: stdout differs")
            expect(mine.stderr.replace(b"NVCC_FORGE_DEPTH", b"") == real.stderr
                   or mine.stderr == real.stderr, f"{c}: stderr differs:\n{mine.err}\n---\n{real.err}")
    for r in log_records(t):
        expect(r["action"] == "passthrough" and r["injected"] == [], r)


@ft.case("frontend.host_only_untouched")
def host_only_untouched(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "h.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "host.cpp"), "-o", obj], env=env)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["action"] == "passthrough" and r["injected"] == [], r)


@ft.case("frontend.failing_compile")
def failing_compile(t):
    w = wrapper_dir(t)
    broken = os.path.join(kernel_dir(t), "broken.cu")
    obj = os.path.join(out_dir(t), "b.o")
    cmd = ["-c", broken, "-o", obj, "-gencode", "arch=compute_90,code=sm_90"]
    real = run_in(t, [nvcc_real(t)] + cmd)
    expect(real.returncode != 0 and b"undeclared_symbol" in real.stderr, real.err)
    # observe with nothing missing: stderr byte for byte, same exit code
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="9.0",
                NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t))
    mine = run_in(t, ["nvcc"] + cmd, env=env)
    expect(mine.returncode == real.returncode, (mine.returncode, real.returncode))
    expect(mine.stderr == real.stderr, f"stderr differs:\n{mine.err}\n---\n{real.err}")
    expect(mine.stdout == real.stdout, "stdout differs")
    # inject: both attempts fail, the original's exit code and diagnostic come back
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_LOG=log_file(t))
    mine = run_in(t, ["nvcc"] + cmd, env=env)
    expect(mine.returncode == real.returncode, (mine.returncode, real.returncode))
    expect(mine.stderr.startswith(real.stderr), f"original diagnostics first:\n{mine.err}")
    # The source fails for every target: the call's own failure, not the injection's.
    recs = log_records(t)
    expect(recs[-1]["exit_code"] == real.returncode and recs[-1]["action"] == "call-failed",
           recs[-1])


@ft.case("frontend.dryrun_rewritten")
def dryrun_rewritten(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0+PTX")
    p = run_in(t, ["nvcc", "-dryrun", "-c", os.path.join(kernel_dir(t), "k.cu"), "-arch=sm_80"], env=env)
    expect(p.returncode == 0, p.err)
    expect("ptxas -arch=sm_90" in p.err and "kind=ptx,sm=90" in p.err, p.err)


@ft.case("frontend.passthrough_unconfigured")
def passthrough_unconfigured(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_LOG=log_file(t),
                TORCH_CUDA_ARCH_LIST="8.0 9.0 10.0")  # never a policy source
    obj = os.path.join(out_dir(t), "p.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj, "-arch=sm_80"], env=env)
    # Not silent: the first device compile of a build (here: this test process) says that
    # nothing is checked and how to set a policy; the next says nothing (caches.no_policy.*).
    expect(p.returncode == 0 and p.err.startswith("nvcc-forge: no policy is set") and
           "NVCC_FORGE_ARCH_LIST" in p.err and p.err.count("\n") == 1, p.err)
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj, "-arch=sm_80"], env=env)
    expect(p.returncode == 0 and p.stderr == b"", p.err)
    r = log_records(t)[0]
    expect(r["action"] == "passthrough" and r["policy"] == [] and r["missing"] == [], r)
    expect(r["requested"] == ["sm_80", "compute_80"] and r["mode"] == "observe", r)
    expect(targets_of(t, obj) == {"sm_80", "compute_80"}, targets_of(t, obj))


@ft.case("frontend.strict_refuses")
def strict_refuses(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 11.0",
                NVCC_FORGE_MODE="strict", NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "s.o")
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj, "-arch=sm_80"], env=env)
    expect(p.returncode == 1, p.returncode)
    expect("sm_110" in p.err and "strict" in p.err, p.err)
    expect(not os.path.exists(obj), "strict must refuse before compiling")
    expect(only(log_records(t))["action"] == "refused", log_records(t))
    p = run_in(t, ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-o", obj,
               "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_110,code=sm_110"],
              env=env)
    expect(p.returncode == 0 and os.path.exists(obj), p.err)


@ft.case("frontend.bad_configuration")
def bad_configuration(t):
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    pkgs = os.path.join(t.work, "packages")
    os.makedirs(os.path.join(pkgs, "typo"))
    with open(os.path.join(pkgs, "typo", "arch_override.yml"), "w") as f:
        f.write("arch_lsit: \"8.0\"\n")
    for extra, needle in (({"NVCC_FORGE_MODE": "loud", "NVCC_FORGE_ARCH_LIST": "8.0"}, "NVCC_FORGE_MODE"),
                          ({"NVCC_FORGE_ARCH_LIST": "8.0 banana"}, "banana"),
                          ({"NVCC_FORGE_PACKAGE": "typo", "NVCC_FORGE_PACKAGES_DIR": pkgs}, "arch_lsit")):
        env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], **extra)
        p = run_in(t, ["nvcc", "-c", k, "-o", os.path.join(out_dir(t), "x.o")], env=env)
        expect(p.returncode == 2 and needle in p.err, f"{extra}: rc {p.returncode}: {p.err}")
    # An unknown package is exit 2 naming it (issue 36, 9: never the policy row), and the nearest
    # package when one is a typo away.
    for package, warned in (("typp", True), ("some_plain_package", False)):
        env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_PACKAGE=package,
                    NVCC_FORGE_PACKAGES_DIR=pkgs, NVCC_FORGE_MODE="observe",
                    NVCC_FORGE_CACHE_DIR=os.path.join(t.work, "fresh-cache"))
        p = run_in(t, ["nvcc", "-c", k, "-o", os.path.join(out_dir(t), "x.o"), "-arch=sm_90"], env=env)
        expect(p.returncode == 2 and f"unknown package '{package}'" in p.err, f"{package}: rc {p.returncode}: {p.err}")
        expect(("did you mean 'typo'?" in p.err) == warned, f"{package}: {p.err}")


@ft.case("frontend.arch_native_warning")
def arch_native_warning(t):
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="9.0",
                NVCC_FORGE_MODE="observe")
    p = run_in(t, ["nvcc", "-dryrun", "-c", os.path.join(kernel_dir(t), "k.cu"), "-arch=native"], env=env)
    expect(p.returncode == 0, p.err)
    expect("nvcc-forge: warning" in p.err and "native" in p.err, p.err)


# ---- placement -------------------------------------------------------------------------------

@ft.case("frontend.recursion")
def recursion(t):
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    # Own directory on PATH twice and no other nvcc there: falls through to CUDA_HOME, no loop.
    env = clean_env(t, PATH=os.pathsep.join([w, w, "/usr/bin", "/bin"]), CUDA_HOME=cuda_home(t))
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=30)
    expect(p.returncode == 0 and p.stdout == run_in(t, [nvcc_real(t), "--version"]).stdout, p.err)
    # An explicit real nvcc that is the wrapper itself: exit 2, saying where it looked.
    env = clean_env(t, PATH=os.pathsep.join([w, w]), NVCC_FORGE_REAL_NVCC=os.path.join(w, "nvcc"))
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=30)
    expect(p.returncode == 2 and "NVCC_FORGE_REAL_NVCC" in p.err and "itself" in p.err, p.err)
    env = clean_env(t, PATH=os.pathsep.join([w, w]), NVCC_FORGE_REAL_NVCC="/nonexistent/nvcc")
    p = run_in(t, ["nvcc", "-c", k], env=env, timeout=30)
    expect(p.returncode == 2 and "/nonexistent/nvcc" in p.err, p.err)
    # Two copies of the wrapper, both named nvcc, each finding the other first: the depth marker
    # stops the chain (also through the toolkit probe) with exit 2.
    copies = []
    for name in ("copy1", "copy2"):
        d = os.path.join(t.work, name)
        os.makedirs(d)
        shutil.copy(t.forge_exe, os.path.join(d, "nvcc"))
        copies.append(d)
    for extra in ({}, {"NVCC_FORGE_ARCH_LIST": "9.0", "NVCC_FORGE_LOG": log_file(t)}):
        env = clean_env(t, PATH=os.pathsep.join(copies), **extra)
        p = run_in(t, ["nvcc", "-c", k], env=env, timeout=60)
        expect(p.returncode == 2 and "NVCC_FORGE_DEPTH" in p.err,
               f"{extra}: copy loop must stop with 2, got {p.returncode}: {p.err}")
    # A symlink elsewhere to the same binary under its own name is skipped, not run as nvcc.
    env = clean_env(t, PATH=os.pathsep.join([w, os.path.dirname(t.forge_exe)]), CUDA_HOME=cuda_home(t))
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=30)
    expect(p.returncode == 0 and p.stdout == run_in(t, [nvcc_real(t), "--version"]).stdout, p.err)
    # A depth the wrapper did not set is no proof of a loop: ignored with a warning.
    env = clean_env(t, PATH=os.pathsep.join([w, "/usr/bin", "/bin"]), CUDA_HOME=cuda_home(t),
                NVCC_FORGE_DEPTH="7")
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=30)
    expect(p.returncode == 0 and "ignoring NVCC_FORGE_DEPTH=7" in p.err, p.err)
    # Shown as every message shows a user's value (core/text.h's shown_value; issue 40): a control
    # byte as \xHH, not '?', and cut at 120 bytes with its length, not at 64.
    env["NVCC_FORGE_DEPTH"] = "7\x1b[2J" + "9" * 200
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=30)
    expect(p.returncode == 0 and "NVCC_FORGE_DEPTH=7\\x1b[2J" + "9" * 115 + "... (205 bytes)" in p.err,
           p.err)


@ft.case("frontend.signals")
def signals(t):
    fake = fake_nvcc(t)
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    started = os.path.join(t.work, "started")
    for extra in ({}, {"NVCC_FORGE_ARCH_LIST": "8.0 9.0", "NVCC_FORGE_LOG": log_file(t)}):
        base = dict(PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                    REAL_NVCC=nvcc_real(t), FAKE_NVCC_STARTED=started, **extra)
        p = run_in(t, ["nvcc", "-c", k, "-arch=sm_80"], env=clean_env(t, FAKE_NVCC="segv", **base))
        expect(p.returncode == -signal.SIGSEGV, f"{extra}: SIGSEGV must come back, got {p.returncode}")
        p = run_in(t, ["nvcc", "-c", k, "-arch=sm_80"], env=clean_env(t, FAKE_NVCC="exit:42", **base))
        expect(p.returncode == 42, f"{extra}: exit 42 must come back ({p.returncode}): {p.err}")
        if os.path.exists(started):
            os.remove(started)
        proc = subprocess.Popen(["nvcc", "-c", k, "-arch=sm_80"], env=clean_env(t, FAKE_NVCC="sleep", **base),
                                cwd=t.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not os.path.exists(started) and time.time() < deadline:
            time.sleep(0.05)
        expect(os.path.exists(started), "fake nvcc never started")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
        expect(rc == -signal.SIGTERM, f"{extra}: SIGTERM must be forwarded and re-raised, got {rc}")
    recs = log_records(t)
    expect(any(r["exit_code"] == 128 + signal.SIGSEGV for r in recs), recs)


@ft.case("frontend.hot_path_cache")
def hot_path_cache(t):
    """The toolkit is probed once per nvcc file (path+mtime+size), the package YAML parsed once per
    file state; a change to either is noticed."""
    fake = fake_nvcc(t)
    probes = os.path.join(t.work, "probes")
    pkgs = os.path.join(t.work, "packages")
    os.makedirs(os.path.join(pkgs, "demo"))
    yml = os.path.join(pkgs, "demo", "arch_override.yml")
    with open(yml, "w") as f:
        f.write("arch_list: \"8.0 9.0\"\n")
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", FAKE_NVCC_PROBES=probes,
                NVCC_FORGE_CACHE_DIR=os.path.join(t.work, "cache"), NVCC_FORGE_PACKAGE="demo",
                NVCC_FORGE_PACKAGES_DIR=pkgs, NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t),
                # the package's arch_list is the x86 lane's: named, since the aarch64 lane runs this
                # case too and its default platform is its own
                NVCC_FORGE_PLATFORM="linux_x86_64")
    call = ["nvcc", "-c", "x.cu", "-arch=sm_80"]

    def probe_count():
        return len(open(probes).read().split()) if os.path.exists(probes) else 0

    for _ in range(3):
        expect(run_in(t, call, env=env).returncode == 0, "call failed")
    first = probe_count()
    expect(first > 0, "never probed")
    expect(run_in(t, call, env=env).returncode == 0 and probe_count() == first, "re-probed on a hit")
    st = os.stat(fake)
    os.utime(fake, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    expect(run_in(t, call, env=env).returncode == 0 and probe_count() == 2 * first,
           "a changed nvcc must be probed again")
    expect(all(r["policy"] == ["sm_80", "sm_90", "compute_90"] for r in log_records(t)), log_records(t))
    # Same size and mtime, different bytes (an edit within one clock tick, or a checkout that puts
    # the mtime back): a small file's stamp includes its content, so the YAML is read again.
    st = os.stat(yml)
    with open(yml, "w") as f:
        f.write("arch_list: [[[[[[[[[\n")
    os.utime(yml, ns=(st.st_atime_ns, st.st_mtime_ns))
    expect(os.stat(yml).st_size == st.st_size, "fixture sizes differ")
    p = run_in(t, call, env=env)
    expect(p.returncode == 2 and "arch_override.yml" in p.err,
           f"a same-size edit must be re-read, not served from the cache: {p.err}")
    with open(yml, "w") as f:
        f.write("arch_list: \"8.0 9.0\"\n")
    p = run_in(t, call, env=env)
    expect(p.returncode == 0, f"the mended file is read again: {p.err}")


@ft.case("frontend.cached_policy_package_dir_name")
def cached_policy_package_dir_name(t):
    """A package named with both '-' and '_' (my-pkg_x) whose directory is one of the loader's
    other candidates (my_pkg_x): an edit of that directory's file is seen by the cached policy,
    whose key names the files of exactly the directories the loader tries."""
    fake = fake_nvcc(t)
    pkgs = os.path.join(t.work, "packages")
    os.makedirs(os.path.join(pkgs, "my_pkg_x"))
    yml = os.path.join(pkgs, "my_pkg_x", "arch_override.yml")
    ft.write(yml, "arch_list: \"8.0 9.0\"\n")
    env = clean_env(t, PATH=wrapper_dir(t) + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                    REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", NVCC_FORGE_PACKAGE="my-pkg_x",
                    NVCC_FORGE_PACKAGES_DIR=pkgs, NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t),
                    NVCC_FORGE_PLATFORM="linux_x86_64")
    call = ["nvcc", "-c", "x.cu", "-arch=sm_80"]
    expect(run_in(t, call, env=env).returncode == 0, "first call failed")
    ft.write(yml, "arch_list: \"8.0 10.0\"\n")
    expect(run_in(t, call, env=env).returncode == 0, "second call failed")
    policies = [r["policy"] for r in log_records(t)]
    expect(len(policies) == 2 and "sm_90" in policies[0] and "sm_100" in policies[1]
           and "sm_90" not in policies[1], f"the second call must see the edit of my_pkg_x: {policies}")


@ft.case("frontend.concurrent_log")
def concurrent_log(t):
    """64 wrapper processes at once (make -j64), lines above PIPE_BUF included: none torn."""
    fake = fake_nvcc(t)
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", NVCC_FORGE_ARCH_LIST=POLICY_FA,
                NVCC_FORGE_MODE="observe", NVCC_FORGE_LOG=log_file(t))
    run_in(t, ["nvcc", "--version"], env=env)  # warm the probe cache
    os.remove(log_file(t))
    procs = []
    for i in range(64):
        # Every 4th call names 400 sources: its line is far beyond PIPE_BUF (4096).
        n = 400 if i % 4 == 0 else 1
        srcs = [f"dir_{i}/src_{j}_with_a_long_name.cu" for j in range(n)]
        procs.append(subprocess.Popen(["nvcc", "-c", "-arch=sm_80"] + srcs + ["-o", f"out_{i}.o"]
                                      if n == 1 else ["nvcc", "-c", "-arch=sm_80"] + srcs,
                                      env=env, cwd=t.work, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    for p in procs:
        expect(p.wait(timeout=300) == 0, "a wrapper failed")
    with open(log_file(t)) as f:
        lines = f.read().split("\n")
    expect(lines[-1] == "", "log does not end with a newline")
    recs = [json.loads(line) for line in lines[:-1]]
    expect(len(recs) == 64, f"{len(recs)} records")
    big = [r for r in recs if len(r["sources"]) == 400]
    expect(len(big) == 16 and all(len(json.dumps(r)) > 4096 for r in big), "big lines")
    expect(len({r["sources"][0] for r in recs}) == 64, "duplicated or lost records")


@ft.case("frontend.shim_env")
def shim_env(t):
    shim = os.path.join(t.work, "shim")
    p = run_in(t, [t.forge_exe, "shim", "--cuda-home", cuda_home(t), "--out", shim])
    expect(p.returncode == 0, p.err)
    p = run_in(t, ["sh", "-c", f'eval "$("$0" env --arch-list "8.0 9.0+PTX" --mode observe '
                           f'--shim "$1" --log "$2")" && env', t.forge_exe, shim, log_file(t)])
    expect(p.returncode == 0, p.err)
    env = dict(line.split("=", 1) for line in p.out.splitlines() if "=" in line)
    # `env --shim ROOT` binds the policy's own shim under the root, ROOT/.policies/<id>, and
    # exports it; the root itself stays unbound (a build running it is never rebound).
    bound = env.get("CUDA_HOME", "")
    expect(os.path.dirname(bound) == os.path.join(shim, ".policies"), env)
    expect(os.path.islink(os.path.join(shim, "bin", "nvcc"))
           and not os.path.exists(os.path.join(shim, "bin", ".nvcc-forge-policy")), "the root was bound")
    # `shim` runs in the tools binary, but bin/nvcc must be the entry (the front end): bound to
    # the policy by `env --shim`, a copy of it with the settings appended (caches.shim.*).
    with open(t.forge_exe, "rb") as f:
        entry = f.read()
    with open(os.path.join(bound, "bin", "nvcc"), "rb") as f:
        copy = f.read()
    expect(copy.startswith(entry) and b"\nNVCC_FORGE_ARCH_LIST=8.0 9.0+PTX\nNVCC_FORGE_MODE=observe\n"
           in copy[len(entry):], "bin/nvcc is not the entry bound to the policy")
    expect(open(os.path.join(bound, "bin", ".nvcc-forge-policy")).read()
           == "NVCC_FORGE_ARCH_LIST=8.0 9.0+PTX\nNVCC_FORGE_MODE=observe\n", "policy file")
    expect(env.get("CUDA_PATH") == bound and env.get("TORCH_CUDA_ARCH_LIST") == "8.0 9.0+PTX", env)
    expect(env.get("NVCC_FORGE_ARCH_LIST") == "8.0 9.0+PTX" and env.get("NVCC_FORGE_MODE") == "observe", env)
    expect(env["PATH"].startswith(os.path.join(bound, "bin") + os.pathsep), env["PATH"])
    # The same policy binds the same shim again, untouched; another policy another one, and
    # binding the bound shim's path binds under its root.
    before = os.stat(os.path.join(bound, "bin", "nvcc"))
    again = run_in(t, [t.forge_exe, "env", "--arch-list", "8.0 9.0+PTX", "--mode", "observe", "--shim", shim])
    other = run_in(t, [t.forge_exe, "env", "--arch-list", "9.0", "--shim", bound])
    expect(f"export CUDA_HOME='{bound}'" in again.out, again.out)
    after = os.stat(os.path.join(bound, "bin", "nvcc"))
    expect((before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns), "the bound shim was rewritten")
    expect(other.returncode == 0 and f"export CUDA_HOME='{shim}/.policies/" in other.out
           and f"'{bound}'" not in other.out, other.out)
    # A torch-decides build (family A) in that environment goes through the wrapper, no drops.
    e = clean_env(t, **{k: env[k] for k in ("CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "NVCC_FORGE_ARCH_LIST",
                                     "NVCC_FORGE_MODE", "NVCC_FORGE_LOG", "PATH")})
    p = run_script(t, "build_extension_cpp.py", e)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["action"] == "compared" and r["missing"] == [], r)
    expect(targets_of(t, os.path.join(out_dir(t), "ext.o")) == {"sm_80", "sm_90", "compute_90"}, "targets")
    # CMake's toolkit discovery through the shim still sees the real root.
    p = run_in(t, [os.path.join(bound, "bin", "nvcc"), "-v", "__cmake_determine_cuda"], env=e)
    expect("#$ TOP=" in p.err and "__cmake_determine_cuda" in p.err, p.err)
    # Quoting: a path with a quote and a space survives eval.
    odd = os.path.join(t.work, "it's a shim")
    expect(run_in(t, [t.forge_exe, "shim", "--cuda-home", cuda_home(t), "--out", odd]).returncode == 0, "odd")
    p = run_in(t, ["sh", "-c", 'eval "$("$0" env --arch-list 9.0 --shim "$1")" && printf %s "$CUDA_HOME"',
               t.forge_exe, odd])
    expect(p.returncode == 0 and p.out.startswith(odd + "/.policies/"), (p.out, p.err))
    # Refuses to overwrite a foreign directory, and env refuses a non-shim.
    foreign = os.path.join(t.work, "foreign")
    os.makedirs(foreign)
    open(os.path.join(foreign, "keep"), "w").close()
    expect(run_in(t, [t.forge_exe, "shim", "--cuda-home", cuda_home(t), "--out", foreign]).returncode == 2, "foreign")
    expect(run_in(t, [t.forge_exe, "env", "--arch-list", "9.0", "--shim", foreign]).returncode == 2, "env shim")
    expect(run_in(t, [t.forge_exe, "env", "--arch-list", "9.0", "--mode", "loud"]).returncode == 2, "env mode")


def elf_interpreter(path):
    """The PT_INTERP of an ELF64 file, or None for a static executable."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 3:  # PT_INTERP
            return data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
    return None


@ft.case("frontend.entry_and_tools")
def entry_and_tools(t):
    """nvcc-forge is the front end; every other command is the tools binary it execs."""
    tools = os.path.join(os.path.dirname(t.forge_exe), "nvcc-forge-tools")
    expect(os.access(tools, os.X_OK), f"no {tools}")
    # The entry answers the same commands as the tools binary, exit codes included.
    resolve = ["resolve", "--cuda", "13.0", "--format", "torch"]
    for args in (resolve,
                 ["bogus-command"], ["cell-key", "--help"]):
        a, b = run_in(t, [t.forge_exe] + args), run_in(t, [tools] + args)
        expect((a.returncode, a.out) == (b.returncode, b.out), (args, a.returncode, b.returncode))
    # Without the tools binary beside it (or in ../libexec), a command fails with 2 and says where
    # it looked; the front end itself still works.
    lone = os.path.join(t.work, "lone", "bin")
    os.makedirs(lone)
    shutil.copy(t.forge_exe, os.path.join(lone, "nvcc-forge"))
    p = run_in(t, [os.path.join(lone, "nvcc-forge"), "resolve"])
    expect(p.returncode == 2 and "nvcc-forge-tools" in p.err and lone in p.err, p.err)
    p = run_in(t, [os.path.join(lone, "nvcc-forge"), nvcc_real(t), "--version"])
    expect(p.returncode == 0 and p.out == run_in(t, [nvcc_real(t), "--version"]).out, p.err)
    # Installed layout: <prefix>/bin/nvcc-forge finds <prefix>/libexec/nvcc-forge-tools.
    libexec = os.path.join(t.work, "lone", "libexec")
    os.makedirs(libexec)
    shutil.copy(tools, os.path.join(libexec, "nvcc-forge-tools"))
    # (A copied binary reads only the data beside it, or NVCC_FORGE_DATA_DIR: policy.data_dir.*)
    p = run_in(t, [os.path.join(lone, "nvcc-forge")] + resolve, env=clean_env(t, NVCC_FORGE_DATA_DIR=os.path.abspath(t.fixtures("frontend", "..", "..", ".."))))
    expect(p.returncode == 0 and p.out == run_in(t, [tools] + resolve).out and "9.0" in p.out,
           (p.returncode, p.out, p.err))
    # The entry starts without a dynamic loader where the build found static archives (the
    # configure step says which); the speed target of the front end depends on it.
    if os.environ.get("FORGE_STATIC_ENTRY") == "ON":
        expect(elf_interpreter(t.forge_exe) is None, f"{t.forge_exe} is dynamic: {elf_interpreter(t.forge_exe)}")


@ft.case("frontend.launcher_and_ccache")
def launcher_and_ccache(t):
    k = os.path.join(kernel_dir(t), "k.cu")
    obj = os.path.join(out_dir(t), "l.o")
    env = clean_env(t, NVCC_FORGE_ARCH_LIST="8.0 9.0", NVCC_FORGE_LOG=log_file(t))
    p = run_in(t, [t.forge_exe, nvcc_real(t), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
    expect(p.returncode == 0, p.err)
    expect(targets_of(t, obj) == {"sm_80", "compute_80", "sm_90"}, targets_of(t, obj))
    ccache = shutil.which("ccache")
    if not ccache:
        # The launcher half ran; the ccache half is reported as skipped, never as passed
        # (.ci/install-deps.sh installs ccache, so CI runs both).
        ft.skip("ccache not installed: the launcher half passed, the ccache half did not run")
    env["CCACHE_DIR"] = os.path.join(t.work, "ccache")
    for policy, want in (("8.0 9.0", {"sm_90"}), ("8.0 10.0", {"sm_100"}), ("8.0 9.0", {"sm_90"})):
        env["NVCC_FORGE_ARCH_LIST"] = policy
        os.remove(obj)
        p = run_in(t, [t.forge_exe, "ccache", nvcc_real(t), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
        expect(p.returncode == 0, p.err)
        got = targets_of(t, obj)
        expect(want <= got and len(got) == 3, f"{policy}: stale cache result {got}")
    recs = log_records(t)
    expect(all(r["action"] == "injected" for r in recs), recs)
    # The third call repeats the first policy: the cache may answer it, the second it must not.
    stats = dict(line.split("\t", 1) for line in run_in(t, ["ccache", "--print-stats"], env=env).out.splitlines()
                 if "\t" in line)
    hits = int(stats.get("direct_cache_hit", "0")) + int(stats.get("preprocessed_cache_hit", "0"))
    expect(hits == 1, f"expected exactly the repeated policy to hit: {stats}")


def sccache_counts(t, env):
    """(hits, misses) of the sccache server's CUDA compiles, from its JSON statistics."""
    p = run_in(t, ["sccache", "--show-stats", "--stats-format", "json"], env=env)
    expect(p.returncode == 0, f"sccache --show-stats: {p.err}")
    stats = json.loads(p.out)["stats"]
    return (stats["cache_hits"]["counts"].get("CUDA", 0),
            stats["cache_misses"]["counts"].get("CUDA", 0), stats)


@ft.case("frontend.launcher_and_sccache")
def launcher_and_sccache(t):
    """`nvcc-forge sccache nvcc -c ...` against a real sccache server on loopback: the wrapper
    goes first, so the targets it injects are in the arguments sccache hashes. The same policy
    twice is one miss and one hit; another policy (other injected targets, same user argv) is a
    miss, and the object then carries the new policy's targets, not the cached ones.
    The call form is the one sccache caches for nvcc: one source, `-c`, `-o` (docs/build-hosts.md
    says which forms it does not)."""
    if not shutil.which("sccache"):
        ft.skip("sccache not installed (.ci/install-deps.sh installs Debian's)")
    k = os.path.join(kernel_dir(t), "k.cu")
    obj = os.path.join(out_dir(t), "s.o")
    env = {k_: v for k_, v in clean_env(t, NVCC_FORGE_LOG=log_file(t)).items() if not k_.startswith("SCCACHE_")}
    # A private server: its own cache directory and port, no idle timeout to race with.
    env.update(SCCACHE_DIR=os.path.join(t.work, "sccache"), SCCACHE_SERVER_PORT=str(ft.free_loopback_port()),
               SCCACHE_IDLE_TIMEOUT="0", SCCACHE_CACHE_SIZE="1G")
    p = ft.start_sccache_server("sccache", env, cwd=t.work)
    expect(p.returncode == 0, f"sccache --start-server: {p.out} {p.err}")
    try:
        # The third policy adds a PTX-only target, the form newer sccache releases cannot cache
        # (docs/build-hosts.md); Debian's runs the whole nvcc call and caches it.
        for policy, want, counts in (("8.0 9.0", {"sm_90"}, (0, 1)), ("8.0 9.0", {"sm_90"}, (1, 1)),
                                     ("8.0 10.0+PTX", {"sm_100", "compute_100"}, (1, 2))):
            env["NVCC_FORGE_ARCH_LIST"] = policy
            if os.path.exists(obj):
                os.remove(obj)
            p = run_in(t, [t.forge_exe, "sccache", nvcc_real(t), "-c", k, "-o", obj, "-arch=sm_80"], env=env)
            expect(p.returncode == 0, p.err)
            got = targets_of(t, obj)
            expect(got == {"sm_80", "compute_80"} | want, f"{policy}: {got} (stale cache result?)")
            hits, misses, stats = sccache_counts(t, env)
            expect((hits, misses) == counts,
                   f"{policy}: sccache hits/misses {(hits, misses)}, expected {counts}: {stats}")
        recs = log_records(t)
        expect(len(recs) == 3 and all(r["action"] == "injected" for r in recs), recs)
        expect([sorted(r["injected"]) for r in recs] == [["sm_90"], ["sm_90"], ["compute_100", "sm_100"]],
               recs)
    finally:
        run_in(t, ["sccache", "--stop-server"], env=env)


@ft.case("frontend.package_torch_platform_env")
def package_torch_platform_env(t):
    """NVCC_FORGE_PACKAGE with NVCC_FORGE_TORCH and NVCC_FORGE_PLATFORM: the wrapper's policy is
    what `resolve` gives for the same package, torch and platform and the real nvcc's version."""
    pkgs = os.path.join(t.work, "packages")
    ft.write(os.path.join(pkgs, "p", "arch_override.yml"),
             'arch_list:\n  list: "8.0 8.7 11.0"\n  reason: "test"\n  source: "test"\n')
    rel = ft.nvcc_release(nvcc_real(t))
    k = os.path.join(kernel_dir(t), "k.cu")
    seen = set()
    for i, (extra, args) in enumerate((({}, []), ({"NVCC_FORGE_TORCH": "2.10"}, ["--torch", "2.10"]),
                                        ({"NVCC_FORGE_PLATFORM": "linux_aarch64"}, ["--platform", "linux_aarch64"]))):
        log = os.path.join(t.work, f"log{i}.jsonl")
        env = clean_env(t, NVCC_FORGE_PACKAGE="p", NVCC_FORGE_PACKAGES_DIR=pkgs, NVCC_FORGE_MODE="observe",
                    NVCC_FORGE_LOG=log, **extra)
        p = run_in(t, [t.forge_exe, nvcc_real(t), "-E", k, "-o", os.devnull], env=env)
        expect(p.returncode == 0, p.err)
        rec = only(ft.jsonl(log))
        r = run_in(t, [t.forge_exe, "resolve", "--cuda", rel, "--package", "p", "--packages-dir", pkgs, *args,
                   "--format", "json"])
        expect(r.returncode == 0, r.err)
        want = sorted(json.loads(r.out)["targets"])
        expect(sorted(rec["policy"]) == want, f"{extra}: wrapper policy {rec['policy']} != resolve {want}")
        seen.add(tuple(want))
    expect(len(seen) == 3, f"torch and platform must change the policy: {seen}")
    # A torch the policy does not know is an error, not a silent fallback to no torch clamp.
    env = clean_env(t, NVCC_FORGE_PACKAGE="p", NVCC_FORGE_PACKAGES_DIR=pkgs, NVCC_FORGE_TORCH="1.0")
    p = run_in(t, [t.forge_exe, nvcc_real(t), "-E", k, "-o", os.devnull], env=env)
    expect(p.returncode == 2 and "torch 1.0" in p.err, f"{p.returncode} {p.err}")


@ft.case("frontend.log_summarize_cli")
def log_summarize_cli(t):
    shim = shim_root(t)
    env = clean_env(t, CUDA_HOME=shim, NVCC_FORGE_ARCH_LIST=POLICY_FA, NVCC_FORGE_MODE="observe",
                NVCC_FORGE_LOG=log_file(t), TORCH_CUDA_ARCH_LIST=POLICY_FA)
    expect(run_script(t, "build_flash_attn.py", env).returncode == 0, "build")
    p = run_in(t, [t.forge_exe, "log", "summarize", log_file(t)])
    expect(p.returncode == 0 and "sm_110: dropped by 1 TU" in p.out, p.out)
    p = run_in(t, [t.forge_exe, "log", "summarize", log_file(t), "--format", "json", "--fail-on-drop"])
    expect(p.returncode == 1, p.returncode)
    j = json.loads(p.out)
    expect(sorted(j["drops"]) == ["compute_120", "compute_90", "sm_110"], j)
    with open(log_file(t), "a") as f:
        f.write('{"cwd": "/x", "sources": [\n')
    p = run_in(t, [t.forge_exe, "log", "summarize", log_file(t)])
    expect(p.returncode == 2 and ":2:" in p.err, p.err)
    expect(run_in(t, [t.forge_exe, "log", "summarize", log_file(t) + ".absent"]).returncode == 2, "absent")
    expect(run_in(t, [t.forge_exe, "log", "summarize", log_file(t), "--format", "yaml"]).returncode == 2, "fmt")


# ---- hostile conditions: signals, stdin, argv[0], the depth marker, ARG_MAX -----------------

def lines(path):
    return open(path).read().splitlines() if os.path.exists(path) else []


@ft.case("frontend.signal_stops_injection")
def signal_stops_injection(t):
    """A signal to the wrapper while the injected call runs: forwarded, the call ends with nvcc's
    status (real nvcc exits 255 on SIGTERM, 2 on SIGINT), and no fallback compile starts."""
    fake = fake_nvcc(t)
    w = wrapper_dir(t)
    calls, started = os.path.join(t.work, "calls"), os.path.join(t.work, "started")
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                REAL_NVCC=nvcc_real(t), FAKE_NVCC="trap", FAKE_NVCC_CALLS=calls,
                FAKE_NVCC_STARTED=started, NVCC_FORGE_ARCH_LIST="8.0 9.0", NVCC_FORGE_LOG=log_file(t))
    argv = ["nvcc", "-c", os.path.join(kernel_dir(t), "k.cu"), "-arch=sm_80"]
    for how, sig, want in (("to the wrapper", signal.SIGTERM, 255),
                           ("to the process group", signal.SIGINT, 2)):
        for f in (calls, started, log_file(t)):
            if os.path.exists(f):
                os.remove(f)
        proc = subprocess.Popen(argv, env=env, cwd=t.work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 60
        while not os.path.exists(started) and time.time() < deadline:
            time.sleep(0.05)
        expect(os.path.exists(started), f"{how}: fake nvcc never started")
        if how == "to the wrapper":
            proc.send_signal(sig)
        else:
            os.killpg(proc.pid, sig)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        got = lines(calls)
        expect(len(got) == 1, f"{how}: a fallback compile ran after {sig.name}: {got}")
        expect("-gencode" in got[0], f"{how}: the first call is the injected one: {got}")
        expect(proc.returncode == want,
               f"{how}: {sig.name} must end the call with nvcc's {want}, got {proc.returncode}: "
               f"{err.decode(errors='replace')}")
        expect(b"injection failed" not in err, err)
        r = only(log_records(t))
        expect(r["exit_code"] == want and r["action"] == "injected", r)


STDIN_SOURCE = b"""#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#error "not for sm_90"
#endif
__global__ void from_stdin(float* x) { x[threadIdx.x] *= 2.0f; }
"""


@ft.case("frontend.stdin_source")
def stdin_source(t):
    """A source on stdin (`-x cu -c -`) in inject mode: the injected call and the fallback read
    the same bytes (a copy of stdin), so a failed injection still builds the caller's kernel."""
    w = wrapper_dir(t)
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_ARCH_LIST="8.0 9.0",
                NVCC_FORGE_LOG=log_file(t))
    obj = os.path.join(out_dir(t), "stdin.o")
    g = ["-gencode", "arch=compute_80,code=sm_80"]

    def kernels(path):
        p = run_in(t, [t.forge_exe, "list", "--format", "json", path])
        expect(p.returncode == 0, p.err)
        return {e["arch"]: e["kernels"] for e in json.loads(p.out)}

    # The injected sm_90 hits the #error: the original call must compile the same source.
    p = ft.run(["nvcc", "-x", "cu", "-c", "-", "-o", obj] + g, env=env, cwd=t.work,
               input=STDIN_SOURCE)
    expect(p.returncode == 0, f"the fallback must build the source from stdin: {p.err}")
    expect("injection failed" in p.err and "not for sm_90" in p.err, p.err)
    r = only(log_records(t))
    expect(r["action"] == "injection-failed" and r["exit_code"] == 0, r)
    got = kernels(obj)
    expect(got.get("sm_80", 0) >= 1, f"the object lacks the kernel from stdin: {got}")
    # Success: the injected call got the whole source as well.
    os.remove(log_file(t))
    ok_source = STDIN_SOURCE.replace(b"#error", b"#warning")
    p = ft.run(["nvcc", "-x", "cu", "-c", "-", "-o", obj] + g, env=env, cwd=t.work,
               input=ok_source)
    expect(p.returncode == 0, p.err)
    r = only(log_records(t))
    expect(r["action"] == "injected" and "sm_90" in r["injected"], r)
    got = kernels(obj)
    expect(got.get("sm_80", 0) >= 1 and got.get("sm_90", 0) >= 1, got)


@ft.case("frontend.argv0_as_given")
def argv0_as_given(t):
    """nvcc is exec'd by the path as the caller (or the configuration) spelled it, never its
    symlink-resolved form: nvcc derives its toolkit root from argv[0]."""
    real_root = os.path.join(t.work, "cuda-9.9")
    fake = fake_nvcc(t, os.path.join("cuda-9.9", "bin"))
    os.symlink(real_root, os.path.join(t.work, "cuda"))
    spelled = os.path.join(t.work, "cuda", "bin", "nvcc")
    expect(os.path.realpath(spelled) == fake, "fixture: the link must resolve to the fake")
    calls = os.path.join(t.work, "calls")
    w = wrapper_dir(t)
    base = dict(REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", FAKE_NVCC_CALLS=calls)
    k = os.path.join(kernel_dir(t), "k.cu")
    runs = [
        ("launcher, nothing configured", [t.forge_exe, spelled, "-c", k, "-arch=sm_80"], {}),
        ("launcher, inject + log", [t.forge_exe, spelled, "-c", k, "-arch=sm_80"],
         {"NVCC_FORGE_ARCH_LIST": "8.0", "NVCC_FORGE_LOG": log_file(t)}),
        ("PATH, NVCC_FORGE_REAL_NVCC", ["nvcc", "-c", k, "-arch=sm_80"],
         {"PATH": w + os.pathsep + os.environ["PATH"], "NVCC_FORGE_REAL_NVCC": spelled}),
        ("PATH, CUDA_HOME, inject", ["nvcc", "-c", k, "-arch=sm_80"],
         {"PATH": w + os.pathsep + "/usr/bin:/bin", "CUDA_HOME": os.path.join(t.work, "cuda"),
          "NVCC_FORGE_ARCH_LIST": "8.0 9.0"}),
    ]
    # A file symlink named nvcc outside the toolkit: nvcc would miss its nvcc.profile by that name,
    # so the resolved path runs (as before), but only where the toolkit has one.
    elsewhere = os.path.join(t.work, "elsewhere", "nvcc")
    os.makedirs(os.path.dirname(elsewhere))
    os.symlink(spelled, elsewhere)
    runs.append(("file link outside the toolkit", [t.forge_exe, elsewhere, "-c", k], {}))
    soft = ft.Soft()
    for profile in (False, True):
        if profile:
            ft.write(os.path.join(real_root, "bin", "nvcc.profile"), "TOP = $(_HERE_)/..\n")
        for what, argv, extra in runs:
            if os.path.exists(calls):
                os.remove(calls)
            p = run_in(t, argv, env=clean_env(t, **base, **extra))
            soft.check(p.returncode == 0, f"{what}: rc {p.returncode}: {p.err}")
            want = fake if profile and argv[1:2] == [elsewhere] else argv[1] if argv[0] == t.forge_exe \
                else spelled
            got = lines(calls)
            soft.check(len(got) == 1 and got[0].split(" ")[0] == want,
                       f"{what} (nvcc.profile: {profile}): exec'd as {got}, not as {want}")
    soft.done()


@ft.case("frontend.real_nvcc_output_as_direct")
def real_nvcc_output_as_direct(t):
    """Library check: the real nvcc behind a symlinked toolkit path (/usr/local/cuda ->
    cuda-13.0): -M, -E and --dryrun through the wrapper are byte for byte nvcc's own."""
    nvcc = "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        ft.skip(f"{nvcc} absent")
    k = os.path.join(kernel_dir(t), "k.cu")
    for extra in ({}, {"NVCC_FORGE_ARCH_LIST": POLICY_FA, "NVCC_FORGE_LOG": log_file(t)}):
        env = clean_env(t, **extra)
        for c in (["-M", k], ["-E", k, "-arch=sm_80"], ["--dryrun", "-c", k, "-arch=sm_80"]):
            mine = run_in(t, [t.forge_exe, nvcc] + c, env=env)
            real = run_in(t, [nvcc] + c, env=env)
            expect(mine.returncode == real.returncode == 0, f"{c}: {mine.err}")
            expect(mine.stdout == real.stdout, f"{extra} {c}: stdout differs from nvcc's")
            if c[0] != "--dryrun" or not extra:  # configured, --dryrun shows the injected call
                # --dryrun names temporary files after nvcc's pid.
                tmp = lambda b: re.sub(rb"tmpxft_[0-9a-f]+_[0-9a-f]+", b"tmpxft", b)
                expect(tmp(mine.stderr) == tmp(real.stderr),
                       f"{extra} {c}: stderr differs:\n{mine.err}")


@ft.case("frontend.depth_marker_only_from_this_chain")
def depth_marker_only_from_this_chain(t):
    """NVCC_FORGE_DEPTH switches the policy off only when a wrapper running this very call set it:
    inherited, garbage and stale values are ignored with one warning, and the policy applies."""
    fake = fake_nvcc(t)
    w = wrapper_dir(t)
    seen = os.path.join(t.work, "seen")
    env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", FAKE_NVCC_ENV=seen)
    k = os.path.join(kernel_dir(t), "k.cu")
    expect(run_in(t, ["nvcc", "-c", k], env=env).returncode == 0, "plain call")
    stale = lines(seen)[-1]
    expect(stale.count(":") == 2, f"the marker the wrapper set: {stale}")
    strict = dict(env, NVCC_FORGE_ARCH_LIST="8.0 11.0", NVCC_FORGE_MODE="strict",
                  NVCC_FORGE_LOG=log_file(t))
    soft = ft.Soft()
    for value in ("1", "abc", "-1", "7", stale):
        if os.path.exists(log_file(t)):
            os.remove(log_file(t))
        p = run_in(t, ["nvcc", "-c", k, "-arch=sm_80"], env=dict(strict, NVCC_FORGE_DEPTH=value))
        soft.check(p.returncode == 1 and "strict" in p.err,
                   f"{value}: strict must still refuse, got {p.returncode}: {p.err}")
        warnings = [l for l in p.err.splitlines() if "NVCC_FORGE_DEPTH" in l]
        soft.check(len(warnings) == 1 and "ignoring" in warnings[0], f"{value}: {p.err}")
        soft.check(len(log_records(t)) == 1, f"{value}: one log line expected")
    soft.done()
    # A wrapper of this chain (a copy of nvcc-forge named nvcc, found next on PATH) is an inner
    # call: silent, untouched, not logged a second time.
    copy = os.path.join(t.work, "copy")
    os.makedirs(copy)
    shutil.copy(t.forge_exe, os.path.join(copy, "nvcc"))
    os.remove(log_file(t))
    env = clean_env(t, PATH=os.pathsep.join([w, copy, os.environ["PATH"]]),
                NVCC_FORGE_ARCH_LIST="8.0 9.0", NVCC_FORGE_LOG=log_file(t))
    p = run_in(t, ["nvcc", "--version"], env=env, timeout=60)
    expect(p.returncode == 0 and p.stderr == b"", f"inner call: {p.returncode}: {p.err}")
    expect(p.stdout == run_in(t, [nvcc_real(t), "--version"]).stdout, "inner call output")
    expect(len(log_records(t)) == 1, log_records(t))


@ft.case("frontend.near_arg_max")
def near_arg_max(t):
    """A command line that just fits when nvcc is called directly: the wrapper's longer
    environment (its marker) or the injected targets would not fit, so the caller's own argv and
    environment run instead of failing the build."""
    fake = fake_nvcc(t)
    calls = os.path.join(t.work, "calls")
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    chunk = 100_000  # below the kernel's per-string limit (128 KiB)

    def args(n):
        pads = [f"-DPAD{i}=" + "x" * chunk for i in range(n // chunk)]
        return ["-c", k, "-arch=sm_80"] + pads + ["-DPADEND=" + "y" * (n % chunk)]

    for what, extra in (("nothing configured (exec)", {}),
                        ("inject + log (spawn)", {"NVCC_FORGE_ARCH_LIST": "8.0 9.0",
                                                   "NVCC_FORGE_LOG": log_file(t)})):
        env = clean_env(t, PATH=w + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=fake,
                    REAL_NVCC=nvcc_real(t), FAKE_NVCC="ok", FAKE_NVCC_CALLS=calls, **extra)

        def fits(n):
            try:
                return subprocess.run([fake] + args(n), env=env, cwd=t.work,
                                      stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=60).returncode == 0
            except OSError:
                return False

        lo, hi = 0, 2 * os.sysconf("SC_ARG_MAX")
        expect(fits(lo) and not fits(hi), "fixture: cannot bracket ARG_MAX")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        if os.path.exists(calls):
            os.remove(calls)
        p = run_in(t, ["nvcc"] + args(lo), env=env)
        expect(p.returncode == 0, f"{what}: nvcc takes this command line, the wrapper must "
                                  f"too: rc {p.returncode}: {p.err[:2000]}")
        got = lines(calls)
        expect(len(got) == 1 and "-gencode" not in got[0], f"{what}: ran {got}")
    expect("too long" in p.err, p.err[:2000])
    r = only(log_records(t))
    expect(r["action"] == "compared" and r["injected"] == [] and r["exit_code"] == 0, r)


def stderr_on_terminal(t, cmd, env):
    """(exit code, stderr) of cmd run with its stderr on a pseudo-terminal."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, env=env, cwd=t.work, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@ft.case("frontend.colour_on_terminal")
def colour_on_terminal(t):
    """The wrapper's own lines in colour when stderr is a terminal: 'dropped' yellow, 'injected'
    green, a refusal's 'missing' red (issue 39); none with NO_COLOR or TERM=dumb, in a pipe, or in
    the compile log."""
    w = wrapper_dir(t)
    k = os.path.join(kernel_dir(t), "k.cu")
    base = {"PATH": w + os.pathsep + os.environ["PATH"], "NVCC_FORGE_ARCH_LIST": "8.0 9.0",
            "NVCC_FORGE_LOG": log_file(t), "TERM": "xterm", "NO_COLOR": None}
    inject = ["nvcc", "-dryrun", "-c", k, "-arch=sm_80"]
    strict = ["nvcc", "-c", k, "-o", os.path.join(out_dir(t), "s.o"), "-arch=sm_80"]
    rc, err = stderr_on_terminal(t, inject, clean_env(t, **base))
    expect(rc == 0 and "k.cu: \x1b[33mdropped\x1b[0m sm_90 -> \x1b[32minjected\x1b[0m (policy 8.0 "
           "9.0; requested 8.0+PTX)" in err, f"no colour on a terminal: {err!r}")
    rc, err = stderr_on_terminal(t, strict, clean_env(t, **base, NVCC_FORGE_MODE="strict"))
    expect(rc == 1 and "strict: k.cu: \x1b[31mmissing\x1b[0m sm_90 (policy" in err,
           f"no red refusal on a terminal: {err!r}")
    for extra in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        rc, err = stderr_on_terminal(t, inject, clean_env(t, **{**base, **extra}))
        expect(rc == 0 and "\x1b" not in err and "k.cu: dropped sm_90 -> injected (policy" in err,
               f"colour with {extra}: {err!r}")
    p = run_in(t, inject, env=clean_env(t, **base))
    expect(p.returncode == 0 and "\x1b" not in p.err and "dropped sm_90 -> injected" in p.err,
           f"colour in a pipe: {p.err!r}")
    records = log_records(t)
    expect([r["action"] for r in records] == ["injected", "refused", "injected", "injected",
                                              "injected"], records)
    expect("\x1b" not in open(log_file(t), encoding="utf-8").read(), "colour in the compile log")


if __name__ == "__main__":
    sys.exit(ft.main(setup=setup))
