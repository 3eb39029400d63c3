#!/usr/bin/env python3
"""The code's own layout, checked: a module includes only the modules its forge_module() DEPS
name (and what those depend on), docs/DEVELOPING.md's module map has exactly the modules the build
declares, and no comment cites a document that a clone does not have."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

# Front ends over the library: what each may include besides the modules' own closure.
FRONT_ENDS = {"entry": {"frontend"}, "cli": None}  # None: every module


def declared_modules(t):
    """{module: set(direct deps)} from the forge_module() calls of wrapper/CMakeLists.txt."""
    text = ft.read(t.src("wrapper", "CMakeLists.txt"))
    mods = {}
    for m in re.finditer(r"^forge_module\((\w+)([^)]*)\)", text, re.M):
        name, rest = m.group(1), m.group(2)
        deps = re.search(r"DEPS\s+([\w\s]+?)(?:\s+LIBS\b|$)", rest.strip())
        mods[name] = set(deps.group(1).split()) if deps else set()
    if not mods:
        ft.fail("no forge_module() call found in wrapper/CMakeLists.txt")
    return mods


def closure(mods, name):
    seen, todo = set(), list(mods.get(name, ()))
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(mods.get(d, ()))
    return seen


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s+"([\w]+)/', line)
            if m:
                yield n, m.group(1)


def violations(src_root, mods):
    """(file:line, module, included module) for each include the DEPS do not allow."""
    out = []
    dirs = sorted(d for d in os.listdir(src_root) if os.path.isdir(os.path.join(src_root, d)))
    for d in dirs:
        if d in FRONT_ENDS:
            extra = FRONT_ENDS[d]
            allowed = set(mods) if extra is None else set().union(*(closure(mods, e) | {e} for e in extra))
        elif d in mods:
            allowed = closure(mods, d)
        else:
            out.append((d, d, "(a source folder no forge_module() declares)"))
            continue
        allowed = allowed | {d}
        for name in sorted(os.listdir(os.path.join(src_root, d))):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(src_root, d, name)
            for n, inc in includes(path):
                if inc in mods or inc in FRONT_ENDS:
                    if inc not in allowed:
                        out.append((f"{d}/{name}:{n}", d, inc))
    return out


@ft.case("layout.module_includes")
def module_includes(t):
    mods = declared_modules(t)
    for name, deps in mods.items():
        ft.check(deps <= set(mods), f"forge_module({name}) depends on undeclared {sorted(deps - set(mods))}")
        ft.check(name not in closure(mods, name), f"module {name} depends on itself (a cycle)")
    bad = violations(t.src("wrapper", "src"), mods)
    ft.check(not bad, "includes outside the DEPS:\n" + "\n".join(f"  {w}: {m} includes {i}/" for w, m, i in bad))
    # The check itself must see a violation: a scratch tree whose arch/ includes policy/.
    scratch = t.path("src")
    ft.write(os.path.join(scratch, "arch", "x.cpp"), '#include "policy/resolve.h"\n')
    ft.write(os.path.join(scratch, "core", "y.h"), '#include "core/result.h"\n')
    got = violations(scratch, {"core": set(), "arch": {"core"}, "policy": {"arch"}})
    ft.check_eq(got, [("arch/x.cpp:1", "arch", "policy")], "scratch violations")


@ft.case("layout.module_map")
def module_map(t):
    mods = set(declared_modules(t))
    text = ft.read(t.src("docs", "DEVELOPING.md"))
    section = text.split("## Module map", 1)
    ft.check(len(section) == 2, "docs/DEVELOPING.md has no '## Module map' section")
    body = section[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(\w+)/` \|", body, re.M))
    ft.check_eq(sorted(rows), sorted(mods), "modules in the map vs forge_module() calls")


CITATION = re.compile(r"shared/(notes|seeds)|\bADR[- ]?\d{2,}|\bthe seeds?\b", re.I)


def comment_text(path, line):
    s = line.strip()
    if path.endswith((".h", ".cpp")):
        if s.startswith("//") or s.startswith("*") or s.startswith("/*"):
            return s
        i = s.find("// ")
        return s[i:] if i >= 0 else ""
    if path.endswith((".yml", ".yaml", ".cmake", ".txt", ".py", ".sh")) or os.path.basename(path) == "CMakeLists.txt":
        return s if s.startswith("#") else ""
    return ""


def citations(roots):
    out = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            if "fixtures" in dirpath.split(os.sep):
                continue
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    lines = open(path, encoding="utf-8").read().splitlines()
                except (UnicodeDecodeError, OSError):
                    continue
                for n, line in enumerate(lines, 1):
                    c = comment_text(path, line)
                    if c and CITATION.search(c):
                        out.append(f"{os.path.relpath(path, t_src_root)}:{n}: {c[:100]}")
    return out


t_src_root = ""


@ft.case("layout.comments_cite_the_repo")
def comments_cite_the_repo(t):
    global t_src_root
    t_src_root = t.src()
    roots = [t.src(d) for d in ("wrapper", "cmake", "policy", "packages", "tests", ".ci")]
    found = citations(roots)
    ft.check(not found, "comments citing documents outside the repo (write the fact into docs/):\n"
             + "\n".join("  " + f for f in found))
    # every docs/*.md a comment points at exists
    missing = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                for m in re.finditer(r"docs/([\w.-]+\.md)", text):
                    if not os.path.exists(t.src("docs", m.group(1))):
                        missing.append(f"{os.path.relpath(path, t.src())}: docs/{m.group(1)}")
    ft.check(not missing, "links to docs that do not exist:\n" + "\n".join("  " + m for m in sorted(set(missing))))
    # the scan itself must find a citation
    probe = t.path("probe")
    ft.write(os.path.join(probe, "a.cpp"), "int x; // see ../shared/notes/fatbin-format.md\n")
    ft.write(os.path.join(probe, "b.yml"), "# ADR-0012 says so\nreason: ok\n")
    t_src_root = t.work
    ft.check_eq(len(citations([probe])), 2, "citations found in the probe tree")


REPO_PATH = re.compile(r"(?<![\w/.-])((?:wrapper|tests|policy|packages|bench|\.ci)/[A-Za-z0-9_./-]+\.(?:h|cpp|py|yml|sh|md|cu))")


def stale_paths(root, docs):
    out = []
    for doc in docs:
        text = ft.read(os.path.join(root, doc))
        for m in REPO_PATH.finditer(text):
            if not os.path.exists(os.path.join(root, m.group(1))):
                out.append(f"{doc}: {m.group(1)}")
    return sorted(set(out))


@ft.case("layout.docs_name_real_files")
def docs_name_real_files(t):
    docs = ["README.md", "packages/README.md"] + [
        os.path.join("docs", n) for n in sorted(os.listdir(t.src("docs"))) if n.endswith(".md")]
    bad = stale_paths(t.src(), docs)
    ft.check(not bad, "docs name files the repo does not have:\n" + "\n".join("  " + b for b in bad))
    probe = t.path("probe")
    ft.write(os.path.join(probe, "d.md"), "see `wrapper/src/nowhere/x.h` and `tests/CMakeLists.txt`\n")
    ft.write(os.path.join(probe, "tests", "CMakeLists.txt"), "\n")
    ft.check_eq(stale_paths(probe, ["d.md"]), ["d.md: wrapper/src/nowhere/x.h"], "stale paths in the probe")


# A test a document names: GoogleTest's `Suite.Name` (or `Suite.*`) and an integration case's
# `area.name` (its first part one of the cases' areas); a file name (`verify.cpp`) is neither.
BACKTICKED = re.compile(r"`([^`\s]+)`")
GTEST_NAME = re.compile(r"^([A-Z][A-Za-z0-9]+)\.([A-Z][A-Za-z0-9]+|\*)$")
GTEST_DEF = re.compile(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)")
CASE_DEF = re.compile(r"""@ft\.case\(\s*["']([\w.]+)["']""")
FILE_EXT = re.compile(r"\.(?:h|cpp|cc|py|md|yml|yaml|json|txt|sh|cu|cmake|so|whl|o|a|profile)$")
# A package file's key path (`verify.allow_missing_archs`) has the same dotted form: each part after
# the first is a key the package loader reads.
PACKAGE_LOADER = os.path.join("wrapper", "src", "policy", "package.cpp")
QUOTED_KEY = re.compile(r'"([a-z_]+)"')


def defined_tests(tests_root):
    gtests, cases = set(), set()
    for dirpath, _, files in os.walk(tests_root):
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith(".cpp"):
                gtests |= set(GTEST_DEF.findall(ft.read(path)))
            elif name.endswith(".py"):
                cases |= set(CASE_DEF.findall(ft.read(path)))
    return gtests, cases


def stale_test_names(root, docs, tests_root):
    gtests, cases = defined_tests(tests_root)
    loader = os.path.join(root, PACKAGE_LOADER)
    keys = set(QUOTED_KEY.findall(ft.read(loader))) if os.path.exists(loader) else set()
    suites = {s for s, _ in gtests}
    areas = {c.split(".")[0] for c in cases}
    out = []
    for doc in docs:
        for m in BACKTICKED.finditer(ft.read(os.path.join(root, doc))):
            name = m.group(1)
            g = GTEST_NAME.match(name)
            if g:
                ok = g.group(1) in suites if g.group(2) == "*" else (g.group(1), g.group(2)) in gtests
            elif ("." in name and name.split(".")[0] in areas and not FILE_EXT.search(name)
                  and not all(part in keys for part in name.split(".")[1:])):
                ok = name in cases or (name.endswith(".*") and any(
                    c.startswith(name[:-1]) for c in cases))
            else:
                continue
            if not ok:
                out.append(f"{doc}: {name}")
    return sorted(set(out))


@ft.case("layout.docs_name_real_tests")
def docs_name_real_tests(t):
    """A claim of docs/ names the test that guards it: that test must exist (a renamed test would
    leave the claim guarded by nothing)."""
    docs = [os.path.join("docs", n) for n in sorted(os.listdir(t.src("docs"))) if n.endswith(".md")]
    bad = stale_test_names(t.src(), docs, t.src("tests"))
    ft.check(not bad, "docs name tests that do not exist:\n" + "\n".join("  " + b for b in bad))
    probe = t.path("probe_tests")
    ft.write(os.path.join(probe, "tests", "unit", "test_a.cpp"), "TEST(Gate, Folds) {}\nTEST_F(Fix, Runs) {}\n")
    ft.write(os.path.join(probe, "tests", "integration", "test_b.py"),
             '@ft.case("layout.one_home")\n@ft.case( "verify.json.data" )\n')
    ft.write(os.path.join(probe, "d.md"),
             "`Gate.Folds` `Fix.Runs` `Gate.*` `Gate.Gone` `Other.*` `layout.one_home` `layout.gone`\n"
             "`verify.json.*` `verify.cpp` `verify.text.*` `Call::policy_configured` `core/file.h`\n"
             "`X.Y` `verify.extensions` `verify.extension`\n")
    ft.write(os.path.join(probe, PACKAGE_LOADER), 'if (v["extensions"]) {}\n')
    ft.check_eq(stale_test_names(probe, ["d.md"], os.path.join(probe, "tests")),
                ["d.md: Gate.Gone", "d.md: Other.*", "d.md: layout.gone", "d.md: verify.extension",
                 "d.md: verify.text.*"],
                "stale test names in the probe")

RAW_DUMP = re.compile(r"(?:\.|->)\s*dump\s*\(")
JSON_WRITER = "core/json.cpp"


def code_lines(path):
    """(line number, the line without its comment) of a C++ source."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s.startswith(("*", "/*")):
                continue
            yield n, line.split("//", 1)[0]


def source_files(src_root):
    for dirpath, _, files in os.walk(src_root):
        for name in sorted(files):
            if name.endswith((".h", ".cpp")):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, src_root).replace(os.sep, "/"), path


def matches_outside(src_root, home, pattern):
    """file:line of each code line (comments aside) matching pattern in a source other than home."""
    out = []
    for rel, path in source_files(src_root):
        if rel != home:
            out += [f"{rel}:{n}" for n, code in code_lines(path) if pattern.search(code)]
    return sorted(out)


def raw_json_dumps(src_root):
    """file:line of each nlohmann dump() call outside core/json.cpp (comments aside)."""
    return matches_outside(src_root, JSON_WRITER, RAW_DUMP)


@ft.case("layout.json_written_by_core")
def json_written_by_core(t):
    """Every JSON text goes through core/json.h (json_text, json_quote): one rule for bytes that
    are not UTF-8. A raw nlohmann dump() throws on them and the process dies of SIGABRT."""
    bad = raw_json_dumps(t.src("wrapper", "src"))
    ft.check(not bad, "nlohmann dump() outside core/json.cpp (write JSON with forge::json_text):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "core", "json.cpp"), "return j.dump(2);\n")
    ft.write(os.path.join(probe, "cli", "a.cpp"), "// j.dump() in a comment\nstd::cout << j.dump(2);\n")
    ft.write(os.path.join(probe, "cli", "b.cpp"), "out = ptr->dump ();\n")
    ft.check_eq(raw_json_dumps(probe), ["cli/a.cpp:2", "cli/b.cpp:1"], "raw dumps in the probe tree")


# A process started: only core/process.h starts one (docs/DEVELOPING.md, "Where a fact lives").
PROCESS_CALLS = re.compile(
    r"\b(?:posix_spawnp?|execv[pe]*|execl[pe]*|v?fork|system|popen)\s*\("
    r"|\bdup2\s*\([^;]*,\s*(?:STDOUT_FILENO|1)\s*\)")
PROCESS_HOME = ("core/process.h", "core/process.cpp")

# The real nvcc located: only toolkit/locate.h finds it (the same section).
NVCC_PATH = re.compile(r'"bin"\s*/\s*"nvcc"|"/usr/local/cuda[^"]*"')
# A PATH walk: the file reads PATH and splits on ':'.
PATH_READ = re.compile(r'"PATH"')
PATH_SPLIT = re.compile(r"':'")
LOCATE_HOME = ("toolkit/locate.h", "toolkit/locate.cpp")
# Other owners, each for its own reason.
LOCATE_EXEMPT = {
    # Every nvcc on PATH, for `nvcc-forge toolkits` (the module map gives toolkit/ the discovery),
    # where find_command() stops at the first: not the one real nvcc a call runs. Its roots' nvcc
    # is nvcc_in_root()'s.
    "toolkit/discover.cpp": {"PATH walk"},
    # cuobjdump, not nvcc.
    "binary/cuobjdump.cpp": {"PATH walk"},
}


def processes_started(src_root):
    """file:line of each process started, or stdout redirected, outside core/process.*."""
    out = []
    for rel, path in source_files(src_root):
        if rel in PROCESS_HOME:
            continue
        out += [f"{rel}:{n}" for n, code in code_lines(path) if PROCESS_CALLS.search(code)]
    return sorted(out)


THREAD_HOME = {"core/workers.cpp"}
THREAD_START = re.compile(r"\bstd::j?thread\b(?!::)\s*\w*\s*[({]|<\s*std::j?thread\s*>|\bpthread_create\s*\(|"
                          r"\bstd::launch::async\b")


def threads_started(src_root):
    """file:line of each thread started outside core/workers.* (std::thread, pthread_create, an
    async launch)."""
    out = []
    for rel, path in source_files(src_root):
        if rel in THREAD_HOME:
            continue
        for n, code in code_lines(path):
            m = THREAD_START.search(code)
            if m:
                out.append(f"{rel}:{n}")
    return sorted(out)


@ft.case("layout.threads_started_by_core")
def threads_started_by_core(t):
    """Work is spread over threads only by core/workers.h (run_workers): one place survives a
    thread the system refuses to start."""
    bad = threads_started(t.src("wrapper", "src"))
    ft.check(not bad, "a thread started outside core/workers.* (use run_workers):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "core", "workers.cpp"), "pool.emplace_back(work);\n")
    ft.write(os.path.join(probe, "binary", "a.cpp"),
             "// std::thread t(work) in a comment\nstd::thread t(work);\nunsigned n = "
             "std::thread::hardware_concurrency();\nstd::vector<std::thread> pool;\n")
    ft.write(os.path.join(probe, "binary", "reader.cpp"), "f = std::async(std::launch::async, s);\n")
    ft.write(os.path.join(probe, "cli", "b.cpp"), "pthread_create(&t, nullptr, f, a);\n"
             "auto f = std::async(std::launch::async, g);\n")
    ft.check_eq(threads_started(probe), ["binary/a.cpp:2", "binary/a.cpp:4", "binary/reader.cpp:1", "cli/b.cpp:1",
                 "cli/b.cpp:2"],
                "threads started in the probe tree")


def nvcc_located(src_root):
    """(file:line, what) of each place outside toolkit/locate.* that finds nvcc or walks PATH."""
    out = []
    for rel, path in source_files(src_root):
        if rel in LOCATE_HOME:
            continue
        exempt = LOCATE_EXEMPT.get(rel, set())
        lines = list(code_lines(path))
        if "nvcc path" not in exempt:
            out += [(f"{rel}:{n}", "nvcc path") for n, code in lines if NVCC_PATH.search(code)]
        if "PATH walk" not in exempt and any(PATH_READ.search(c) for _, c in lines):
            out += [(f"{rel}:{n}", "PATH walk") for n, code in lines if PATH_SPLIT.search(code)]
    return sorted(out)


@ft.case("layout.processes_started_by_core")
def processes_started_by_core(t):
    """A process is started (and stdout redirected around one) only by core/process.h: one place
    forwards signals, keeps argv[0], falls back on E2BIG."""
    bad = processes_started(t.src("wrapper", "src"))
    ft.check(not bad, "a process started outside core/process.* (use run_process or exec_process):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "core", "process.cpp"), "::posix_spawn(&pid, p, 0, 0, a, e);\n")
    ft.write(os.path.join(probe, "entry", "a.cpp"), "// ::execv(p, argv) in a comment\n::execv(p, argv);\n")
    ft.write(os.path.join(probe, "cli", "b.cpp"),
             "int fd = ::dup(STDOUT_FILENO);\n::dup2(STDERR_FILENO, STDOUT_FILENO);\nFILE* f = popen(c, \"r\");\n"
             "::dup2(fd, 0);\nauto x = system_category();\n")
    ft.write(os.path.join(probe, "plan", "c.cpp"), "pid_t p = fork ();\nstd::system(cmd);\n")
    ft.check_eq(processes_started(probe),
                ["cli/b.cpp:2", "cli/b.cpp:3", "entry/a.cpp:2", "plan/c.cpp:1", "plan/c.cpp:2"],
                "processes started in the probe tree")


@ft.case("layout.nvcc_located_by_toolkit")
def nvcc_located_by_toolkit(t):
    """The real nvcc is found only by toolkit/locate.h: the <root>/bin/nvcc path, the
    /usr/local/cuda default and the PATH walk each have that one home."""
    bad = nvcc_located(t.src("wrapper", "src"))
    ft.check(not bad, "nvcc located outside toolkit/locate.* (use nvcc_in_root, default_cuda_root, "
             "find_command, find_real_nvcc):\n" + "\n".join(f"  {w}: {what}" for w, what in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "toolkit", "locate.cpp"), 'auto p = root / "bin" / "nvcc";\n')
    ft.write(os.path.join(probe, "frontend", "a.cpp"),
             '// root / "bin" / "nvcc" in a comment\nfs::path n = root / "bin"/"nvcc";\n'
             'desc("default: $CUDA_HOME, else /usr/local/cuda");\n')
    ft.write(os.path.join(probe, "cli", "b.cpp"),
             'home = "/usr/local/cuda";\nstd::string p = getenv_str("PATH");\n'
             "auto colon = p.find(':', start);\n")
    ft.write(os.path.join(probe, "binary", "cuobjdump.cpp"), "split(env(\"PATH\"), ':');\n")
    ft.check_eq(nvcc_located(probe),
                [("cli/b.cpp:1", "nvcc path"), ("cli/b.cpp:3", "PATH walk"), ("frontend/a.cpp:2", "nvcc path")],
                "nvcc located in the probe tree")


# The environment read: only core/ reads it (core/env.h's getenv_str, getenv_opt, getenv_nonempty;
# core/paths.cpp for the data and cache roots). Four private copies of getenv_str had grown in
# toolkit/, binary/ and provenance/ (issue "Simple to change, round two").
ENV_READ = re.compile(r"\b(?:std::)?(?:secure_)?getenv\s*\(")
ENV_HOME_DIR = "core/"


def environment_reads(src_root):
    """file:line of each direct read of the environment outside core/."""
    out = []
    for rel, path in source_files(src_root):
        if rel.startswith(ENV_HOME_DIR):
            continue
        out += [f"{rel}:{n}" for n, code in code_lines(path) if ENV_READ.search(code)]
    return sorted(out)


@ft.case("layout.environment_read_by_core")
def environment_read_by_core(t):
    """An environment variable is read only through core/env.h: one rule for unset against empty,
    one place to list every variable the tool reads."""
    bad = environment_reads(t.src("wrapper", "src"))
    ft.check(not bad, "the environment read outside core/ (use core/env.h):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "core", "env.h"), "const char* v = std::getenv(name);\n")
    ft.write(os.path.join(probe, "toolkit", "a.cpp"),
             "// std::getenv(\"X\") in a comment\nconst char* v = std::getenv(name);\n"
             "std::string s = getenv_str(\"PATH\");\n")
    ft.write(os.path.join(probe, "cli", "b.cpp"), "auto h = getenv (\"HOME\");\nauto s = secure_getenv(\"X\");\n")
    ft.check_eq(environment_reads(probe), ["cli/b.cpp:1", "cli/b.cpp:2", "toolkit/a.cpp:2"],
                "environment reads in the probe tree")


PACKAGE_NAME_HOME = "policy/package.cpp"
DASH_UNDERSCORE = re.compile(r"'-'.*'_'|'_'.*'-'")
PACKAGE_DIR_JOIN = re.compile(r"\bpackages_dir\s*/")


def package_dirs_named(src_root):
    """(file:line, what) of each place that names a package's directory by a rule of its own: a
    '-'/'_' swap outside policy/package.cpp, or a packages directory joined with a name in a file
    that does not take the names from policy::package_dir_candidates()."""
    out = []
    for rel, path in source_files(src_root):
        lines = list(code_lines(path))
        if rel != PACKAGE_NAME_HOME:
            out += [(f"{rel}:{n}", "name swap") for n, code in lines if DASH_UNDERSCORE.search(code)]
        if not any("package_dir_candidates" in code for _, code in lines):
            out += [(f"{rel}:{n}", "package dir") for n, code in lines if PACKAGE_DIR_JOIN.search(code)]
    return sorted(out)


@ft.case("layout.package_dir_named_by_policy")
def package_dir_named_by_policy(t):
    """A package's directory names (the name, '-' as '_', '_' as '-') have one home,
    policy::package_dir_candidates(): the loader tries them, the wrapper's cached policy keys on
    them. Two rules once disagreed on a name with both characters, and the cache went stale."""
    bad = package_dirs_named(t.src("wrapper", "src"))
    ft.check(not bad, "a package directory named outside policy::package_dir_candidates():\n"
             + "\n".join(f"  {w}: {what}" for w, what in bad))
    probe = t.path("src")
    ft.write(os.path.join(probe, "policy", "package.cpp"), "std::pair{'-', '_'};\nfs::path d = packages_dir / c;\n"
             "for (auto& c : package_dir_candidates(n)) {}\n")
    ft.write(os.path.join(probe, "frontend", "a.cpp"),
             "// c == '-' ? '_' in a comment\nc = c == '-' ? '_' : c;\nstamp(packages_dir / name / f);\n")
    ft.write(os.path.join(probe, "frontend", "b.cpp"),
             "for (auto& n : policy::package_dir_candidates(p))\n  stamp(packages_dir / n / f);\n")
    ft.check_eq(package_dirs_named(probe),
                [("frontend/a.cpp:2", "name swap"), ("frontend/a.cpp:3", "package dir")],
                "package directories named in the probe tree")


# Issue 40's "one home" facts, each a pattern that marks a second home of the fact.
ONE_HOMES = {
    # The gate's verdict: its words and exit codes (verify/judge.h, Outcome); plan uses it.
    "verdict": (("verify/",),
                re.compile(r'\bverdict\w*\s*(?:==|!=|=)\s*"(?:pass|fail|error)"'
                           r'|\?\s*kExitOk\s*:\s*kExitPolicy|\?\s*kExitPolicy\s*:\s*kExitOk'),
                # lint's and audit's own verdicts, not the gate's
                lambda rel, text: "verify/" in text or "plan/" in text),
    # A user's value shown in text: escaped and cut by core/text.h (shown_value, escaped_byte).
    "shown value": (("core/text.cpp",), re.compile(r'"\\\\x\{:02x\}"|=\s*\'\?\'\s*;'), None),
    # The UTF-8 table (RFC 3629's lead bytes): core/text.h's utf8_sequence_length.
    "UTF-8": (("core/",), re.compile(r"(?:[<>]=?|==)\s*0x(?:[cC]2|[eE][dD]|[fF][04])\b"), None),
    # A CUDA "X.Y" version: core/version.h. A regex of digits, a dot, digits; or digits read
    # (from_chars) just after a '.' is looked for.
    "CUDA version": (("core/version.cpp",), re.compile(r"\\d\+?\)?\\\.\(?\\d"), None),
    # "Has this file changed": core/file_stamp.h's fields.
    "file stamp": (("core/file_stamp.cpp",), re.compile(r"\bst_[mc]tim\b"), None),
    # Whether to colour and with what (core/colour.h): NO_COLOR read, or a colour's escape code
    # (SGR, ESC [ n m) written, anywhere else. audit's line clearing (ESC [ K) is no colour.
    "colour": (("core/colour.",), re.compile(r'"NO_COLOR"|\\x1b\[\d+(?:;\d+)*m'), None),
    # An edit distance ("did you mean"): core/suggest.h. A row of the table: the least of two
    # "+ 1" steps and a third.
    "edit distance": (("core/suggest.cpp",), re.compile(r"\bmin\s*\(\s*\{[^}]*\+\s*1\s*,[^}]*\+\s*1\b"), None),
    # SHA-256: core/sha256.h. Its first round constant or its initial hash value (FIPS 180-4).
    "SHA-256": (("core/sha256.cpp",), re.compile(r"\b0x(?:428a2f98|6a09e667)\b", re.IGNORECASE), None),
    # A -gencode value: arch/gencode.h. A literal that joins "arch=" and ",code=".
    "gencode value": (("arch/gencode.cpp",), re.compile(r'"arch=[^"]*,code=|",code='), None),
    # A process's parent, start time and name: toolkit::process_info(), the one /proc/<pid>/stat
    # reader.
    "process stat": (("toolkit/locate.cpp",), re.compile(r'"/stat"'), None),
    # A field of a fatbin, ELF, PE/COFF or cubin layout: its offset is named in binary/fatbin.h,
    # elf.h, pe.h or cubin_layout.h. A second home is a read at a number (offset 0, a magic at the
    # start, excepted) in a reader of those formats.
    "layout offset": (("binary/fatbin.h", "binary/elf.h", "binary/pe.h", "binary/cubin_layout.h"),
                      re.compile(r"(?:\.|->)\s*u(?:8|16|32|64)\s*\(\s*(?:[^()]*\+\s*)?(?:0[xX][0-9a-fA-F]*[1-9a-fA-F][0-9a-fA-F]*|[1-9]\d*)\s*\)"),
                      lambda rel, text: rel.startswith(("binary/fatbin", "binary/elf", "binary/pe",
                                                        "binary/cubin", "binary/read_"))),
    # The path-glob dialect (core/glob.h): a second matcher compares a character with '?' (the
    # one-character wildcard) or asks fnmatch/glob.
    "glob": (("core/glob.cpp",),
             re.compile(r"==\s*'\?'|\bfnmatch\s*\(|#\s*include\s*<(?:fnmatch|glob)\.h>"), None),
    # The suffix fold (arch::covers): a carried target folded and compared with a wanted one
    # ("sm_90a stands in for sm_90") or looked up folded. Two targets compared both folded (a
    # waiver naming a target, suffix aside) is no coverage rule.
    "suffix fold": (("arch/",),
                    re.compile(r"\.folded\(\)\s*==\s*\w+\s*[);]|\b\w+\s*==\s*\w+\.folded\(\)\s*[);]"
                               r"|\b(?:contains|count|find)\s*\(\s*[\w.>-]+\.folded\(\)\s*\)"), None),
    # The split of an arch's torch/CMake spelling (arch::split_arch_spelling): a tail looked for
    # by hand. Writing "+PTX" after a token is no split.
    "arch spelling": (("arch/",),
                      re.compile(r'\b(?:ends_with|starts_with|r?find)\s*\(\s*"(?:\+PTX|-real|-virtual)"'),
                      None),
    # How a package's own arch knob spells a list (policy/arch_knob.h, export_knobs): its form
    # and PTX rule read anywhere else.
    "arch knob": (("policy/arch_knob.",), re.compile(r"\bKnob(?:Form|Ptx)::\w+"), None),
    # A bound shim's trailer (frontend/settings.h, shim_trailer and read_shim_settings): its
    # footer's tag.
    "shim trailer": (("frontend/settings.cpp",), re.compile(r'"NVCC_FORGE_SHIM_SETTINGS\b'), None),
    # A file or temporary directory created, or a file written whole (core/file.h: open_file,
    # replace_file, create_unique, create_unique_dir, create_mark_at): a stream or a raw open that
    # creates or truncates, which would follow a symbolic link another user planted or truncate a
    # file in place, or a mkdtemp/mkstemp of its own.
    "file write": (("core/file.cpp",),
                   re.compile(r"^(?!.*\bopen_file\s*\().*(?:\bstd::o?fstream\b|\bfopen\s*\(|::creat\s*\("
                              r"|\bO_CREAT\b|\bO_TRUNC\b|\bmk[sd]temp\s*\()"), None),
}
DOT_CHAR = re.compile(r"'\.'")
FROM_CHARS = re.compile(r"\bfrom_chars\s*\(")


def second_homes(src_root, fact):
    """file:line of each place outside the fact's home that holds it again."""
    homes, pattern, applies = ONE_HOMES[fact]
    out = []
    for rel, path in source_files(src_root):
        if rel.startswith(homes):
            continue
        lines = list(code_lines(path))
        if applies and not applies(rel, "\n".join(code for _, code in lines)):
            continue
        out += [f"{rel}:{n}" for n, code in lines if pattern.search(code)]
        if fact == "CUDA version":
            dots = [n for n, code in lines if DOT_CHAR.search(code)]
            out += [f"{rel}:{n}" for n, code in lines
                    if FROM_CHARS.search(code) and any(0 <= n - d <= 4 for d in dots)]
    return sorted(set(out))


def check_one_home(t, fact, use, probe_files, expected):
    bad = second_homes(t.src("wrapper", "src"), fact)
    ft.check(not bad, f"a second home of the {fact} (use {use}):\n" + "\n".join("  " + b for b in bad))
    probe = t.path("src_" + fact.replace(" ", "_").replace("-", ""))
    for rel, text in probe_files.items():
        ft.write(os.path.join(probe, rel), text)
    ft.check_eq(second_homes(probe, fact), expected, f"second homes of the {fact} in the probe tree")


@ft.case("layout.verdicts_by_verify")
def verdicts_by_verify(t):
    """The gate's verdict, its words and its exit codes, live in verify/judge.h (Outcome): plan
    once kept its own string verdicts beside verify's."""
    check_one_home(t, "verdict", "verify::Outcome, outcome_word, outcome_exit_code", {
        "verify/judge.cpp": 'return pass ? kExitOk : kExitPolicy;\n',
        "plan/report.cpp": '#include "verify/judge.h"\n// r.verdict = "pass" in a comment\n'
                           'r.verdict = "error";\nif (verdict == "pass") return 0;\n',
        "cli/verify_gate.cpp": '#include "verify/gate.h"\nreturn pass ? kExitOk : kExitPolicy;\n',
        "cli/cmd_lint.cpp": 'return n > 0 ? kExitPolicy : kExitOk;\n',
    }, ["cli/verify_gate.cpp:2", "plan/report.cpp:3", "plan/report.cpp:4"])


@ft.case("layout.shown_values_by_core")
def shown_values_by_core(t):
    """A user's value in a message is escaped and cut by core/text.h only (shown_value,
    escaped_byte): the entry once cut at 64 and wrote '?' where core cut at 120 and wrote \\xHH."""
    check_one_home(t, "shown value", "shown_value, escape_control, escaped_byte", {
        "core/text.cpp": 'return fmt::format("\\\\x{:02x}", c);\n',
        "entry/a.cpp": "// c = '?'; in a comment\nif (c < 0x20) c = '?';\n",
        "ci/b.cpp": 'out += fmt::format("\\\\x{:02x}", c);\nif (c == \'?\') {}\n',
    }, ["ci/b.cpp:1", "entry/a.cpp:2"])


@ft.case("layout.utf8_by_core")
def utf8_by_core(t):
    """Which bytes are UTF-8 is decided by core/text.h alone (utf8_sequence_length,
    first_invalid_utf8): ci/junit.cpp once had a second table."""
    check_one_home(t, "UTF-8", "utf8_sequence_length", {
        "core/text.cpp": "if (c >= 0xc2 && c <= 0xdf) {}\n",
        "ci/a.cpp": "// b0 >= 0xC2 in a comment\nif (b0 >= 0xC2 && b0 <= 0xDF) n = 2;\nif (b0 == 0xED) hi = 0x9F;\n"
                    "if (b0 <= 0xF4) n = 4;\n",
        "binary/b.cpp": "constexpr std::uint8_t kGuid[] = {0xc2, 0xed, 0xf4};\n",
    }, ["ci/a.cpp:2", "ci/a.cpp:3", "ci/a.cpp:4"])


@ft.case("layout.cuda_versions_by_one_parser")
def cuda_versions_by_one_parser(t):
    """A CUDA "X.Y" version is parsed by core/version.h alone (parse_cuda_version,
    leading_cuda_version): seven parsers once disagreed, and three threw on 99999999999.0."""
    check_one_home(t, "CUDA version", "parse_cuda_version, leading_cuda_version", {
        "core/version.cpp": "auto d = s.find('.');\nstd::from_chars(b, e, major);\n",
        "toolkit/a.cpp": '// R"((\\d+)\\.(\\d+))" in a comment\nstatic const std::regex re(R"(release\\s+(\\d+)\\.(\\d+))");\n',
        "bundle/b.cpp": 'std::regex re(R"((\\d+\\.\\d+)(\\+?))");\nstd::regex sm(R"((?:sm_)?(\\d{2,3}))");\n',
        "verify/c.cpp": "auto dot = s.find('.');\nauto a = s.substr(0, dot);\nint x = 0;\n"
                        "auto r = std::from_chars(a.data(), a.data() + a.size(), x);\n",
        "arch/d.cpp": "auto r = std::from_chars(s.data(), s.data() + s.size(), out);\n",
    }, ["bundle/b.cpp:1", "toolkit/a.cpp:2", "verify/c.cpp:4"])


@ft.case("layout.file_stamps_by_core")
def file_stamps_by_core(t):
    """Whether a file has changed is decided by core/file_stamp.h's rule alone (device, inode,
    size, mtime and ctime in nanoseconds): the front end once left out ctime and the device."""
    check_one_home(t, "file stamp", "stamp_of, file_stamp", {
        "core/file_stamp.cpp": "s.mtime_ns = nanoseconds(st.st_mtim);\n",
        "frontend/config.cpp": "// st.st_mtim in a comment\nlong long ns = st.st_mtim.tv_sec;\n",
        "binary/b.cpp": "s.ctime_ns = st.st_ctim.tv_sec * kNs;\n",
    }, ["binary/b.cpp:1", "frontend/config.cpp:2"])


@ft.case("layout.files_written_by_core")
def files_written_by_core(t):
    """A file is created or written whole only through core/file.h (open_file, replace_file,
    create_unique, create_mark_at): the ledger, the stand-in's output and checksum, the shim, the
    depfile and the zip writer each once opened by name with O_CREAT or O_TRUNC, or streamed to
    a predictable temporary name, following a symbolic link another user could plant."""
    check_one_home(t, "file write", "open_file, replace_file, create_unique, create_unique_dir, "
                   "create_mark_at", {
        "core/file.cpp": "int fd = ::openat(d, n, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW);\n",
        "provenance/a.cpp": "// ::open(p, O_WRONLY | O_CREAT) in a comment\n"
                            "int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);\n"
                            "auto f = open_file(p, O_WRONLY | O_APPEND | O_CREAT, FileKind::Regular);\n",
        "frontend/b.cpp": "std::ofstream out(tmp, std::ios::trunc);\nstd::ifstream in(p);\n"
                          "FILE* f = fopen(p, \"w\");\n",
        "binary/c.cpp": "w.fd_ = ::open(p,\n    O_WRONLY | O_TRUNC);\n",
        "bundle/d.cpp": "if (::mkdtemp(tmpl.data()) == nullptr) {}\n",
    }, ["binary/c.cpp:2", "bundle/d.cpp:1", "frontend/b.cpp:1", "frontend/b.cpp:3", "provenance/a.cpp:2"])


@ft.case("layout.colour_by_core")
def colour_by_core(t):
    """Whether a line is coloured (a terminal, NO_COLOR, TERM=dumb) and the escape codes live in
    core/colour.h: the wrapper's drop lines (frontend/) may not include cli/, where the rule was."""
    check_one_home(t, "colour", "colour_wanted, painted, kColour*", {
        "core/colour.cpp": 'return getenv_str("NO_COLOR").empty();\n',
        "cli/a.cpp": '// "\\x1b[31m" in a comment\nconstexpr auto kRed = "\\x1b[31m";\n',
        "cli/cmd_audit.cpp": 'fmt::print(stderr, "\\r\\x1b[K");\n',
        "frontend/b.cpp": 'if (getenv_str("NO_COLOR").empty()) {}\n',
    }, ["cli/a.cpp:2", "frontend/b.cpp:1"])


# The question "is a policy configured" (frontend/config.h's FrontendEnv::policy_configured).
POLICY_ASKED = re.compile(r"\bpolicy_configured\s*\(")
POLICY_DEFINED_IN = "frontend/config.h"
POLICY_ASKER = "entry/frontend_entry.cpp"


def policy_askers(src_root):
    """file:line of each place that asks whether a policy is configured (the definition aside)."""
    return matches_outside(src_root, POLICY_DEFINED_IN, POLICY_ASKED)


@ft.case("layout.policy_configured_asked_once")
def policy_configured_asked_once(t):
    """The nvcc path asks whether a policy is configured once, in the entry, when the build's
    settings are bound (frontend::Call::policy_configured carries the answer down): it was asked
    in four places (the entry twice, run_call, effective_policy), each free to answer apart."""
    askers = policy_askers(t.src("wrapper", "src"))
    ft.check(len(askers) == 1 and askers[0].startswith(POLICY_ASKER + ":"),
             f"policy_configured() asked outside one place in {POLICY_ASKER} (pass "
             "Call::policy_configured down): " + ", ".join(askers))
    probe = t.path("src_policy")
    ft.write(os.path.join(probe, POLICY_DEFINED_IN),
             "bool policy_configured() const { return !arch_list.empty(); }\n")
    ft.write(os.path.join(probe, POLICY_ASKER),
             "// env.policy_configured() in a comment\ncall.policy_configured = env.policy_configured();\n")
    ft.write(os.path.join(probe, "frontend", "wrapper.cpp"),
             "const bool c = call.policy_configured;\nif (!env.policy_configured ()) {}\n")
    ft.check_eq(policy_askers(probe), [f"{POLICY_ASKER}:2", "frontend/wrapper.cpp:2"],
                "askers in the probe tree")


@ft.case("layout.edit_distance_by_core")
def edit_distance_by_core(t):
    """The distance behind every "did you mean" is core/suggest.h's (edit_distance, nearest_name):
    package names once had a second one, in which a swap of two letters was two edits."""
    check_one_home(t, "edit distance", "edit_distance, nearest_name", {
        "core/suggest.cpp": "cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});\n",
        "policy/a.cpp": "// std::min({a + 1, b + 1, c}) in a comment\n"
                        "row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (x != y)});\n"
                        "n = std::min({size + 10, limit});\n",
        "cli/b.cpp": "d[i][j] = std::min( { d[i-1][j] + 1, d[i][j-1] + 1, d[i-1][j-1] + c } );\n",
    }, ["cli/b.cpp:1", "policy/a.cpp:2"])


@ft.case("layout.sha256_by_core")
def sha256_by_core(t):
    """SHA-256 is core/sha256.h's alone (incremental, SHA-NI where the CPU has it)."""
    check_one_home(t, "SHA-256", "sha256_hex, Sha256", {
        "core/sha256.cpp": "0x428a2f98, 0x71374491,\n",
        "binary/a.cpp": "// 0x6a09e667 in a comment\nstatic const uint32_t h0 = 0x6A09E667;\n",
        "provenance/b.cpp": "constexpr uint32_t k[] = {0x428a2f98u};\nuint32_t x = 0x428a2f980;\n",
    }, ["binary/a.cpp:2"])


@ft.case("layout.gencode_values_by_arch")
def gencode_values_by_arch(t):
    """A -gencode value ("arch=compute_90,code=sm_90") is written by arch/gencode.h alone."""
    check_one_home(t, "gencode value", "arch::gencode_value", {
        "arch/gencode.cpp": 'return fmt::format("arch={},code={}", a, c);\n',
        "nvcc/a.cpp": '// "arch=compute_" + x + ",code=" in a comment\n'
                      'out.push_back("arch=compute_" + v + ",code=sm_" + v);\n'
                      'auto s = fmt::format("arch=compute_{},code=sm_{}", v, v);\n',
        "lint/b.cpp": 'for (auto* w : {"arch=compute_", "code=sm_"}) {}\n'
                      'err("incompatible: arch=\'{}\', code=\'{}\'");\n',
    }, ["nvcc/a.cpp:2", "nvcc/a.cpp:3"])


@ft.case("layout.process_stat_by_toolkit")
def process_stat_by_toolkit(t):
    """A process's parent, start time and name are read from /proc/<pid>/stat by
    toolkit::process_info() alone (its comm field may hold spaces and parentheses)."""
    check_one_home(t, "process stat", "toolkit::process_info", {
        "toolkit/locate.cpp": 'const std::string path = "/proc/" + std::to_string(pid) + "/stat";\n',
        "frontend/a.cpp": '// "/stat" in a comment\nstd::ifstream f(fmt::format("/proc/{}", pid) + "/stat");\n'
                          'std::ifstream g(fmt::format("/proc/{}/cmdline", pid));\n',
    }, ["frontend/a.cpp:2"])


@ft.case("layout.offsets_named_in_layout_headers")
def offsets_named_in_layout_headers(t):
    """A fatbin, ELF, PE/COFF or cubin field is read at an offset named in its layout header
    (fatbin.h, elf.h, pe.h, cubin_layout.h), never at a number in a reader: pe.cpp once read a
    universal Mach-O's nfat_arch at 4. (A name defined in a reader's .cpp is not caught.)"""
    check_one_home(t, "layout offset", "the names of fatbin.h, elf.h, pe.h, cubin_layout.h", {
        "binary/pe.h": "inline constexpr std::uint64_t kSecName = 0;\n",
        "binary/cubin.cpp": "// b.u32(off + 8) in a comment\nconst auto t = b.u32(off + 8);\n"
                            "const auto m = b.u32(0);\nconst auto n = b.u16(off + nhdr::kType);\n"
                            "auto f = head.u32( 0x30 );\n",
        "binary/read_elf.cpp": "const auto v = bytes->u64(off+16);\n",
        "binary/zip_io.cpp": "const auto s = b.u32(off + 26);\n",
    }, ["binary/cubin.cpp:2", "binary/cubin.cpp:5", "binary/read_elf.cpp:1"])



@ft.case("layout.globs_matched_by_core")
def globs_matched_by_core(t):
    """lint_ignore and wrapper.arch_specific_sources are matched by core/glob.h's one dialect."""
    check_one_home(t, "glob", "glob_match, glob_match_unrooted, glob_has_wildcard", {
        "core/glob.cpp": "if (c == '?') {}\n",
        "lint/a.cpp": "// c == '?' in a comment\nif (g[i] == '?') ++i;\n#include <fnmatch.h>\n"
                      "return fnmatch(glob.c_str(), path.c_str(), 0) == 0;\n",
        "frontend/b.cpp": "if (c == '*') {}\nshown = '?';\n",
    }, ["lint/a.cpp:2", "lint/a.cpp:3", "lint/a.cpp:4"])


@ft.case("layout.suffix_fold_by_arch")
def suffix_fold_by_arch(t):
    """Whether what is carried covers a wanted target is arch::covers() alone: the wrapper's
    compare once folded suffixes by name, so sm_100a stood in for sm_100 where the gate said no."""
    check_one_home(t, "suffix fold", "arch::covers, arch::asked_for", {
        "arch/coverage.cpp": "return have.count(want.folded()) > 0;\n",
        "frontend/compare.cpp": "// carried.contains(t.folded()) in a comment\n"
                                "if (!carried.contains(t.folded())) missing.push_back(t);\n"
                                "[&](const Target& h) { return h.folded() == t; };\n"
                                "if (want == h.folded()) {}\n",
        "verify/gate.cpp": "if (w.target.folded() == t.folded()) return &w;\n",
    }, ["frontend/compare.cpp:2", "frontend/compare.cpp:3", "frontend/compare.cpp:4"])


@ft.case("layout.arch_spellings_split_by_arch")
def arch_spellings_split_by_arch(t):
    """An arch's torch or CMake spelling ("9.0a+PTX", "90-real") is split by
    arch::split_arch_spelling alone, which the lint reads build scripts with."""
    check_one_home(t, "arch spelling", "arch::split_arch_spelling", {
        "arch/arch.cpp": 'if (token.ends_with("+PTX")) {}\n',
        "lint/a.cpp": '// tok.ends_with("-real") in a comment\nif (tok.ends_with("-real")) {}\n'
                      'auto at = tok.rfind( "+PTX");\n',
        "policy/b.cpp": 'if (e.ptx) token += "+PTX";\n',
    }, ["lint/a.cpp:2", "lint/a.cpp:3"])


@ft.case("layout.arch_knobs_by_policy")
def arch_knobs_by_policy(t):
    """A package's own arch knob is turned into a value for a list by policy/arch_knob.h alone
    (export_knobs): resolve, env, plan and the CMake module all ask it."""
    check_one_home(t, "arch knob", "policy::export_knobs", {
        "policy/arch_knob.cpp": "if (k.form == KnobForm::Dotted) {}\n",
        "cli/cmd_env.cpp": "// KnobPtx::Suffix in a comment\nif (k.ptx == KnobPtx::Suffix) v += \"+PTX\";\n",
        "policy/report.cpp": 'j["form"] = knob_form_string(k.form);\n',
    }, ["cli/cmd_env.cpp:2"])


@ft.case("layout.shim_trailer_by_settings")
def shim_trailer_by_settings(t):
    """A bound shim's settings are written and read by frontend/settings.h alone (shim_trailer,
    read_shim_settings)."""
    check_one_home(t, "shim trailer", "shim_trailer, read_shim_settings", {
        "frontend/settings.cpp": 'constexpr std::string_view kFooterTag = "NVCC_FORGE_SHIM_SETTINGS ";\n',
        "frontend/shim.cpp": '// "NVCC_FORGE_SHIM_SETTINGS " in a comment\n'
                             'out << "NVCC_FORGE_SHIM_SETTINGS " << n;\n',
    }, ["frontend/shim.cpp:2"])


# A CC is "X.Y" in policy/gpus.yml (gpus: and retired:); code may name one, never a list of them.
GPUS_KEY = re.compile(r'^\s+"(\d+)\.(\d)"\s*:', re.MULTILINE)
BRACE_LIST = re.compile(r"\{([^{}]*)\}")
CC_ITEM = re.compile(r"^(?:sm_|compute_)?(?:(\d+)\.(\d)|(\d{2,3}))[af]?$")


def known_ccs(gpus_yml):
    with open(gpus_yml, encoding="utf-8") as f:
        return {int(a) * 10 + int(b) for a, b in GPUS_KEY.findall(f.read())}


def cc_lists(src_root, ccs):
    """file:line of each brace list on one line that names three or more CCs of gpus.yml."""
    out = []
    for rel, path in source_files(src_root):
        for n, code in code_lines(path):
            for m in BRACE_LIST.finditer(code):
                named = 0
                for item in m.group(1).split(","):
                    c = CC_ITEM.match(item.strip().strip("\"'"))
                    if c:
                        sm = int(c.group(1)) * 10 + int(c.group(2)) if c.group(1) else int(c.group(3))
                        named += sm in ccs
                if named >= 3:
                    out.append(f"{rel}:{n}")
                    break
    return sorted(out)


@ft.case("layout.ccs_listed_by_gpus_yml")
def ccs_listed_by_gpus_yml(t):
    """Which CCs exist is policy/gpus.yml's alone: the lint's known and suggested CCs are read off
    it, never a list in the code (a list there goes stale with the next GPU)."""
    ccs = known_ccs(t.src("policy", "gpus.yml"))
    ft.check({75, 80, 90, 100, 120} <= ccs, f"gpus.yml's CCs as read here: {sorted(ccs)}")
    bad = cc_lists(t.src("wrapper", "src"), ccs)
    ft.check(not bad, "a list of CCs in the code (read policy/gpus.yml, policy::gpus_for):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("src_ccs")
    ft.write(os.path.join(probe, "lint", "scan.cpp"),
             '// {75, 80, 86} in a comment\nconst std::set<int> known{75, 80, 86, 89, 90};\n'
             'for (auto* s : {"7.5", "8.0", "9.0a"}) {}\nint sizes[] = {64, 96, 128, 256};\n'
             'auto v = {"sm_80", "sm_90"};\n')
    ft.write(os.path.join(probe, "policy", "b.cpp"), 'std::vector<std::string> t{"compute_80", "sm_86", "sm_120"};\n')
    ft.check_eq(cc_lists(probe, ccs), ["lint/scan.cpp:2", "lint/scan.cpp:3", "policy/b.cpp:1"],
                "CC lists in the probe tree")


# Unit test files are named after the source they test (issue 40, ninja's "a _test.cc beside each
# .cc"): tests/unit/<module>/test_<name>.cpp tests wrapper/src/<module>/<name>.cpp (or .h). These
# are named after a concept that spans a module's sources instead, each for the reason given.
UNIT_TESTS_OF_A_CONCEPT = {
    "binary/test_corpus.cpp",  # the fuzz corpus replayed through every reader
    "binary/test_fixtures.cpp",  # every reader against real nvcc output
    "binary/test_hostile.cpp",  # malformed input through every reader
    "binary/test_limits.cpp",  # bounded work on hostile input, every reader
    "binary/test_stream.cpp",  # the bounded readers of cubins and fatbins alike
    "binary/test_wheel_corpus.cpp",  # the hostile wheel corpus replayed through the wheel reader
    "lint/test_robust.cpp",  # random token mixes through every lexer and rule
    "nvcc/test_dryrun.cpp",  # the library against the real nvcc's -dryrun
    "nvcc/test_properties.cpp",  # random command lines through parse and inject
    "policy/test_one_truth.cpp",  # coverage and resolve telling one truth
}


def misnamed_unit_tests(root, concepts):
    """tests/unit/<module>/test_<name>.cpp files with no wrapper/src/<module>/<name>.cpp or .h and
    not in `concepts`; and the entries of `concepts` that are no such file or name a source."""
    unit = os.path.join(root, "tests", "unit")
    bad, listed = [], set()
    for module in sorted(os.listdir(unit)):
        if not os.path.isdir(os.path.join(unit, module)):
            continue
        for name in sorted(os.listdir(os.path.join(unit, module))):
            if not (name.startswith("test_") and name.endswith(".cpp")):
                continue
            rel = f"{module}/{name}"
            src = os.path.join(root, "wrapper", "src", module, name[len("test_"):-len(".cpp")])
            named = os.path.exists(src + ".cpp") or os.path.exists(src + ".h")
            if rel in concepts:
                listed.add(rel)
                if named:
                    bad.append(f"tests/unit/{rel}: allow-listed, but named after a source")
            elif not named:
                bad.append(f"tests/unit/{rel}: no wrapper/src/{rel[:-len(name)]}{name[5:-4]}.cpp or .h")
    bad += [f"tests/unit/{c}: allow-listed, but no such test file" for c in sorted(set(concepts) - listed)]
    return bad


@ft.case("layout.unit_tests_named_after_sources")
def unit_tests_named_after_sources(t):
    bad = misnamed_unit_tests(t.src(), UNIT_TESTS_OF_A_CONCEPT)
    ft.check(not bad, "unit test files not named after the source they test (name it test_<source>.cpp, "
             "or list a concept's file in UNIT_TESTS_OF_A_CONCEPT with its reason):\n"
             + "\n".join("  " + b for b in bad))
    probe = t.path("probe_unit_names")
    ft.write(os.path.join(probe, "wrapper", "src", "m", "good.cpp"), "\n")
    ft.write(os.path.join(probe, "wrapper", "src", "m", "only.h"), "\n")
    ft.write(os.path.join(probe, "wrapper", "src", "m", "listed.cpp"), "\n")
    for name in ["test_good.cpp", "test_only.cpp", "test_good_and_only.cpp", "test_idea.cpp",
                 "test_listed.cpp", "support.h"]:
        ft.write(os.path.join(probe, "tests", "unit", "m", name), "\n")
    ft.write(os.path.join(probe, "tests", "unit", "files.h"), "\n")
    ft.check_eq(misnamed_unit_tests(probe, {"m/test_idea.cpp", "m/test_listed.cpp", "m/test_gone.cpp"}),
                ["tests/unit/m/test_good_and_only.cpp: no wrapper/src/m/good_and_only.cpp or .h",
                 "tests/unit/m/test_listed.cpp: allow-listed, but named after a source",
                 "tests/unit/m/test_gone.cpp: allow-listed, but no such test file"],
                "misnamed unit tests in the probe tree")


sys.exit(ft.main())
