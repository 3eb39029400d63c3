#!/usr/bin/env python3
"""Package-style builds end to end (tests/fixtures/packages): a SageAttention-style script that
re-splits TORCH_CUDA_ARCH_LIST on ';'/',' builds one module with the space form and all four with
the ';' form; verify's expected extensions (--expect-extension, the package's verify.extensions)
name the absent modules, stamp records the modules, audit calls the lossy wheel extension-lost; a
flash-attention-style -gencode ladder. Each build runs once per build tree, shared by the cases.
Skipped (exit 77) without nvcc."""
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import product_cache  # noqa: E402  (tests/fixtures/product_cache.py)
from forge_test import check  # noqa: E402

LIST = "8.0 8.9 9.0"  # every capability on the fixture's whitelist, so each module carries it all
SAGE_MODULES = ["_qattn_sm80", "_qattn_sm89", "_qattn_sm90", "_fused"]
SAGE_GLOBS = [f"sageattention/{m}*.so" for m in SAGE_MODULES]
ENV_STAMP = {"SOURCE_DATE_EPOCH": "1700000000"}


def build(t, fixture, name, **env):
    """Runs tests/fixtures/packages/<fixture>/build.py once per build tree into WORK/pkgbuild/<name>
    (published by an atomic rename: parallel cases race to build the same thing)."""
    out = os.path.join(t.work_root, "pkgbuild", name)
    if os.path.isdir(out):
        return out
    nvcc = t.nvcc()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(out))
    e = t.env(PATH=os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", ""), CUDA_HOME=None,
              CUDA_PATH=None, **env)
    r = t.run([sys.executable, t.fixtures("packages", fixture, "build.py"), tmp], env=e, timeout=280)
    check(r.rc == 0, f"{fixture} build ({env}) exited {r.rc}: {r.err[-3000:]}")
    try:
        os.rename(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def sage(t, form):
    lst = LIST if form == "space" else LIST.replace(" ", ";")
    return build(t, "sageattention_like", f"sage_{form}", TORCH_CUDA_ARCH_LIST=lst)


def modules(out):
    d = os.path.join(out, "sageattention")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".so"))


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, "sha256=" + digest, str(len(data))]


