"""binaries (driver): a wheel's or a library file's fatbin facts, through the cache.

What it reads: for a wheel, its sha256 (remembered by file stat), then the
cached facts of its library members; only the members not yet cached are
read (``wheel_members.read_members``) and merged into the cache. A library
file on disk is read directly: random access reads its headers only, in
milliseconds, so it is not cached.

Why it matters: the readers stay plain functions of their bytes; this is the
one place that knows about the cache (ruff's layout: the cache imports the
linter, never the reverse).

Known limits: ``patterns`` selects members by glob (``sgl_kernel/*.so``); a
member not cached and not selected is not read. A cache that cannot be
written costs a re-read next time, never the answer.

Example::

    >>> read_wheel(Path("/nonexistent.whl"), cache_dir=None).libraries[0].code
    'unreadable'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from guardscan.acquire.model import cache_root
from guardscan.binaries.cache import load_facts, store_facts, wheel_sha256
from guardscan.binaries.library import read_library_file
from guardscan.binaries.model import LibraryOutcome, Malformed, ReadFailure
from guardscan.binaries.wheel_members import WheelLibraries, read_members

__all__ = ["read_file", "read_wheel"]


def read_wheel(wheel: Path, cache_dir: Path | None = None,
               patterns: Sequence[str] | None = None) -> WheelLibraries:
    """The library facts of ``wheel``: cached ones reused, the rest read and cached."""
    cache = cache_root(cache_dir)
    try:
        sha = wheel_sha256(wheel, cache)
    except OSError as exc:
        return WheelLibraries(wheel.name, "", (ReadFailure(str(wheel), "unreadable",
                                                           (str(exc),)),))
    cached = load_facts(cache, sha) or {}
    try:
        fresh = read_members(wheel, patterns, skip=frozenset(cached))
    except Malformed as exc:  # not a zip: nothing to cache
        return WheelLibraries(wheel.name, sha, (ReadFailure(str(wheel), exc.code,
                                                            exc.details),))
    if fresh:
        merged: dict[str, LibraryOutcome] = {**cached, **{o.path: o for o in fresh}}
        try:
            store_facts(cache, sha, wheel.name, merged)
        except OSError:
            pass  # an unwritable cache costs a re-read next time, not the answer
        cached = merged
    wanted = _selected(cached, patterns)
    return WheelLibraries(wheel.name, sha, tuple(cached[name] for name in wanted))


def _selected(outcomes: dict[str, LibraryOutcome],
              patterns: Sequence[str] | None) -> list[str]:
    names = sorted(outcomes)
    if not patterns:
        return names
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def read_file(path: Path) -> LibraryOutcome:
    """The fatbin facts of one library file (headers only, not cached)."""
    return read_library_file(str(path))
