#!/usr/bin/env python3
"""Writes the seed corpus of hostile and edge-case inputs for the binary readers.

Every file is a few KB at most. Synthetic files are built from scratch here (no nvcc needed);
`--fixtures DIR` also copies the small real nvcc outputs of tests/fixtures/binary/make_fixtures.sh.
The unit test BinaryCorpus replays every file; the fuzzers start from them.
"""
import io
import os
import struct
import sys
import zipfile
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def entry(kind=2, arch=80, flags=0x11, payload=b"\0" * 8, csize=0, usize=0, hsize=0x40, version=0x0101):
    hdr = struct.pack("<HHIQIIHHIIIQQQ", kind, version, hsize, len(payload), csize, 0, 0, 8, arch, 0, 0,
                      flags, 0, usize)
    return hdr + b"\0" * (hsize - 0x40) + payload


def fatbin(entries, fat_size=None, version=1, hsize=16):
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, version, hsize, len(body) if fat_size is None else fat_size) + body


def elf(sections, machine=62, shoff_override=None, cls=2, data=1, e_flags=0, abiversion=0, shstrndx=None):
    """ELF64 with the given [(name, type, bytes)] sections."""
    names = b"\0"
    offs = []
    for n, _, _ in sections:
        offs.append(len(names))
        names += n.encode() + b"\0"
    str_name = len(names)
    names += b".shstrtab\0"
    blob = b""
    placed = []
    for _, _, d in sections:
        placed.append(64 + len(blob))
        blob += d + b"\0" * (-len(d) % 8)
    str_off = 64 + len(blob)
    blob += names + b"\0" * (-len(names) % 8)
    shoff = 64 + len(blob)
    nsec = len(sections) + 2
    ident = b"\x7fELF" + bytes([cls, data, 1, 0x41 if machine == 190 else 0, abiversion]) + b"\0" * 7
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 1, machine, 1, 0, 0,
                               shoff if shoff_override is None else shoff_override, e_flags, 64, 0, 0, 64,
                               nsec, nsec - 1 if shstrndx is None else shstrndx)
    sh = b"\0" * 64
    for (n, t, d), o, p in zip(sections, offs, placed):
        sh += struct.pack("<IIQQQQIIQQ", o, t, 2, 0, p, len(d), 0, 0, 8, 0)
    sh += struct.pack("<IIQQQQIIQQ", str_name, 3, 0, 0, str_off, len(names), 0, 0, 1, 0)
    return ehdr + blob + sh


def ar(members, magic=b"!<arch>\n"):
    out = magic
    for name, data, size in members:
        size = str(len(data)) if size is None else size
        out += name.ljust(16).encode() + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"644".ljust(8)
        out += size.ljust(10).encode() + b"`\n" + data + (b"\n" if len(data) % 2 else b"")
    return out


