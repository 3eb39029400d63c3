#!/usr/bin/env python3
"""`nvcc-forge plan`: the package's own build under the stand-in, gated, against the real build of
the same fixture gated by `verify` (the verdicts must be equal). Fixtures: the package builds
(tests/fixtures/packages: the SageAttention-style parser, the flash-attention-style ladder), an
-rdc make build and a small CMake project (tests/fixtures/plan). Each real build runs once per
build tree, shared by the cases. Skipped (exit 77) without nvcc."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402

SAGE_LIST = "8.0 8.9 9.0"
SAGE_MODULES = ["_qattn_sm80", "_qattn_sm89", "_qattn_sm90", "_fused"]


def base_env(t, **kw):
    """The caller's environment without nvcc-forge settings, the real nvcc first on PATH; the
    caches (plan's kept stubs among them) in the build tree's work directory, not the user's."""
    nvcc = t.nvcc()
    e = t.env(PATH=os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", ""),
              CUDA_HOME=None, CUDA_PATH=None, CUDACXX=None, NVCC_FORGE_ARCH_LIST=None,
              NVCC_FORGE_PACKAGE=None, NVCC_FORGE_MODE=None, NVCC_FORGE_LOG=None,
              FLASH_ATTN_CUDA_ARCHS=None,
              NVCC_FORGE_CACHE_DIR=os.path.join(t.work_root, "plan-cache"))
    e.update({k: v for k, v in kw.items() if v is not None})
    return e


def shim(t, name="plan-shim"):
    """One `nvcc-forge shim` per build tree, for the real builds through the wrapper (`name`: one of
    its own, for a build that binds it to a policy with `env --shim`: a bound shim keeps its
    policy, so the shared one must stay unbound)."""
    root = os.path.join(t.work_root, name)
    if not os.path.isdir(os.path.join(root, "bin")):
        os.makedirs(t.work_root, exist_ok=True)  # a case run alone is the first to use it
        tmp = tempfile.mkdtemp(dir=t.work_root)
        cuda = os.path.dirname(os.path.dirname(os.path.realpath(t.nvcc())))
        t.forge("shim", "--cuda-home", cuda, "--out", tmp).expect_ok()
        try:
            os.rename(tmp, root)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def real_build(t, name, argv, arch_list, cwd=None, mode=None, shim_root=None, **env):
    """The real build through the wrapper (shim first, the same list and mode as the plan), once
    per build tree into WORK/plan-real/<name>; argv may name @OUT@, replaced by that directory."""
    out = os.path.join(t.work_root, "plan-real", name)
    if os.path.isdir(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(out))
    root = shim_root or shim(t)
    e = base_env(t, **env)
    e.update(PATH=os.path.join(root, "bin") + os.pathsep + e["PATH"], CUDA_HOME=root,
             CUDA_PATH=root, NVCC_FORGE_ARCH_LIST=arch_list)
    if mode:
        e["NVCC_FORGE_MODE"] = mode
    r = t.run([a.replace("@OUT@", tmp) for a in argv], env=e, cwd=cwd, timeout=280)
    check(r.rc == 0, f"real build {name} exited {r.rc}: {r.err[-3000:]}")
    try:
        os.rename(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def plan(t, arch_list, gates, cmd, *extra, env=None, cwd=None):
    args = ["plan", *(["--arch-list", arch_list] if arch_list else []), *extra, "--format", "json"]
    for g in gates:
        args += ["--gate", g]
    return t.forge(*args, "--", *cmd, env=env or base_env(t), cwd=cwd, timeout=280)


def sos(d):
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith(".so")]
    return sorted(out)


def carried(gate_json):
    """{module name: (sass, ptx)} from verify's JSON, by file name without the interpreter tag."""
    return {os.path.basename(e["file"]).split(".")[0]: (sorted(e["sass"]), sorted(e["ptx"]))
            for e in gate_json["extensions"]}


def same_verdict(s, plan_json, real_json):
    """The plan's gate and verify on the real product: same verdict, modules, targets, absences."""
    g = plan_json["gate"]
    s.check_eq(g["verdict"], real_json["verdict"], "plan's gate verdict vs verify on the real build")
    s.check_eq(carried(g), carried(real_json), "modules and targets, plan vs real")
    s.check_eq(g.get("missing_extensions"), real_json.get("missing_extensions"), "missing_extensions")


def sage_case(t, form):
    lst = SAGE_LIST if form == "space" else SAGE_LIST.replace(" ", ";")
    build = t.fixtures("packages", "sageattention_like", "build.py")
    real = real_build(t, f"sage_{form}", [sys.executable, build, "@OUT@"], SAGE_LIST,
                      TORCH_CUDA_ARCH_LIST=lst)
    r = plan(t, SAGE_LIST, ["out/sageattention/*.so"], [sys.executable, build, "out"],
             "--package", "sageattention", env=base_env(t, TORCH_CUDA_ARCH_LIST=lst))
    v = t.forge("verify", *sos(real), "--arch-list", SAGE_LIST, "--package", "sageattention",
                "--format", "json")
    return r, v


@ft.case("plan.sage.space_form_fails_naming_absent_modules")
def case_sage_space(t):
    r, v = sage_case(t, "space")
    r.expect_rc(1)
    j = r.json()
    real = json.loads(v.out)
    with ft.Soft() as s:
        s.check_eq(j["verdict"], "fail", "verdict")
        s.check_eq(v.rc, 1, "verify on the real build")
        want = [f"sageattention/{m}*.so" for m in SAGE_MODULES[:3]]
        s.check_eq(j["gate"]["missing_extensions"], want, "absent modules named")
        s.check_eq([os.path.basename(e["file"]).split(".")[0] for e in j["extensions"]], ["_fused"],
                   "the one module the space form builds")
        same_verdict(s, j, real)
        # Every call was the stand-in's: the log records of the wrapper, each one compared.
        s.check(j["calls"] and all(c["action"] == "compared" for c in j["calls"]), j["calls"])
        s.check(all({"cwd", "sources", "requested", "missing", "injected"} <= set(c)
                    for c in j["calls"]), "calls are compile-log records")


@ft.case("plan.sage.separator_form_passes")
def case_sage_semicolon(t):
    r, v = sage_case(t, "semicolon")
    r.expect_rc(0)
    j = r.json()
    with ft.Soft() as s:
        s.check_eq(j["verdict"], "pass", "verdict")
        s.check_eq(v.rc, 0, "verify on the real build")
        s.check_eq(sorted(carried(j["gate"])), sorted(SAGE_MODULES), "every module built")
        same_verdict(s, j, json.loads(v.out))
        # Plan products carry the plan's mark: verify refuses them, wheel members included.
        products = sos(t.path("out"))
        s.check(products, "plan wrote the modules")
        r2 = t.forge("verify", *products, "--arch-list", SAGE_LIST)
        s.check_eq(r2.rc, 2, f"verify must refuse a plan product: {r2!r}")
        s.check("nvcc-forge plan" in r2.err, r2.err)
        wheel = t.path("dist", "sageattention-0-py3-none-any.whl")
        os.makedirs(os.path.dirname(wheel))
        with zipfile.ZipFile(wheel, "w") as z:
            for p in products:
                z.write(p, "sageattention/" + os.path.basename(p))
        r3 = t.forge("verify", wheel, "--arch-list", SAGE_LIST)
        s.check_eq(r3.rc, 2, f"verify must refuse a wheel of plan products: {r3!r}")
        s.check(".whl:sageattention/" in r3.err, r3.err)
        # The real build's product is not marked.
        real = os.path.join(t.work_root, "plan-real", "sage_semicolon")
        s.check_eq(t.forge("verify", *sos(real), "--arch-list", SAGE_LIST).rc, 0, "real passes")


# flash-attention's current setup.py (tests/fixtures/packages/flash_attn_like): its own knob
# FLASH_ATTN_CUDA_ARCHS, family targets, PTX of the newest number. The lanes of the flash_attn
# package on the local CUDA 13.0: what `env` exports, and what the wrapper must add.
FLASH_LANES = {
    "x86": {"args": [], "knob": "80;90;100;120",
            "requested": ["sm_80", "sm_90", "sm_100f", "sm_120f", "compute_120"],
            "missing": ["sm_86", "compute_90"],
            "sass": ["sm_100f", "sm_120f", "sm_80", "sm_86", "sm_90"],
            "drop": "flash_fwd_hdim64_fp16_sm80.cu: dropped sm_86, compute_90 -> injected (policy "
                    "8.0 8.6 9.0+PTX 10.0f compute_120 12.0f; requested 8.0 9.0 10.0f compute_120 12.0f); "
                    "generic TU: plain sm_80 beside sm_100f\n"},
    "aarch64": {"args": ["--platform", "linux_aarch64"], "knob": "80;90;100;110;120",
                "requested": ["sm_80", "sm_90", "sm_100f", "sm_110f", "sm_120f", "compute_120"],
                "missing": ["compute_90"],
                "sass": ["sm_100f", "sm_110f", "sm_120f", "sm_80", "sm_90"],
                "drop": "flash_fwd_hdim64_fp16_sm80.cu: dropped compute_90 -> injected (policy "
                        "8.0 9.0+PTX 10.0f 11.0f compute_120 12.0f; requested 8.0 9.0 10.0f 11.0f "
                        "compute_120 12.0f); generic TU: plain sm_80 beside sm_100f\n"},
}
FLASH_TUS = ["flash_bwd_hdim64_fp16_sm80.cu", "flash_fwd_hdim64_fp16_sm80.cu",
             "flash_fwd_split_hdim64_fp16_sm80.cu"]


def env_exports(t, *args):
    """What `eval "$(nvcc-forge env ARGS)"` sets, PATH left out (the caller adds the shim)."""
    r = t.forge("env", *args).expect_ok()
    out = {}
    for line in r.out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        if name != "PATH":
            out[name] = shlex.split(value)[0]
    return out


def flash_case(t, lane, mode):
    """The real build through the shim, set up as a user does (`env --package flash_attn --shim`),
    and the plan of the same build; verify on the real module. Returns (plan, verify, real log,
    real stderr file, exports)."""
    cfg = FLASH_LANES[lane]
    build = t.fixtures("packages", "flash_attn_like", "build.py")
    name = f"flash_{lane}_{mode}"
    own_shim = shim(t, f"plan-shim-{name}")
    exports = env_exports(t, "--package", "flash_attn", "--mode", mode, "--shim", own_shim,
                          *cfg["args"])
    log = os.path.join(t.work_root, "plan-real", name + ".jsonl")
    real = real_build(t, name, [sys.executable, build, "@OUT@"], exports["NVCC_FORGE_ARCH_LIST"],
                      mode=mode, shim_root=exports["CUDA_HOME"], **{**exports, "NVCC_FORGE_LOG": log})
    r = plan(t, None, ["out/*.so"], [sys.executable, build, "out"], "--package", "flash_attn",
             *cfg["args"], env=base_env(t, NVCC_FORGE_MODE=mode))
    v = t.forge("verify", *sos(real), "--package", "flash_attn", *cfg["args"], "--format", "json")
    return r, v, ft.jsonl(log), exports


def flash_tus_agree(s, j, real_log, lane, injected):
    """Every TU: the plan's row and the real build's log record name the same targets."""
    cfg = FLASH_LANES[lane]
    plan_tus = {os.path.basename(tu["tu"]): tu for tu in j["tus"]}
    real_tus = {os.path.basename(rec["sources"][0]): rec for rec in real_log if rec["sources"]}
    s.check_eq(sorted(plan_tus), FLASH_TUS, "TUs under plan")
    s.check_eq(sorted(real_tus), FLASH_TUS, "TUs of the real build")
    for name in FLASH_TUS:
        tu, rec = plan_tus.get(name, {}), real_tus.get(name, {})
        s.check_eq(tu.get("requested"), cfg["requested"], f"{name}: the ladder's targets")
        s.check_eq(tu.get("missing"), cfg["missing"], f"{name}: missing")
        s.check_eq(tu.get("injected"), injected, f"{name}: injected under plan")
        s.check_eq(tu.get("arch_rule"), "plain-target", f"{name}: the rule")
        s.check_eq(rec.get("arch_specific"), False, f"{name}: arch_specific, real build")
        for key in ("requested", "missing", "injected", "arch_rule", "action"):
            s.check_eq(rec.get(key), tu.get(key), f"{name}: {key}, real vs plan")


@ft.case("plan.flash.observe_names_what_is_missing")
def case_flash_observe(t):
    r, v, real_log, exports = flash_case(t, "x86", "observe")
    r.expect_rc(1)
    j = r.json()
    real = json.loads(v.out)
    with ft.Soft() as s:
        s.check_eq(exports["FLASH_ATTN_CUDA_ARCHS"], "80;90;100;120", "the knob env exports")
        s.check_eq(j["arch_knobs"], [{"variable": "FLASH_ATTN_CUDA_ARCHS",
                                      "value": "80;90;100;120", "set_by": "plan"}], "plan's knob")
        s.check_eq(j["verdict"], "fail", "verdict")
        s.check_eq(v.rc, 1, "verify on the real build")
        for tu in j["tus"]:
            s.check_eq(tu["not_restored"], ["sm_86", "compute_90"], f"{tu['tu']}: not restored")
        s.check("flash_fwd_hdim64_fp16_sm80.cu (sm_86, compute_90)" in j["reason"], j["reason"])
        flash_tus_agree(s, j, real_log, "x86", [])
        same_verdict(s, j, real)
        # The gate names what the module lacks (sm_86 is the package's documented waiver).
        mod = ft.only(real["extensions"], what="module")
        s.check_eq(mod["missing_ptx"], ["compute_90"], "missing PTX")
        s.check([w.split()[0] for w in mod["waived"]] == ["sm_86"], mod["waived"])


def flash_inject(t, lane):
    """Inject mode: every TU gets what the knob cannot express, plan passes, and so does verify on
    the real module, which carries the lane's images and nothing extra."""
    cfg = FLASH_LANES[lane]
    r, v, real_log, exports = flash_case(t, lane, "inject")
    r.expect_rc(0)
    j = r.json()
    real = json.loads(v.out)
    with ft.Soft() as s:
        s.check_eq(exports["FLASH_ATTN_CUDA_ARCHS"], cfg["knob"], "the knob env exports")
        s.check_eq(j["verdict"], "pass", "verdict")
        s.check_eq(v.rc, 0, f"verify --package flash_attn on the real build: {v.out[-2000:]}")
        flash_tus_agree(s, j, real_log, lane, cfg["missing"])
        for tu in j["tus"]:
            s.check_eq(tu["not_restored"], [], f"{tu['tu']}: not restored")
        s.check(cfg["drop"] in r.err, r.err[-3000:])
        same_verdict(s, j, real)
        mod = ft.only(real["extensions"], what="module")
        s.check_eq(sorted(mod["sass"]), cfg["sass"], "the module's cubins")
        s.check_eq(sorted(mod["ptx"]), ["compute_120", "compute_90"], "the module's PTX")


@ft.case("plan.flash.inject_x86_restores")
def case_flash_inject_x86(t):
    flash_inject(t, "x86")  # the knob keeps Thor's sm_110f off x86: nothing extra at the gate


@ft.case("plan.flash.inject_aarch64_restores")
def case_flash_inject_aarch64(t):
    flash_inject(t, "aarch64")


@ft.case("plan.knob_set_unless_the_caller_did")
def case_knob_env(t):
    """plan sets the package's own knob for the build (as `env` does for the real one), unless the
    caller's environment has it: then the build sees the caller's value, and the report says so."""
    t.nvcc()
    dump = t.path("env.json")
    script = f"import json, os; json.dump(dict(os.environ), open({dump!r}, 'w'))"
    head = ["plan", "--arch-list", "8.0 8.6 9.0+PTX 12.0+PTX", "--package", "flash_attn"]
    cmd = ["--", sys.executable, "-c", script]
    args = [*head, "--format", "json", *cmd]
    with ft.Soft() as s:
        r = t.forge(*args, env=base_env(t))
        s.check_eq(r.rc, 0, r.err)
        s.check_eq(json.load(open(dump)).get("FLASH_ATTN_CUDA_ARCHS"), "80;90;120", "the build sees")
        s.check_eq(r.json()["arch_knobs"], [{"variable": "FLASH_ATTN_CUDA_ARCHS",
                                             "value": "80;90;120", "set_by": "plan"}], "report")
        r = t.forge(*args, env=base_env(t, FLASH_ATTN_CUDA_ARCHS="80"))
        s.check_eq(json.load(open(dump)).get("FLASH_ATTN_CUDA_ARCHS"), "80", "the caller's value")
        s.check_eq(r.json()["arch_knobs"], [{"variable": "FLASH_ATTN_CUDA_ARCHS", "value": "80",
                                             "set_by": "caller"}], "report")
        r = t.forge(*head, "--format", "text", *cmd, env=base_env(t))
        s.check("knob: FLASH_ATTN_CUDA_ARCHS=80;90;120 (set by plan)" in r.out, r.out)


@ft.case("plan.rdc.make_build_and_depfiles")
def case_rdc(t):
    src = t.path("src")
    shutil.copytree(t.fixtures("plan", "rdc"), src)
    lst = "8.0 9.0+PTX"
    real = real_build(t, "rdc", ["make", "-s", "-C", src, "OUT=@OUT@"], lst)
    r = plan(t, lst, ["build/*.so"], ["make", "-s", "-C", src, "OUT=" + t.path("build")])
    r.expect_rc(0)
    j = r.json()
    v = t.forge("verify", os.path.join(real, "librdc.so"), "--arch-list", lst, "--format", "json")
    with ft.Soft() as s:
        s.check_eq(j["verdict"], "pass", "verdict")
        same_verdict(s, j, json.loads(v.out))
        s.check(any(c["sources"] == [] for c in j["calls"]), "the device link is a call of its own")
        for d in ("a.d", "b.d"):
            s.check(os.path.isfile(t.path("build", d)), f"dependency file {d} written")
        # The dependency files and outputs make the next make a no-op.
        q = t.run(["make", "-q", "-C", src, "OUT=" + t.path("build")], env=base_env(t))
        s.check_eq(q.rc, 0, f"make -q after the plan (0 = up to date): {q!r}")


@ft.case("plan.cmake.configured_under_plan")
def case_cmake(t):
    if not shutil.which("cmake") or not shutil.which("ninja"):
        ft.skip("cmake or ninja not on PATH")
    src = t.fixtures("plan", "cmake")
    lst = "8.0 9.0+PTX"
    b = t.path("b")
    r = plan(t, lst, ["b/*.so"], ["sh", "-c",
                                    f"cmake -S '{src}' -B '{b}' -G Ninja >/dev/null && "
                                    f"cmake --build '{b}'"])
    r.expect_rc(0)
    j = r.json()
    real = real_build(t, "cmake", ["sh", "-c", f"cmake -S '{src}' -B @OUT@ -G Ninja >/dev/null && "
                                   "cmake --build @OUT@"], lst)
    v = t.forge("verify", *sos(real), "--arch-list", lst, "--format", "json")
    with ft.Soft() as s:
        s.check_eq(j["verdict"], "pass", "verdict")
        same_verdict(s, j, json.loads(v.out))
        tu = ft.only([c for c in j["tus"] if c["tu"].endswith("k.cu")], what="k.cu call")
        s.check_eq(tu["injected"], ["compute_90"], "the +PTX tail injected into the plan")
        # ninja's dependency files from the stand-in: the next build has nothing to do.
        n = t.run(["ninja", "-C", b, "-n"], env=base_env(t))
        s.check("no work to do" in n.out, f"ninja after the plan: {n!r}")


@ft.case("plan.build_fails_is_exit_2")
def case_cmd_fails(t):
    r = plan(t, "8.0", ["*.so"], [sys.executable, "-c", "import sys; sys.exit(3)"])
    r.expect_rc(2)
    j = r.json()
    ft.check_eq(j["verdict"], "error", "verdict")
    ft.check_eq(j["build_exit"], 3, "build_exit")
    ft.check_eq(j["gate"], None, "nothing gated after a failed build")
    r = t.forge("plan", "--arch-list", "8.0", "--", "no-such-command-forge", env=base_env(t))
    r.expect_rc(2)


@ft.case("plan.nvcc_as_the_build_command")
def case_direct_nvcc(t):
    """CMD may be nvcc itself: found on the build's PATH, it is the stand-in, not the real one."""
    t.nvcc()
    src = t.path("k.cu")
    ft.write(src, "#error the stand-in never compiles the TU\n__global__ void k() {}\n")
    r = plan(t, "8.0", ["k.so"], ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode",
                                  "arch=compute_80,code=sm_80", src, "-o", t.path("k.so")])
    r.expect_rc(0)
    j = r.json()
    ft.check_eq([c["action"] for c in j["calls"]], ["compared"], "the one call, the stand-in's")
    ft.check_eq(carried(j["gate"]), {"k": (["sm_80"], [])}, "the stub's targets")


