"""Build the crafted files under fixtures/binaries/ (tests/test_binaries.py checks they match).

    python scripts/make_binary_fixtures.py          # rewrite them
    python scripts/make_binary_fixtures.py --check  # exit 1 when they drifted

Every file is a few hundred bytes, built with ``struct`` from the layouts
guardscan.binaries reads (see its fatbin.py): a valid library with SASS and
PTX entries of several architectures and variants, and one file per hostile
case. The real nvcc-built fatbins beside them come from
scripts/nvcc_fatbin_variants.sh, not from here.
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "binaries"

FATBIN_MAGIC = 0xBA55ED50
SASS, PTX = 2, 1
PLAIN, ARCH_SPECIFIC, FAMILY = 0x11, 0x100011, 0x200011
LZ4, ZSTD = 0x2000, 0x8000


def cubin(sm: int) -> bytes:
    """A minimal cubin for ``sm``: an ELF header (ELF ABI version 8, the SM in
    bits 8-15 of e_flags), a section-name table and a two-entry section
    table; enough for cuobjdump to list it. cuobjdump names an ``a`` target
    from attribute 9 of the cubin's own ``.nv.compat`` section (flipping that
    byte in a real nvcc cubin flips its listing), with more of nvcc's
    sections than these minimal cubins have, so it lists the two ``a``
    entries here as ``sm_90`` and ``sm_120`` while their entry headers say
    ``sm_90a`` and ``sm_120a`` (what guardscan reads; in nvcc's output the two
    always agree)."""
    names = b"\0.shstrtab\0"
    table_offset = 64 + 16
    ident = b"\x7fELF\x02\x01\x01\x41\x08" + bytes(7)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, table_offset,
                                 0x06000002 | sm << 8, 64, 56, 0, 64, 2, 1)
    table = bytes(64) + struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(names), 0, 0, 1, 0)
    return header + names + bytes(16 - len(names)) + table


def zstd_frame(data: bytes) -> bytes:
    """``data`` as a zstd frame of one raw (stored) block: valid zstd, no
    compression library needed."""
    assert len(data) < 256
    return (b"\x28\xb5\x2f\xfd" + bytes([0x20, len(data)]) +
            (1 | len(data) << 3).to_bytes(3, "little") + data)


def lz4_literals(data: bytes) -> bytes:
    """``data`` in NVIDIA's LZ4-like scheme as one run of literals."""
    assert 15 <= len(data) < 15 + 255
    return bytes([0xF0, len(data) - 15]) + data


def entry(kind: int, sm: int, flags: int = PLAIN, payload: bytes = b"", *,
          header_size: int = 64, compressed_size: int = 0, uncompressed_size: int = 0,
          payload_size: int | None = None, version: tuple[int, int] = (1, 8)) -> bytes:
    """One entry header and its payload (padded to 8 bytes)."""
    padded = payload + bytes(-len(payload) % 8)
    size = len(padded) if payload_size is None else payload_size
    head = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x101, header_size, size, compressed_size,
                       64 if header_size > 64 else 0, version[1], version[0], sm, 0, 0, flags,
                       0, uncompressed_size)
    return head + bytes(header_size - 64) + padded


def container(*entries: bytes, body_size: int | None = None) -> bytes:
    body = b"".join(entries)
    size = len(body) if body_size is None else body_size
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, size) + body


def library(sections: list[tuple[str, bytes]]) -> bytes:
    """An ELF64 little-endian shared object holding ``sections`` (name,
    bytes), a section-name table, and the section table at the end."""
    names = b"\0"
    offsets = []
    data = bytearray(64)
    for name, body in sections:
        data += bytes(-len(data) % 8)
        offsets.append((len(names), len(data), len(body)))
        names += name.encode() + b"\0"
        data += body
    names_at = len(names)
    names += b".shstrtab\0"
    names_offset = len(data)
    data += names
    data += bytes(-len(data) % 8)
    table_offset = len(data)
    count = len(sections) + 2
    table = bytes(64)  # the null section
    for name_at, offset, size in offsets:
        table += struct.pack("<IIQQQQIIQQ", name_at, 1, 2, offset, offset, size, 0, 0, 8, 0)
    table += struct.pack("<IIQQQQIIQQ", names_at, 3, 0, 0, names_offset, len(names), 0, 0,
                         1, 0)
    header = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_offset, 0, 64, 56, 0, 64, count, count - 1)
    data[:64] = header
    return bytes(data + table)


