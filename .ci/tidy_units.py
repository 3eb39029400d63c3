#!/usr/bin/env python3
"""The translation units .ci/tidy hands to clang-tidy: the unity batches the build compiles.

    tidy_units.py BUILD_DIR OUT_DIR SOURCE...
    tidy_units.py --locate OUT_DIR < clang-tidy-output

BUILD_DIR is a configured CMake tree with CMAKE_UNITY_BUILD=ON (its compile_commands.json and its
Unity/unity_N_cxx.cxx files). Each unity batch that includes one of the SOURCEs becomes one file in
OUT_DIR: the batch's sources pasted one after the other, each after a `#line 1 "<source>"`, so
that clang-tidy parses the headers (fmt, nlohmann-json, yaml-cpp, Boost) once per batch instead of
once per source and still reports every finding at the source's own file and line. Pasted, not
#included as CMake's batch file does: the static analyzer runs its path-sensitive checks only on
functions of the main file (clang's AnalysisConsumer::getModeForDecl), and a finding of a
bugprone-* check in an #included .cpp would be a finding in a header. NOLINT comments keep
working: they are on the same line of the pasted text. clang-tidy names a finding by its place in
the pasted file (it ignores #line there): --locate turns each such FILE:LINE back into the
source's, reading the pasted file's own #line lines.

Writes OUT_DIR/compile_commands.json (the batch's own compile command, pointed at the pasted file;
sources outside any batch keep their own entry) and prints the files to check, the largest first
(one clang-tidy process each, so no two heavy ones end up queued on one core at the end).
Exits 2, naming the source, if a SOURCE is in no compile command: it would go unchecked.
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^#include "([^"]+)"\s*$')
PASTED = re.compile(r'^#line 1 "([^"]+)"$')  # what main() writes before each source it pastes


def locate(out, lines):
    """Rewrites OUT_DIR/<pasted>.cpp:LINE: in clang-tidy's output to <source>:<its line>:, and the
    line numbers of the code excerpt under it."""
    maps = {}
    place = re.compile(r"(" + re.escape(os.path.join(os.path.realpath(out), "")) + r"[^:\s]+\.cpp):(\d+):")
    gutter = re.compile(r"^( *)(\d+)( \|)")
    shift = 0  # lines before the source's own first line in the pasted file, at the last place

    def source_line(m):
        nonlocal shift
        pasted, line = m.group(1), int(m.group(2))
        if pasted not in maps:
            try:
                with open(pasted, encoding="utf-8") as f:
                    maps[pasted] = [(n + 1, m.group(1)) for n, m in enumerate(map(PASTED.match, f), 1) if m]
            except OSError:
                maps[pasted] = []
        starts = [(s, src) for s, src in maps[pasted] if s <= line]
        if not starts:
            return m.group(0)
        start, source = starts[-1]
        shift = start - 1
        return f"{source}:{line - shift}:"

    any_place = re.compile(r"^\S+:\d+:\d+: ")
    for text in lines:
        if any_place.match(text):
            shift = 0  # a place in a header or a source of its own: its excerpt is numbered right
            text = place.sub(source_line, text)
        elif shift:
            text = gutter.sub(
                lambda g: f"{int(g.group(2)) - shift:>{len(g.group(1)) + len(g.group(2))}}{g.group(3)}", text)
        sys.stdout.write(text)
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--locate":
        return locate(argv[1], sys.stdin)
    if len(argv) < 3:
        sys.stderr.write("usage: tidy_units.py BUILD_DIR OUT_DIR SOURCE...\n")
        return 2
    build, out, sources = argv[0], argv[1], {os.path.realpath(s) for s in argv[2:]}
    db_path = os.path.join(build, "compile_commands.json")
    try:
        with open(db_path, encoding="utf-8") as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"tidy_units: {db_path}: {e}\n")
        return 2
    os.makedirs(out, exist_ok=True)
    entries, units, covered = [], [], set()
    for n, entry in enumerate(db):
        main_file = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        if re.search(r"/Unity/unity_\d+_cxx\.cxx$", main_file):
            try:
                with open(main_file, encoding="utf-8") as f:
                    members = [os.path.realpath(m.group(1)) for m in map(INCLUDE.match, f) if m]
            except OSError as e:
                sys.stderr.write(f"tidy_units: {main_file}: {e}\n")
                return 2
            members = [m for m in members if m in sources]
            if not members:
                continue
            target = os.path.basename(os.path.dirname(os.path.dirname(main_file)))
            pasted = os.path.join(os.path.realpath(out), f"{target.removesuffix('.dir')}_{os.path.basename(main_file)[:-4]}.cpp")
            with open(pasted, "w", encoding="utf-8") as dst:
                for m in members:
                    with open(m, encoding="utf-8") as src:
                        text = src.read()
                    if not text.endswith("\n"):
                        text += "\n"
                    dst.write(f'#line 1 "{m}"\n{text}')
            unit = dict(entry, file=pasted)
            if "command" in unit:
                unit["command"] = unit["command"].replace(entry["file"], pasted)
            else:
                unit["arguments"] = [pasted if a == entry["file"] else a for a in unit["arguments"]]
            entries.append(unit)
            units.append(pasted)
            covered.update(members)
        elif main_file in sources:
            entries.append(entry)
            units.append(main_file)
            covered.add(main_file)
    missing = sorted(sources - covered)
    if missing:
        for m in missing:
            sys.stderr.write(f"tidy_units: {m}: in no compile command of {db_path}\n")
        return 2
    with open(os.path.join(out, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1)
    for u in sorted(units, key=os.path.getsize, reverse=True):
        print(u)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