@ft.case("plan.environment_and_passthrough")
def case_env(t):
    """The build sees the caller's environment with the shadow root first and nothing else
    changed; --version goes to the real nvcc; plan's stdout is its report alone."""
    dump = t.path("env.json")
    script = ("import json, os, subprocess, sys; "
              "v = subprocess.run(['nvcc', '--version'], capture_output=True, text=True); "
              "print('build says hello'); "
              "json.dump({'env': dict(os.environ), 'version': v.stdout, 'rc': v.returncode}, "
              f"open({dump!r}, 'w'))")
    env = base_env(t, TORCH_CUDA_ARCH_LIST="7.5 8.0", FORGE_PLAN_PROBE="x")
    r = t.forge("plan", "--arch-list", "8.0", "--", sys.executable, "-c", script, env=env)
    r.expect_rc(0)
    d = json.load(open(dump))
    seen = d["env"]
    with ft.Soft() as s:
        s.check("build says hello" in r.err and "build says hello" not in r.out, r)
        root = seen["CUDA_HOME"]
        s.check_eq(seen["CUDA_PATH"], root, "CUDA_PATH")
        s.check_eq(seen["CUDACXX"], os.path.join(root, "bin", "nvcc"), "CUDACXX")
        s.check_eq(seen["PATH"], os.path.join(root, "bin") + os.pathsep + env["PATH"], "PATH")
        changed = {k for k in set(seen) | set(env) if seen.get(k) != env.get(k)}
        changed -= {"PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX"}
        s.check_eq(sorted(changed), [], "variables plan changed besides the shadow root's")
        s.check_eq(d["rc"], 0, "nvcc --version under plan")
        s.check("Cuda compilation tools" in d["version"], d["version"])
        s.check("calls: 1 (0 compared, 1 passed to the real nvcc)" in r.out, r.out)


