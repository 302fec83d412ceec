"""binaries (library): one shared library's fatbin facts, or one failure; never an exception.

What it reads: a fatbin file (``nvcc -fatbin`` output, starting with the
fatbin magic) as one loadable section; otherwise the ELF header, then (on a
forward stream, in the same pass) every fatbin chain met before the section
table, then the section table and the fatbin sections (``.nv_fatbin``,
``__nv_relfatbin``), walked exactly unless the pass already covered them. See
``guardscan.binaries.fatbin``.

Why it matters: one unreadable library must not stop a scan, and must not
look like a library without GPU code: it becomes a ``ReadFailure`` with a
code, and the other libraries stand.

Known limits: a library over ``MAX_LIBRARY_BYTES`` is refused unread. A read
error of the file itself (permissions, I/O) becomes ``unreadable``.

Example::

    >>> from guardscan.binaries.source import BytesSource
    >>> outcome = read_library(BytesSource(b"\\x7fELF\\x02\\x01" + bytes(10), name="cut.so"))
    >>> outcome.code, outcome.args
    ('truncated', (64, 16))
"""

from __future__ import annotations

import zipfile

from guardscan.binaries import elf, fatbin
from guardscan.binaries.model import (
    LOADABLE_SECTION,
    FatbinEntry,
    LibraryFacts,
    LibraryOutcome,
    Malformed,
    ReadFailure,
)
from guardscan.binaries.source import ByteSource, FileSource

__all__ = ["MAX_LIBRARY_BYTES", "read_library", "read_library_file"]

#: a library larger than this is refused unread (the largest real one,
#: sglang-kernel 0.4.10's flash_ops.abi3.so, is 1.1 GB)
MAX_LIBRARY_BYTES = 8 << 30


def read_library(source: ByteSource, path: str | None = None) -> LibraryOutcome:
    """The fatbin facts of the library whose bytes ``source`` gives."""
    name = path if path is not None else source.name
    try:
        return _read(source, name)
    except Malformed as exc:
        return ReadFailure(name, exc.code, exc.details)
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        return ReadFailure(name, "unreadable", (str(exc) or type(exc).__name__,))


def read_library_file(path: str) -> LibraryOutcome:
    """``read_library`` on a file on disk (random access: headers only are read)."""
    try:
        with FileSource(path) as source:
            return read_library(source, path)
    except Malformed as exc:
        return ReadFailure(path, exc.code, exc.details)
    except OSError as exc:
        return ReadFailure(path, "unreadable", (str(exc),))


def _read_fatbin_file(source: ByteSource, name: str) -> LibraryFacts:
    """A fatbin file (nvcc -fatbin), what cuModuleLoadFatBinary loads: one section."""
    whole = elf.Section(0, source.size, LOADABLE_SECTION, 1)
    containers, entries = fatbin.read_section(source, whole)
    return LibraryFacts(path=name, size=source.size, fatbin_sections=(LOADABLE_SECTION,),
                        containers=containers, entries=entries)


def _read(source: ByteSource, name: str) -> LibraryFacts:
    if source.size > MAX_LIBRARY_BYTES:
        raise Malformed("too-large", source.size, MAX_LIBRARY_BYTES)
    if source.read_at(0, min(4, source.size)) == fatbin.MAGIC_BYTES:
        return _read_fatbin_file(source, name)
    header = elf.read_header(source)
    walks = [] if source.random_access else fatbin.sniff(source, 64, header.section_offset)
    sections = elf.read_sections(source, header)
    fat_sections = sorted(s for s in sections if s.name in fatbin.FATBIN_SECTIONS and s.in_file)
    budget = [fatbin.MAX_ENTRIES]
    containers = 0
    entries: list[FatbinEntry] = []
    for section in fat_sections:
        if section.offset + section.size > source.size:
            raise Malformed("truncated", section.offset + section.size, source.size)
        found = fatbin.sniffed_section(walks, section)
        if found is None:
            found = fatbin.read_section(source, section, budget)
        containers += found[0]
        entries.extend(found[1])
    return LibraryFacts(
        path=name, size=source.size,
        fatbin_sections=tuple(dict.fromkeys(s.name for s in fat_sections)),
        containers=containers, entries=tuple(entries),
    )
