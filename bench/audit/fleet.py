#!/usr/bin/env python3
"""A generated fleet for `nvcc-forge audit` at farm scale, and the truth it is checked against.

    fleet.py generate FORGE SO_DIR OUT N   # N wheels under OUT/fleet, OUT/ledger.jsonl
    fleet.py check N (ledger|none) < report.json
    fleet.py render RESULTS NOTE ROWS...   # fleet.sh's rows (of one run or several) as a section

Wheels come in pairs, versions 1.0 and 1.1 of one distribution pkg<K>; each carries small real
extensions (SO_DIR/good.so: sm_80 + sm_90 + compute_90, SO_DIR/narrow.so: sm_80 only, built once
by nvcc from tests/fixtures/binary/k1.cu). The distribution's class (K % 10) says what it is:

    0-2 right      both stamped "8.0 9.0+PTX", carry it        ok              ok
    3   moved      both stamped "8.0", carry sm_80              config-moved    config-moved
    4   wrong      both stamped "8.0 9.0+PTX", carry sm_80      wheel-wrong     wheel-wrong
    5   lost       1.1 stamped without ops/_ops.so, which 1.0   extension-lost  ok
                   carried (1.0 as right)
    6-7 ledger     not stamped, in the ledger as right          ok              no-provenance
    8-9 none       no provenance, carry the policy              no-provenance   no-provenance
                                                                (with ledger)   (without)
and every 997th wheel is cut in half (unreadable either way). The stamps are `nvcc-forge stamp`'s
own: one template wheel per kind is stamped (SOURCE_DATE_EPOCH fixed), and each wheel gets that
record with its own package, distribution and module names; the ledger has one line per stamped
or ledger-only wheel, in the order of the wheels. The zip members are written by hand (the .so
deflated once), so 680,000 wheels take minutes, not the hours of a stamp process per wheel.
"""
import base64
import copy
import datetime
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

POLICY = "8.0 9.0+PTX"
CLASSES = ["right"] * 3 + ["moved", "wrong", "lost", "ledger", "ledger", "none", "none"]
STATUS = {  # class -> (with the ledger, without)
    "right": ("ok", "ok"), "moved": ("config-moved",) * 2, "wrong": ("wheel-wrong",) * 2,
    "ledger": ("ok", "no-provenance"), "none": ("no-provenance",) * 2,
}
WHEEL_RE = re.compile(r"pkg(\d+)-1\.([01])-cp312-cp312-linux_x86_64\.whl$")


def wheel_name(i):
    return f"pkg{i // 2}-1.{i % 2}-cp312-cp312-linux_x86_64.whl"


def expected(i, with_ledger):
    if i % 997 == 500:
        return "unreadable"
    cls = CLASSES[(i // 2) % 10]
    if cls == "lost":
        return ("extension-lost" if with_ledger else "ok") if i % 2 else "ok"
    return STATUS[cls][0 if with_ledger else 1]


def kind(i):
    """(content, modules, stamped list or None, in the ledger)."""
    cls = CLASSES[(i // 2) % 10]
    if cls == "moved":
        return "narrow", 2, "8.0", True
    if cls == "wrong":
        return "narrow", 2, POLICY, True
    if cls == "lost":
        return "good", 1 if i % 2 else 2, POLICY, True
    if cls == "ledger":
        return "good", 2, None, True
    if cls == "none":
        return "good", 2, None, False
    return "good", 2, POLICY, True


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class Member:
    def __init__(self, name, data, deflated=None, known=None):
        """known: (size, crc, RECORD hash) of `data`, computed once for the .so copies."""
        self.name = name.encode()
        self.size, self.crc, self.hash = known or (len(data), zlib.crc32(data), record_hash(data))
        self.data = deflated if deflated is not None else data
        self.method = 8 if deflated is not None else 0


def deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def write_zip(path, members):
    out, central, offset = [], [], 0
    for m in members:
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, m.method, 0, 0x21, m.crc,
                           len(m.data), m.size, len(m.name), 0) + m.name
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, m.method, 0,
                                   0x21, m.crc, len(m.data), m.size, len(m.name), 0, 0, 0, 0,
                                   0o644 << 16, offset) + m.name)
        out += [head, m.data]
        offset += len(head) + len(m.data)
    cd = b"".join(central)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd),
                      offset, 0)
    with open(path, "wb") as f:
        f.write(b"".join(out) + cd + end)