def logging_toolkit(t, name="tk", note=""):
    """A toolkit root whose bin/nvcc is a script: it appends each call's argv to <name>.calls,
    keeps a copy of the stub's source and include directory in <name>.stub/, then runs the real
    nvcc. Returns (root, calls file). `note` changes the script (its identity)."""
    root = t.path(name)
    calls = t.path(name + ".calls")
    keep = t.path(name + ".stub")
    os.makedirs(keep, exist_ok=True)
    script = f"""#!/bin/sh
# {note}
printf '%s\\n' "$*" >> {shlex.quote(calls)}
for a; do
  case "$a" in
    */nvcc_forge_plan_stub.cu) cp "$a" {shlex.quote(keep)}/ ;;
    -I*/include) cp -r "${{a#-I}}" {shlex.quote(keep)}/ ;;
  esac
done
exec {shlex.quote(os.path.realpath(t.nvcc()))} "$@"
"""
    ft.write(os.path.join(root, "bin", "nvcc"), script, mode=0o755)
    return root, calls


def stub_calls(calls):
    lines = ft.read(calls).splitlines() if os.path.exists(calls) else []
    return [ln for ln in lines if "nvcc_forge_plan_stub.cu" in ln], lines


@ft.case("plan.stub.cached_per_toolkit_threads_on_stub_only")
def case_stub_cache(t):
    """A second plan of the same build compiles no stub (the cache outlives the run); a changed
    toolkit gets its own. `--threads 0` is on the stub compile, never on the build's calls."""
    root, calls = logging_toolkit(t)
    src = ft.write(t.path("k.cu"), "#error the stand-in never compiles the TU\n")
    env = base_env(t, NVCC_FORGE_CACHE_DIR=t.path("cache"))
    env["PATH"] = os.path.join(root, "bin") + os.pathsep + env["PATH"]
    cmd = ["sh", "-c", "nvcc -c -Xcompiler -fPIC -gencode arch=compute_80,code=sm_80 "
           f"'{src}' -o k.o && nvcc -shared k.o -o k.so && nvcc --version >/dev/null"]
    seen = []
    with ft.Soft() as s:
        for run, note in ((1, ""), (2, ""), (3, "patched in place")):
            if note:
                logging_toolkit(t, note=note)
            before = len(stub_calls(calls)[0])
            r = plan(t, "8.0", ["k.so"], cmd, env=env)
            s.check_eq(r.rc, 0, f"plan run {run}: {r.err[-2000:]}")
            if r.rc == 0:
                s.check_eq(carried(r.json()["gate"]), {"k": (["sm_80"], [])}, f"run {run} gate")
            stubs, lines = stub_calls(calls)
            seen.append(len(stubs) - before)
            if run == 1:
                s.check(stubs and all("--threads 0" in ln for ln in stubs), stubs)
                others = [ln for ln in lines if ln not in stubs]
                s.check(any("-shared" in ln for ln in others) and
                        any("--version" in ln for ln in others), f"the build's calls: {others}")
                s.check(not any("--threads" in ln for ln in others),
                        f"--threads on a call of the build's own: {others}")
        s.check_eq(seen, [1, 0, 1], "stub compiles per run (kept, then another toolkit's)")
        s.check(os.listdir(os.path.join(t.path("cache"), "plan")), "the kept stubs")


