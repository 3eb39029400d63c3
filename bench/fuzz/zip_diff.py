#!/usr/bin/env python3
"""The zip reader against Python's zipfile, as pip reads a wheel (issue 36).

    bench/fuzz/zip_diff.py --exe build/dev/bench/fuzz/forge-zip-diff [--execs N] [--seed S]
                           [--batch B] [--save DIR] [--max-divergences K]

Mutates seed wheels (structure-aware: header fields, zip64 records, extra fields, names with and
without the UTF-8 flag, duplicates and `.data` twins, methods, data descriptors; then bytes: bit
flips, header fields overwritten, truncation), reads each input with the project's reader
(forge-zip-diff, bench/fuzz/zip_diff.cpp, many inputs per process) and with the model below, and
compares. The model is zipfile plus pip 23's install paths (pip/_internal/operations/install/
wheel.py): member names as zipfile decodes them (UTF-8 by the flag, else cp437), directories
skipped, a member read by name (`getinfo`: the last of a name), its path `os.path.normpath`-ed, a
name whose first component ends in `.data` installed into the scheme its second component names
after normalisation (platlib/purelib where the root goes). pip's metadata checks (WHEEL, the
.dist-info directory, RECORD) are not the zip layer's and are not modelled.

Outcomes: both read the same members (install path, size, sha256), both refuse, or:
- accept-refused: we read what the model refuses        -> divergence
- different: both read, different members or bytes      -> divergence
- stricter:<class>: we refuse what the model reads, for a reason documented in docs/wheels.md
  ("Stricter than pip") -> counted apart; a refusal in no documented class is a divergence.
Exit 1 when any divergence was seen."""
import argparse
import base64
import collections
import hashlib
import io
import os
import posixpath
import random
import re
import struct
import subprocess
import sys
import time
import zipfile
import zlib

SCHEMES = ("platlib", "purelib", "headers", "scripts", "data")

# Our refusals that are deliberate (docs/wheels.md, "Stricter than pip"): the message's words -> class.
STRICTER = [
    (r"a second member for the file", "duplicate-install-path"),
    (r"holds a NUL byte", "nul-in-name"),
    (r"holds a backslash", "backslash-in-name"),
    (r"starts with a drive", "drive-in-name"),
    (r"'\.\.' climbs above", "dotdot-above-root"),
    (r"names the installation directory itself", "names-root"),
    (r"inflates to (more than|\d+ bytes, but declares)|more than they can hold", "size-not-declared"),
    (r"the local header names", "local-name-differs"),
    (r"the local header says compression method", "local-method-differs"),
    (r"compression method \d+ is not supported", "method-not-deflate"),
    (r"split over several disks", "disk-fields"),
    (r"declares \d+ entries|central directory holds more", "entry-count"),
    (r"run past the central directory|no central header at", "central-directory-bytes"),
    (r"zip64 locator|zip64 end record", "zip64-records"),
    (r"stored bytes at 0x[0-9a-f]+ run past the end", "stored-size-past-end"),
    (r"symbolic link", "symlink-library"),
    (r"past where it ends|more than precede it", "central-directory-place"),
    (r"no local header at", "local-header-place"),
    (r"the local header runs past the end of the file", "local-header-past-end"),
    (r"zip64 extra field is too short", "zip64-extra"),
    (r"deflate stream is cut short", "deflate-stream-incomplete"),
    (r"it is an absolute path", "absolute-directory-entry"),
    (r"Unicode Path extra field", "unicode-path-field"),
    (r"over the limit of \d+ bytes|exceed the total limit", "member-size-limit"),
]


# ---- the model: zipfile as pip 23 reads a wheel -------------------------------------------------

class Refused(Exception):
    pass


def pip_path(name):
    """Where pip 23 installs the member `name` (a zipfile name, not a directory); Refused when it
    does not. Platlib/purelib are where the root goes, so they share one namespace with it; the
    other schemes keep the normalised name (a directory of their own)."""
    normed = posixpath.normpath(name)
    if name.split("/", 1)[0].endswith(".data"):
        parts = normed.split("/", 2)
        if len(parts) != 3:
            raise Refused(".data member not <scheme>/<path>")
        if parts[1] not in SCHEMES:
            raise Refused("unknown scheme " + parts[1])
        if parts[1] in ("platlib", "purelib"):
            return parts[2]
        return normed
    # pip joins the root and checks the result is inside it: an absolute name or one above it
    # leaves (pip's check compares character prefixes, `../site-packagesX/a` would pass it: a
    # name it may install elsewhere is a refusal here), "." is the directory itself.
    if normed.startswith("/") or normed == "." or normed == ".." or normed.startswith("../"):
        raise Refused("outside the target directory")
    return normed


