#!/usr/bin/env python3
"""ForgeArch end to end: tests/integration/cmake/project configured and built with the real nvcc,
with both generators, in each scenario the project's CASE selects (pass, narrow, observe, inject),
and once through find_package(NvccForge) from an installed tree; tests/fixtures/cmake/subprojects
(targets from add_subdirectory and FetchContent with their own lists and launchers) gated by name,
by ALL, and routed through the wrapper."""
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATORS = ("Ninja", "Unix Makefiles")


NVCC = "/usr/local/cuda/bin/nvcc"


def detected_compilers(t, gen):
    """CMakeFiles/<version>/ of a tree where CMake found and tested the C++ and CUDA compilers for
    `gen`: done once for all the cmake.* cases (under a lock: CTest runs them side by side), keyed
    by CMake's version, the generator, the compilers (path, size, time) and the variables CMake
    reads them from. Each case's tree starts from a copy (seeded()), as a tree configured before:
    CMake's detection (~2.5 s of CPU, the nvcc runs of its compiler id and ABI checks) is not what
    these cases test."""
    cxx = shutil.which(os.environ.get("CXX") or "c++") or ""
    ident = [ft.run(["cmake", "--version"]).out, gen, NVCC]
    for path in (cxx, NVCC):
        st = os.stat(os.path.realpath(path)) if path and os.path.exists(path) else None
        ident.append([os.path.realpath(path) if st else path, st and st.st_size, st and st.st_mtime_ns])
    ident.append({k: os.environ.get(k) for k in ("CXX", "CXXFLAGS", "CUDACXX", "CUDAFLAGS", "CUDAHOSTCXX",
                                                 "CUDAARCHS", "PATH")})
    key = hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:16]
    top = os.path.join(t.work_root, "_compiler-detection", f"{gen.replace(' ', '_')}-{key}")
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        files = os.path.join(top, "b", "CMakeFiles")
        if not os.path.exists(os.path.join(top, "done")):
            ft.write(os.path.join(top, "src", "CMakeLists.txt"),
                     "cmake_minimum_required(VERSION 3.25)\nproject(detect LANGUAGES CXX)\n"
                     "enable_language(CUDA)\n")
            shutil.rmtree(os.path.join(top, "b"), ignore_errors=True)
            r = t.run(["cmake", "-S", os.path.join(top, "src"), "-B", os.path.join(top, "b"), "-G", gen,
                       f"-DCMAKE_CUDA_COMPILER={NVCC}"], timeout=280)
            ft.check(r.rc == 0, f"CMake cannot detect the compilers:\n{r.out}{r.err}")
            ft.write(os.path.join(top, "done"), "")
    versions = [d for d in os.listdir(files) if re.fullmatch(r"\d+\.\d+\.\d+.*", d)]
    ft.check(len(versions) == 1, f"{files}: want one CMakeFiles/<version>, got {versions}")
    return os.path.join(files, versions[0])


def seeded(t, gen, tree):
    """`tree`, new, holding the detected compilers: CMake loads CMakeFiles/<version>/ instead of
    detecting again when the cache says its platform was initialized."""
    detected = detected_compilers(t, gen)
    shutil.copytree(detected, os.path.join(tree, "CMakeFiles", os.path.basename(detected)))
    ft.write(os.path.join(tree, "CMakeCache.txt"), "CMAKE_PLATFORM_INFO_INITIALIZED:INTERNAL=1\n")