@ft.case("plan.stub.short_header_same_device_code")
def case_stub_header(t):
    """The stub compile's short cuda_runtime.h changes nothing the gate reads: the plan's -rdc
    object lists exactly as the same stub built with the toolkit's own header."""
    root, calls = logging_toolkit(t)
    src = ft.write(t.path("k.cu"), "#error the stand-in never compiles the TU\n")
    env = base_env(t, NVCC_FORGE_CACHE_DIR=t.path("cache"))
    env["PATH"] = os.path.join(root, "bin") + os.pathsep + env["PATH"]
    flags = ["-dc", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
             "arch=compute_90,code=compute_90"]
    r = plan(t, "8.0 9.0+PTX", [], ["nvcc", *flags, src, "-o", t.path("plan.o")], env=env)
    r.expect_rc(0)
    stubs, _ = stub_calls(calls)
    stub = ft.only(stubs, what="stub compile")
    ft.check("/include" in stub and "-I" in stub, f"the short header is on the path: {stub}")
    kept = t.path("tk.stub")
    ft.check(os.path.isfile(os.path.join(kept, "include", "cuda_runtime.h")), os.listdir(kept))
    # The same stub compile (the mode's rewrite, the plan id of a -rdc object's own module) with
    # the toolkit's header: the logged call without the short header's directory.
    args = shlex.split(stub)
    args = [a for a in args if not (a.startswith("-I") and a.endswith("/include"))]
    args = [os.path.join(kept, os.path.basename(a)) if a.endswith("nvcc_forge_plan_stub.cu") else a
            for a in args]
    args[args.index("-o") + 1] = t.path("full.o")
    full = t.run([t.nvcc(), *args], env=base_env(t))
    ft.check_eq(full.rc, 0, f"the stub with the toolkit's header: {full.err}")

    def listing(path):
        # A -rdc compile names the static kernel after its own module id (a fresh one each
        # compile, header or not): the compressed sizes and the offsets after them vary, and so
        # do the uncompressed ones, the id being part of the PTX text and the cubin's names (one
        # cold CI run saw compute_90's PTX at 601 bytes in one object and 604 in the other). The
        # gate reads none of the three.
        j = t.forge("list", "--all", "--format", "json", path).expect_rc(0).json()
        for e in j:
            e.pop("size")
            e.pop("offset")
            e.pop("uncompressed_size")
            e["file"] = "OBJ"
        return j

    ft.check_eq(listing(t.path("plan.o")), listing(t.path("full.o")), "list --all, plan vs full")