def make_wheel(directory, out, version):
    """A minimal valid wheel of the build's sageattention/ tree."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"sageattention-{version}-cp311-cp311-linux_x86_64.whl")
    di = f"sageattention-{version}.dist-info"
    members = [("sageattention/__init__.py", b"")]
    for so in modules(out):
        with open(so, "rb") as f:
            members.append((f"sageattention/{os.path.basename(so)}", f.read()))
    members += [(f"{di}/METADATA", f"Metadata-Version: 2.1\nName: sageattention\nVersion: {version}\n".encode()),
                (f"{di}/WHEEL", b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                                b"Tag: cp311-cp311-linux_x86_64\n")]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for n, d in members:
        w.writerow(record_line(n, d))
    w.writerow([f"{di}/RECORD", "", ""])
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in members:
            z.writestr(n, d)
        z.writestr(f"{di}/RECORD", buf.getvalue())
    return path


def expect_args():
    return [a for g in SAGE_GLOBS for a in ("--expect-extension", g)]


@ft.case("packages.sageattention.space_form_builds_one_module")
def case_space_form(t):
    out = sage(t, "space")
    names = [os.path.basename(m).split(".")[0] for m in modules(out)]
    ft.check_eq(names, ["_fused"], "modules the space form builds")
    files = modules(out)
    with ft.Soft() as s:
        # The one module built carries the whole list: the per-module gate alone passes.
        r = t.forge("verify", *files, "--arch-list", LIST)
        s.check(r.rc == 0, f"the _fused module alone passes the per-module gate: {r!r}")
        # What must exist, from the command line: exit 1 naming each absent module.
        r = t.forge("verify", *files, "--arch-list", LIST, *expect_args())
        s.check(r.rc == 1, f"--expect-extension must fail the lossy build: {r!r}")
        for g in SAGE_GLOBS[:3]:
            s.check(g in r.out, f"text does not name {g}:\n{r.out}")
        s.check("extensions   FAIL" in r.out, f"no extensions row in the table:\n{r.out}")
        # ... and from the shipped package file.
        r = t.forge("verify", *files, "--arch-list", LIST, "--package", "sageattention",
                    "--format", "json")
        s.check(r.rc == 1, f"the package's verify.extensions must fail the lossy build: {r!r}")
        j = json.loads(r.out)
        s.check_eq(j["missing_extensions"], SAGE_GLOBS[:3], "missing_extensions")
        s.check_eq(j["verdict"], "fail", "verdict")
        s.check(all(e["reason"] for e in j["expected_extensions"]), j["expected_extensions"])
        s.check("arch_override.yml:" in j["expected_extensions"][0]["source"], j["expected_extensions"][0])


@ft.case("packages.sageattention.semicolon_form_builds_every_module")
def case_semicolon_form(t):
    out = sage(t, "semicolon")
    names = sorted(os.path.basename(m).split(".")[0] for m in modules(out))
    ft.check_eq(names, sorted(SAGE_MODULES), "modules the ';' form builds")
    wheel = make_wheel(t.path("dist"), out, "2.2.0")
    with ft.Soft() as s:
        for target in (modules(out), [wheel]):
            r = t.forge("verify", *target, "--arch-list", LIST, *expect_args())
            s.check(r.rc == 0, f"every module built: verify must pass: {r!r}")
            r = t.forge("verify", *target, "--arch-list", LIST, "--package", "sageattention",
                        "--format", "json")
            s.check(r.rc == 0, f"the package's verify.extensions must pass: {r!r}")
            j = json.loads(r.out)
            s.check_eq(j["missing_extensions"], [], "missing_extensions")
            s.check_eq([e["status"] for e in j["expected_extensions"]], ["ok"] * 4, "statuses")
        # A wheel member is matched from the wheel root: a glob one directory off matches nothing.
        r = t.forge("verify", wheel, "--arch-list", LIST, "--expect-extension", "lib/sageattention/_fused*.so")
        s.check(r.rc == 1 and "lib/sageattention/_fused*.so" in r.out, f"rooted match: {r!r}")


@ft.case("packages.sageattention.stamp_modules_and_extension_lost")
def case_stamp_audit(t):
    full = make_wheel(t.path("dist"), sage(t, "semicolon"), "2.2.0")
    lossy = make_wheel(t.path("dist"), sage(t, "space"), "2.2.1")
    ledger = t.path("ledger.jsonl")
    env = t.env(**ENV_STAMP)
    for w in (full, lossy):
        r = t.forge("stamp", w, "--arch-list", LIST, "--ledger", ledger, "--format", "json", env=env)
        check(r.rc == 0, f"stamp {w}: {r!r}")
    with zipfile.ZipFile(full) as z:
        info = json.loads(z.read("sageattention/_build_info.json"))
    recorded = {m["module"].split(".")[0]: m for m in info["modules"]}
    ft.check_eq(sorted(recorded), sorted(f"sageattention/{m}" for m in SAGE_MODULES), "stamped modules")
    for m in recorded.values():
        ft.check_eq(m["targets"], ["sm_80", "sm_89", "sm_90"], f"targets of {m['module']}")
        check(m["device_code"] is True, m)

    r = t.forge("audit", full, lossy, "--arch-list", LIST, "--ledger", ledger, "--format", "json")
    check(r.rc == 1, f"audit must fail on the lossy wheel: {r!r}")
    by = {os.path.basename(o["file"]): o for o in json.loads(r.out)["entries"]}
    with ft.Soft() as s:
        s.check_eq(by[os.path.basename(full)]["status"], "ok", "the full wheel")
        lost = by[os.path.basename(lossy)]
        s.check_eq(lost["status"], "extension-lost", "the lossy wheel")
        s.check_eq(sorted(m.split(".")[0] for m in lost["lost_extensions"]),
                   sorted(f"sageattention/{m}" for m in SAGE_MODULES[:3]), "lost_extensions")
    r = t.forge("audit", lossy, "--arch-list", LIST, "--ledger", ledger)
    check(r.rc == 1 and "extension-lost  " in r.out and os.path.basename(full) in r.out, f"text: {r!r}")


@ft.case("packages.flash_attn.knob_and_family_ladder")
def case_ladder(t):
    """The fixture builds what flash-attention's setup.py builds with this nvcc (13.0): from its
    own knob, never TORCH_CUDA_ARCH_LIST, a five-branch ladder with family targets and PTX for the
    newest number. Built as upstream defaults it, without the wrapper, the gate fails it: no 8.6
    (waived), no compute_90, and Thor's sm_110f extra on x86 (the failure issue 26 starts from)."""
    out = build(t, "flash_attn_like", "flash_default", TORCH_CUDA_ARCH_LIST="7.5",
                FLASH_ATTN_CUDA_ARCHS=None)
    so = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".so")]
    ft.check_eq(len(so), 1, "modules the build makes")
    glob = "flash_attn_2_cuda*.so"
    with ft.Soft() as s:
        r = t.forge("list", "--format", "json", so[0]).expect_ok()
        images = sorted({e["arch"] for e in r.json()})
        s.check_eq(images, sorted(["sm_80", "sm_90", "sm_100f", "sm_110f", "sm_120f",
                                   "compute_120"]), "the default ladder, family cubins, newest PTX")
        r = t.forge("verify", *so, "--package", "flash_attn", "--expect-extension", glob,
                    "--format", "json")
        s.check_eq(r.rc, 1, f"the default ladder against the package's x86 list: {r.out[-2000:]}")
        mod = ft.only(r.json()["extensions"], what="module") if r.rc in (0, 1) else {}
        s.check_eq(mod.get("missing_ptx"), ["compute_90"], "missing PTX")
        s.check([w.split()[0] for w in mod.get("waived", [])] == ["sm_86"], mod.get("waived"))
        s.check_eq(mod.get("extra"), ["sm_110f"], "extra on x86")
    # The knob alone decides: one number, its cubin and (the newest) its PTX.
    out = build(t, "flash_attn_like", "flash_knob_80", FLASH_ATTN_CUDA_ARCHS="80")
    so = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".so")]
    r = t.forge("list", "--format", "json", *so).expect_ok()
    ft.check_eq(sorted({e["arch"] for e in r.json()}), ["compute_80", "sm_80"], "FLASH_ATTN_CUDA_ARCHS=80")