def model(data):
    """("ok", [(path, size, sha256)]) or ("refused", why)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        out = []
        for info in zf.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            path = pip_path(name)
            with zf.open(name) as f:  # pip: getinfo(name), the last member of that name
                body = f.read()
            out.append((path.encode("utf-8", "surrogateescape").hex(), len(body),
                        hashlib.sha256(body).hexdigest()))
        return "ok", out
    except Exception as e:  # noqa: BLE001: any exception is pip failing the install
        return "refused", f"{type(e).__name__}: {e}"


# ---- inputs: a small zip writer whose every field can be set ------------------------------------

class Member:
    def __init__(self, name, data, method=8):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.data = data
        self.method = method
        self.flags = 0x800 if any(b >= 0x80 for b in self.name) else 0
        self.version_needed = 20
        self.version_made_by = 0x031E
        self.ext_attr = 0o100644 << 16
        self.local_name = None  # None: the central one
        self.local_flags = None
        self.local_method = None
        self.crc = None  # None: computed
        self.size = None
        self.comp_size = None
        self.extra_central = b""
        self.extra_local = b""
        self.zip64 = False
        self.descriptor = False
        self.raw = None  # stored bytes, None: from data and method


class Zip:
    def __init__(self, members):
        self.members = members
        self.comment = b""
        self.prefix = b""
        self.zip64_end = False
        self.count = None
        self.cd_size_delta = 0
        self.cd_offset_delta = 0
        self.disk = 0


def stored_bytes(m):
    if m.raw is not None:
        return m.raw
    if m.method == 8:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(m.data) + c.flush()
    return m.data


def build(z):
    """The zip's bytes and the offsets of its header fields (for field mutations)."""
    out = bytearray(z.prefix)
    fields = []  # (offset, width)
    central = []
    for m in z.members:
        body = stored_bytes(m)
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        size = len(m.data) if m.size is None else m.size
        csize = len(body) if m.comp_size is None else m.comp_size
        off = len(out) - len(z.prefix)
        lname = m.name if m.local_name is None else m.local_name
        lflags = (m.flags if m.local_flags is None else m.local_flags) | (8 if m.descriptor else 0)
        lmethod = m.method if m.local_method is None else m.local_method
        lextra = m.extra_local
        l_size, l_csize, l_crc = size, csize, crc
        if m.zip64:
            lextra = struct.pack("<HHQQ", 1, 16, size, csize) + lextra
            l_size = l_csize = 0xFFFFFFFF
        if m.descriptor:
            l_crc, l_size, l_csize = 0, 0, 0
        at = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, m.version_needed, lflags, lmethod, 0, 0x21,
                           l_crc, l_csize & 0xFFFFFFFF, l_size & 0xFFFFFFFF, len(lname), len(lextra))
        fields += [(at + o, w) for o, w in ((4, 2), (6, 2), (8, 2), (14, 4), (18, 4), (22, 4),
                                             (26, 2), (28, 2))]
        out += lname + lextra + body
        if m.descriptor:
            out += struct.pack("<IIII", 0x08074B50, crc, csize & 0xFFFFFFFF, size & 0xFFFFFFFF)
        cextra = m.extra_central
        c_size, c_csize, c_off = size, csize, off
        if m.zip64:
            cextra = struct.pack("<HHQQQ", 1, 24, size, csize, off) + cextra
            c_size = c_csize = c_off = 0xFFFFFFFF
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, m.version_made_by,
                                   m.version_needed, m.flags | (8 if m.descriptor else 0),
                                   m.method, 0, 0x21, crc, c_csize & 0xFFFFFFFF,
                                   c_size & 0xFFFFFFFF, len(m.name), len(cextra), 0, 0, 0,
                                   m.ext_attr, c_off & 0xFFFFFFFF) + m.name + cextra)
    cd_at = len(out)
    cd_off = cd_at - len(z.prefix)
    for c in central:
        fields += [(len(out) + o, w) for o, w in ((4, 2), (6, 2), (8, 2), (10, 2), (16, 4), (20, 4),
                                                   (24, 4), (28, 2), (30, 2), (32, 2), (34, 2),
                                                   (38, 4), (42, 4))]
        out += c
    cd_size = len(out) - cd_at + z.cd_size_delta
    cd_off += z.cd_offset_delta
    count = len(z.members) if z.count is None else z.count
    if z.zip64_end:
        e64 = len(out) - len(z.prefix)
        fields += [(len(out) + o, w) for o, w in ((4, 8), (16, 4), (20, 4), (24, 8), (32, 8), (40, 8),
                                                   (48, 8))]
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, z.disk, 0, count, count, cd_size,
                           cd_off)
        fields += [(len(out) + o, w) for o, w in ((4, 4), (8, 8), (16, 4))]
        out += struct.pack("<IIQI", 0x07064B50, 0, e64 + len(z.prefix), 1)
        count, cd_size, cd_off = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF
    fields += [(len(out) + o, w) for o, w in ((4, 2), (6, 2), (8, 2), (10, 2), (12, 4), (16, 4),
                                               (20, 2))]
    out += struct.pack("<IHHHHIIH", 0x06054B50, z.disk, z.disk, min(count, 0xFFFF) & 0xFFFF,
                       min(count, 0xFFFF) & 0xFFFF, cd_size & 0xFFFFFFFF, cd_off & 0xFFFFFFFF,
                       len(z.comment) & 0xFFFF) + z.comment
    return bytes(out), fields