@ft.case("plan.stub.one_compile_for_parallel_calls")
def case_stub_parallel(t):
    """Calls of one flag set that a parallel build starts together build the stub once: the
    others wait for it (without the lock each of them misses the cache and compiles)."""
    root, calls = logging_toolkit(t)
    env = base_env(t, NVCC_FORGE_CACHE_DIR=t.path("cache"))
    env["PATH"] = os.path.join(root, "bin") + os.pathsep + env["PATH"]
    jobs = []
    for i in range(3):
        src = ft.write(t.path(f"k{i}.cu"), "#error the stand-in never compiles the TU\n")
        jobs.append(f"nvcc -c -gencode arch=compute_80,code=sm_80 '{src}' -o k{i}.o &")
    r = plan(t, "8.0", [], ["sh", "-c", " ".join(jobs) + " wait"], env=env)
    r.expect_rc(0)
    with ft.Soft() as s:
        s.check_eq(len(stub_calls(calls)[0]), 1, "stub compiles for three parallel calls")
        s.check_eq(sorted(c["output"] for c in r.json()["calls"]),
                   [f"k{i}.o" for i in range(3)], "the three calls")
        s.check(all(os.path.getsize(t.path(f"k{i}.o")) > 0 for i in range(3)), "outputs written")


# ---- signals: the build's process group ------------------------------------------------------

