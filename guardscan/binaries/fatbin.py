"""binaries (fatbin): the containers and entry headers of a ``.nv_fatbin`` section, payloads skipped.

What it reads: a fatbin section is one or more containers, back to back
(zero padding allowed between them). A container is a 16-byte header::

    u32 magic 0xBA55ED50 | u16 version (1) | u16 header size (16) | u64 bytes of entries

then entries, each a header of at least 64 bytes followed by its payload::

    u16 kind (2 ELF/SASS, 1 PTX) | u16 entry version (0x101) | u32 header size
    u64 payload size | u32 compressed size | u32 options offset
    u16 minor | u16 major (the payload format's version) | u32 SM (90, 100, ...)
    u32 name offset | u32 name length | u64 flags | u64 reserved
    u64 uncompressed size

The flags carry the target variant and the compression: ``0x100000`` an
arch-specific target (``sm_90a``: runs on that SM only), ``0x200000`` a family
target (``sm_100f``), ``0x8000`` a zstd-compressed payload (CUDA 13),
``0x2000`` NVIDIA's LZ4-like compression (CUDA 11.x-12.x). Each payload is
skipped but for its first 64 bytes: the embedded cubin's ELF header (SM
cross-check) or the compressed stream's magic.

Why it matters: the entry headers say for which architectures a library holds
machine code (SASS) and whether it holds PTX that a newer GPU could JIT; a
library with SASS for sm90, sm100 and sm103 only, and no PTX, cannot run on
sm120, whatever its Python says.

Known limits: names and options of entries are not read, nor kernel names
(they lie inside the payloads, compressed in CUDA 13 builds). Every size is
checked before it is used: a container that claims more bytes than its section
holds fails as ``fatbin-overrun``; an entry whose payload runs past its
container, or a header size under 64, as ``bad-fatbin``; an entry that claims
to inflate to more than ``MAX_CLAIM`` bytes as ``size-claim`` (nothing is
inflated, but such a claim means the header is not what it seems). At most
``MAX_ENTRIES`` entries per library.

On a forward stream the section's place is known only once the section table
at the file's end is read. ``sniff`` therefore walks, in the same single pass,
every chain of containers that starts at a fatbin magic it meets; once the
table is read, ``sniffed_section`` keeps a walk only if it began exactly at the
section's start and covered it to its end. Otherwise the section is walked
again, exactly (``read_section``), from a second pass.

Example (a container with one PTX entry for compute_90)::

    >>> import struct
    >>> from guardscan.binaries.source import BytesSource
    >>> from guardscan.binaries.elf import Section
    >>> entry = struct.pack("<HHIQIIHHIIIQQQ", 1, 0x101, 64, 8, 0, 0, 8, 8, 90,
    ...                     0, 0, 0x11, 0, 0) + b".version"
    >>> data = struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(entry)) + entry
    >>> section = Section(0, len(data), ".nv_fatbin", 1)
    >>> containers, entries = read_section(BytesSource(data), section)
    >>> containers, [e.target for e in entries]
    (1, ['compute_90'])
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field

from guardscan.binaries.elf import Section
from guardscan.binaries.model import FatbinEntry, Malformed
from guardscan.binaries.source import ByteSource

__all__ = [
    "FATBIN_MAGIC",
    "FATBIN_SECTIONS",
    "FLAG_ARCH_SPECIFIC",
    "FLAG_FAMILY",
    "FLAG_LZ4",
    "FLAG_ZSTD",
    "MAGIC_BYTES",
    "MAX_CLAIM",
    "MAX_ENTRIES",
    "Walk",
    "read_section",
    "sniff",
    "sniffed_section",
]

FATBIN_MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
_ELF_FLAGS = struct.Struct("<I")

#: the sections that hold fatbins: whole-program code, and relocatable device code (-rdc)
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")

FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ELF_MAGIC = b"\x7fELF"
_KIND_SASS = 2
_KIND_PTX = 1
_ENTRY_VERSION = 0x101

#: an entry that claims to inflate to more than this is refused (real cubins
#: and PTX are megabytes; 2 GiB is past any single one seen)
MAX_CLAIM = 2 << 30
#: at most this many entries per library (libcublasLt, the largest known, has ~5,400)
MAX_ENTRIES = 200_000
_MAX_HEADER = 4096
_ZERO_BLOCK = 4096


@dataclass(slots=True)
class Walk:
    """A chain of containers walked from ``start`` (absolute offsets):
    ``containers`` as (start, end) pairs with their ``entries``, ``stop``
    where the walk ended, ``problem`` what stopped it early (None: it ran
    into bytes that are neither padding nor a container, or its limit)."""

    start: int
    containers: list[tuple[int, int]] = field(default_factory=list)
    entries: list[list[FatbinEntry]] = field(default_factory=list)
    stop: int = 0
    problem: Malformed | None = None


def _variant(flags: int) -> str:
    if flags & FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & FLAG_FAMILY:
        return "f"
    return ""


def _compression(flags: int, head: bytes) -> str:
    if flags & FLAG_ZSTD:
        return "zstd" if head.startswith(_ZSTD_MAGIC) else "unknown"
    if flags & FLAG_LZ4:
        return "lz4"
    return ""


def _elf_sm(head: bytes) -> int | None:
    """The SM a cubin's ELF header names: bits 8-15 of e_flags from ELF ABI
    version 8 (CUDA 12.8+), the low byte before."""
    if len(head) < 52 or not head.startswith(_ELF_MAGIC):
        return None
    flags = int(_ELF_FLAGS.unpack_from(head, 48)[0])
    return (flags >> 8) & 0xFF if head[8] >= 8 else flags & 0xFF


class _Walker:
    """Walks containers on ``source`` within ``[.., end)``; ``base`` is the
    offset messages count from; ``sniffing`` asks for the stricter checks a
    guess needs (a real section that fails them is walked again, exactly)."""

    def __init__(self, source: ByteSource, end: int, base: int, label: str, *,
                 sniffing: bool, budget: list[int]) -> None:
        self.source = source
        self.end = end
        self.base = base
        self.label = label
        self.sniffing = sniffing
        self.budget = budget

    def bad(self, offset: int, what: str) -> Malformed:
        return Malformed("bad-fatbin", offset - self.base, what)

    def chain(self, walk: Walk) -> None:
        """Containers from ``walk.start`` on, into ``walk``, until the bytes
        are not a container; raises on a container that is malformed."""
        position = walk.start
        walk.stop = position
        while position + _CONTAINER.size <= self.end:
            magic, version, header_size, body = _CONTAINER.unpack(
                self.source.read_at(position, _CONTAINER.size))
            if magic != FATBIN_MAGIC:
                if not walk.containers:
                    raise self.bad(position, "no fatbin magic")
                return
            if version != 1 or not 16 <= header_size <= _MAX_HEADER:
                raise self.bad(position, f"container version {version}, header {header_size}")
            body_start = position + header_size
            if body_start + body > self.end:
                raise Malformed("fatbin-overrun", position - self.base, body,
                                max(self.end - body_start, 0), self.label)
            if self.sniffing and body < _ENTRY.size:
                raise self.bad(position, "an empty container")
            entries = self.entries(body_start, body_start + body)
            walk.containers.append((position, body_start + body))
            walk.entries.append(entries)
            position = self.skip_zeros(body_start + body)
            walk.stop = position

    def skip_zeros(self, position: int) -> int:
        while position < self.end:
            block = self.source.read_at(position, min(_ZERO_BLOCK, self.end - position))
            rest = block.lstrip(b"\0")
            if rest:
                return position + len(block) - len(rest)
            position += len(block)
        return position

    def entries(self, start: int, end: int) -> list[FatbinEntry]:
        out: list[FatbinEntry] = []
        position = start
        while position < end:
            if position + _ENTRY.size > end:
                raise self.bad(position, "an entry header past its container's end")
            (kind, entry_version, header_size, payload_size, compressed_size, _options,
             minor, major, sm, _name_offset, _name_length, flags, _reserved,
             uncompressed_size) = _ENTRY.unpack(self.source.read_at(position, _ENTRY.size))
            if not _ENTRY.size <= header_size <= _MAX_HEADER:
                raise self.bad(position, f"an entry header of {header_size} bytes")
            if self.sniffing and (kind not in (_KIND_SASS, _KIND_PTX) or
                                  entry_version != _ENTRY_VERSION):
                raise self.bad(position, f"entry kind {kind}, version {entry_version:#x}")
            payload = position + header_size
            if payload + payload_size > end:
                raise self.bad(position, f"an entry payload of {payload_size} bytes past "
                                         f"its container's end")
            head = self.source.read_at(payload, min(64, payload_size))
            compression = _compression(flags, head)
            if compression:
                if uncompressed_size > MAX_CLAIM:
                    raise Malformed("size-claim", position - self.base, uncompressed_size,
                                    MAX_CLAIM)
                if compressed_size > payload_size:
                    raise self.bad(position, f"{compressed_size} compressed bytes in a "
                                             f"{payload_size}-byte payload")
            self.budget[0] -= 1
            if self.budget[0] < 0:
                raise Malformed("too-many-entries", MAX_ENTRIES)
            out.append(FatbinEntry(
                section=self.label, offset=position, container=-1, kind_code=kind, sm=sm,
                variant=_variant(flags), flags=flags, header_size=header_size,
                payload_size=payload_size, compression=compression,
                compressed_size=compressed_size if compression else 0,
                uncompressed_size=uncompressed_size if compression else payload_size,
                version=(major, minor),
                elf_sm=_elf_sm(head) if kind == _KIND_SASS and not compression else None,
            ))
            position = payload + payload_size
        return out


def _placed(walk: Walk, section: Section) -> tuple[int, tuple[FatbinEntry, ...]]:
    """``walk``'s entries with section-relative offsets and container indices."""
    entries = []
    for index, container in enumerate(walk.entries):
        for entry in container:
            entries.append(dataclasses.replace(entry, section=section.name, container=index,
                                               offset=entry.offset - section.offset))
    return len(walk.containers), tuple(entries)