def build(t, gen, case, mode, project=os.path.join(HERE, "project"), defs=(), build_args=()):
    """Configures and builds `project` for `case`; returns (build rc, log text, build dir, fail)."""
    bdir = t.work
    log_path = os.path.join(bdir, "log")
    log = []

    def fail(msg):
        ft.fail(f"{msg}\n---- build log\n" + "".join(log))

    tree = os.path.join(bdir, "b")
    if not os.path.exists(os.path.join(tree, "CMakeCache.txt")):
        seeded(t, gen, tree)
    cfg = ["-S", project, "-B", tree, "-G", gen, f"-DCASE={case}",
           f"-DFORGE_SOURCE_DIR={t.source}", f"-DFORGE_PACKAGES_DIR={t.fixtures('cmake', 'packages')}",
           f"-DCMAKE_CUDA_COMPILER={NVCC}", *defs]
    if mode == "find_package":
        prefix = os.path.join(bdir, "prefix")
        r = t.run(["cmake", "--install", t.build, "--prefix", prefix])
        ft.write(os.path.join(bdir, "install.log"), r.out + r.err)
        if r.rc != 0:
            fail(f"install\n{r!r}")
        ft.check(os.access(os.path.join(prefix, "bin", "nvcc-forge"), os.X_OK),
                 "install did not produce bin/nvcc-forge")
        ft.check(os.path.isfile(os.path.join(prefix, "lib", "cmake", "NvccForge", "NvccForgeConfigVersion.cmake")),
                 "no CMake package version file")
        ft.check(os.path.isfile(os.path.join(prefix, "share", "nvcc-forge", "policy", "arch_policy.yml")),
                 "no installed policy data")
        cfg += ["-DUSE_FIND_PACKAGE=ON", f"-DCMAKE_PREFIX_PATH={prefix}"]
    else:
        cfg += [f"-DNvccForge_EXECUTABLE={t.forge_exe}"]
    r = t.run(["cmake", *cfg], timeout=280)
    log.append(r.out + r.err)
    if r.rc != 0:
        ft.write(log_path, "".join(log))
        fail("configure")
    # The seeded detection must hold: a CMake that detects again anyway costs every case its
    # compiler checks again (bench/RESULTS.md, "Cold CI"), unnoticed unless this says so.
    if "compiler identification is" in r.out:
        fail("CMake detected the compilers again in a tree seeded with their detection")
    r = t.run(["cmake", "--build", os.path.join(bdir, "b"), *build_args], timeout=280)
    log.append(r.out + r.err)
    ft.write(log_path, "".join(log))
    return r.rc, "".join(log), os.path.join(bdir, "b"), fail


def check_case(t, gen, case, mode="path"):
    rc, log, b, fail = build(t, gen, case, mode)
    compile_log = os.path.join(b, "forge-compile.jsonl")
    if case == "pass":
        if rc != 0:
            fail("build should pass")
        if "PASS" not in log:
            fail("no verify table in the build log")
    elif case == "narrow":
        if rc == 0:
            fail("a target that narrows its own CUDA_ARCHITECTURES must fail at POST_BUILD")
        if "missing sm_90" not in log:
            fail("verify table does not name the missing sm_90")
    elif case == "expect_missing":
        if rc == 0:
            fail("EXPECT_EXTENSION names a module the project never builds: POST_BUILD must fail")
        if "libkernels_sm90*.so" not in log or "extensions   FAIL" not in log:
            fail("the verify table does not name the absent module")
    elif case == "observe":
        if rc == 0:
            fail("observe does not change the build: the gate must still fail")
        compiles = [r for r in ft.jsonl(compile_log)
                    if any(src.endswith("kernels.cu") for src in r.get("sources", []))]
        if not compiles:
            fail("compile log has no record of the kernels.cu compile")
        for r in compiles:
            # The drop itself, not a mention of sm_90 anywhere (the "policy" array always has it).
            if not {"sm_90", "compute_90"} <= set(r["missing"]) or r["mode"] != "observe" \
                    or r["injected"] or "sm_80" not in r["requested"]:
                fail(f"compile log record does not show the drop in observe mode: {r}")
        if "dropped" not in log:
            fail("no drop line on the compile's stderr")
    elif case == "inject":
        if rc != 0:
            fail("inject mode puts the policy's targets back: the gate must pass")
        compiles = [r for r in ft.jsonl(compile_log)
                    if any(src.endswith("kernels.cu") for src in r.get("sources", []))]
        if not compiles or any(r["action"] != "injected" or not {"sm_90", "compute_90"} <= set(r["injected"])
                               for r in compiles):
            fail(f"log shows no injection of sm_90 compute_90: {compiles}")


# Each forge_assert_fatbin option: on, the build passes and the verify table says why; then the
# same tree reconfigured with the option off relinks (the POST_BUILD command changed) and fails
# naming the target the option excused.
OPTIONS = {
    "allow_missing": (["sm_90 (--allow-missing)", "compute_90 (--allow-missing)"], ["missing sm_90"]),
    "allow_extra": (["sm_86"], ["not in the list: sm_86"]),
    "allow_pure_python": (["allow_pure_python"], ["device-code"]),
    "max_toolkit": (["every cubin within its toolkit bound"], ["> 1.0"]),
}