def wait_until(pred, what, timeout=240):
    """Polls `pred` (a loaded 2-core machine starts a build slowly: a generous bound, no timing
    assertion); fails naming `what` when it does not hold within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            ft.fail(f"{what}: not within {timeout} s")
        time.sleep(0.1)


def group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def processes_naming(text):
    """The pids of processes (not this one) whose command line contains `text`."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(d))
        except OSError:
            pass
    return found


def group_commands(pgid):
    """The command names (comm) of the processes in process group `pgid`."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if int(rest[2]) == pgid:  # state, ppid, pgrp
            found.append(comm)
    return found


def snapshot(d):
    return sorted((os.path.relpath(os.path.join(r, f), d), os.path.getsize(os.path.join(r, f)))
                  for r, _, fs in os.walk(d) for f in fs)


def signal_plan(t, sig, body, started, *extra, want_killed=False):
    """Starts `plan -- sh -c SCRIPT` (SCRIPT: records its process group and shadow root, then
    `body`), sends `sig` to plan once `started(pgid)` holds, and checks what the issue asks: plan ends
    by the same signal, no process of the build's group is left (nor any naming the case's
    directory or the shadow root), the shadow root is gone, and no report claims the build exited
    128+N."""
    pgid_file, root_file = t.path("build.pgid"), t.path("build.root")
    script = f"echo $$ > {shlex.quote(pgid_file)}; echo \"$CUDA_HOME\" > {shlex.quote(root_file)}; "
    argv = [t.forge_exe, "plan", "--arch-list", "8.0", *extra, "--", "sh", "-c", script + body]
    # Files, not pipes: a process that outlives plan would hold a pipe open, and reading it to its
    # end would wait for that process.
    out_file, err_file = t.path("plan.out"), t.path("plan.err")
    pgid = None
    with open(out_file, "wb") as out_f, open(err_file, "wb") as err_f:
        # A stub cache of the case's own: every -dc object of a loop is a real stub compile.
        env = base_env(t, NVCC_FORGE_CACHE_DIR=t.path("cache"))
        proc = subprocess.Popen(argv, env=env, cwd=t.work, stdin=subprocess.DEVNULL,
                                stdout=out_f, stderr=err_f)
    try:
        wait_until(lambda: os.path.exists(root_file), "the build started")
        pgid = int(ft.read(pgid_file))
        wait_until(lambda: started(pgid), "the build at work")
        root = ft.read(root_file).strip()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            ft.fail(f"plan still running 240 s after {sig.name}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        survivors = pgid is not None and not group_gone(pgid)
        if survivors:  # failed below; not left running after the case
            os.killpg(pgid, signal.SIGKILL)
    with open(out_file, "rb") as f:
        out = f.read()
    err = ft.read(err_file)
    with ft.Soft() as s:
        s.check_eq(proc.returncode, -sig, f"plan's end ({err[-1500:]})")
        s.check(not survivors, f"a process of the build's group {pgid} outlived plan")
        s.check_eq(processes_naming(t.work), [], "processes naming the case's directory")
        s.check_eq(processes_naming(os.path.dirname(root)), [], "processes naming the shadow root")
        s.check(not os.path.exists(os.path.dirname(root)), f"the shadow root {root} is left")
        s.check_eq(out, b"", "no report on stdout: nothing was judged")
        s.check(f"stopped by {sig.name}" in err, err[-1500:])
        s.check(f"exited {128 + sig}" not in err, err[-1500:])
        s.check(("outlived the grace" in err) == want_killed, err[-1500:])
    return pgid


def nvcc_loop(t):
    """A script body that loops over nvcc, each -dc object a stub compile of its own (so the real
    nvcc is at work when the signal comes), and the directory it writes into."""
    t.nvcc()
    src = ft.write(t.path("k.cu"), "#error the stand-in never compiles the TU\n")
    out = t.path("out")
    os.makedirs(out)
    body = (f"i=0; while :; do nvcc -dc -gencode arch=compute_80,code=sm_80 {shlex.quote(src)} "
            f"-o {shlex.quote(out)}/k$i.o || exit 1; i=$((i+1)); done")
    return out, body


@ft.case("plan.signals.term_ends_a_loop_over_nvcc")
def case_signal_term_nvcc(t):
    """SIGTERM while a script loops over nvcc: everything ends, and nothing writes after plan has
    exited."""
    out, body = nvcc_loop(t)
    signal_plan(t, signal.SIGTERM, body, lambda _: os.path.exists(os.path.join(out, "k0.o")))
    # No process of the build is left (checked above): what is in out/ now is all there will be.
    before = snapshot(out)
    ft.check(processes_naming(t.work) == [] and snapshot(out) == before, "a write after plan")


@ft.case("plan.signals.int_ends_a_loop_over_nvcc")
def case_signal_int_nvcc(t):
    """SIGINT (it hung: passed to the direct child only, whose shell waited for a compiler that
    never heard of it)."""
    out, body = nvcc_loop(t)
    signal_plan(t, signal.SIGINT, body, lambda _: os.path.exists(os.path.join(out, "k0.o")))


@ft.case("plan.signals.hup_ends_a_sleeping_build")
def case_signal_hup_sleep(t):
    """`sh -c 'sleep 1000; echo'`: the sleep stayed behind."""
    t.nvcc()
    signal_plan(t, signal.SIGHUP, "sleep 1000; echo", lambda g: "sleep" in group_commands(g))


@ft.case("plan.signals.group_that_ignores_it_is_killed_after_the_grace")
def case_signal_grace(t):
    """A build that ignores the signal gets --grace seconds, then SIGKILL to its group; plan still
    ends by the signal it was sent."""
    t.nvcc()
    # The shell ignores SIGTERM before the sleep starts, and the sleep inherits that.
    signal_plan(t, signal.SIGTERM, "trap '' TERM; sleep 1000; echo",
                lambda g: "sleep" in group_commands(g), "--grace", "1", want_killed=True)


# ---- the kept stubs are checked before use ------------------------------------------------------

def kept_stubs(cache):
    d = os.path.join(cache, "plan")
    return {f[:-4] for f in os.listdir(d) if f.endswith(".out")} if os.path.isdir(d) else set()


@ft.case("plan.stub.poisoned_cache_is_refused_and_rebuilt")
def case_stub_poisoned(t):
    """A kept stub is checked before use. With the stub of another flag set in its place (its
    checksum file too), junk, or an empty file, plan named the file and trusted it: a false PASS,
    a build 'failure', a false FAIL. Each is named, removed and compiled again, and the verdict is
    the clean cache's."""
    root, calls = logging_toolkit(t)
    src = ft.write(t.path("k.cu"), "#error the stand-in never compiles the TU\n")
    cache = t.path("cache")
    env = base_env(t, NVCC_FORGE_CACHE_DIR=cache)
    env["PATH"] = os.path.join(root, "bin") + os.pathsep + env["PATH"]

    def build(gencode):
        return ["sh", "-c", f"nvcc -c -Xcompiler -fPIC {gencode} {shlex.quote(src)} -o k.o && "
                "nvcc -shared k.o -o k.so"]

    narrow = build("-gencode arch=compute_80,code=sm_80")
    wide = build("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90")
    plan(t, "8.0", ["k.so"], narrow, env=env).expect_rc(0)
    key_narrow = ft.only(list(kept_stubs(cache)), what="kept stub")
    r = plan(t, "8.0", ["k.so"], wide, env=env)
    r.expect_rc(1)  # the clean cache's verdict: sm_90 is extra
    key_wide = ft.only(list(kept_stubs(cache) - {key_narrow}), what="kept stub")
    d = os.path.join(cache, "plan")
    with open(os.path.join(d, key_narrow + ".out"), "rb") as f:
        narrow_out = f.read()
    narrow_sum = os.path.join(d, key_narrow + ".sum")
    poisons = {"another flag set's stub": (narrow_out, None),
               "junk": (b"this is not an object file\n", None), "empty": (b"", None)}
    with ft.Soft() as s:
        if s.check(os.path.exists(narrow_sum), "a kept stub has its checksum file"):
            with open(narrow_sum, "rb") as f:
                poisons["another flag set's stub and checksum"] = (narrow_out, f.read())
        for what, (data, sum_data) in poisons.items():
            ft.write(os.path.join(d, key_wide + ".out"), data)
            if sum_data is not None:
                ft.write(os.path.join(d, key_wide + ".sum"), sum_data)
            before = len(stub_calls(calls)[0])
            r = plan(t, "8.0", ["k.so"], wide, env=env)
            s.check_eq(r.rc, 1, f"{what}: the verdict of a clean cache ({r.err[-1500:]})")
            if r.rc in (0, 1):
                s.check_eq(carried(r.json()["gate"]), {"k": (["sm_80", "sm_90"], [])},
                           f"{what}: the targets the call asked for")
            s.check(os.path.join(d, key_wide + ".out") in r.err and "refusing" in r.err,
                    f"{what}: the kept stub is not named: {r.err[-1500:]}")
            s.check_eq(len(stub_calls(calls)[0]) - before, 1, f"{what}: stub compiles")
            with open(os.path.join(d, key_wide + ".out"), "rb") as f:
                s.check(f.read() != data, f"{what}: rebuilt in place")