@ft.case("packages.verify.host_only_module")
def case_host_only(t):
    # A host ELF with no GPU code stands for a pybind-only module: no nvcc needed.
    pkg = t.path("pkg")
    os.makedirs(pkg)
    host = os.path.join(pkg, "_host.so")
    shutil.copy("/bin/true", host)
    pdir = t.path("packages", "demo")
    os.makedirs(pdir)
    ft.write(os.path.join(pdir, "arch_override.yml"),
             'verify:\n  extensions:\n    - {module: "pkg/_host*.so", reason: "pybind glue", device_code: false}\n')
    with ft.Soft() as s:
        r = t.forge("verify", host, "--arch-list", "8.0", "--expect-extension", "pkg/_host*.so")
        s.check(r.rc == 1 and "no device code in pkg/_host*.so" in r.out, f"device code required: {r!r}")
        r = t.forge("verify", host, "--arch-list", "8.0", "--package", "demo", "--packages-dir",
                    t.path("packages"), "--format", "json")
        s.check(r.rc == 0, f"device_code: false accepts a host-only module: {r!r}")
        if r.rc == 0:
            s.check_eq(json.loads(r.out)["expected_extensions"][0]["status"], "ok", "status")
        ft.write(os.path.join(pdir, "arch_override.yml"),
                 'verify:\n  extensions:\n    - {module: "pkg/_host*.so"}\n')
        r = t.forge("verify", host, "--arch-list", "8.0", "--package", "demo", "--packages-dir",
                    t.path("packages"))
        s.check(r.rc == 2 and "reason" in r.err, f"an entry without a reason is unusable input: {r!r}")


# ---- inject, then pass: the invariant over every package file ---------------------------------

LANES = ("linux_x86_64", "linux_aarch64")
ROW_ONLY = "(the policy row)"  # no package: the policy row alone (an unknown package is an error)
KERNEL = "__global__ void k(float* p) { p[threadIdx.x] += 1.0f; }\n"
MODES = ("observe", "strict", "inject")


def package_names(t):
    """Every package file in packages/ (a directory with arch_override.yml or build_matrix.yml)
    and the policy rows alone: a new package file is covered by adding it."""
    root = t.src("packages")
    names = [d for d in sorted(os.listdir(root))
             if any(os.path.isfile(os.path.join(root, d, f)) for f in ("arch_override.yml", "build_matrix.yml"))]
    check(names, f"no package file under {root}")
    return names + [ROW_ONLY]


def package_flags(package):
    return [] if package == ROW_ONLY else ["--package", package]


def resolved(t, package, lane, cuda):
    return t.forge_json("resolve", *package_flags(package), "--cuda", cuda, "--platform", lane, "--format", "json")


def policy_env(t, package, lane, cuda):
    """How a build names its policy to the wrapper: the package, or (no package) the row's list."""
    if package != ROW_ONLY:
        return {"NVCC_FORGE_PACKAGE": package}
    return {"NVCC_FORGE_ARCH_LIST": resolved(t, package, lane, cuda)["builds_as_list"]}


