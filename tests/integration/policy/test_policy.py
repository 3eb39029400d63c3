#!/usr/bin/env python3
"""nvcc-forge resolve / coverage / cell-key, run as a user runs them: output formats, exit codes,
error messages naming file:line and key, the probed toolkit (a stand-in nvcc replaying captured
output), the self-contained coverage matrix page; and policy.nvcc_tables: every nvcc_supported row
of policy/arch_policy.yml equals what its toolkit really accepts."""
import glob
import html.parser
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402

T = ROOT = FIX = POLICY = None  # set by setup()
ROW_128 = "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX"


def setup(t):
    global T, ROOT, FIX, POLICY
    T, ROOT = t, t.source
    FIX = os.path.join(ROOT, "tests", "fixtures", "policy")
    POLICY = os.path.join(ROOT, "policy", "arch_policy.yml")


def run(*args, env=None, expect=0):
    """nvcc-forge ARGS (env: variables added to the environment); checks the exit code unless
    expect is None."""
    p = T.forge(*args, env=T.env(**(env or {})), timeout=60, text=True)
    if expect is not None:
        p.expect_rc(expect)
    return p


def mini(*args, **kw):
    return run(*args, "--policy", os.path.join(FIX, "mini_policy.yml"),
               "--packages-dir", os.path.join(FIX, "packages"), **kw)


@ft.case("policy.cli.resolve_torch")
def case_resolve_torch(t):
    out = run("resolve", "--cuda", "12.8", "--torch", "2.9").stdout.strip()
    check(out == "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX", out)
    check(run("resolve", "--cuda", "12.8").stdout.strip() == ROW_128, "12.8 row")
    check(run("resolve", "--cuda", "12.4", "--torch", "2.6").stdout.strip() == "6.0 7.0 7.5 8.0 8.6 9.0+PTX", "12.4")


@ft.case("policy.cli.resolve_cmake")
def case_resolve_cmake(t):
    out = run("resolve", "--cuda", "12.8", "--format", "cmake").stdout.strip()
    check(out == "75-real;80-real;86-real;90;100-real;120", out)


@ft.case("policy.cli.resolve_gencode")
def case_resolve_gencode(t):
    flags = run("resolve", "--cuda", "12.8", "--format", "gencode").stdout.split()
    check(len(flags) == 8, flags)
    check("-gencode=arch=compute_90,code=compute_90" in flags, flags)
    check("-gencode=arch=compute_120,code=compute_120" in flags, flags)
    check("-gencode=arch=compute_75,code=sm_75" in flags, flags)
    check(not any("compute_75,code=compute_75" in f for f in flags), flags)


@ft.case("policy.cli.resolve_json")
def case_resolve_json(t):
    j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.9", "--format", "json").stdout)
    for key in ("arch_list", "tokens", "source", "clamped", "cuda", "torch", "platform", "package",
                "targets", "ptx_added", "build_epoch", "policy_sha256"):
        check(key in j, f"missing {key}")
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    check(j["tokens"] == ["7.0", "7.5", "8.0", "8.6", "9.0+PTX", "10.0", "12.0+PTX"], j["tokens"])
    check(j["clamped"] == [], j["clamped"])
    check(re.fullmatch(r"[0-9a-f]{64}", j["policy_sha256"]), j["policy_sha256"])
    check(isinstance(j["build_epoch"], int), j["build_epoch"])
    # clamped tokens carry reasons, also on stderr for the plain formats
    c = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao", "--format", "json")
    j = json.loads(c.stdout)
    check([x["token"] for x in j["clamped"]] == ["7.0"], j["clamped"])
    check("torch 2.11" in j["clamped"][0]["reason"], j["clamped"][0])
    p = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao")
    check("clamped 7.0" in p.stderr, p.stderr)
    check(p.stdout.strip() == "7.5 8.0 8.6 8.9 9.0+PTX 10.0 12.0+PTX", p.stdout)