_PTX_80 = b".version 9.0\n.target sm_80\n.address_size 64\n"
_PTX_90A = b".version 9.0\n.target sm_90a\n.address_size 64\n"
_PTX_100F = b".version 9.0\n.target sm_100f\n.address_size 64\n"


def valid_fatbin() -> bytes:
    """Two containers (zero padding between): SASS sm_80, sm_90a, sm_100f,
    sm_120a; PTX compute_80, compute_90a (zstd), compute_100f (LZ4)."""
    ptx_90a, ptx_100f = zstd_frame(_PTX_90A), lz4_literals(_PTX_100F)
    first = container(
        entry(SASS, 80, PLAIN, cubin(80)),
        entry(PTX, 80, PLAIN, _PTX_80, header_size=80, version=(9, 0)),
        entry(SASS, 90, ARCH_SPECIFIC, cubin(90)),
        entry(PTX, 90, ARCH_SPECIFIC | ZSTD, ptx_90a, header_size=80, version=(9, 0),
              compressed_size=len(ptx_90a), uncompressed_size=len(_PTX_90A)),
    )
    second = container(
        entry(SASS, 100, FAMILY | 0x1000000, cubin(100), header_size=112),
        entry(PTX, 100, FAMILY | LZ4, ptx_100f, header_size=80, version=(9, 0),
              compressed_size=len(ptx_100f), uncompressed_size=len(_PTX_100F)),
        entry(SASS, 120, ARCH_SPECIFIC | 0x1000000, cubin(120),
              header_size=112),
    )
    return first + bytes(16) + second


def relocatable_fatbin() -> bytes:
    return container(entry(SASS, 75, PLAIN, cubin(75)))


def fixtures() -> dict[str, bytes]:
    valid = library([(".text", b"\xc3" * 8), (".nv_fatbin", valid_fatbin()),
                     ("__nv_relfatbin", relocatable_fatbin())])
    overrun = library([(".nv_fatbin", container(entry(SASS, 90, PLAIN, cubin(90)),
                                                body_size=1 << 40))])
    frame = zstd_frame(b"\0" * 64)
    claim = library([(".nv_fatbin", container(entry(
        SASS, 100, PLAIN | ZSTD, frame, compressed_size=len(frame),
        uncompressed_size=64 << 30)))])
    return {
        "valid.so": valid,
        "truncated.so": valid[: len(valid) - 100],
        "fatbin_overrun.so": overrun,
        "size_claim.so": claim,
        "not_elf.so": b"#!/bin/sh\necho this is not a library\n",
        "unsafe_members.whl": unsafe_wheel(valid),
    }


def unsafe_wheel(library_bytes: bytes) -> bytes:
    """A wheel whose members include ``../escape.so`` and ``/absolute.so``
    beside a good ``pkg/good.so`` (deflated, so it is read as a stream)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in ("../escape.so", "/absolute.so", "pkg/good.so"):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, library_bytes)
        info = zipfile.ZipInfo("pkg-1.0.dist-info/METADATA", date_time=(1980, 1, 1, 0, 0, 0))
        archive.writestr(info, "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    return out.getvalue()


def wheel_members(data: bytes) -> dict[str, bytes]:
    """A zip's members by name (compare wheels by content: deflate output
    may differ between zlib builds)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def drifted() -> list[str]:
    out = []
    for name, data in fixtures().items():
        path = OUT / name
        if not path.is_file():
            out.append(name)
        elif name.endswith(".whl"):
            if wheel_members(path.read_bytes()) != wheel_members(data):
                out.append(name)
        elif path.read_bytes() != data:
            out.append(name)
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = drifted()
        for name in stale:
            print(f"fixtures/binaries/{name} drifted; run python scripts/make_binary_fixtures.py")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in fixtures().items():
        (OUT / name).write_bytes(data)
        print(f"fixtures/binaries/{name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