# ---- the report --------------------------------------------------------------------------------

@ft.case("plan.report.build_that_never_ran")
def case_never_ran(t):
    """A build command that cannot start never ran: build_exit is null, with the reason."""
    t.nvcc()
    r = t.forge("plan", "--arch-list", "8.0", "--format", "json", "--", "no-such-command-forge",
                env=base_env(t))
    r.expect_rc(2)
    j = r.json()
    with ft.Soft() as s:
        s.check_eq(j["build_exit"], None, "build_exit")
        s.check_eq(j["verdict"], "error", "verdict")
        s.check("could not start" in j["reason"] and "no-such-command-forge" in j["reason"],
                j["reason"])


@ft.case("plan.report.gate_error_never_says_pass")
def case_gate_error(t):
    """The gate cannot read one of the files: plan's verdict is an error, and the gate's own
    verdict under it is no pass."""
    t.nvcc()
    src = ft.write(t.path("k.cu"), "#error the stand-in never compiles the TU\n")
    cmd = ["sh", "-c", "nvcc -shared -Xcompiler -fPIC -gencode arch=compute_80,code=sm_80 "
           f"{shlex.quote(src)} -o k.so && printf 'not an ELF' > junk.so"]
    r = t.forge("plan", "--arch-list", "8.0", "--gate", "*.so", "--", *cmd, env=base_env(t),
                timeout=280)
    r.expect_rc(2)
    with ft.Soft() as s:
        s.check(r.out.startswith("nvcc-forge plan: error"), r.out)
        s.check("verdict: pass" not in r.out, r.out)
        s.check("junk.so" in r.err, r.err)
    j = plan(t, "8.0", ["*.so"], cmd, cwd=t.work).json()
    ft.check_eq((j["verdict"], j["gate"]["verdict"]), ("error", "fail"), "verdicts")


