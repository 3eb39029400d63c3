#!/usr/bin/env python3
"""The recipes a user copies into a pipeline, checked without Docker or GitHub: the pre-commit hook
(`pre-commit try-repo` on this repository), the composite GitHub Action (its steps run as a
script around a build through the shim it binds) and the cibuildwheel block (cibuildwheel lists
its identifiers; its before-all and repair commands run here). pre-commit and cibuildwheel are
PyPI tools `.ci/install-deps.sh` puts in $NVCC_FORGE_TOOLS_DIR."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402


GATED_CU = """// needs 8.9, which no policy row lists
__global__ void k(float* x) {
#if __CUDA_ARCH__ >= 890
    x[0] = 1.0f;
#endif
}
"""
PLAIN_CU = "__global__ void k(float* x) { x[0] = 1.0f; }\n"


@ft.case("recipes.precommit.try_repo")
def precommit_try_repo(t):
    """.pre-commit-hooks.yaml as pre-commit runs it from this repository (uncommitted edits too):
    the hook passes on a clean file, fails on an arch gate no policy row covers, and names it."""
    t.nvcc()  # no args in the hook: the policy row of the nvcc found here
    pc = os.path.join(t.tools_dir, "pre-commit-4.0.1")
    if not os.path.isfile(os.path.join(pc, "pre_commit", "__init__.py")):
        ft.skip(f"pre-commit not installed in {pc} (.ci/install-deps.sh)")
    env = t.env(PYTHONPATH=pc, PRE_COMMIT_HOME=os.path.join(t.work, "pc-home"),
                PATH=os.path.dirname(t.forge_exe) + os.pathsep + os.environ.get("PATH", ""),
                GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@t")
    proj = os.path.join(t.work, "proj")
    os.makedirs(os.path.join(proj, "csrc"))
    t.run(["git", "init", "-q", proj], env=env).expect_rc(0)
    for name, text in (("csrc/plain.cu", PLAIN_CU), ("README.txt", "not linted\n")):
        with open(os.path.join(proj, name), "w", encoding="utf-8") as f:
            f.write(text)
    try_repo = [sys.executable, "-m", "pre_commit", "try-repo", t.source, "nvcc-forge-lint",
                "--all-files"]
    t.run(["git", "add", "-A"], env=env, cwd=proj).expect_rc(0)
    r = t.run(try_repo, env=env, cwd=proj)
    ft.check(r.rc == 0, f"a clean tree fails the hook:\n{r!r}")
    r.expect_out("nvcc-forge lint")
    r.expect_out("Passed")
    with open(os.path.join(proj, "csrc", "gated.cu"), "w", encoding="utf-8") as f:
        f.write(GATED_CU)
    t.run(["git", "add", "-A"], env=env, cwd=proj).expect_rc(0)
    r = t.run(try_repo, env=env, cwd=proj)
    ft.check(r.rc == 1, f"the gated file passes the hook:\n{r!r}")
    r.expect_out("Failed")
    r.expect_out("csrc/gated.cu:3: arch-gate: __CUDA_ARCH__ >= 890 (needs 8.9;")


def run_action(t, action, inputs, env, log):
    """Runs a composite action's steps as GitHub would, for what this action uses: `if:` of the
    form inputs.X == 'Y' / != '' joined by &&, ${{ inputs.X }} in run and env, GITHUB_ENV and
    GITHUB_PATH files read back between steps. Returns the outputs of the steps that ran."""
    import yaml
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    values.update(inputs)
    subst = lambda text: re.sub(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}",
                                lambda m: values[m.group(1)], text)
    gh_env, gh_path = os.path.join(t.work, "github_env"), os.path.join(t.work, "github_path")
    outs = []
    for step in action["runs"]["steps"]:
        cond = step.get("if", "true")
        ok = True
        for term in cond.split("&&"):
            m = re.fullmatch(r"\s*inputs\.([a-z-]+)\s*(==|!=)\s*'([^']*)'\s*", term)
            if term.strip() == "true":
                continue
            ft.check(m, f"a condition the test cannot read: {cond}")
            ok = ok and ((values[m.group(1)] == m.group(3)) == (m.group(2) == "=="))
        if not ok:
            continue
        ft.check_eq(step["shell"], "bash", "shell")
        step_env = dict(env, GITHUB_ENV=gh_env, GITHUB_PATH=gh_path, RUNNER_TEMP=t.work)
        for k, v in (step.get("env") or {}).items():
            step_env[k] = subst(str(v))
        r = t.run(["bash", "-e", "-c", subst(step["run"])], env=step_env)
        log.append(f"{step['name']}: exit {r.rc}")
        outs.append(r)
        ft.check(r.rc == 0, f"step {step['name']!r} failed:\n{r!r}")
        if os.path.exists(gh_env):
            for line in open(gh_env, encoding="utf-8").read().splitlines():
                k, v = line.split("=", 1)
                env[k] = v
        if os.path.exists(gh_path):
            for line in open(gh_path, encoding="utf-8").read().splitlines():
                env["PATH"] = line + os.pathsep + env["PATH"]
    return outs


@ft.case("recipes.actions.steps_as_script")
def actions_steps_as_script(t):
    """examples/github-actions: the composite action's steps run as a script (setup, a build
    through the shim it binds, gate), and the example workflow uses it as it expects."""
    import yaml
    nvcc = t.nvcc()
    with open(t.src("examples", "github-actions", "action.yml"), encoding="utf-8") as f:
        action = yaml.safe_load(f)
    with open(t.src("examples", "github-actions", "workflow.yml"), encoding="utf-8") as f:
        workflow = yaml.safe_load(f)
    uses = [s for job in workflow["jobs"].values() for s in job["steps"]
            if "nvcc-forge/examples/github-actions@" in s.get("uses", "")]
    ft.check_eq([s["with"]["command"] for s in uses], ["setup", "gate"], "the workflow's uses")
    for s in uses:
        ft.check(set(s["with"]) <= set(action["inputs"]), f"inputs the action lacks: {s['with']}")
    env = t.env(PATH=os.path.dirname(t.forge_exe) + os.pathsep + os.path.dirname(nvcc) +
                os.pathsep + os.environ.get("PATH", ""), CUDA_HOME=os.path.dirname(os.path.dirname(nvcc)))
    log = []
    run_action(t, action, {"command": "setup", "install": "", "policy-args": "--arch-list '7.5 8.0'"},
               env, log)
    ft.check_eq(env.get("NVCC_FORGE_ARCH_LIST"), "7.5 8.0", "GITHUB_ENV's arch list")
    shim = os.path.join(t.work, "nvcc-forge-shim")
    # env binds the policy's own shim under the root (frontend/shim.h)
    ft.check(env.get("CUDA_HOME", "").startswith(os.path.join(shim, ".policies") + os.sep),
             f"CUDA_HOME {env.get('CUDA_HOME')} is not a shim bound under {shim}")
    ft.check_eq(env.get("NVCC_FORGE_LOG"), os.path.join(shim, "nvcc-forge.log"), "the default log")
    # the user's build: nvcc from PATH is the shim's, which injects the policy's sm_80
    with open(os.path.join(t.work, "k.cu"), "w", encoding="utf-8") as f:
        f.write("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    r = t.run(["bash", "-c", "command -v nvcc && nvcc -c k.cu -o k.o "
                             "-gencode=arch=compute_75,code=sm_75"], env=env)
    ft.check(r.rc == 0 and r.out.startswith(shim), f"the build's nvcc is not the shim's:\n{r!r}")
    outs = run_action(t, action, {"command": "gate", "policy-args": "--arch-list '7.5 8.0'",
                                  "wheels": "k.o", "path-map": f"{t.work}=/repo"}, env, log)
    gate = outs[-1]
    # the log's injection, on the runner's path through the map; the object passes the gate
    gate.expect_out("::notice file=/repo/k.cu,title=nvcc-forge injected targets::")
    gate.expect_out("verdict: pass")
    ft.check(os.path.getsize(os.path.join(t.work, "nvcc-forge-junit.xml")) > 0, "no JUnit report")
    print("; ".join(log))


def zip_wheel(path, so):
    """A one-extension wheel holding `so` as pkg/_C.so."""
    import zipfile
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(so, "pkg/_C.so")
        z.writestr("pkg/__init__.py", "\n")
    return path


@ft.case("recipes.cibuildwheel.config")
def cibuildwheel_config(t):
    """examples/cibuildwheel: cibuildwheel reads the block and lists the identifiers (no Docker);
    the before-all commands (all but the pip install, the nvcc-forge here instead) make a bound
    shim, a build through the environment's PATH gets the policy's targets, and the repair command
    passes that wheel and fails one built past the shim, with an annotation on the map's path."""
    import tomllib
    nvcc = t.nvcc()
    cbw = os.path.join(t.tools_dir, "cibuildwheel-2.23.3")
    if not os.path.isfile(os.path.join(cbw, "cibuildwheel", "__init__.py")):
        ft.skip(f"cibuildwheel not installed in {cbw} (.ci/install-deps.sh)")
    example = t.src("examples", "cibuildwheel")
    r = t.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform",
               "linux", example], env=t.env(PYTHONPATH=cbw))
    ft.check(r.rc == 0, r)
    ids = r.out.split()
    for py in ("cp311", "cp312", "cp313"):
        for arch in ("x86_64", "aarch64"):
            ft.check_in(f"{py}-manylinux_{arch}", ids, "identifiers")
    ft.check(not any("musllinux" in i for i in ids), ids)
    with open(os.path.join(example, "pyproject.toml"), "rb") as f:
        linux = tomllib.load(f)["tool"]["cibuildwheel"]["linux"]
    opt, project = os.path.join(t.work, "opt"), os.path.join(t.work, "project")
    os.makedirs(opt)
    os.makedirs(project)
    here = lambda cmd: (cmd.replace("/opt/", opt + "/").replace("/project", project)
                        .replace("/usr/local/cuda", os.path.dirname(os.path.dirname(nvcc))))
    env = t.env(PATH=os.path.dirname(t.forge_exe) + os.pathsep + os.environ.get("PATH", ""))
    ran = 0
    for cmd in linux["before-all"]:
        if "pip install" in cmd:
            continue  # the wheel phase (.ci/wheel) tests the install itself
        t.run(["bash", "-c", here(cmd)], env=env).expect_rc(0)
        ran += 1
    for k, v in linux["environment"].items():  # as cibuildwheel does: bash syntax, $(...) too
        env[k] = t.run(["bash", "-c", f'printf %s "{here(v)}"'], env=env).expect_rc(0).out
    with open(os.path.join(project, "k.cu"), "w", encoding="utf-8") as f:
        f.write("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    so_args = ["-shared", "-Xcompiler", "-fPIC", "k.cu", "-gencode=arch=compute_80,code=sm_80", "-o"]
    t.run(["nvcc", *so_args, "gated.so"], env=env, cwd=project).expect_rc(0)
    t.run([nvcc, *so_args, "narrow.so"], cwd=project).expect_rc(0)
    ft.check(os.path.getsize(env["NVCC_FORGE_LOG"]) > 0, "the environment's compile log is empty")
    for name, rc in (("gated", 0), ("narrow", 1)):
        whl = zip_wheel(os.path.join(t.work, f"{name}-0.1.0-cp312-cp312-linux_x86_64.whl"),
                        os.path.join(project, f"{name}.so"))
        dest = os.path.join(t.work, f"dest-{name}")
        os.makedirs(dest)
        script = " && ".join(here(c).replace("{wheel}", whl).replace("{dest_dir}", dest)
                             for c in linux["repair-wheel-command"])
        r = t.run(["bash", "-c", script], env=t.env(PATH=env["PATH"]), cwd=project)
        ft.check(r.rc == rc, f"repair of {name}: exit {r.rc}, expected {rc}\n{r!r}")
        ft.check_eq(os.listdir(dest), [os.path.basename(whl)] if rc == 0 else [], f"{name} kept")
        ft.check(os.path.getsize(os.path.join(project, "nvcc-forge-junit.xml")) > 0, "JUnit")
    r.expect_out("::error ")
    print(f"{len(ids)} identifiers, {ran} before-all commands run")


@ft.case("recipes.readme.first_screen")
def readme_first_screen(t):
    """The README's three lines for a pip user: the second (shim and env) runs as written, with
    the nvcc-forge built here on PATH instead of the first line's install; a compile of the third
    line's build then goes through the shim, and its log is where env said."""
    nvcc = t.nvcc()
    with open(t.src("README.md"), encoding="utf-8") as f:
        readme = f.read()
    block = readme.split("needs three lines", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.strip()]
    ft.check_eq(len(lines), 3, "the three lines")
    ft.check(lines[0].startswith("pip install nvcc-forge"), lines[0])
    ft.check(lines[2].startswith("pip wheel ."), lines[2])
    with open(os.path.join(t.work, "k.cu"), "w", encoding="utf-8") as f:
        f.write("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    env = t.env(HOME=t.work, CUDA_HOME=None, PATH=os.path.dirname(t.forge_exe) + os.pathsep +
                os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", ""))
    script = (f"set -e\n{lines[1]}\ncommand -v nvcc\necho CUDA_HOME=$CUDA_HOME\n"
              "nvcc -c k.cu -o k.o -gencode=arch=compute_80,code=sm_80\necho LOG=$NVCC_FORGE_LOG\n")
    r = t.run(["bash", "-c", script], env=env)
    ft.check(r.rc == 0, r)
    shim = os.path.join(t.work, ".cache", "cuda-shim")
    r.expect_out(f"{shim}/.policies/")  # the policy's own shim under the root (frontend/shim.h)
    ft.check(re.search(rf"^CUDA_HOME={re.escape(shim)}/\.policies/[0-9a-f]+$", r.out, re.M), r.out)
    ft.check(re.search(rf"^{re.escape(shim)}/\.policies/[0-9a-f]+/bin/nvcc$", r.out, re.M), r.out)
    r.expect_err(f"nvcc-forge env: the compile log is '{shim}/nvcc-forge.log'")
    ft.check(os.path.getsize(os.path.join(shim, "nvcc-forge.log")) > 0, "no compile log")


# A PEP 517 backend that builds examples/sample_pkg with its own script: pip runs it as it runs any
# build backend, and with -q shows none of its output when it succeeds.
SAMPLE_BACKEND = """import glob, os, shutil, subprocess, sys
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    out = os.path.abspath("out")
    subprocess.run([sys.executable, {script!r}, out], check=True)
    whl = glob.glob(os.path.join(out, "*.whl"))[0]
    shutil.copy(whl, wheel_directory)
    return os.path.basename(whl)
"""


@ft.case("recipes.pip_quiet.verify_summary")
def pip_quiet_verify_summary(t):
    """A quiet `pip wheel` of examples/sample_pkg through a bound shim shows none of the wrapper's
    lines; `verify` of that wheel then ends with the compile log's one-line summary: the calls, the
    TUs, the targets injected (the sample's ladder has no 8.6), in text, github and (on stderr) json
    formats; --build-log names a log by hand, and one that cannot be read is exit 2."""
    nvcc = t.nvcc()
    path = os.path.dirname(t.forge_exe) + os.pathsep + os.environ.get("PATH", "")
    shim = os.path.join(t.work, "shim")
    t.forge("shim", "--cuda-home", os.path.dirname(os.path.dirname(nvcc)), "--out", shim,
            env=t.env(PATH=path)).expect_rc(0)
    proj = os.path.join(t.work, "proj")
    os.makedirs(proj)
    ft.write(os.path.join(proj, "pyproject.toml"),
             '[project]\nname = "sample-pkg"\nversion = "0.1.0"\n[build-system]\nrequires = []\n'
             'build-backend = "backend"\nbackend-path = ["."]\n')
    ft.write(os.path.join(proj, "backend.py"),
             SAMPLE_BACKEND.format(script=t.src("examples", "sample_pkg", "build_wheel.py")))
    wheelhouse = os.path.join(t.work, "wheelhouse")
    script = (f'set -e\neval "$(nvcc-forge env --arch-list "8.0 8.6" --mode inject --shim {shim})"\n'
              f"{sys.executable} -m pip wheel -q --no-deps --no-build-isolation --no-index "
              f"--disable-pip-version-check -w {wheelhouse} .\n"
              "echo LOG=$NVCC_FORGE_LOG\n"
              f"nvcc-forge verify {wheelhouse}/*.whl --arch-list '8.0 8.6'\n")
    r = t.run(["bash", "-c", script], env=t.env(PATH=path, NVCC_FORGE_LOG=None), cwd=proj)
    ft.check(r.rc == 0, r)
    ft.check_not_in("nvcc-forge: ", r.err.replace("nvcc-forge env:", ""), "pip's quiet output")
    log = os.path.join(shim, "nvcc-forge.log")
    r.expect_out(f"LOG={log}")
    last = r.out.strip().splitlines()[-1]
    ft.check_eq(last, f"nvcc-forge: build log {log}: 3 nvcc calls, 3 TUs; injected sm_86 (3 TUs); "
                "missing none", "verify's last line")
    whl = os.listdir(wheelhouse)[0]
    args = [os.path.join(wheelhouse, whl), "--arch-list", "8.0 8.6"]
    r = t.forge("verify", *args, "--format", "github", env=t.env(NVCC_FORGE_LOG=log))
    ft.check_eq(r.out.strip().splitlines()[-1], last, "github format's last line")
    r = t.forge("verify", *args, "--format", "json", "--build-log", log,
                env=t.env(NVCC_FORGE_LOG=None))
    ft.check(r.rc == 0 and r.json()["verdict"] == "pass", r)  # stdout is one JSON document
    ft.check_eq(r.err.strip(), last, "json format's summary on stderr")
    r = t.forge("verify", *args, env=t.env(NVCC_FORGE_LOG=None))
    ft.check_not_in("build log", r.out + r.err, "no log, no summary")
    missing = os.path.join(t.work, "absent.log")
    t.forge("verify", *args, "--build-log", missing).expect_rc(2).expect_err(missing)
    r = t.forge("verify", *args, env=t.env(NVCC_FORGE_LOG=missing)).expect_rc(0)
    r.expect_out(f"nvcc-forge: build log (NVCC_FORGE_LOG): {missing}")


sys.exit(ft.main())