@ft.case("policy.cli.resolve_versions")
def case_resolve_versions(t):
    j = json.loads(run("resolve", "--cuda", "12.8.1", "--torch", "2.9.1+cu128", "--python", "3.12.4",
                       "--format", "json").stdout)
    check(j["cuda"] == "12.8" and j["torch"] == "2.9" and j["python"] == "3.12", j)
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    bad = run("resolve", "--cuda", "12.x", expect=2)
    check("12.x" in bad.stderr, bad.stderr)
    bad = run("resolve", "--cuda", "12.8", "--platform", "linux_arm64", expect=2)
    check("linux_aarch64" in bad.stderr, bad.stderr)


@ft.case("policy.cli.resolve_aarch64")
def case_resolve_aarch64(t):
    out = run("resolve", "--cuda", "13.0", "--platform", "linux_aarch64").stdout.strip()
    check(out == "8.0 9.0+PTX 10.0 11.0 12.0+PTX", out)
    # exceptions never read on ARM, x86 overrides invisible
    p = mini("resolve", "--cuda", "12.8", "--torch", "2.9", "--platform", "linux_aarch64",
             "--package", "x86only", "--format", "json")
    j = json.loads(p.stdout)
    check(j["source"] == "arch_policy_aarch64[12.8]", j["source"])
    check(j["arch_list"] == "8.7 9.0+PTX", j["arch_list"])
    check(any("torch clamp not applied" in n for n in j["notes"]), j["notes"])


@ft.case("policy.cli.resolve_package")
def case_resolve_package(t):
    j = json.loads(run("resolve", "--cuda", "12.8", "--package", "flash_attn", "--format", "json").stdout)
    check(j["source"] == "packages/flash_attn/arch_override.yml:arch_list", j["source"])
    check(j["arch_list"] == "8.0 8.6 9.0+PTX 10.0 12.0+PTX", j["arch_list"])
    check(j["verify"]["allow_missing_archs"] == ["sm_86"], j["verify"])
    j = json.loads(run("resolve", "--cuda", "13.0", "--package", "flash-attn", "--platform", "linux_aarch64",
                       "--format", "json").stdout)
    check(j["source"] == "arch_policy_aarch64[13.0]", j["source"])  # no aarch64 override: seed behaviour
    j = json.loads(mini("resolve", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12", "--package", "lanes",
                        "--format", "json").stdout)
    check(j["source"] == "packages/lanes/build_matrix.yml:combinations[0].arch_list", j["source"])
    check(j["arch_list"] == "8.6+PTX" and j["ptx_added"] == ["8.6"], j)


# NVCC_FORGE_PACKAGES_DIR values that name no usable directory: a missing directory, a file, a
# value longer than any path (the 131 KB, within what execve takes), a value with a newline.
def unusable_packages_dirs(t):
    as_file = ft.write(t.path("not_a_dir"), "a file\n")
    return {"missing": t.path("no", "such", "dir"), "a file": as_file,
            "130000 bytes": "/" + "d" * 129999, "a newline": os.path.join(FIX, "packages") + "\n"}


