#!/usr/bin/env python3
"""The command line end to end: "did you mean" for every command and every option (generated
from the help the tools print), help COMMAND and --version on every command, an example under
each help, errors in the tool's words with the remedy that fits (a file that does not exist, an
unknown CC, extra words), lint over several files and directories."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402


def commands(t):
    """The command names `nvcc-forge help` lists."""
    out = t.forge("help").expect_rc(0).out
    block = out.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in block.splitlines() if line.strip()]
    ft.check(len(names) >= 10, f"commands listed: {names}")
    return names


def long_options(t, cmd):
    """The long options `nvcc-forge help CMD` shows (its option table)."""
    out = t.forge("help", cmd).expect_rc(0).out
    return sorted(set(re.findall(r"^\s+(?:-\w \[ )?(--[a-z][a-z0-9-]*)", out, re.M)))


def typo(word):
    """`word` with two neighbouring letters in its middle swapped (one edit)."""
    for i in range(len(word) // 2, len(word) - 1):
        a, b = word[i], word[i + 1]
        if a.isalpha() and b.isalpha() and a != b:
            return word[:i] + b + a + word[i + 2:]
    for i in range(len(word) // 2, 0, -1):
        a, b = word[i - 1], word[i]
        if a.isalpha() and b.isalpha() and a != b:
            return word[:i - 1] + b + a + word[i + 1:]
    return None


@ft.case("cli.typo.every_command")
def typo_every_command(t):
    soft = ft.Soft()
    names = commands(t)
    for name in names:
        wrong = typo(name)
        r = t.forge(wrong)
        soft.check(r.rc == 2, f"{wrong}: exit {r.rc}")
        soft.check(f"nvcc-forge: unknown command '{wrong}'; did you mean '{name}'?" in r.err,
                   f"{wrong}: {r.err!r}")
        soft.check(len(r.err.splitlines()) <= 2, f"{wrong}: a short error, not the usage: {r.err!r}")
    r = t.forge("help", typo("verify")).expect_rc(2)
    r.expect_err(f"unknown command '{typo('verify')}'; did you mean 'verify'?")
    r = t.forge("xyzzy").expect_rc(2)
    r.expect_err("nvcc-forge: unknown command 'xyzzy'\n")
    soft.done()
    print(f"{len(names)} commands mistyped")


@ft.case("cli.typo.every_option")
def typo_every_option(t):
    soft = ft.Soft()
    n = 0
    for name in commands(t):
        opts = long_options(t, name)
        soft.check(opts or name == "completion", f"{name}: no option in its help")
        for opt in opts:
            wrong = "--" + typo(opt[2:])
            argv = [name, "summarize"] if name == "log" else [name]
            r = t.forge(*argv, wrong)
            n += 1
            soft.check(r.rc == 2, f"{name} {wrong}: exit {r.rc}")
            soft.check(f"unknown option '{wrong}'; did you mean '{opt}'?" in r.err,
                       f"{name} {wrong}: {r.err!r}")
            soft.check(f"run 'nvcc-forge help {name}" in r.err, f"{name} {wrong}: {r.err!r}")
    soft.done()
    print(f"{n} options mistyped")


@ft.case("cli.help.every_command")
def help_every_command(t):
    soft = ft.Soft()
    version = t.forge("--version").expect_rc(0).out
    ft.check(version.startswith("nvcc-forge "), version)
    for name in commands(t):
        r = t.forge("help", name)
        soft.check(r.rc == 0, f"help {name}: exit {r.rc} {r.err}")
        soft.check(re.search(rf"\nexample:\n  (eval \"\$\()?nvcc-forge {name} ", r.out),
                   f"help {name}: no example: {r.out[-300:]!r}")
        soft.check(not re.search(r" arg\b", r.out), f"help {name}: Boost's 'arg' placeholder")
        soft.check(t.forge(name, "--help").out == r.out, f"{name} --help differs from help {name}")
        v = t.forge(name, "--version")
        soft.check(v.rc == 0 and v.out == version, f"{name} --version: {v.rc} {v.out!r} {v.err!r}")
    soft.done()


@ft.case("cli.errors.extra_words")
def extra_words(t):
    r = t.forge("verify-bundle", "a.h", "b.h", "--layout", "l.yml").expect_rc(2)
    r.expect_err("nvcc-forge verify-bundle: more words than the command takes (1 argument besides "
                 "its options)")
    ft.check("positional" not in r.err, r.err)


@ft.case("cli.errors.verify_missing_file")
def verify_missing_file(t):
    missing = os.path.join(t.work, "nonexistent.whl")
    r = t.forge("verify", missing, "--arch-list", "8.0").expect_rc(2)
    r.expect_output(missing)
    r.expect_output("1 input(s) not read")
    ft.check("allow-pure-python" not in r.out + r.err, f"a wrong remedy: {r.out}{r.err}")
    ft.check("nothing carries GPU code" not in r.out + r.err, f"a false statement: {r.out}{r.err}")


@ft.case("cli.arch.unknown_cc")
def unknown_cc(t):
    soft = ft.Soft()
    for spelling, cc, name in (("sm_999", "99.9", "sm_999"), ("8.0 9.9", "9.9", "sm_99"),
                               ("80-real;990", "99.0", "sm_990")):
        for cmd in (["coverage"], ["verify", t.forge_exe]):
            r = t.forge(*cmd, "--arch-list", spelling)
            soft.check(r.rc == 2, f"{cmd[0]} {spelling}: exit {r.rc}")
            soft.check(f"unknown compute capability {cc} ({name}): no GPU in the bundled "
                       f"policy/gpus.yml has it; known: " in r.err, f"{spelling}: {r.err!r}")
            soft.check("--arch-list" in r.err, f"{spelling}: names the option: {r.err!r}")
    soft.done()


@ft.case("cli.arch.cmake_bare_number_said")
def cmake_bare_number(t):
    r = t.forge("coverage", "--arch-list", "80-real;90").expect_rc(0)
    r.expect_output("'90' is CMake's spelling of sm_90 and compute_90 (9.0+PTX); '90-real' is the "
                    "cubin alone")
    ft.check("'80-real' is" not in r.out + r.err, r.err)
    r = t.forge("coverage", "--arch-list", "8.0 9.0+PTX").expect_rc(0)
    ft.check("CMake's spelling" not in r.out + r.err, r.err)


@ft.case("cli.lint.several_paths")
def lint_several_paths(t):
    tree = t.fixtures("lint", "whitelist")
    # as pre-commit calls it: paths relative to the repository root, files and directories mixed
    r = t.forge("lint", "csrc/qattn/attn_sm89.cu", "setup.py", "csrc", "--arch-list",
                "8.0 8.6 9.0 10.0 12.0+PTX", "--format", "json", cwd=tree).expect_rc(1)
    key = lambda f: (f["file"], f["line"], f["rule"], f["pattern"])
    got = [key(f) for f in r.json()]
    ft.check_eq(len(got), len(set(got)), "a file named twice is read once")
    ft.check_in(("csrc/qattn/attn_sm89.cu", 9, "arch-gate"), [g[:3] for g in got], "findings")
    ft.check_in(("setup.py", 37, "explicit-target"), [g[:3] for g in got], "findings")
    # the same findings as the whole tree's, in the files named
    whole = t.forge("lint", tree, "--arch-list", "8.0 8.6 9.0 10.0 12.0+PTX", "--format",
                    "json").expect_rc(1).json()
    ft.check_eq(sorted(got), sorted(key(f) for f in whole
                                    if f["file"].startswith("csrc/") or f["file"] == "setup.py"),
                "findings of the files named")
    r = t.forge("lint", "setup.py", "missing.cu", "--arch-list", "8.0", cwd=tree).expect_rc(2)
    r.expect_err("missing.cu")
    r = t.forge("lint", "csrc/qattn/attn_sm89.cu", "setup.py", "--arch-list",
                "8.0 8.6 9.0 10.0 12.0+PTX", "--format", "github", cwd=tree).expect_rc(1)
    r.expect_out("file=csrc/qattn/attn_sm89.cu,line=9")


def policy_rows(t, table):
    """The CUDA keys of `table:` in the bundled policy/arch_policy.yml, read as text."""
    keys, inside = [], False
    with open(t.src("policy", "arch_policy.yml"), encoding="utf-8") as f:
        for line in f:
            if re.match(r"^\S", line):
                inside = line.startswith(table + ":")
            elif inside and (m := re.match(r'^  "([0-9.]+)":', line)):
                keys.append(m.group(1))
    ft.check(keys, f"no rows under {table}")
    return keys


@ft.case("cli.resolve.missing_row_lists_rows")
def missing_row_lists_rows(t):
    for platform, table in (("linux_x86_64", "arch_policy"), ("linux_aarch64", "arch_policy_aarch64")):
        r = t.forge("resolve", "--cuda", "12", "--platform", platform).expect_rc(2)
        r.expect_err(f"no {table}[12.0] row")
        r.expect_err("rows: " + " ".join(sorted(policy_rows(t, table))))


@ft.case("cli.yaml.syntax_error_line_and_column")
def yaml_syntax_error(t):
    soft = ft.Soft()
    cases = (("a: 1\n  b: 2\nc: 3\n", 2, 4, "illegal map value"),
             ("build_epoch: 1\narch_policy:\n  - x\n  y: 1\n", 4, 3, "end of map not found"),
             ("a: 1\nb:\n\t- x\n", 3, 2, "illegal block entry"))
    for i, (text, line, column, what) in enumerate(cases):
        path = os.path.join(t.work, f"bad{i}.yml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = t.forge("resolve", "--cuda", "12.8", "--policy", path)
        soft.check(r.rc == 2, f"{text!r}: exit {r.rc}")
        soft.check(f"{path}:{line}: YAML syntax error at column {column}: {what}" in r.err,
                   f"{text!r}: {r.err!r}")
    soft.done()


@ft.case("cli.yaml.empty_value_line")
def yaml_empty_value_line(t):
    """`key:` with nothing after it: the error names the key's line, not the line of the token
    yaml-cpp marks (the next key, below blank and comment lines, or the end of the file)."""
    with open(t.src("policy", "arch_policy.yml"), encoding="utf-8") as f:
        policy = f.read()
    row = '    list: "7.5;8.0;8.6;9.0+PTX;10.0;12.0+PTX"\n    reason: "PyTorch cu128'
    ft.check_eq(policy.count(row), 1, "the 12.8 row")
    no_epoch = policy.replace("build_epoch: 1\n", "", 1).rstrip("\n")
    cases = (  # (text, the line holding the empty key, the key)
        ("next key", policy.replace(row, '    list:\n    reason: "PyTorch cu128', 1), "list:"),
        ("blank and comment lines", policy.replace(
            row, '    list:   # later\n\n    # why\n    reason: "PyTorch cu128', 1), "list:"),
        ("top-level, blank line after", policy.replace("build_epoch: 1", "build_epoch:", 1),
         "build_epoch:"),
        ("end of file", no_epoch + "\nbuild_epoch:\n", "build_epoch:"),
        ("end of file, a comment and blank line after", no_epoch + "\nbuild_epoch: # soon\n\n",
         "build_epoch:"),
        ("end of file, no newline", no_epoch + "\nbuild_epoch:", "build_epoch:"),
        ("flow map", policy.replace(row, '    list: \n    reason: "PyTorch cu128', 1).replace(
            '  "12.8":\n    list: \n', '  "12.8": {list: , reason: "x"}\n  "12.85":\n', 1),
         "{list: ,"))
    soft = ft.Soft()
    for i, (what, text, key) in enumerate(cases):
        path = os.path.join(t.work, f"empty{i}.yml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        line = [n for n, ln in enumerate(text.splitlines(), 1)
                if ln.split("#")[0].strip() == key or key.startswith("{") and key in ln]
        ft.check_eq(len(line), 1, f"{what}: lines holding {key}")
        line = line[0]
        r = t.forge("resolve", "--cuda", "12.8", "--policy", path)
        soft.check(r.rc == 2 and f"{path}:{line}: " in r.err and "found nothing" in r.err,
                   f"{what}: want line {line}, exit 2\n{r!r}")
    soft.done()

# NVCC_FORGE_* names in the sources that are not environment variables: macros and guards of the
# bundle header and the stand-in, the tag of a bound shim's trailer.
NOT_VARIABLES = {"NVCC_FORGE_ALIGN8", "NVCC_FORGE_PLAN_ID", "NVCC_FORGE_FATBIN_BLOB_DEFINED",
                 "NVCC_FORGE_BUNDLE_", "NVCC_FORGE_SHIM_SETTINGS"}


@ft.case("cli.env.reference_current")
def env_reference_current(t):
    table = {}
    for line in t.forge("env", "--explain").expect_rc(0).out.splitlines():
        m = re.match(r"^(NVCC_FORGE_[A-Z0-9_]+) \((wrapper|tools|both)\): \S", line)
        ft.check(m, f"not a table line: {line!r}")
        table[m.group(1)] = line
    used = set()
    for base, _, files in os.walk(t.src("wrapper", "src")):
        for name in files:
            path = os.path.join(base, name)
            if path.endswith(os.path.join("core", "env_vars.h")):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                used |= set(re.findall(r"NVCC_FORGE_[A-Z0-9_]+", f.read()))
    variables = used - NOT_VARIABLES
    ft.check_eq(sorted(variables - set(table)), [], "variables the code names and the table lacks")
    ft.check_eq(sorted(set(table) - variables), [], "table rows no code names")
    print(f"{len(table)} variables in the table, {len(used)} NVCC_FORGE_ names in wrapper/src")
    r = t.run([sys.executable, t.src(".ci", "cli_docs.py"), t.forge_exe, "--check"])
    ft.check(r.rc == 0, f"docs/cli.md or docs/environment.md stale: {r.err}")
    with open(t.src("docs", "environment.md"), encoding="utf-8") as f:
        page = f.read()
    for name in table:
        ft.check(f"| `{name}` |" in page, f"{name} not in docs/environment.md")


@ft.case("cli.completion.bash")
def completion_bash(t):
    script = t.forge("completion", "bash").expect_rc(0).out
    path = os.path.join(t.work, "complete.bash")
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)

    def complete(*words):
        line = " ".join(f"'{w}'" for w in (t.forge_exe, *words))
        r = t.run(["bash", "-c", f'source {path}; COMP_WORDS=({line}); '
                   f'COMP_CWORD={len(words)}; _nvcc_forge; printf "%s\\n" "${{COMPREPLY[@]}}"'])
        ft.check(r.rc == 0, r)
        return r.out.split()

    ft.check_eq(complete("veri"), ["verify", "verify-bundle"], "commands")
    ft.check_eq(complete("help", "cov"), ["coverage"], "help COMMAND")
    ft.check_eq(complete("verify", "--allow-"),
                ["--allow-extra", "--allow-missing", "--allow-pure-python"], "options")
    ft.check_in("--lint-ignore", complete("lint", "--"), "lint's options")
    r = t.forge("completion", "tcsh").expect_rc(2)
    r.expect_err("no completion for 'tcsh'")
    for shell in ("zsh", "fish"):
        out = t.forge("completion", shell).expect_rc(0).out
        ft.check("verify-bundle" in out and "help" in out, f"{shell}: {out[:300]}")


@ft.case("cli.ci.path_map")
def path_map(t):
    """A compile log written in a container (/project/...) read on the runner: NVCC_FORGE_PATH_MAP
    makes its files the workspace's, so annotations attach."""
    import json
    log = os.path.join(t.work, "forge.log")
    with open(log, "w", encoding="utf-8") as f:
        for cwd, src in (("/project/build", "../csrc/a.cu"), ("/elsewhere", "x.cu")):
            f.write(json.dumps({"cwd": cwd, "sources": [src], "output": "", "policy": ["sm_80"],
                                "requested": [], "missing": ["sm_90"], "extra": [],
                                "injected": [], "clamped": [], "arch_specific": False,
                                "mode": "inject", "action": "compared", "exit_code": 0,
                                "duration_ms": 1}) + "\n")
    r = t.forge("log", "summarize", log, "--format", "github").expect_rc(0)
    r.expect_out("::warning file=/project/csrc/a.cu,")
    for value in ("/project=", f"/project={t.work}", f"/nothing=/x,/project/={t.work}"):
        r = t.forge("log", "summarize", log, "--format", "github",
                    env=t.env(NVCC_FORGE_PATH_MAP=value)).expect_rc(0)
        r.expect_out("::warning file=csrc/a.cu,")
        r.expect_out("::warning file=/elsewhere/x.cu,")