def record_for(members):
    rows = []
    for m in members:
        digest = hashlib.sha256(m.data).digest()
        h = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        rows.append(f"{m.name.decode('utf-8', 'replace')},sha256={h},{len(m.data)}")
    return ("\n".join(rows) + "\ndemo-1.0.dist-info/RECORD,,\n").encode()


def seeds(rng):
    so = b"\x7fELF" + bytes(rng.randrange(256) for _ in range(200)) + b"\0" * 300
    py = b"from ._C import *\n" * 3
    base = [Member("demo/__init__.py", py), Member("demo/_C.so", so),
            Member("demo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"),
            Member("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n", 0)]
    out = []
    z = [Member(m.name, m.data, m.method) for m in base]
    z.append(Member("demo-1.0.dist-info/RECORD", record_for(base)))
    out.append(z)
    z = [Member(m.name, m.data, m.method) for m in base[:1] + base[2:]]
    z.append(Member("demo-1.0.data/platlib/demo/_C.so", so))
    z.append(Member("demo-1.0.data/scripts/run", b"#!/bin/sh\n", 0))
    z.append(Member("demo/", b"", 0))
    out.append(z)
    z = [Member(m.name, m.data, m.method) for m in base]
    z.append(Member("demo/lib\xc7.so".encode("utf-8"), so[:64]))
    z.append(Member("demo/d\xe9j\xe0.py".encode("cp437"), py, 0))
    z[-1].flags = 0
    out.append(z)
    z = [Member(m.name, m.data, 0) for m in base]
    for m in z:
        m.zip64 = True
    out.append(z)
    z = [Member(m.name, m.data, m.method) for m in base]
    for m in z:
        m.descriptor = True
    out.append(z)
    return out


NAME_TRICKS = [
    lambda n: b"./" + n, lambda n: b"a/../" + n, lambda n: n.replace(b"/", b"//"),
    lambda n: b"../" + n, lambda n: b"/" + n, lambda n: n + b"/", lambda n: n.replace(b"/", b"\\"),
    lambda n: n + b"\0x", lambda n: b"C:" + n, lambda n: b"demo-1.0.data/platlib/" + n,
    lambda n: b"demo-1.0.data/purelib/" + n, lambda n: b"demo-1.0.data/../" + n,
    lambda n: b"demo-1.0.data/headers/" + n, lambda n: b"demo-1.0.data/foo/" + n,
    lambda n: b"demo-1.0.data/" + n.split(b"/")[-1], lambda n: b"x.data/../" + n,
    lambda n: b"demo-1.0.data/platlib/../purelib/" + n, lambda n: b"demo-1.0.data/./platlib/" + n,
    lambda n: b"a/../demo-1.0.data/platlib/" + n, lambda n: b"x.data/../y/platlib/" + n,
    lambda n: n + b"/..", lambda n: b"", lambda n: b".", lambda n: b".data/platlib/" + n,
    lambda n: n.upper(), lambda n: n + "\xc7".encode("cp437"), lambda n: n + "\xc7".encode("utf-8"),
    lambda n: n + b"\xff\xfe", lambda n: n + b"\xc3", lambda n: n.replace(b"/", b"/./"),
]