@ft.case("policy.cli.packages_dir_unusable_is_exit_2")
def case_packages_dir_unusable(t):
    """A packages directory named by NVCC_FORGE_PACKAGES_DIR or --packages-dir that cannot be used
    is exit 2 naming it in every command that reads the policy (it resolved the policy row without
    a word); a usable one is read, as the wrapper reads it."""
    so = ft.write(t.path("x.so"), "not read: the packages directory is checked first\n")
    commands = [("resolve", "--cuda", "12.8", "--package", "lanes"), ("env", "--cuda", "12.8"),
                ("verify", so, "--arch-list", "8.0"), ("coverage", "--cuda", "12.8"),
                ("coverage", "--matrix", "--package", "lanes")]
    with ft.Soft() as s:
        for what, value in unusable_packages_dirs(t).items():
            for cmd in commands:
                p = run(*cmd, env={"NVCC_FORGE_PACKAGES_DIR": value}, expect=None)
                s.check(p.rc == 2 and "NVCC_FORGE_PACKAGES_DIR" in p.err and
                        value[:20] in p.err and len(p.err) < 2000,
                        f"{what}: {' '.join(cmd[:2])}: exit {p.rc}: {p.err[:600]}")
            p = run("resolve", "--cuda", "12.8", "--packages-dir", value, expect=None)
            s.check(p.rc == 2 and "--packages-dir" in p.err, f"{what}: --packages-dir: {p.err[:600]}")
        # A usable directory in the variable is the one the commands read (the wrapper's).
        pkgs = os.path.join(FIX, "packages")
        j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12",
                           "--package", "lanes", "--format", "json",
                           env={"NVCC_FORGE_PACKAGES_DIR": pkgs}).stdout)
        s.check_eq(j["source"], "packages/lanes/build_matrix.yml:combinations[0].arch_list",
                   "the variable's package")


@ft.case("policy.cli.package_arch_list_form")
def case_package_arch_list_form(t):
    # sageattention's setup.py splits on ';' and ',' and builds only `a` targets: its package file
    # says so, and every output that hands the list to its build follows.
    j = json.loads(run("resolve", "--cuda", "12.8", "--package", "sageattention", "--format", "json").stdout)
    check(j["arch_list"] == "8.0 8.6 8.9 9.0 10.0 12.0", j["arch_list"])  # no +PTX tail
    check(j["torch_arch_list"] == "8.0;8.6;8.9;9.0;10.0;12.0", j["torch_arch_list"])
    check(j["ptx_added"] == [], j["ptx_added"])
    check(j["ptx_not_added"].startswith("packages/sageattention/arch_override.yml:forward_ptx: "),
          j["ptx_not_added"])
    check(j["wrapper"]["arch_list_separator"] == ";", j["wrapper"])
    out = run("resolve", "--cuda", "12.8", "--package", "sageattention").stdout.strip()
    check(out == "8.0;8.6;8.9;9.0;10.0;12.0", out)
    env_out = run("env", "--cuda", "12.8", "--package", "sageattention").stdout
    check("export TORCH_CUDA_ARCH_LIST='8.0;8.6;8.9;9.0;10.0;12.0'\n" in env_out, env_out)
    check("export NVCC_FORGE_ARCH_LIST='8.0 8.6 8.9 9.0 10.0 12.0'\n" in env_out, env_out)
    # Other packages keep the space form and the tail.
    j = json.loads(run("resolve", "--cuda", "12.8", "--format", "json").stdout)
    check(j["torch_arch_list"] == ROW_128 and j["ptx_not_added"] is None, j)
    env_out = run("env", "--cuda", "12.8", "--package", "flash_attn").stdout
    check("export TORCH_CUDA_ARCH_LIST='8.0 8.6 9.0+PTX 10.0 12.0+PTX'\n" in env_out, env_out)


def fake_nvcc(tmp, version_dir):
    path = os.path.join(tmp, "nvcc")
    fx = os.path.join(ROOT, "tests", "fixtures", "toolkit", version_dir)
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncase \"$1\" in\n"
                f"  --version) cat '{fx}/version.txt' ;;\n"
                f"  --list-gpu-code) cat '{fx}/list-gpu-code.txt' ;;\n"
                "  *) exit 1 ;;\nesac\n")
    os.chmod(path, 0o755)
    return path


