"""binaries (ELF): a 64-bit little-endian ELF file's header and section table, read with ``struct``.

What it reads: the 64-byte ELF header (``e_shoff``, ``e_shnum``,
``e_shstrndx``, with the extended numbering of section 0 when there are more
than 0xff00 sections), the section header table, and the section-name string
table; from those a ``Section`` per section (name, type, file offset, size).
Nothing else: no symbols, no relocations, no program headers.

Why it matters: the GPU code of a compiled package sits in its ``.nv_fatbin``
section; finding it takes the section table, which a linker writes at the
file's end. Reading only the header and the table keeps a 1.1 GB library at a
few kilobytes read.

Known limits: 64-bit little-endian files only (every CUDA library on
x86-64 and aarch64 Linux); a 32-bit or big-endian file fails as
``unsupported-elf``. Each offset is checked against the file's size before it
is read: a section table past the end fails as ``truncated``, never as a
short read. Works on any ``ByteSource``; on a forward stream, reading the
section table passes over the whole file once.

Example::

    >>> from guardscan.binaries.source import BytesSource
    >>> try:
    ...     read_header(BytesSource(b"MZ" + bytes(100), name="x.so"))
    ... except Malformed as exc:
    ...     print(exc.code)
    not-elf
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from guardscan.binaries.model import Malformed
from guardscan.binaries.source import ByteSource

__all__ = ["ElfHeader", "Section", "read_header", "read_sections", "section_named"]

_IDENT = b"\x7fELF"
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
SHT_NOBITS = 8
_SHN_XINDEX = 0xFFFF
#: more section headers than this is not a library, it is a length field gone wrong
MAX_SECTIONS = 1 << 20


@dataclass(frozen=True, slots=True)
class ElfHeader:
    """The fields of the ELF header this package uses."""

    elf_type: int
    machine: int
    flags: int
    abi_version: int
    section_offset: int
    section_entry_size: int
    section_count: int
    names_index: int

    @property
    def section_table_end(self) -> int:
        return self.section_offset + self.section_entry_size * self.section_count


@dataclass(frozen=True, slots=True, order=True)
class Section:
    """One section header: its name and where its bytes lie in the file."""

    offset: int
    size: int
    name: str
    section_type: int

    @property
    def in_file(self) -> bool:
        """False for a section that occupies no file bytes (``.bss``)."""
        return self.section_type != SHT_NOBITS


def read_header(source: ByteSource) -> ElfHeader:
    """The ELF header at the start of ``source``; ``Malformed`` when it is none."""
    ident = source.read_at(0, min(source.size, 16))
    if not ident.startswith(_IDENT):
        raise Malformed("not-elf", repr(ident[:4]))
    if len(ident) < 16 or source.size < _EHDR.size:
        raise Malformed("truncated", _EHDR.size, source.size)
    if ident[4] != 2 or ident[5] != 1:
        raise Malformed("unsupported-elf", ident[4], ident[5])
    (_ident, e_type, e_machine, _version, _entry, _phoff, e_shoff, e_flags, _ehsize,
     _phentsize, _phnum, e_shentsize, e_shnum, e_shstrndx) = _EHDR.unpack(
        source.read_at(0, _EHDR.size))
    if e_shoff == 0:
        raise Malformed("bad-elf", "no section header table (e_shoff is 0)")
    if e_shentsize != _SHDR.size:
        raise Malformed("bad-elf", f"section headers of {e_shentsize} bytes, not 64")
    count, names = e_shnum, e_shstrndx
    if count == 0 or names == _SHN_XINDEX:
        # extended numbering: section 0 holds the real count and index
        zero = _SHDR.unpack(source.read_at(e_shoff, _SHDR.size))
        count = count or zero[5]
        names = zero[6] if names == _SHN_XINDEX else names
    if count > MAX_SECTIONS:
        raise Malformed("bad-elf", f"{count} section headers")
    header = ElfHeader(e_type, e_machine, e_flags, ident[8], e_shoff, e_shentsize, count,
                       names)
    if header.section_table_end > source.size:
        raise Malformed("truncated", header.section_table_end, source.size)
    return header


def read_sections(source: ByteSource, header: ElfHeader) -> tuple[Section, ...]:
    """Every section of the file, named, in table order."""
    table = source.read_at(header.section_offset, header.section_table_end -
                           header.section_offset)
    raw = [_SHDR.unpack_from(table, i * _SHDR.size) for i in range(header.section_count)]
    if not raw:
        return ()
    if header.names_index >= len(raw):
        raise Malformed("bad-elf", f"section-name table index {header.names_index} of "
                                   f"{len(raw)} sections")
    names_offset, names_size = raw[header.names_index][4], raw[header.names_index][5]
    if names_offset + names_size > source.size:
        raise Malformed("truncated", names_offset + names_size, source.size)
    names = source.read_at(names_offset, names_size)
    out = []
    for sh_name, sh_type, _flags, _addr, sh_offset, sh_size, *_rest in raw:
        if sh_name >= max(len(names), 1) and sh_name != 0:
            raise Malformed("bad-elf", f"section name offset {sh_name} past the name table")
        end = names.find(b"\0", sh_name)
        name = names[sh_name:end if end >= 0 else len(names)].decode("utf-8", "replace")
        out.append(Section(sh_offset, sh_size, name, sh_type))
    return tuple(out)


def section_named(sections: tuple[Section, ...], name: str) -> Section | None:
    """The first section called ``name``, or None."""
    return next((s for s in sections if s.name == name), None)