def tu_shapes(expected, emittable):
    """The TU shapes a real build emits, from what this package builds (`expected`, nvcc names):
    {name: (compile args, rdc)}. A shape whose target the toolkit cannot emit is left out."""
    sass = [n for n in expected if n.startswith("sm_")]
    plain = [n for n in sass if n[-1].isdigit()] or ["sm_80"]
    lo = plain[0][3:]
    fam = next((n for n in sass if n.endswith("f")), "sm_100f")
    a_only = next((n for n in sass if n.endswith("a")), "sm_90a")

    def gencode(target):
        return ["-gencode", f"arch=compute_{target[3:]},code={target}"]
    shapes = {
        "narrowed-ladder": (gencode(f"sm_{lo}"), False),
        "plain+f": (gencode(f"sm_{lo}") + ["-gencode", f"arch=compute_{fam[3:]},code=sm_{fam[3:-1]}"], False),
        "f-only": (["-gencode", f"arch=compute_{fam[3:]},code=sm_{fam[3:-1]}"], False),
        "a-only": (gencode(a_only), False),
        "arch=sm_X": ([f"-arch=sm_{lo}"], False),
        "arch+code": ([f"-arch=compute_{lo}", f"-code=sm_{lo},compute_{lo}"], False),
        "rdc+dlink": (gencode(f"sm_{lo}"), True),
    }
    return {k: v for k, v in shapes.items()
            if all(x.rstrip("af") in emittable for x in (f"sm_{lo}", fam, a_only))}


def gate_view(t, product, package, lane, cuda):
    """verify --package on the product: (missing targets, waived targets, extra, the module's verdict)."""
    r = t.forge("verify", product, *package_flags(package), "--cuda", cuda, "--platform", lane, "--format", "json")
    check(r.rc in (0, 1), f"verify {product}: {r!r}")
    mod = ft.only(r.json()["extensions"], what="module")
    return (sorted(mod["missing_sass"] + mod["missing_ptx"]), sorted(w.split()[0] for w in mod["waived"]),
            sorted(mod["extra"]), mod["verdict"])


def compile_case(t, root, case, env, args, rdc):
    """The shape through the wrapper in the case's directory, linked into k.so: (the log records,
    the nvcc exit codes, the product or None when a call was refused)."""
    cwd = os.path.join(root, case)
    os.makedirs(cwd)
    log = os.path.join(cwd, "log.jsonl")
    e = dict(env, NVCC_FORGE_LOG=log)
    objs = ["k.o"]
    calls = [["nvcc", "-c", "../k.cu", "-o", "k.o", "-Xcompiler", "-fPIC", *args]]
    if rdc:
        calls[0][1:1] = ["-rdc=true"]
        calls.append(["nvcc", "-dlink", "k.o", "-o", "dlink.o", "-Xcompiler", "-fPIC", *args])
        objs.append("dlink.o")
    rcs = []
    for c in calls:
        rcs.append(ft.run(c, env=e, cwd=cwd).rc)
        if rcs[-1] != 0:
            return ft.jsonl(log), rcs, None
    r = ft.run(["g++", "-shared", "-o", "k.so", *objs], cwd=cwd)
    check(r.rc == 0, f"{case}: link: {r!r}")
    return ft.jsonl(log), rcs, os.path.join(cwd, "k.so")


def judge_case(t, root, job):
    """One (package, lane, shape, mode): compiled, gated, compared with the log. Mismatches as text."""
    package, lane, shape, mode, args, rdc, env, cuda = job
    case = f"{package}.{lane}.{shape}.{mode}"
    recs, rcs, product = compile_case(t, root, case, dict(env, NVCC_FORGE_MODE=mode,
                                                         NVCC_FORGE_PLATFORM=lane), args, rdc)
    said = sorted({m for r in recs for m in r["missing"]})
    dropped = sorted({m for r in recs for m in r["missing"] if m not in r["injected"]})
    extra = sorted({x for r in recs for x in r["extra"]})
    arch_specific = any(r["arch_specific"] for r in recs)
    bad = []
    key = (package, lane, shape)
    if mode == "strict" and any(r["action"] == "refused" for r in recs):
        # Refused: its product is the observe case's (the call as given), whose gate must fail.
        return key, mode, bad, True
    if product is None:
        return key, mode, [f"{case}: exit {rcs}: {recs}"], False
    missing, waived, gate_extra, verdict = gate_view(t, product, package, lane, cuda)
    logged = dropped if mode == "inject" else said
    if missing != sorted(set(logged) - set(waived)):
        bad.append(f"{case}: the gate's missing {missing} (waived {waived}), the log's {logged}")
    if gate_extra != extra:
        bad.append(f"{case}: the gate's extra {gate_extra}, the log's {extra}")
    if mode == "inject" and not arch_specific and (missing or (not extra and verdict != "pass")):
        bad.append(f"{case}: a generic TU injected and still failing the gate: missing {missing}, {verdict}")
    if mode == "strict" and missing:
        bad.append(f"{case}: strict let through a call whose product misses {missing}")
    return key, mode, bad, bool(missing)