EXTRAS = [
    lambda: struct.pack("<HH", 0x5455, 5) + b"\x01\0\0\0\0",
    lambda: struct.pack("<HH", 0xCAFE, 0),
    lambda: struct.pack("<HH", 0x1234, 40) + b"x" * 4,  # runs past the field
    lambda: b"\x01",  # not a block
    lambda: struct.pack("<HHQ", 1, 8, 1 << 33),
    lambda: struct.pack("<HH", 1, 0),
    lambda: struct.pack("<HHB", 0x7075, 5, 1) + b"\0\0\0\0" + b"demo/_C.so",
    lambda: struct.pack("<HHQQQ", 1, 24, 5, 5, 0),
]

INTERESTING = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
               0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


def mutate_structure(rng, z):
    ms = z.members
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(ms) if ms else None
        k = rng.randrange(30)
        if m is None:
            return
        if k == 0:
            m.name = rng.choice(NAME_TRICKS)(m.name)
        elif k == 1:
            m.flags ^= 0x800
        elif k == 2:
            twin = Member(rng.choice(NAME_TRICKS)(m.name) if rng.random() < 0.5 else m.name,
                          m.data if rng.random() < 0.5 else m.data + b"!", rng.choice((0, 8)))
            ms.insert(rng.randrange(len(ms) + 1), twin)
        elif k == 3:
            m.method = 8 - m.method if m.method in (0, 8) else 0
        elif k == 4:
            m.method = rng.choice((1, 9, 12, 14, 93, 99))
        elif k == 5:
            m.descriptor = not m.descriptor
        elif k == 6:
            m.zip64 = not m.zip64
        elif k == 7:
            z.zip64_end = not z.zip64_end
        elif k == 8:
            if rng.random() < 0.5:
                m.extra_central += rng.choice(EXTRAS)()
            else:
                m.extra_local += rng.choice(EXTRAS)()
        elif k == 9:
            m.flags ^= 1 << rng.choice((0, 1, 2, 3, 4, 5, 6, 11, 13))
        elif k == 10:
            m.version_needed = rng.choice((10, 20, 45, 62, 63, 64, 0x3F, 0x40, 0xFF, 0x13F))
        elif k == 11:
            m.local_name = rng.choice(NAME_TRICKS)(m.name)
        elif k == 12:
            m.local_flags = m.flags ^ 0x800
        elif k == 13:
            m.local_method = rng.choice((0, 8, 12))
        elif k == 14:
            m.crc = rng.choice((0, (zlib.crc32(m.data) ^ 1), 0xFFFFFFFF))
        elif k == 15:
            m.size = max(0, len(m.data) + rng.choice((-1, 1, -len(m.data), 1000, 0xFFFFFFFF)))
        elif k == 16:
            m.comp_size = max(0, len(stored_bytes(m)) + rng.choice((-1, 1, -2, 5, 0xFFFFFFFF)))
        elif k == 17:
            m.data, m.crc = b"", rng.choice((None, 1))
        elif k == 18:
            z.comment = rng.choice((b"hi", b"PK\x05\x06", b"x" * 30 + b"PK\x05\x06" + b"\0" * 18,
                                    b"PK\x05\x06" + b"\0" * 30))
        elif k == 19:
            z.count = rng.choice((0, len(ms) - 1, len(ms) + 1, 0xFFFF))
        elif k == 20:
            z.prefix = rng.choice((b"#!/bin/sh\nexit 0\n", b"PK\x03\x04", b"\0" * 64))
        elif k == 21:
            z.disk = rng.choice((1, 0xFFFF))
        elif k == 22:
            m.ext_attr = 0o120777 << 16
        elif k == 23:
            z.cd_size_delta = rng.choice((-1, 1, -46))
        elif k == 24:
            z.cd_offset_delta = rng.choice((-1, 1, 4))
        elif k == 25:
            raw = stored_bytes(m)
            m.raw = raw + b"trailing" if rng.random() < 0.5 else raw[:max(0, len(raw) - 3)]
        elif k == 26:
            m.data = m.data * rng.choice((2, 50))
        elif k == 27:
            ms.remove(m)
        elif k == 28:
            m.name = m.name.decode("utf-8", "replace").encode("cp437", "replace")
            m.flags &= ~0x800
        else:
            m.version_made_by = rng.choice((0x0314, 0x0014, 0x1314, 0x0B14))