def wheel_members(dist, version, so, modules, build_info):
    di = f"{dist}-{version}.dist-info"
    ms = [Member(f"{dist}/__init__.py", f"# {dist}\n".encode()),
          Member(f"{dist}/_C.so", *so)]
    if modules == 2:
        ms.append(Member(f"{dist}/ops/_ops.so", *so))
    if build_info is not None:
        ms.append(Member(f"{dist}/_build_info.json", build_info))
    ms += [Member(f"{di}/METADATA", f"Name: {dist}\nVersion: {version}\n".encode()),
           Member(f"{di}/WHEEL", b"Wheel-Version: 1.0\n")]
    record = "".join(f"{m.name.decode()},{m.hash},{m.size}\n" for m in ms) + f"{di}/RECORD,,\n"
    return ms + [Member(f"{di}/RECORD", record.encode())]


def templates(forge, sos, work):
    """The record `stamp` writes for each (content, modules, list), from a stamped template."""
    out = {}
    env = dict(os.environ, SOURCE_DATE_EPOCH="1764806400")
    for content, modules, listed in [("good", 2, POLICY), ("narrow", 2, "8.0"),
                                     ("narrow", 2, POLICY), ("good", 1, POLICY)]:
        path = os.path.join(work, "tpl-1.0-cp312-cp312-linux_x86_64.whl")
        write_zip(path, wheel_members("tpl", "1.0", sos[content], modules, None))
        subprocess.run([forge, "stamp", path, "--arch-list", listed], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with zipfile.ZipFile(path) as z:
            out[(content, modules, listed)] = json.loads(z.read("tpl/_build_info.json"))
        os.remove(path)
    return out


def texts_for(template):
    """The template's _build_info.json and ledger line (without "wheel"), "tpl" standing for the
    package: its package, distribution and module names are the only strings that start so."""
    r = copy.deepcopy(template)
    r["package"] = r["distribution"] = "tpl"
    info = json.dumps(r, indent=2)
    line = json.dumps(r)
    assert info.count('"tpl') == 2 + len(r.get("modules") or []), info
    return info, line


def generate(forge, so_dir, out, n):
    sos = {}
    for content in ("good", "narrow"):
        data = open(os.path.join(so_dir, content + ".so"), "rb").read()
        sos[content] = (data, deflate(data), (len(data), zlib.crc32(data), record_hash(data)))
    with tempfile.TemporaryDirectory(dir=out) as work:
        tpl = {k: texts_for(v) for k, v in templates(forge, sos, work).items()}
    fleet = os.path.join(out, "fleet")
    with open(os.path.join(out, "ledger.jsonl"), "w") as ledger:
        for i in range(n):
            dist = f"pkg{i // 2}"
            content, modules, listed, in_ledger = kind(i)
            info_text, line = tpl[(content, modules, listed or POLICY)]
            info = info_text.replace('"tpl', f'"{dist}').encode() if listed else None
            sub = os.path.join(fleet, f"b{i // 1000:04d}")
            if i % 1000 == 0:
                os.makedirs(sub, exist_ok=True)
            path = os.path.join(sub, wheel_name(i))
            write_zip(path, wheel_members(dist, f"1.{i % 2}", sos[content], modules, info))
            if i % 997 == 500:
                os.truncate(path, os.path.getsize(path) // 2)
            if in_ledger:
                ledger.write(f'{{"wheel": "{wheel_name(i)}", ' + line[1:].replace('"tpl', f'"{dist}')
                             + "\n")


def check(n, with_ledger):
    """Reads the JSON report from stdin line by line (each entry is one line)."""
    seen, wrong, counts, inside = 0, [], {}, False
    for line in sys.stdin:
        if line.startswith('"entries": ['):
            inside = True
            continue
        if not inside or line.startswith("]"):
            inside = False
            continue
        line = line.strip().rstrip(",")
        if not line:
            continue
        e = json.loads(line)
        m = WHEEL_RE.search(e["file"])
        i = int(m.group(1)) * 2 + int(m.group(2))
        want = expected(i, with_ledger)
        counts[e["status"]] = counts.get(e["status"], 0) + 1
        seen += 1
        if e["status"] != want:
            wrong.append(f"{e['file']}: {e['status']}, expected {want}")
    print(json.dumps({"entries": seen, "misclassified": len(wrong), "counts": counts}))
    for w in wrong[:10]:
        print(w, file=sys.stderr)
    return 0 if seen == n and not wrong else 1


def render(results, note, rows_files):
    rows = []
    for path in rows_files:
        for line in open(path):
            n, mode, build, wall, kb, rc, check, *cpu = line.rstrip("\n").split("\t")
            rows.append(dict(n=int(n), mode=mode, build=build, wall=float(wall),
                             cpu=float(cpu[0]) if cpu else None, mib=int(kb) / 1024, rc=rc,
                             check=json.loads(check)))
    rows.sort(key=lambda r: (r["mode"] != "none", r["build"], r["n"]))
    sizes = sorted({r["n"] for r in rows})
    load = open("/proc/loadavg").read().split()[:3]
    out = [f"## Audit at fleet scale ({datetime.date.today()}, issue 38)", "",
           f"`bench/audit/fleet.sh` on {os.cpu_count()} CPUs shared with other builds (load "
           f"{' '.join(load)} at the end): `audit --arch-list \"8.0 9.0+PTX\" --jobs 2 --format "
           "json` over generated fleets (`bench/audit/fleet.py`: pairs of versions, a known mix of "
           "right, moved, wrong, lost, ledger-only and unprovenanced wheels, every 997th cut in "
           "half), the report piped to a checker of every classification; /usr/bin/time's wall "
           "and maximum resident set. " + note, "",
           "| wheels | ledger | build | wall (s) | CPU (s) | peak (MiB) | wheels/CPU s | "
           "misclassified | × wall | × CPU | × memory |",
           "|-------:|--------|-------|---------:|--------:|-----------:|-------------:|"
           "--------------:|-------:|------:|---------:|"]
    prev = {}
    for r in rows:
        key = (r["mode"], r["build"])
        p = prev.get(key)
        def ratio(field, digits):
            if not p or not p[field] or r[field] is None:
                return "—"
            return f"{r[field] / p[field]:.{digits}f}"
        prev[key] = r
        cpu = "—" if r["cpu"] is None else f"{r['cpu']:.1f}"
        rate = "—" if not r["cpu"] else f"{r['check']['entries'] / r['cpu']:.0f}"
        out.append(f"| {r['n']} | {'yes' if r['mode'] == 'ledger' else 'no'} | {r['build']} | "
                   f"{r['wall']:.1f} | {cpu} | {r['mib']:.1f} | {rate} | "
                   f"{r['check']['misclassified']} of {r['check']['entries']} | "
                   f"{ratio('wall', 1)} | {ratio('cpu', 1)} | {ratio('mib', 2)} |")
    text = open(results).read().rstrip() + "\n\n" + "\n".join(out) + "\n"
    open(results, "w").write(text)


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif sys.argv[1] == "check":
        sys.exit(check(int(sys.argv[2]), sys.argv[3] == "ledger"))
    elif sys.argv[1] == "render":
        render(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