@ft.case("cli.colour.terminal_only")
def colour_terminal_only(t):
    """verify's verdict words in colour on a terminal; none with NO_COLOR, TERM=dumb or a pipe."""
    import shutil
    if not shutil.which("script"):
        ft.skip("no util-linux script (a terminal)")
    cmd = f"'{t.forge_exe}' verify '{t.forge_exe}' --arch-list 8.0"

    def on_terminal(**env):
        r = t.run(["script", "-qec", cmd, "/dev/null"], env=t.env(**{"TERM": "xterm", **env}))
        ft.check(r.rc == 1, r)
        return r.out

    ft.check("\x1b[31mverdict: FAIL\x1b[0m (1 extension)" in on_terminal(NO_COLOR=None),
             "no red verdict on a terminal")
    ft.check("\x1b[31mFAIL\x1b[0m  " in on_terminal(NO_COLOR=None), "no red FAIL on a terminal")
    for env in ({"NO_COLOR": "1"}, {"NO_COLOR": None, "TERM": "dumb"}):
        out = on_terminal(**env)
        ft.check("\x1b[" not in out and "verdict: FAIL" in out, f"colour with {env}: {out!r}")
    r = t.forge("verify", t.forge_exe, "--arch-list", "8.0", env=t.env(NO_COLOR=None)).expect_rc(1)
    ft.check("\x1b[" not in r.out, f"colour in a pipe: {r.out!r}")


sys.exit(ft.main())
