"""binaries (model): what reading one library gives, its facts or one failure, as plain data.

What it holds: ``FatbinEntry`` (one entry header of a fatbin container),
``LibraryFacts`` (one shared library read to the end: its entries and the
summary facts later stages ask for), ``ReadFailure`` (one library that could
not be read, with a code and its arguments) and ``LibraryOutcome``, the sum of
the last two. ``Malformed`` is the exception the readers raise inside this
package; ``guardscan.binaries.library.read_library`` turns it into a
``ReadFailure``, so none escapes to a caller.

Why it matters: a verdict built on binary facts must be able to say "this file
could not be read" apart from "this file holds no code for sm120"; the first
is a failure value, never an empty entry list.

Known limits: ``variant`` is what the entry header's flags say (``a``
arch-specific, ``f`` family); cuobjdump reads the same bits (see
docs/binaries.md for the cross-check). Kernel names are not read.

Example::

    >>> entry = FatbinEntry(section=".nv_fatbin", offset=16, container=0,
    ...     kind_code=2, sm=90, variant="a", flags=0x100011, header_size=64,
    ...     payload_size=31520, compression="", compressed_size=0,
    ...     uncompressed_size=31520, version=(1, 8), elf_sm=90)
    >>> entry.target
    'sm_90a'
    >>> ReadFailure("x.so", "truncated", (4096, 100)).reason
    'truncated: needs bytes up to offset 4096, the data ends at 100'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "ENTRY_FIELDS",
    "LOADABLE_SECTION",
    "MESSAGES",
    "FatbinEntry",
    "LibraryFacts",
    "LibraryOutcome",
    "Malformed",
    "ReadFailure",
    "outcome_from_json",
]

#: one template per failure code; arguments travel as data (``ReadFailure.args``)
MESSAGES: Mapping[str, str] = {
    "not-elf": "not an ELF file (starts with {0})",
    "unsupported-elf": "not a 64-bit little-endian ELF file (EI_CLASS {0}, EI_DATA {1})",
    "truncated": "truncated: needs bytes up to offset {0}, the data ends at {1}",
    "bad-elf": "malformed ELF: {0}",
    "fatbin-overrun": "fatbin container at {0:#x} claims {1} bytes, only {2} remain in {3}",
    "bad-fatbin": "malformed fatbin at {0:#x}: {1}",
    "size-claim": "fatbin entry at {0:#x} claims to decompress to {1} bytes, over the cap of {2}",
    "too-many-entries": "more than {0} fatbin entries",
    "too-large": "{0} bytes, over the cap of {1} for one library",
    "unsafe-member": "unsafe member name, not read: {0}",
    "bad-zip": "not a readable zip file: {0}",
    "unreadable": "cannot read: {0}",
}

#: the section whose fatbins the CUDA runtime registers and loads
LOADABLE_SECTION = ".nv_fatbin"

#: entry kinds as the entry header's first field gives them
KIND_NAMES: Mapping[int, str] = {1: "ptx", 2: "sass"}


class Malformed(Exception):
    """Raised by the readers of this package for bad input; ``code`` keys
    ``MESSAGES``. Never leaves the package: ``read_library`` and
    ``read_wheel`` return it as a ``ReadFailure``."""

    def __init__(self, code: str, *args: str | int) -> None:
        super().__init__(code, *args)
        self.code = code
        self.details: tuple[str | int, ...] = args


@dataclass(frozen=True, slots=True, order=True)
class FatbinEntry:
    """One entry of a fatbin container: SASS (an ELF cubin) or PTX for one SM.

    ``offset`` is where the entry header starts, from the start of its
    section; ``container`` the index of its container there. ``kind_code``
    is the header's own kind (2 ELF/SASS, 1 PTX). ``payload_size`` is the
    bytes the entry occupies after its header (padded); ``compressed_size``
    and ``uncompressed_size`` are the header's claims for a compressed entry
    (for an uncompressed one, 0 and the payload size). ``compression`` is
    ``""``, ``"zstd"`` (CUDA 13 builds), ``"lz4"`` (NVIDIA's LZ4-like scheme
    of CUDA 11.x-12.x) or ``"unknown"`` (the flags and the payload's magic
    disagree). ``elf_sm`` is the SM the embedded cubin's own ELF header gives
    (uncompressed SASS only; None otherwise), a cross-check of ``sm``.
    """

    section: str
    offset: int
    container: int
    kind_code: int
    sm: int
    variant: str
    flags: int
    header_size: int
    payload_size: int
    compression: str
    compressed_size: int
    uncompressed_size: int
    version: tuple[int, int]
    elf_sm: int | None

    @property
    def kind(self) -> str:
        """``"sass"``, ``"ptx"`` or ``"other"``."""
        return KIND_NAMES.get(self.kind_code, "other")

    @property
    def compressed(self) -> bool:
        return self.compression != ""

    @property
    def loadable(self) -> bool:
        """True for an entry of ``.nv_fatbin``, what the CUDA runtime loads;
        False for one of ``__nv_relfatbin``: relocatable device code kept for
        a later device link (``-rdc``), never loaded as it is."""
        return self.section == LOADABLE_SECTION

    @property
    def target(self) -> str:
        """cuobjdump's spelling: ``sm_90a`` for SASS, ``compute_90a`` for PTX."""
        prefix = "compute_" if self.kind == "ptx" else "sm_"
        return f"{prefix}{self.sm}{self.variant}"

    def to_json(self) -> dict[str, object]:
        return {
            "section": self.section, "offset": self.offset, "container": self.container,
            "kind_code": self.kind_code, "sm": self.sm, "variant": self.variant,
            "flags": self.flags, "header_size": self.header_size,
            "payload_size": self.payload_size, "compression": self.compression,
            "compressed_size": self.compressed_size,
            "uncompressed_size": self.uncompressed_size, "version": list(self.version),
            "elf_sm": self.elf_sm,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> FatbinEntry:
        version = data["version"]
        assert isinstance(version, list) and len(version) == 2
        elf_sm = data["elf_sm"]
        return cls(
            section=str(data["section"]), offset=_int(data["offset"]),
            container=_int(data["container"]), kind_code=_int(data["kind_code"]),
            sm=_int(data["sm"]), variant=str(data["variant"]), flags=_int(data["flags"]),
            header_size=_int(data["header_size"]), payload_size=_int(data["payload_size"]),
            compression=str(data["compression"]),
            compressed_size=_int(data["compressed_size"]),
            uncompressed_size=_int(data["uncompressed_size"]),
            version=(_int(version[0]), _int(version[1])),
            elf_sm=None if elf_sm is None else _int(elf_sm),
        )


#: the keys of ``FatbinEntry.to_json``, in order
ENTRY_FIELDS = ("section", "offset", "container", "kind_code", "sm", "variant", "flags",
                "header_size", "payload_size", "compression", "compressed_size",
                "uncompressed_size", "version", "elf_sm")


def _targets(entries: Iterable[FatbinEntry], kind: str, loadable: bool = True
             ) -> tuple[str, ...]:
    found = {(e.sm, e.variant) for e in entries if e.kind == kind and e.loadable == loadable}
    prefix = "compute_" if kind == "ptx" else "sm_"
    return tuple(f"{prefix}{sm}{variant}" for sm, variant in sorted(found))


@dataclass(frozen=True, slots=True)
class LibraryFacts:
    """One shared library read to the end: the fatbin entries it carries.

    ``path`` is the file's path, or the member name inside its wheel;
    ``size`` its size in bytes; ``fatbin_sections`` the names of the fatbin
    sections found (empty: a host-only library, such as a JIT package's
    loader); ``containers`` how many fatbin containers they hold. The
    summaries (``sass_targets``, ``ptx_targets``, ``sass_sms``, ``ptx_sms``)
    count loadable entries only (``FatbinEntry.loadable``); the relocatable
    ones are in ``relocatable_targets``.
    """

    path: str
    size: int
    fatbin_sections: tuple[str, ...]
    containers: int
    entries: tuple[FatbinEntry, ...]

    ok = True

    @property
    def sass_targets(self) -> tuple[str, ...]:
        """SASS targets, cuobjdump's spelling, by SM then variant: ``("sm_90a", "sm_100f")``."""
        return _targets(self.entries, "sass")

    @property
    def ptx_targets(self) -> tuple[str, ...]:
        """PTX targets: ``("compute_90",)``; empty when no newer GPU could JIT anything."""
        return _targets(self.entries, "ptx")

    @property
    def relocatable_targets(self) -> tuple[str, ...]:
        """SASS then PTX targets of ``__nv_relfatbin`` (device-link inputs, not loaded)."""
        return (_targets(self.entries, "sass", loadable=False) +
                _targets(self.entries, "ptx", loadable=False))

    @property
    def sass_sms(self) -> frozenset[int]:
        return frozenset(e.sm for e in self.entries if e.kind == "sass" and e.loadable)

    @property
    def ptx_sms(self) -> frozenset[int]:
        return frozenset(e.sm for e in self.entries if e.kind == "ptx" and e.loadable)

    @property
    def compressions(self) -> tuple[str, ...]:
        """The compression schemes its entries use (``("zstd",)``), sorted."""
        return tuple(sorted({e.compression for e in self.entries if e.compressed}))

    def to_json(self, *, compact: bool = False) -> dict[str, object]:
        """The facts as JSON data; ``compact`` gives each entry as a row of
        values under one ``entry_fields`` list (the cache's form, a third
        the size)."""
        out: dict[str, object] = {"ok": True, "path": self.path, "size": self.size,
                                  "fatbin_sections": list(self.fatbin_sections),
                                  "containers": self.containers}
        if compact:
            out["entry_fields"] = list(ENTRY_FIELDS)
            out["entries"] = [list(e.to_json().values()) for e in self.entries]
        else:
            out["entries"] = [e.to_json() for e in self.entries]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LibraryFacts:
        sections = data["fatbin_sections"]
        entries = data["entries"]
        fields = data.get("entry_fields")
        assert isinstance(sections, list) and isinstance(entries, list)
        if fields is not None:
            assert isinstance(fields, list)
            entries = [dict(zip(fields, row, strict=True)) for row in entries]
        return cls(path=str(data["path"]), size=_int(data["size"]),
                   fatbin_sections=tuple(str(s) for s in sections),
                   containers=_int(data["containers"]),
                   entries=tuple(FatbinEntry.from_json(e) for e in entries))


@dataclass(frozen=True, slots=True)
class ReadFailure:
    """One library (or wheel) that could not be read: ``code`` keys
    ``MESSAGES``, ``args`` fill its template; ``reason`` is the sentence."""

    path: str
    code: str
    args: tuple[str | int, ...]

    ok = False

    @property
    def reason(self) -> str:
        return MESSAGES[self.code].format(*self.args)

    def to_json(self) -> dict[str, object]:
        return {"ok": False, "path": self.path, "code": self.code, "args": list(self.args),
                "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ReadFailure:
        args = data["args"]
        assert isinstance(args, list)
        return cls(path=str(data["path"]), code=str(data["code"]),
                   args=tuple(a if isinstance(a, int) else str(a) for a in args))


LibraryOutcome = LibraryFacts | ReadFailure


def outcome_from_json(data: Mapping[str, object]) -> LibraryOutcome:
    return LibraryFacts.from_json(data) if data.get("ok") else ReadFailure.from_json(data)


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an integer: {value!r}")
    return value