def zipbytes(members, method=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    cubin = elf([(".text.k", 1, b"\0" * 16), (".nv.compat", 0x70000086, bytes([2, 9, 1, 0]))], machine=190,
                e_flags=0x06005A02, abiversion=8)
    write("ok-cubin-90a.cubin", cubin)
    good = fatbin([entry(2, 90, 0x100011, cubin), entry(1, 120, 0x200011, b"ptx\0" + b"\0" * 4)])
    write("ok-fatbin.fatbin", good)
    write("ok-host.o", elf([(".nv_fatbin", 1, good), ("__nv_relfatbin", 1, good)]))
    write("entry-elf-not-a-cubin.fatbin", fatbin([entry(2, 80, 0x11, b"\0" * 64)]))
    z = zlib.compressobj(level=9, wbits=-15)
    write("ok-wheel.whl", zipbytes([("pkg/_C.so", elf([(".nv_fatbin", 1, good)])), ("pkg/__init__.py", b"")]))
    write("ok-ar.a", ar([("k.o/", elf([(".nv_fatbin", 1, good)]), None)]))
    # Containers outside the registered sections (the embedded scan): one whole, one whose
    # entry runs past its container, next to a registered one.
    write("ok-embedded.o", elf([(".nv_fatbin", 1, good), (".rodata", 1, b"\0" * 8 + good),
                                (".data", 1, fatbin([entry()], fat_size=0x30))]))

    # fatbin header and entry lies
    write("fat-size-overflow.fatbin", fatbin([entry()], fat_size=0xFFFFFFFFFFFFFFF8))
    write("fat-size-past-end.fatbin", fatbin([entry()], fat_size=0x1000))
    write("fat-hsize-zero.fatbin", fatbin([entry()], hsize=0))
    write("entry-padded-overflow.fatbin", fatbin([entry(payload=b"\0" * 8)])[:24] +
          struct.pack("<Q", 0xFFFFFFFFFFFFFF00) + fatbin([entry()])[32:])
    write("entry-hsize-huge.fatbin", fatbin([entry(hsize=0x40)])[:20] + struct.pack("<I", 0xFFFFFFF0) +
          fatbin([entry()])[24:])
    write("entry-unknown-kind.fatbin", fatbin([entry(kind=0x40)]))
    write("entry-both-af.fatbin", fatbin([entry(flags=0x300011)]))
    write("entry-both-lz4-zstd.fatbin", fatbin([entry(flags=0xA011)]))
    write("entry-truncated-header.fatbin", fatbin([entry()])[:40])
    write("entry-zstd-lie.fatbin", fatbin([entry(flags=0x8011, payload=b"\x28\xb5\x2f\xfd" + b"\x41" * 12,
                                                 csize=16, usize=1 << 40)]))
    write("entry-lz4-garbage.fatbin", fatbin([entry(flags=0x2011, payload=b"\xff" * 16, csize=16, usize=64)]))
    write("entry-lz4-short.fatbin", fatbin([entry(flags=0x2011, payload=b"\x40ABCD" + b"\0" * 3, csize=5,
                                                  usize=64)]))
    write("fatbin-garbage-after.fatbin", good + b"\x01\x02\x03\x04\x05\x06\x07\x08")
    write("fatbin-zero-tail.fatbin", good + b"\0" * 13)

    # ELF header lies
    write("elf32.so", elf([(".nv_fatbin", 1, good)], cls=1))
    write("elf-big-endian.so", elf([(".nv_fatbin", 1, good)], data=2))
    write("elf-shoff-past-end.so", elf([(".nv_fatbin", 1, good)], shoff_override=1 << 40))
    write("elf-shstrndx-bad.so", elf([(".nv_fatbin", 1, good)], shstrndx=77))
    write("elf-truncated.so", elf([(".nv_fatbin", 1, good)])[:100])
    sec_past = bytearray(elf([(".nv_fatbin", 1, good)]))
    shoff = struct.unpack_from("<Q", sec_past, 40)[0]
    struct.pack_into("<Q", sec_past, shoff + 64 + 32, 1 << 50)
    write("elf-section-past-end.so", bytes(sec_past))
    noshdr = bytearray(elf([(".renamed", 1, good)]))
    struct.pack_into("<Q", noshdr, 40, 0)
    struct.pack_into("<H", noshdr, 60, 0)
    write("elf-no-sections-scan.so", bytes(noshdr))
    write("elf-cubin-garbage-flags.cubin", elf([(".text.k", 1, b"\0" * 8)], machine=190, e_flags=0))
    write("fatbin-in-elf-garbage.o", elf([(".nv_fatbin", 1, good + b"\xff" * 8)]))

    # ar lies
    obj = elf([(".nv_fatbin", 1, good)])
    write("ar-size-lie.a", ar([("k.o/", obj, str(len(obj) + 100))]))
    write("ar-size-garbage.a", ar([("k.o/", obj, "12x")]))
    write("ar-longname-out-of-range.a", ar([("/999", obj, None)]))
    write("ar-bsd-longname.a", ar([("#1/20", b"long_member_name.o\0\0" + obj, None)]))
    write("ar-bsd-longname-lie.a", ar([("#1/99999", obj, None)]))
    write("ar-thin.a", b"!<thin>\n")
    write("ar-truncated.a", ar([("k.o/", obj, None)])[:30])
    nested = obj
    for _ in range(7):
        nested = ar([("n.a/", nested, None)])
    write("ar-nested-deep.a", nested)

    # zip bombs and lies: a member that starts like an ELF and inflates to 8 MB of zeros
    bomb = b"\x7fELF" + b"\0" * (8 << 20)
    write("zip-bomb-declared-huge.whl", zipbytes([("pkg/bomb.so", bomb)]))
    small = zipbytes([("pkg/_C.so", obj)])
    lie = bytearray(small)
    # declare a smaller uncompressed size in both the local and the central header
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        i = lie.find(sig)
        off = 22 if sig == b"PK\x03\x04" else 24
        struct.pack_into("<I", lie, i + off, 100)
    write("zip-declared-small.whl", bytes(lie))
    write("zip-truncated.whl", small[: len(small) // 2])
    inner = zipbytes([("pkg/_C.so", obj)])
    for _ in range(6):
        inner = zipbytes([("inner.whl", inner)])
    write("zip-nested-deep.whl", inner)
    write("zip-stored-ar.whl", zipbytes([("pkg/lib.a", ar([("k.o/", obj, None)]))], zipfile.ZIP_STORED))

    if len(sys.argv) > 2 and sys.argv[1] == "--fixtures":
        for name in ("k2.fatbin", "k2_90a.cubin", "nokernels.o", "cm_size.o", "cm_all_speed.o", "arch90a.o"):
            src = os.path.join(sys.argv[2], name)
            if os.path.exists(src):
                with open(src, "rb") as f:
                    write("nvcc-" + name, f.read())


if __name__ == "__main__":
    main()