def read_section(source: ByteSource, section: Section,
                 budget: list[int] | None = None) -> tuple[int, tuple[FatbinEntry, ...]]:
    """(how many containers, their entries) of one fatbin section, walked
    exactly from its start to its end; ``Malformed`` on anything else there.
    ``budget`` is a one-item list of entries still allowed (shared by the
    sections of one library)."""
    end = section.offset + section.size
    if end > source.size:
        raise Malformed("truncated", end, source.size)
    walker = _Walker(source, end, section.offset, section.name, sniffing=False,
                     budget=budget if budget is not None else [MAX_ENTRIES])
    walk = Walk(start=section.offset)
    if section.size:
        walker.chain(walk)
        if walk.stop < end:
            raise walker.bad(walk.stop, "bytes that are neither zero padding nor a "
                                        "fatbin container")
    return _placed(walk, section)


def sniff(source: ByteSource, start: int, end: int) -> list[Walk]:
    """Every chain of containers that starts at a fatbin magic in
    ``[start, end)``, walked in one forward pass; a chain that fails is kept
    with its ``problem``, and the search goes on past it."""
    walks: list[Walk] = []
    budget = [MAX_ENTRIES]
    position = start
    while True:
        hit = source.find(MAGIC_BYTES, position, end)
        if hit < 0:
            return walks
        walk = Walk(start=hit)
        walker = _Walker(source, end, 0, "", sniffing=True, budget=budget)
        try:
            walker.chain(walk)
        except Malformed as exc:
            walk.problem = exc
        if walk.containers:
            walks.append(walk)
        if walk.problem is not None and walk.problem.code == "too-many-entries":
            return walks
        # go on past what this walk consumed, unless that would restart the stream
        resume = hit + 1 if not walk.containers else max(walk.stop, hit + 1)
        position = resume if resume >= source.retained_from() else max(
            walk.stop, source.retained_from())


def sniffed_section(walks: list[Walk],
                    section: Section) -> tuple[int, tuple[FatbinEntry, ...]] | None:
    """The sniffed walk of ``section`` when one began at its start and covered
    it to its end without a problem, else None (walk it again, exactly)."""
    end = section.offset + section.size
    for walk in walks:
        if walk.start != section.offset:
            continue
        inside = [i for i, (_s, e) in enumerate(walk.containers) if e <= end]
        if len(inside) != sum(1 for s, _e in walk.containers if s < end):
            return None  # a container straddles the section's end
        covered = walk.stop >= end or len(inside) < len(walk.containers)
        if not covered or (walk.problem is not None and walk.stop < end):
            return None
        kept = Walk(start=walk.start, containers=[walk.containers[i] for i in inside],
                    entries=[walk.entries[i] for i in inside])
        return _placed(kept, section)
    return None
