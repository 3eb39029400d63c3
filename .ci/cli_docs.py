#!/usr/bin/env python3
"""docs/cli.md and docs/environment.md, generated from what the tools print: `nvcc-forge help`,
`nvcc-forge help COMMAND` (each command's option table and example) and `nvcc-forge env --explain`
(the table of NVCC_FORGE_* variables in wrapper/src/core/env_vars.h).

    python3 .ci/cli_docs.py build/dev/wrapper/nvcc-forge --write   # regenerate both pages
    python3 .ci/cli_docs.py build/dev/wrapper/nvcc-forge --check   # exit 1 when one is stale

cli.env.reference_current and cli.help.docs_current run --check."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGENERATE = "python3 .ci/cli_docs.py build/dev/wrapper/nvcc-forge --write"


def run(forge, *args):
    # The platform default in the help is the build host's: the pages are written on x86-64.
    r = subprocess.run([forge, *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"{forge} {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def commands(forge):
    block = run(forge, "help").split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [(line.split(None, 1)[0], line.split(None, 1)[1].strip())
            for line in block.splitlines() if line.strip()]


def cli_page(forge):
    out = ["# Command line reference", "",
           "Generated from the tools' own help (`nvcc-forge help`, `nvcc-forge help COMMAND`); do "
           "not edit by hand: change a command's option table or its `FORGE_COMMAND` line, then run "
           f"`{REGENERATE}`. Shell completion: `nvcc-forge completion bash|zsh|fish`; the "
           "environment variables: [environment.md](environment.md).", "",
           "```", run(forge, "help").rstrip("\n"), "```", ""]
    for name, summary in commands(forge):
        out += [f"## {name}", "", summary, "", "```", run(forge, "help", name).rstrip("\n"), "```",
                ""]
    return "\n".join(out)


def env_page(forge):
    out = ["# Environment variables", "",
           "Every `NVCC_FORGE_*` variable nvcc-forge reads or sets, generated from the one table the "
           "code keeps (`wrapper/src/core/env_vars.h`, printed by `nvcc-forge env --explain`); do "
           f"not edit by hand: run `{REGENERATE}`. \"wrapper\" is the front end on every nvcc call, "
           "\"tools\" the commands.", "",
           "| variable | read by | what it does |", "|---|---|---|"]
    for line in run(forge, "env", "--explain").splitlines():
        name, rest = line.split(" (", 1)
        who, meaning = rest.split("): ", 1)
        out.append(f"| `{name}` | {who} | {meaning.replace('|', '&#124;')} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("forge", help="the built nvcc-forge")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = []
    for page, text in (("docs/cli.md", cli_page(args.forge)),
                       ("docs/environment.md", env_page(args.forge))):
        path = os.path.join(ROOT, page)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old == text:
            continue
        if args.write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {page}")
        else:
            stale.append(page)
    for page in stale:
        print(f"{page} is not what the tools print; run `{REGENERATE}`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