def mutate_bytes(rng, data, fields):
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(6)
        if not b:
            break
        if k == 0:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif k in (1, 2) and fields:
            at, w = rng.choice(fields)
            if at + w <= len(b):
                v = rng.choice(INTERESTING) if k == 1 else int.from_bytes(b[at:at + w], "little") + rng.choice((-1, 1))
                b[at:at + w] = (v % (1 << (8 * w))).to_bytes(w, "little")
        elif k == 3:
            del b[rng.randrange(len(b)):]
        elif k == 4:
            i = rng.randrange(len(b))
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 8)]
    return bytes(b)


def make_input(rng, seed_list):
    proto = rng.choice(seed_list)
    z = Zip([])
    for m in proto:
        c = Member(m.name, m.data, m.method)
        c.flags, c.zip64, c.descriptor = m.flags, m.zip64, m.descriptor
        z.members.append(c)
    r = rng.random()
    if r < 0.85:
        mutate_structure(rng, z)
    data, fields = build(z)
    if r > 0.6:
        data = mutate_bytes(rng, data, fields)
    return data


# ---- the comparison ---------------------------------------------------------------------------

def ours(exe, inputs):
    payload = b"".join(struct.pack("<Q", len(d)) + d for d in inputs)
    p = subprocess.run([exe], input=payload, capture_output=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{exe} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    blocks, cur = [], []
    for line in p.stdout.decode("utf-8", "replace").split("\n"):
        if line == "end":
            blocks.append(cur)
            cur = []
        elif line:
            cur.append(line)
    if len(blocks) != len(inputs):
        raise SystemExit(f"{exe}: {len(blocks)} results for {len(inputs)} inputs")
    out = []
    for b in blocks:
        if b and b[0].startswith("refused: "):
            out.append(("refused", b[0][len("refused: "):]))
        else:
            out.append(("ok", [tuple(int(x) if i == 1 else x for i, x in enumerate(row.split(" ")))
                               for row in b]))
    return out


def classify(mine, theirs):
    if mine[0] == "refused" and theirs[0] == "refused":
        return "both-refuse"
    if mine[0] == "ok" and theirs[0] == "ok":
        return "same" if mine[1] == theirs[1] else "DIVERGENCE:different"
    if mine[0] == "ok":
        return "DIVERGENCE:accept-refused"
    for pattern, cls in STRICTER:
        if re.search(pattern, mine[1]):
            return "stricter:" + cls
    return "DIVERGENCE:unclassified-stricter"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--execs", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--save", help="write divergent inputs here")
    ap.add_argument("--max-divergences", type=int, default=20, help="inputs saved per kind")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    seed_list = seeds(random.Random(0))
    counts = collections.Counter()
    examples = {}
    start = time.monotonic()
    done = 0
    while done < a.execs:
        n = min(a.batch, a.execs - done)
        inputs = [make_input(rng, seed_list) for _ in range(n)]
        results = ours(a.exe, inputs)
        for data, mine in zip(inputs, results):
            theirs = model(data)
            kind = classify(mine, theirs)
            counts[kind] += 1
            if kind.startswith("DIVERGENCE") and a.save and counts[kind] <= a.max_divergences:
                os.makedirs(a.save, exist_ok=True)
                digest = hashlib.sha256(data).hexdigest()[:16]
                with open(os.path.join(a.save, f"{kind.split(':')[1]}-{digest}.zip"), "wb") as f:
                    f.write(data)
                with open(os.path.join(a.save, f"{kind.split(':')[1]}-{digest}.txt"), "w") as f:
                    f.write(f"ours: {mine}\nzipfile+pip: {theirs}\n")
            examples.setdefault(kind, (mine, theirs))
        done += n
        if not a.quiet:
            el = time.monotonic() - start
            print(f"{done} execs, {el:.0f} s, {done / el:.0f}/s, divergences "
                  f"{sum(v for k, v in counts.items() if k.startswith('DIVERGENCE'))}",
                  file=sys.stderr, flush=True)
    el = time.monotonic() - start
    div = sum(v for k, v in counts.items() if k.startswith("DIVERGENCE"))
    print(f"seed {a.seed}: {done} executions in {el:.1f} s ({done / max(el, 1e-9):.0f}/s), "
          f"{div} divergences")
    for k, v in sorted(counts.items()):
        print(f"  {k}: {v}")
    for k, (mine, theirs) in sorted(examples.items()):
        if k.startswith("DIVERGENCE"):
            print(f"  e.g. {k}:\n    ours: {str(mine)[:300]}\n    zipfile+pip: {str(theirs)[:300]}")
    return 1 if div else 0


if __name__ == "__main__":
    sys.exit(main())