def check_option(t, option):
    on_words, off_words = OPTIONS[option]
    rc, log, _, fail = build(t, "Ninja", option, "path", defs=["-DOPT=ON"])
    if rc != 0:
        fail(f"{option} on: the build must pass")
    for w in ["PASS", "verdict: pass"] + on_words:
        if w not in log:
            fail(f"{option} on: build log lacks {w!r}")
    rc, log, _, fail = build(t, "Ninja", option, "path", defs=["-DOPT=OFF"])
    if rc == 0:
        fail(f"{option} off: the same target must fail the gate")
    for w in ["FAIL", "verdict: FAIL"] + off_words:
        if w not in log:
            fail(f"{option} off: build log lacks {w!r}")


for _opt in OPTIONS:
    ft.add_case(f"cmake.option.{_opt}", lambda t, o=_opt: check_option(t, o))

for _gen in GENERATORS:
    for _case in ("pass", "narrow", "observe", "inject"):
        ft.add_case(f"cmake.{_case}.{_gen.replace(' ', '_')}",
                    lambda t, g=_gen, c=_case: check_case(t, g, c))
ft.add_case("cmake.expect_extension", lambda t: check_case(t, "Ninja", "expect_missing"))
ft.add_case("cmake.find_package", lambda t: check_case(t, "Ninja", "pass", "find_package"))

# The lists the fixture's subprojects hard-code (80;90: SASS and PTX for both) widen
# forge_cmake_sample's "8.0 9.0+PTX" by compute_80 and equal forge_cmake_subprojects'.
WIDENED, AGREES = "forge_cmake_sample", "forge_cmake_subprojects"


def build_subprojects(t, case, package, gen="Ninja"):
    # -k 0: Ninja keeps going after the first failed gate, so every gate's table is in the log.
    return build(t, gen, case, "path", project=t.fixtures("cmake", "subprojects"),
                 defs=[f"-DFORGE_PACKAGE={package}"], build_args=["--", "-k", "0"] if gen == "Ninja" else [])


def verdicts(log):
    """{binary basename: PASS|FAIL} from the verify tables in a build log."""
    out = {}
    for line in log.splitlines():
        word, _, path = line.partition("  ")
        if word in ("PASS", "FAIL") and path.startswith("/"):
            out[os.path.basename(path.strip())] = word
    return out


@ft.case("cmake.arch_knob")
def arch_knob(t):
    """forge_arch_resolve(PACKAGE flash_attn) exports FLASH_ATTN_CUDA_ARCHS for the lane (x86 without
    Thor's 110, aarch64 with it) to the caller and to the configure step's processes, names what
    the knob cannot express, and leaves a value the caller set alone. Configure only: no nvcc."""
    if not shutil.which("cmake"):
        ft.skip("cmake not on PATH")
    env = t.env(FLASH_ATTN_CUDA_ARCHS=None)

    def configure(name, *defs, env=env):
        r = t.run(["cmake", "-S", os.path.join(HERE, "knob"), "-B", t.path(name),
                   f"-DFORGE_SOURCE_DIR={t.source}", f"-DNvccForge_EXECUTABLE={t.forge_exe}",
                   *defs], env=env, timeout=120)
        ft.check(r.rc == 0, f"configure {name}: {r!r}")
        return r.out

    with ft.Soft() as s:
        out = configure("x86", "-DPLATFORM=linux_x86_64")
        for what in ("var", "env", "child"):
            want = "FLASH_ATTN_CUDA_ARCHS=80;90;100;120" if what == "child" else "80;90;100;120"
            s.check(f"knob-{what}=[{want}]" in out, out)
        s.check("FLASH_ATTN_CUDA_ARCHS cannot express 8.6" in out and "left to the wrapper's "
                "injection" in out, out)
        out = configure("arm", "-DPLATFORM=linux_aarch64")
        s.check("knob-var=[80;90;100;110;120]" in out, out)
        out = configure("set", "-DPLATFORM=linux_x86_64", "-DFLASH_ATTN_CUDA_ARCHS=80")
        s.check("knob-var=[80]" in out and "knob-env=[]" in out, out)
        s.check("FLASH_ATTN_CUDA_ARCHS is set already: left alone" in out, out)
        out = configure("env", "-DPLATFORM=linux_x86_64", env=t.env(FLASH_ATTN_CUDA_ARCHS="90"))
        s.check("knob-env=[90]" in out and "knob-var=[]" in out, out)