@ft.case("policy.cli.resolve_probed")
def case_resolve_probed(t):
    with tempfile.TemporaryDirectory() as tmp:
        nvcc = fake_nvcc(tmp, "nvcc-13.2")
        j = json.loads(run("resolve", "--format", "json", env={"NVCC_FORGE_REAL_NVCC": nvcc}).stdout)
        check(j["cuda"] == "13.2", j["cuda"])
        check(j["source"] == "arch_policy[13.2]", j["source"])
        check(nvcc in j["nvcc_source"], j["nvcc_source"])
        # found on PATH when the variable is unset
        env = {"NVCC_FORGE_REAL_NVCC": "", "PATH": tmp + ":/usr/bin:/bin"}
        j = json.loads(run("resolve", "--format", "json", env=env).stdout)
        check(j["cuda"] == "13.2", j)
        bad = run("resolve", env={"NVCC_FORGE_REAL_NVCC": "/nonexistent/nvcc"}, expect=2)
        check("NVCC_FORGE_REAL_NVCC" in bad.stderr, bad.stderr)
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        j = json.loads(run("resolve", "--format", "json",
                           env={"NVCC_FORGE_REAL_NVCC": "/usr/local/cuda/bin/nvcc"}).stdout)
        check(j["arch_list"] == ROW_128 and j["cuda"].startswith("13."), j)


