#!/usr/bin/env python3
"""Every nvcc_supported row of policy/arch_policy.yml equals what its toolkit really accepts.

usage: check_nvcc_tables.py REPO_ROOT
Toolkits: /usr/local/cuda (13.0) and the wheels install_nvcc_tables.sh puts in
$FORGE_NVCC_TABLE_WHEELS (default REPO_ROOT/.tools/nvcc-tables). Rows whose toolkit is absent are
skipped; exit 77 when none could be checked.
"""
import glob
import os
import re
import subprocess
import sys

import yaml

root = sys.argv[1]
policy = yaml.safe_load(open(os.path.join(root, "policy", "arch_policy.yml")))
wheels = os.environ.get("FORGE_NVCC_TABLE_WHEELS", os.path.join(root, ".tools", "nvcc-tables"))


def allowed_sm(tool, option):
    help_text = subprocess.run([tool, "--help"], capture_output=True, text=True, check=True).stdout
    start = help_text.index(option)
    allowed = help_text.index("Allowed values for this option:", start)
    end = help_text.index("'.", allowed)
    return set(re.findall(r"'(sm_\d+[af]?)'", help_text[allowed:end + 2]))


def version_of(tool):
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
    return re.search(r"V(\d+\.\d+\.\d+)", out).group(1)


checked, failures = 0, []
for cuda, row in policy["nvcc_supported"].items():
    codes = set(row["codes"].split())
    tools = []
    if cuda == "13.0" and os.path.exists("/usr/local/cuda/bin/nvcc"):
        tools.append("/usr/local/cuda/bin/nvcc")
    tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "nvcc")))
    tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "ptxas")))
    if not tools:
        print(f"skip {cuda}: no toolkit")
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
    print(f"{cuda}: {os.path.basename(tool)} {version}: {len(real)} sm_ targets {'ok' if real == codes else 'DIFFER'}")
if failures:
    sys.exit("FAIL:\n" + "\n".join(failures))
if checked == 0:
    sys.exit(77)