@ft.case("cmake.subprojects.explicit")
def subprojects_explicit(t):
    """forge_assert_fatbin(<target>) on targets made in other directories (add_subdirectory, an
    ALIAS from FetchContent): each gate fails the build with its table."""
    rc, log, _, fail = build_subprojects(t, "explicit", WIDENED)
    if rc == 0:
        fail("the subprojects widen the list: the gates must fail the build")
    if verdicts(log) != {"vendored_app": "FAIL", "libfetched_kernels.so": "FAIL"}:
        fail(f"want a FAIL table for each subproject target, got {verdicts(log)}")
    if "not in the list: compute_80" not in log:
        fail("verify table does not name the extra compute_80")


@ft.case("cmake.subprojects.all")
def subprojects_all(t):
    """forge_assert_fatbin(ALL) called before the subprojects exist gates every built library and
    executable with device code (one through a static library), not host-only or EXCLUDE_FROM_ALL
    ones."""
    rc, log, _, fail = build_subprojects(t, "all", WIDENED)
    if "forge_assert_fatbin(ALL): gating top_app, vendored_app, fetched_kernels\n" not in log:
        fail("configure log does not list exactly the gated targets")
    if rc == 0:
        fail("the subprojects widen the list: the gates must fail the build")
    want = {"top_app": "PASS", "vendored_app": "FAIL", "libfetched_kernels.so": "FAIL"}
    if verdicts(log) != want:
        fail(f"want verify tables {want}, got {verdicts(log)}")


@ft.case("cmake.subprojects.agree")
def subprojects_agree(t):
    """The gates pass when the list agrees (Makefile generator); a changed list reruns them."""
    rc, log, b, fail = build_subprojects(t, "all", AGREES, gen="Unix Makefiles")
    if rc != 0:
        fail("the subprojects build the policy's list: the build must pass")
    want = {"top_app": "PASS", "vendored_app": "PASS", "libfetched_kernels.so": "PASS"}
    if verdicts(log) != want:
        fail(f"want verify tables {want}, got {verdicts(log)}")
    r = t.run(["cmake", f"-DFORGE_PACKAGE={WIDENED}", b], timeout=280)
    if r.rc != 0:
        fail(f"reconfigure\n{r!r}")
    r = t.run(["cmake", "--build", b, "--", "-k"], timeout=280)
    again = r.out + r.err
    if r.rc == 0 or verdicts(again).get("vendored_app") != "FAIL":
        fail(f"a narrower list must rerun the gate of an unchanged binary and fail it\n{again}")


@ft.case("cmake.subprojects.wrapper")
def subprojects_wrapper(t):
    """forge_use_wrapper reaches targets whose project set its own launcher (the variable, the
    target property), keeps that launcher after nvcc-forge, and names what it cannot reach."""
    rc, log, b, fail = build_subprojects(t, "wrapper", WIDENED)
    if rc != 0:
        fail("observe mode does not change the build: it must pass")
    for target in ("vendored_app", "fetched_kernels"):
        if f"{target} (its launcher '" not in log:
            fail(f"configure log does not say {target}'s own launcher was kept")
    if "could not reach: external_cuda (ExternalProject" not in log:
        fail("configure log does not name the ExternalProject as not reached")
    logged = {os.path.basename(s) for r in ft.jsonl(os.path.join(b, "forge-compile.jsonl")) for s in r["sources"]}
    if logged != {"app.cu", "kernels.cu"}:
        fail(f"want both subprojects' compiles in the wrapper's log, got {logged}")
    calls = ft.read(os.path.join(b, "project-launcher.log")).splitlines()
    if len(calls) != 2 or any(os.path.basename(c.split(" ")[0]) != "nvcc" for c in calls):
        fail(f"the project's launcher must run after nvcc-forge, handed the real nvcc: {calls}")

if __name__ == "__main__":
    sys.exit(ft.main())