@ft.case("plan.report.no_nvcc_is_no_cuda_hint")
def case_no_nvcc(t):
    """Plan compiles its stubs with the real nvcc whatever --cuda says: without one anywhere it
    must not suggest passing --cuda."""
    env = t.env(PATH="/usr/bin:/bin", CUDA_HOME=None, CUDA_PATH=None, NVCC_FORGE_REAL_NVCC=None,
                NVCC_FORGE_CACHE_DIR=os.path.join(t.work_root, "plan-cache"))
    if shutil.which("nvcc", path=env["PATH"]):
        ft.skip("an nvcc in /usr/bin or /bin")
    argv = [t.forge_exe, "plan", "--cuda", "13.0", "--", "true"]
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        # The last place looked at: hidden in a mount namespace of this command's own.
        if t.run(["unshare", "-m", "true"]).rc != 0:
            ft.skip("/usr/local/cuda/bin/nvcc exists and cannot be hidden (unshare -m)")
        argv = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs none /usr/local/cuda && exec "$@"',
                "sh", *argv]
    r = t.run(argv, env=env)
    r.expect_rc(2)
    with ft.Soft() as s:
        s.check("no real nvcc found" in r.err, r.err)
        s.check("--cuda" not in r.err, r.err)


@ft.case("plan.packages_dir_unusable_is_exit_2")
def case_packages_dir(t):
    """A packages directory named by NVCC_FORGE_PACKAGES_DIR that cannot be used stops plan before
    the build (exit 2 naming it)."""
    t.nvcc()
    marker = t.path("ran")
    for value in (t.path("no", "such", "dir"), "/" + "d" * 129999, t.work + "\n"):
        r = t.forge("plan", "--arch-list", "8.0", "--", "touch", marker,
                    env=base_env(t, NVCC_FORGE_PACKAGES_DIR=value))
        r.expect_rc(2)
        r.expect_err("NVCC_FORGE_PACKAGES_DIR")
        ft.check(not os.path.exists(marker), "the build ran")


if __name__ == "__main__":
    sys.exit(ft.main())
