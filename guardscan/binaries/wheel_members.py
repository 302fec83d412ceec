"""binaries (wheel members): the shared libraries inside a wheel, read from the zip without extracting it.

What it reads: the zip's central directory; for each member whose name ends in
``.so`` (or ``.so.N``), its bytes through a ``ByteSource``: a stored member
with ``os.pread`` at its offset in the wheel, a deflated one inflated as a
forward stream (``InflateReader``), any other compression through zipfile's
own stream. Nothing is written anywhere; ``read_wheel`` caches the facts (see
``guardscan.binaries.cache``).

Why it matters: sglang-kernel 0.4.10 is a 373 MB wheel whose
``flash_ops.abi3.so`` inflates to 1.1 GB; reading its headers must cost one
inflate pass and a few megabytes of memory, not an extraction.

Known limits: a member name that is absolute, holds ``..``, a backslash or a
NUL is refused (``unsafe-member``) and not read, though it is never used as a
path here either; an encrypted member is ``unreadable``. A member's declared
size bounds every read of it (see ``ForwardSource``).

Example::

    >>> safe_member_name("sgl_kernel/flash_ops.abi3.so"), safe_member_name("../evil.so")
    (True, False)
"""

from __future__ import annotations

import fnmatch
import os
import re
import struct
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from guardscan.binaries.library import MAX_LIBRARY_BYTES, read_library
from guardscan.binaries.model import LibraryOutcome, Malformed, ReadFailure
from guardscan.binaries.source import ByteSource, FileSource, ForwardSource, InflateReader

__all__ = [
    "WheelLibraries",
    "library_members",
    "open_member",
    "read_members",
    "safe_member_name",
]

_LIBRARY_NAME = re.compile(r"\.so(\.\d+)*$")
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


@dataclass(frozen=True, slots=True)
class WheelLibraries:
    """The libraries of one wheel: its file name, sha256, and one outcome
    per library member read (member name order)."""

    wheel: str
    sha256: str
    libraries: tuple[LibraryOutcome, ...]


def safe_member_name(name: str) -> bool:
    """False for a name that is absolute, climbs out (``..``), or holds a
    backslash, a drive or a NUL."""
    if not name or "\\" in name or "\0" in name or name.startswith("/"):
        return False
    if re.match(r"^[A-Za-z]:", name):
        return False
    return ".." not in PurePosixPath(name).parts


def library_members(archive: zipfile.ZipFile,
                    patterns: Sequence[str] | None = None) -> list[zipfile.ZipInfo]:
    """The members that are shared libraries, optionally only those whose
    name matches one of the glob ``patterns`` (``sgl_kernel/*.so``)."""
    out = []
    for info in archive.infolist():
        if info.is_dir() or not _LIBRARY_NAME.search(info.filename):
            continue
        if patterns and not any(fnmatch.fnmatchcase(info.filename, p) for p in patterns):
            continue
        out.append(info)
    return sorted(out, key=lambda i: i.filename)


def _data_offset(wheel: Path, info: zipfile.ZipInfo) -> int:
    """Where ``info``'s compressed bytes begin: after its local header."""
    with open(wheel, "rb") as handle:
        handle.seek(info.header_offset)
        raw = handle.read(_LOCAL_HEADER.size)
    if len(raw) < _LOCAL_HEADER.size:
        raise Malformed("bad-zip", f"local header of {info.filename} past the file's end")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw)
    name_length, extra_length = int(name_length), int(extra_length)
    if signature != _LOCAL_SIGNATURE:
        raise Malformed("bad-zip", f"no local header for {info.filename}")
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length


@contextmanager
def open_member(wheel: Path, archive: zipfile.ZipFile,
                info: zipfile.ZipInfo) -> Iterator[ByteSource]:
    """A ``ByteSource`` over one member's (uncompressed) bytes."""
    if info.flag_bits & 0x1:
        raise Malformed("unreadable", f"{info.filename} is encrypted")
    if info.compress_type == zipfile.ZIP_STORED:
        with FileSource(wheel, base=_data_offset(wheel, info), size=info.file_size,
                        name=info.filename) as stored:
            yield stored
        return
    if info.compress_type == zipfile.ZIP_DEFLATED:
        offset = _data_offset(wheel, info)
        if offset + info.compress_size > os.path.getsize(wheel):
            raise Malformed("bad-zip", f"{info.filename} runs past the end of the wheel")
        source = ForwardSource(lambda: InflateReader(wheel, offset, info.compress_size),
                               info.file_size, info.filename)
    else:
        source = ForwardSource(lambda: archive.open(info), info.file_size, info.filename)
    with source:
        yield source


def read_members(wheel: Path, patterns: Sequence[str] | None = None,
                 skip: frozenset[str] = frozenset()) -> list[LibraryOutcome]:
    """An outcome per library member of ``wheel`` (not those named in
    ``skip``); ``Malformed("bad-zip")`` when the wheel itself is no readable zip."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise Malformed("bad-zip", str(exc) or type(exc).__name__) from None
    with archive:
        members = library_members(archive, patterns)
        return [_read_member(wheel, archive, info) for info in members
                if info.filename not in skip]


def _read_member(wheel: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> LibraryOutcome:
    name = info.filename
    if not safe_member_name(name):
        return ReadFailure(name, "unsafe-member", (name,))
    if info.file_size > MAX_LIBRARY_BYTES:
        return ReadFailure(name, "too-large", (info.file_size, MAX_LIBRARY_BYTES))
    try:
        with open_member(wheel, archive, info) as source:
            return read_library(source, name)
    except Malformed as exc:
        return ReadFailure(name, exc.code, exc.details)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        # zipfile raises NotImplementedError for a compression it lacks and
        # RuntimeError for a password it is not given
        return ReadFailure(name, "unreadable", (str(exc) or type(exc).__name__,))