@ft.case("packages.inject_then_pass")
def case_inject_then_pass(t):
    """Inject, then pass (issue 35): for every package file (and the policy rows alone), both lanes,
    this toolkit and each TU shape a real build emits, one kernel compiled through the wrapper and
    linked: in inject mode `verify --package` finds nothing missing but what the log named (nothing
    for a generic TU), observe logs exactly what the gate then finds missing, strict refuses exactly
    the calls whose product misses a target, and the gate's extras are the log's. The same nvcc
    argv is compiled once (fixtures/packages/argv_cache_nvcc.py, and kept for the next run under
    fixtures/product_cache.py's rule); two at a time."""
    import concurrent.futures
    nvcc = t.nvcc()
    cuda = ft.nvcc_release(nvcc)
    # The plain SMs it emits; each has its `a` form from 9.0 and its `f` form from 10.0 (CUDA 12.9
    # and later, which the suite's toolkits are).
    emittable = set(ft.run([nvcc, "--list-gpu-code"]).out.split())
    root = t.path("cases")
    ft.write(os.path.join(root, "k.cu"), KERNEL)
    wrap = t.path("wrapbin")
    os.makedirs(wrap)
    os.symlink(t.forge_exe, os.path.join(wrap, "nvcc"))
    count = t.path("compiles.txt")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NVCC_FORGE_") and k not in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")}
    env.update(PATH=wrap + os.pathsep + os.environ["PATH"], NVCC_FORGE_REAL_NVCC=t.fixtures("packages", "argv_cache_nvcc.py"),
               REAL_NVCC=os.path.realpath(nvcc), ARGV_CACHE_COUNT=count,
               # Kept from the last run where the suite keeps nvcc's products (a warm CI run).
               ARGV_CACHE_DIR=product_cache.kept_dir("argv-nvcc", nvcc) or t.path("argv-cache"),
               NVCC_FORGE_CACHE_DIR=t.path("forge-cache"), NVCC_FORGE_QUIET="1")
    jobs = []
    packages = package_names(t)
    full = os.environ.get("FORGE_INVARIANT_FULL") == "1"
    pairs = [(p, lane) for p in packages for lane in LANES]
    for i, (package, lane) in enumerate(pairs):
        shapes = tu_shapes(resolved(t, package, lane, cuda)["builds_as"], emittable)
        cell_env = dict(env, **policy_env(t, package, lane, cuda))
        # Sampled: observe and strict run every shape (the call as given: one compile each,
        # shared by every package), inject every arch-specific shape (nothing is added) and two
        # generic shapes per (package, lane), rotating, so that each shape meets several packages
        # and lanes: every injected call is a compile of its own, and the whole product took ~290 s
        # here. FORGE_INVARIANT_FULL=1 runs it whole.
        generic = [k for k in shapes if k != "a-only"]
        sampled = {generic[(2 * i + j) % len(generic)] for j in range(2)} | {"a-only"}
        for shape, (args, rdc) in shapes.items():
            for mode in MODES:
                if mode == "inject" and shape not in sampled and not full:
                    continue
                jobs.append((package, lane, shape, mode, args, rdc, cell_env, cuda))
    check(jobs, "no case to run")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: judge_case(t, root, j), jobs))
    bad = [b for _, _, bs, _ in results for b in bs]
    # strict refuses exactly the calls whose product (observe's: the call as given) misses a target.
    fails = {(key, mode): flag for key, mode, _, flag in results}
    for (key, mode), flag in fails.items():
        if mode == "strict" and flag != fails.get((key, "observe")):
            bad.append(f"{'.'.join(key)}: strict {'refused' if flag else 'ran'} it, the gate "
                       f"{'fails' if fails.get((key, 'observe')) else 'passes'} the call as given")
    compiles = len(ft.read(count).splitlines()) if os.path.exists(count) else 0
    per_mode = {m: sum(1 for j in jobs if j[3] == m) for m in MODES}
    print(f"inject_then_pass: {len(packages)} packages (the policy rows alone among them) x "
          f"{len(LANES)} lanes, CUDA {cuda}: {len(jobs)} cases ("
          + ", ".join(f"{n} {m}" for m, n in per_mode.items())
          + f"{'' if full else '; inject sampled'}), {compiles} nvcc compiles")
    check(not bad, "\n".join(bad))


if __name__ == "__main__":
    sys.exit(ft.main())