@ft.case("policy.cli.resolve_missing_key")
def case_resolve_missing_key(t):
    p = run("resolve", "--cuda", "13.1", expect=2)
    check("arch_policy[13.1]" in p.stderr and "arch_policy.yml" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.4", "--platform", "linux_aarch64", expect=2)
    check("arch_policy_aarch64[12.4]" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.8", "--torch", "2.3", expect=2)
    check("torch_runnable[12.8].releases" in p.stderr, p.stderr)


@ft.case("policy.cli.resolve_unknown_key")
def case_resolve_unknown_key(t):
    with tempfile.TemporaryDirectory() as tmp:
        text = open(POLICY).read().replace("arch_policy_aarch64:", "arch_policy_arm64:", 1)
        bad = os.path.join(tmp, "arch_policy.yml")
        open(bad, "w").write(text)
        line = text.splitlines().index("arch_policy_arm64:") + 1
        p = run("resolve", "--cuda", "12.8", "--policy", bad, expect=2)
        check(f"{bad}:{line}" in p.stderr and "arch_policy_arm64" in p.stderr, p.stderr)
        pkgs = os.path.join(tmp, "packages", "typo")
        os.makedirs(pkgs)
        open(os.path.join(pkgs, "arch_override.yml"), "w").write('arch_list: "8.0"\narch_list_by_cuda_arm:\n  "12.8": "9.0"\n')
        p = run("resolve", "--cuda", "12.8", "--packages-dir", os.path.join(tmp, "packages"), "--package", "typo",
                expect=2)
        check("arch_override.yml:2" in p.stderr and "arch_list_by_cuda_arm" in p.stderr, p.stderr)


@ft.case("policy.cli.resolve_collapse")
def case_resolve_collapse(t):
    p = mini("resolve", "--cuda", "12.8", "--package", "collapse", expect=1)
    check("collapses to an empty arch list" in p.stderr and "sm_70" in p.stderr, p.stderr)
    check(p.stdout == "", p.stdout)


@ft.case("policy.cli.resolve_usage")
def case_resolve_usage(t):
    for args in (["--bogus"], ["--cuda"], ["--cuda", "12.8", "--format", "xml"]):
        p = run("resolve", *args, expect=2)
        check(p.stderr.strip() != "", args)
    check("--packages-dir" in run("resolve", "--help").stdout, "help")


def coverage_json(*args):
    return json.loads(run("coverage", *args, "--format", "json").stdout)


@ft.case("policy.cli.coverage_json")
def case_coverage_json(t):
    j = coverage_json("--arch-list", ROW_128)
    gpus = open(os.path.join(ROOT, "policy", "gpus.yml")).read()
    # one row per entry of the `gpus:` map; `retired:` (Kepler) is not coverage's
    table = re.search(r"^gpus:\n((?:[ #].*\n|\n)*)", gpus, re.M).group(1)
    check(len(j) == len(re.findall(r'^  "\d+\.\d+":', table, re.M)), len(j))
    check(len(re.findall(r'^  "\d+\.\d+":', gpus, re.M)) > len(j), "retired entries in gpus.yml")
    check("3.7" not in j and "3.5" not in j, sorted(j))
    tiers = {cc: v["tier"] for cc, v in j.items()}
    for cc in ("8.9", "10.3", "12.1"):
        check(tiers[cc] == "native", (cc, tiers[cc]))
    check(tiers["11.0"] == "jit", tiers["11.0"])
    for cc in ("7.0", "8.7"):
        check(tiers[cc] == "dead", (cc, tiers[cc]))
    check("B300" in j["10.3"]["products"], j["10.3"])
    check("Tegra" in j["8.7"]["why"], j["8.7"]["why"])
    # separators and spellings are all one list
    check(coverage_json("--arch-list", "75-real;80-real;86-real;90;100-real;120") == j, "cmake spelling")


@ft.case("policy.cli.coverage_text")
def case_coverage_text(t):
    out = run("coverage", "--arch-list", ROW_128).stdout
    check(re.search(r"^\s+7\.0\s+dead\s+Tesla V100", out, re.M), out)
    check("Excluded" in out and "jit:    10.1 11.0" in out, out)
    check("major 11 has no cubin; compute_90 PTX below it is the JIT net" in out, out)


@ft.case("policy.cli.coverage_markdown")
def case_coverage_markdown(t):
    out = run("coverage", "--arch-list", ROW_128, "--format", "markdown").stdout
    check("| 11.0 | jit |" in out and "### Excluded" in out, out)


@ft.case("policy.cli.coverage_resolve_options")
def case_coverage_resolve_options(t):
    j = coverage_json("--cuda", "12.8", "--torch", "2.9")
    check(j["7.0"]["tier"] == "native", j["7.0"])
    j = coverage_json("--cuda", "12.8", "--torch", "2.11")
    check(j["7.0"]["tier"] == "dead", j["7.0"])
    p = run("coverage", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao")
    check("Clamped from the requested list" in p.stdout and "7.0:" in p.stdout, p.stdout)


@ft.case("policy.cli.coverage_gap")
def case_coverage_gap(t):
    p = run("coverage", "--arch-list", "8.0 12.0+PTX", "--fail-on-gap", expect=1)
    check("FINDING: major 9 has no cubin and no PTX below it" in p.stdout, p.stdout)
    run("coverage", "--arch-list", ROW_128, "--fail-on-gap", expect=0)


@ft.case("policy.cli.coverage_bad_list")
def case_coverage_bad_list(t):
    p = run("coverage", "--arch-list", "8.0 banana", expect=2)
    check("banana" in p.stderr and "--arch-list" in p.stderr, p.stderr)
    run("coverage", "--arch-list", ROW_128, "--format", "html", expect=2)


class Checker(html.parser.HTMLParser):
    VOID = {"meta", "br", "rect", "link", "img", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()


@ft.case("policy.cli.coverage_matrix_html")
def case_coverage_matrix_html(t):
    page = run("coverage", "--matrix", "--format", "html").stdout
    c = Checker()
    c.feed(page)
    c.close()
    check(not c.errors and not c.stack, (c.errors, c.stack))
    names = {t for t, _ in c.tags}
    check("script" not in names and "link" not in names and "img" not in names, names)
    check(not re.search(r"(src|href)=|https?://|@import|url\(", page), "external reference")
    rows = [a for t, a in c.tags if t == "td" and "t" in a.get("class", "").split()]
    j = json.loads(run("coverage", "--matrix", "--format", "json").stdout)
    gpus = len(j[0]["coverage"])
    check(len(rows) == len(j) * gpus, (len(rows), len(j), gpus))
    for cuda, torch in (("12.8", "2.9"), ("12.8", "2.11"), ("13.2", "2.12")):
        check(f"CUDA {cuda} &middot; torch {torch}" in page, (cuda, torch))
    check("CUDA 13.0 &middot; torch any &middot; linux_aarch64" in page, "aarch64 row")
    check("excluded: 5.0" in page, "exclusions in words")


@ft.case("policy.cli.coverage_matrix_json")
def case_coverage_matrix_json(t):
    j = json.loads(run("coverage", "--matrix", "--format", "json").stdout)
    cells = {(c["cuda"], c["torch"], tuple(c["platforms"])): c for c in j}
    x86 = ("linux_x86_64", "win_amd64")
    check(cells[("12.8", "2.9", x86)]["coverage"]["7.0"]["tier"] == "native", "12.8/2.9 V100")
    check(cells[("12.8", "2.7", x86)]["coverage"]["7.0"]["tier"] == "dead", "12.8/2.7 V100")
    arm = cells[("13.0", None, ("linux_aarch64",))]
    check(arm["coverage"]["11.0"]["tier"] == "native", arm["coverage"]["11.0"])
    check(cells[("12.8", "2.9", x86)]["coverage"]["11.0"]["tier"] == "jit", "x86 Thor")
    p = run("coverage", "--matrix", "--format", "text", expect=2)
    check("html" in p.stderr, p.stderr)


@ft.case("policy.cli.cell_key")
def case_cell_key(t):
    args = ["cell-key", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12", "--package", "flash_attn"]
    k1 = run(*args).stdout.strip()
    check(re.fullmatch(r"[0-9a-f]{64}", k1), k1)
    check(run(*args).stdout.strip() == k1, "stable")
    check(run("cell-key", "--cuda", "12.8.1", "--torch", "2.9.1", "--python", "3.12", "--package",
              "flash_attn").stdout.strip() == k1, "normalised inputs")
    check(run(*args[:-2]).stdout.strip() != k1, "package")
    check(run("cell-key", "--cuda", "12.8", "--torch", "2.9", "--python", "3.11", "--package",
              "flash_attn").stdout.strip() != k1, "python")
    with tempfile.TemporaryDirectory() as tmp:
        bumped = os.path.join(tmp, "arch_policy.yml")
        text = open(POLICY).read()
        epoch = int(re.search(r"^build_epoch: (\d+)", text, re.M).group(1))
        open(bumped, "w").write(re.sub(r"^build_epoch: \d+", f"build_epoch: {epoch + 1}", text, flags=re.M))
        check(run(*args, "--policy", bumped).stdout.strip() != k1, "build_epoch bump")
    run("cell-key", "--cuda", "13.1", expect=2)


def allowed_sm(tool, option):
    help_text = ft.run([tool, "--help"]).expect_rc(0).out
    start = help_text.index(option)
    allowed = help_text.index("Allowed values for this option:", start)
    end = help_text.index("'.", allowed)
    return set(re.findall(r"'(sm_\d+[af]?)'", help_text[allowed:end + 2]))


def version_of(tool):
    out = ft.run([tool, "--version"]).expect_rc(0).out
    return re.search(r"V(\d+\.\d+\.\d+)", out).group(1)


@ft.case("policy.data_dir.installed")
def case_data_dir(t):
    """An installed binary reads the data installed next to it (any prefix, also after the prefix
    moves), NVCC_FORGE_DATA_DIR overrides it, and without data it fails naming where it looked:
    never the source tree it was built from."""
    import shutil
    p1 = t.path("p1")
    r = t.run(["cmake", "--install", t.build, "--prefix", p1])
    check(r.rc == 0, f"install failed\n{r!r}")
    p2 = t.path("moved", "p2")
    os.makedirs(os.path.dirname(p2))
    os.rename(p1, p2)
    exe = os.path.join(p2, "bin", "nvcc-forge")
    env = t.env(NVCC_FORGE_DATA_DIR=None)

    def resolve_json(env):
        return json.loads(t.run([exe, "resolve", "--cuda", "12.8", "--format", "json"], env=env)
                          .expect_rc(0).out)

    j = resolve_json(env)
    check(j["policy_file"] == os.path.join(p2, "share", "nvcc-forge", "policy", "arch_policy.yml"), j["policy_file"])
    check(j["arch_list"] == ROW_128, j["arch_list"])
    # NVCC_FORGE_DATA_DIR: a copy whose 12.8 row differs.
    custom = t.path("custom")
    shutil.copytree(os.path.join(p2, "share", "nvcc-forge"), custom)
    pol = os.path.join(custom, "policy", "arch_policy.yml")
    text = ft.read(pol)
    row = re.search(r"^  \"?12\.8\"?:.*\n(?:    .*\n)*?    list: .*$", text, re.M)
    check(row, "no 12.8 row found in the installed policy")
    new_row = re.sub(r"list: .*$", 'list: "8.0 9.0"', row.group(0))
    ft.write(pol, text.replace(row.group(0), new_row, 1))
    j = resolve_json(t.env(NVCC_FORGE_DATA_DIR=custom))
    check(j["policy_file"] == pol, j["policy_file"])
    check(j["arch_list"] == "8.0 9.0+PTX", j["arch_list"])
    # No data next to the binary: exit 2, naming the installed path.
    shutil.rmtree(os.path.join(p2, "share", "nvcc-forge"))
    r = t.run([exe, "resolve", "--cuda", "12.8"], env=env).expect_rc(2)
    r.expect_err(os.path.join(p2, "share", "nvcc-forge"))
    check(os.path.join(t.source, "policy", "arch_policy.yml") not in r.err,
          f"fell back to the source tree: {r.err}")
    r = t.run([exe, "resolve", "--cuda", "12.8", "--format", "json"], env=env)
    check(r.rc == 2 and '"policy_file"' not in r.out, f"no data, yet: {r!r}")


@ft.case("policy.nvcc_tables")
def case_nvcc_tables(t):
    """Toolkits: /usr/local/cuda (13.0) and the wheels install_nvcc_tables.sh puts in
    $FORGE_NVCC_TABLE_WHEELS (default SOURCE/.tools/nvcc-tables). A row whose toolkit is absent
    fails: every row names a toolkit that install_nvcc_tables.sh installs."""
    import yaml

    policy = yaml.safe_load(open(os.path.join(ROOT, "policy", "arch_policy.yml")))
    wheels = os.environ.get("FORGE_NVCC_TABLE_WHEELS", os.path.join(ROOT, ".tools", "nvcc-tables"))
    checked, failures = 0, []
    for cuda, row in policy["nvcc_supported"].items():
        codes = set(row["codes"].split())
        tools = []
        if cuda == "13.0" and os.path.exists("/usr/local/cuda/bin/nvcc"):
            tools.append("/usr/local/cuda/bin/nvcc")
        tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "nvcc")))
        tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "ptxas")))
        if not tools:
            # Every row was read off a toolkit that install_nvcc_tables.sh (run by
            # .ci/install-deps.sh) downloads: a row that cannot be checked is a failure.
            failures.append(f"{cuda}: no toolkit to check the row against (bash "
                            f"tests/integration/policy/install_nvcc_tables.sh {wheels})")
            continue
        tool = tools[0]
        option = "--gpu-architecture <arch>" if tool.endswith("nvcc") else "--gpu-name"
        real = allowed_sm(tool, option)
        version = version_of(tool)
        checked += 1
        if real != codes:
            failures.append(f"{cuda}: table {sorted(codes - real)} not in {tool}; missing {sorted(real - codes)}")
        if version not in row["read_from"]:
            failures.append(f"{cuda}: read_from '{row['read_from']}' does not name {version}")
        print(f"{cuda}: {os.path.basename(tool)} {version}: {len(real)} sm_ targets "
              f"{'ok' if real == codes else 'DIFFER'}")
    if failures:
        ft.fail("\n" + "\n".join(failures))
    check(checked == len(policy["nvcc_supported"]), f"checked {checked} rows")


if __name__ == "__main__":
    sys.exit(ft.main(setup=setup))
