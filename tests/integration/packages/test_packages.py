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


if __name__ == "__main__":
    sys.exit(ft.main())
