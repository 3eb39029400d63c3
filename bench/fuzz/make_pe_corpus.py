#!/usr/bin/env python3
"""Writes corpus/pe/: small PE/COFF seeds for fuzz_pe and the hostile files the unit test
BinaryPeCorpus replays. `pe-seed-*` must read cleanly with device code; `pe-hostile-*` must fail
with an error that names a byte offset (truncated headers, a section past the end, a string-table
offset out of range, huge section counts, overlapping sections, broken .lib members). The PE
builders are tests/fixtures/binary/make_pe.py's; the fatbin is make_corpus.py's synthetic one.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "fixtures", "binary"))
import make_corpus  # noqa: E402
import make_pe  # noqa: E402

OUT = os.path.join(HERE, "corpus", "pe")


def patch(data, off, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, off, value)
    return bytes(b)


def headers(img):
    """(COFF header offset, first section header offset) of an image."""
    coff = struct.unpack_from("<I", img, 0x3C)[0] + 4
    return coff, coff + 20 + struct.unpack_from("<H", img, coff + 16)[0]


def main():
    os.makedirs(OUT, exist_ok=True)
    # PTX entries: their payload is not read when listing, so zero bytes stand in for the text.
    fat = make_corpus.fatbin([make_corpus.entry(kind=1, arch=80), make_corpus.entry(kind=1, arch=90)])
    fat2 = make_corpus.fatbin([make_corpus.entry(kind=1, arch=120)])
    dll = make_pe.image([(".nv_fatb", fat + b"\0" * (-len(fat) % 16) + fat2)])
    longdll = make_pe.image([(".text", b"\xc3"), (".nv_fatbin", fat)], long_names=True)
    obj = make_pe.coff_object([("__nv_relfatbin", fat), (".nvFatBinSegment", b"\0" * 24)])
    big = make_pe.coff_object([(".nv_fatbin", fat)], bigobj=True)
    lib = make_pe.msvc_lib([("x64/a_long_object_name.obj", obj), ("imp.obj", make_pe.import_member())])
    seeds = {
        "pe-seed-amd64.dll": dll,
        "pe-seed-arm64.dll": make_pe.image([(".nv_fatb", fat)], machine=make_pe.ARM64),
        "pe-seed-pe32.dll": make_pe.image([(".nv_fatb", fat)], machine=make_pe.I386, pe32=True,
                                          image_base=0x10000000),
        "pe-seed-longnames.dll": longdll,
        "pe-seed-rdc.obj": obj,
        "pe-seed-bigobj.obj": big,
        "pe-seed-kernels.lib": lib,
    }
    coff, sec = headers(dll)
    lcoff, lsec = headers(longdll)
    strtab = struct.unpack_from("<I", longdll, lcoff + 8)[0]
    hostile = {
        "pe-hostile-truncated-dos.dll": dll[:0x20],
        "pe-hostile-truncated-coff.dll": dll[:coff + 10],
        "pe-hostile-truncated-optional.dll": dll[:coff + 40],
        "pe-hostile-truncated-sections.dll": dll[:sec + 12],
        "pe-hostile-lfanew-past-end.dll": patch(dll, 0x3C, "<I", 0xFFFFFFF0),
        "pe-hostile-section-past-end.dll": patch(dll, sec + 20, "<I", 0xFFFFFF00),
        "pe-hostile-section-size-huge.dll": patch(patch(dll, sec + 16, "<I", 0xFFFFFFFF), sec + 8, "<I", 0xFFFFFFFF),
        "pe-hostile-huge-section-count.dll": patch(dll, coff + 2, "<H", 0xFFFF),
        "pe-hostile-optional-size-huge.dll": patch(dll, coff + 16, "<H", 0xFFFF),
        "pe-hostile-overlapping-sections.dll": patch(dll, sec + 20, "<I", 0x40),
        "pe-hostile-strtab-offset-out-of-range.dll": patch(longdll, lsec + 40, "<8s", b"/9999999"),
        "pe-hostile-strtab-base64-out-of-range.dll": patch(longdll, lsec + 40, "<8s", b"//AAAAAB"),
        "pe-hostile-strtab-size-lie.dll": patch(longdll, strtab, "<I", 0x7FFFFFFF),
        "pe-hostile-symtab-past-end.dll": patch(longdll, lcoff + 12, "<I", 0x40000000),
        "pe-hostile-long-name-unterminated.dll": longdll[:-1] + b"x",
        "pe-hostile-truncated-fatbin.dll": patch(dll, sec + 8, "<I", len(fat) - 8),
        "pe-hostile-obj-huge-section-count.obj": patch(obj, 2, "<H", 0xFFFF),
        "pe-hostile-obj-section-past-end.obj": patch(obj, 20 + 20, "<I", 0x7FFFFFFF),
        "pe-hostile-bigobj-huge-section-count.obj": patch(big, 44, "<I", 0xFFFFFFFF),
        "pe-hostile-lib-truncated-member.lib": make_pe.msvc_lib([("x64/a_long_object_name.obj", obj[:30])]),
        "pe-hostile-lib-anonymous-object.lib": make_pe.msvc_lib([("ltcg.obj", patch(make_pe.import_member(), 4, "<H", 1))]),
    }
    for name, data in {**seeds, **hostile}.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
