"""memo (disk): what the cache directory holds, by kind, and keeping it under a size limit.

The cache directory (``acquire.default_cache_dir()`` unless ``--cache-dir``
names one) holds one folder per kind::

    wheels/<spec>/        pip downloads, one folder per requirement spec
    trees/<wheel>-<sha>/  the text files of one wheel, extracted
    facts/<xx>/<key>      one parsed file's facts, by the hash of its bytes
    results/<key>.*       one scan's result and its records (reads, links, judged)
    kernels/<key>         the kernel library's answers, per library tree
    binaries/             compiled packages' fatbin facts, per wheel sha256

An *entry* is what can be removed on its own: a spec folder, a tree, a facts
file, a result with its records, a file. Its age is when it was last written
or used: for a file the newest of its mtime and atime (reading it moves the
atime, at most once a day on most mounts; ``stat`` does not); for a tree or
spec folder its mtime, which a scan sets when it uses one
(``acquire.model.mark_used``), since listing a folder moves its atime.

Every entry can be rebuilt, so removing one never changes a report, only
what the next scan costs: a tree is extracted again from its wheel, with the
wheel's member times, so a stored result of it stays valid; a wheel is
downloaded again (not with ``--offline``); facts are parsed again.

The limit (``limit()``) is ``$GUARDSCAN_CACHE_LIMIT`` (``500M``, ``4G``,
``0`` for none), else 4 GiB. ``enforce`` removes the oldest entries until
the cache is under it, sparing those the running scan uses; the driver calls
it after a scan that wrote to the cache. Nothing here raises for an
unreadable or vanished entry: another process may be cleaning at the same
time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_LIMIT",
    "KINDS",
    "Entry",
    "LimitError",
    "after_write",
    "enforce",
    "entries",
    "limit",
    "parse_size",
    "remove",
    "tree_key",
]

#: the kinds of entry, in the order they are listed
KINDS = ("wheels", "trees", "facts", "results", "kernels", "binaries")
#: the size limit when ``$GUARDSCAN_CACHE_LIMIT`` is not set
DEFAULT_LIMIT = 4 << 30
#: a half-written tree or file (a name starting with ".") is left alone this long
_STAGING_GRACE_S = 86400
#: the remembered sizes of a kind's folders (see ``_folder_entries``)
_SIZES = ".sizes.json"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class LimitError(ValueError):
    """A size that is not a number of bytes with an optional K, M, G or T."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One removable thing in the cache: its kind, its paths, bytes and age."""

    kind: str
    name: str
    paths: tuple[Path, ...]
    size: int
    #: seconds since the epoch: the newest mtime or atime of the entry itself
    used: float


def parse_size(text: str) -> int:
    """``"500M"`` -> 524288000; ``"0"`` -> 0; decimal fractions allowed (``1.5G``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if match is None:
        raise LimitError(f"not a size: {text!r} (bytes, or a number with K, M, G or T)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def tree_key(root: Path, cache_dir: Path) -> str:
    """A tree's root as a part of a cache key: a tree inside the cache (one
    extracted from a wheel) by its path relative to the cache, so a cache
    moved, copied or restored under another path still answers; any other
    tree by its absolute path."""
    where, cache = root.absolute(), cache_dir.absolute()
    if where.is_relative_to(cache):
        return f"<cache>/{where.relative_to(cache).as_posix()}"
    return str(root)


def limit(env: dict[str, str] | None = None) -> int:
    """The size limit in bytes (0: none), from ``$GUARDSCAN_CACHE_LIMIT``."""
    text = (os.environ if env is None else env).get("GUARDSCAN_CACHE_LIMIT", "")
    return parse_size(text) if text.strip() else DEFAULT_LIMIT


def _age(st: os.stat_result, folder: bool = False) -> float:
    """When an entry was last written or used. A folder's atime moves whenever
    it is listed (``guardscan cache`` lists them), so only its mtime counts."""
    return st.st_mtime if folder else max(st.st_mtime, st.st_atime)


def _tree_size(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _files(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            yield from found
    except OSError:
        return


def _staging(item: os.DirEntry[str], now: float) -> bool:
    """A half-written file or tree of a running process: skipped while recent."""
    if not item.name.startswith("."):
        return False
    try:
        return now - item.stat(follow_symlinks=False).st_mtime < _STAGING_GRACE_S
    except OSError:
        return True


def _file_entry(kind: str, item: os.DirEntry[str], name: str) -> Entry | None:
    try:
        st = item.stat(follow_symlinks=False)
    except OSError:
        return None
    return Entry(kind, name, (Path(item.path),), st.st_size, _age(st))


def _load_sizes(root: Path) -> dict[str, int]:
    try:
        loaded = json.loads((root / _SIZES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, int)} \
        if isinstance(loaded, dict) else {}


def _store_sizes(root: Path, sizes: dict[str, int]) -> None:
    try:
        fd, partial = tempfile.mkstemp(prefix=f"{_SIZES}.", dir=root)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(sizes, handle, sort_keys=True)
        os.replace(partial, root / _SIZES)
    except OSError:
        pass


def _folder_entries(kind: str, root: Path, now: float) -> Iterator[Entry]:
    """One entry per sub-folder (wheels, trees) or file. A folder's size is
    kept in ``<kind>/.sizes.json`` by name: a tree never changes once
    extracted, and walking its thousands of files is most of the cost."""
    sizes = _load_sizes(root)
    known = dict(sizes)
    seen: set[str] = set()
    for item in _files(root):
        if item.name.startswith(_SIZES) or _staging(item, now):
            continue
        if item.is_dir(follow_symlinks=False):
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            seen.add(item.name)
            if item.name not in sizes or kind != "trees":
                sizes[item.name] = _tree_size(Path(item.path))
            yield Entry(kind, item.name, (Path(item.path),), sizes[item.name],
                        _age(st, folder=True))
        else:
            found = _file_entry(kind, item, item.name)
            if found is not None:
                yield found
    sizes = {name: size for name, size in sizes.items() if name in seen}
    if kind == "trees" and sizes != known:
        _store_sizes(root, sizes)


def _facts(root: Path, now: float) -> Iterator[Entry]:
    for shard in _files(root):
        if not shard.is_dir(follow_symlinks=False):
            found = _file_entry("facts", shard, shard.name)
            if found is not None:
                yield found
            continue
        for item in _files(Path(shard.path)):
            if not _staging(item, now):
                found = _file_entry("facts", item, item.name)
                if found is not None:
                    yield found


def _results(root: Path, now: float) -> Iterator[Entry]:
    """A result and its records (``<key>.pickle``, ``<key>.reads.pickle``, ...) are one
    entry: a record without its result is of no use."""
    groups: dict[str, list[Entry]] = {}
    for item in _files(root):
        if _staging(item, now):
            continue
        found = _file_entry("results", item, item.name)
        if found is not None:
            groups.setdefault(item.name.split(".", 1)[0], []).append(found)
    for key, parts in sorted(groups.items()):
        yield Entry("results", key, tuple(p for e in parts for p in e.paths),
                    sum(e.size for e in parts), max(e.used for e in parts))


def entries(cache_dir: Path, kinds: Iterable[str] = KINDS) -> list[Entry]:
    """Every entry of the wanted kinds (anything else under the cache is left out)."""
    now = time.time()
    out: list[Entry] = []
    for kind in kinds:
        root = cache_dir / kind
        if kind == "facts":
            out.extend(_facts(root, now))
        elif kind == "results":
            out.extend(_results(root, now))
        elif kind == "binaries":
            for item in _files(root):
                if item.is_dir(follow_symlinks=False):
                    out.extend(Entry("binaries", f"{item.name}/{e.name}", e.paths, e.size,
                                     e.used) for e in _folder_entries("binaries",
                                                                      Path(item.path), now))
                elif not _staging(item, now):
                    found = _file_entry("binaries", item, item.name)
                    if found is not None:
                        out.append(found)
        else:
            out.extend(_folder_entries(kind, root, now))
    return out


def remove(entry: Entry) -> bool:
    """Remove ``entry``; False when (part of) it could not be removed."""
    done = True
    for path in entry.paths:
        try:
            if path.is_dir() and not path.is_symlink():
                # moved aside first, so no scan sees half a tree under its name
                aside = path.with_name(f".removing-{path.name}-{os.getpid()}")
                os.replace(path, aside)
                shutil.rmtree(aside, ignore_errors=True)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            done = False
    return done


def after_write(cache_dir: Path, started: float, keep: Iterable[Path] = (),
                every_s: float = 600) -> list[Entry]:
    """``enforce``, after a scan that wrote to the cache: at once when a tree in
    ``keep`` was extracted or used anew since ``started`` (the large additions),
    else at most once every ``every_s`` seconds (the stamp
    ``<cache>/.limit-checked``), so an incremental scan does not pay a walk of
    the whole cache each time."""
    keep = list(keep)
    stamp = cache_dir / ".limit-checked"
    try:
        due = time.time() - stamp.stat().st_mtime >= every_s
    except OSError:
        due = True
    for path in keep:
        try:
            due = due or path.stat().st_mtime >= started
        except OSError:
            continue
    if not due:
        return []
    try:
        cap = limit()
    except LimitError:
        return []  # a bad limit is reported by ``guardscan cache``, never by a scan
    removed = enforce(cache_dir, cap, keep)
    try:
        stamp.touch()
    except OSError:
        pass
    return removed


def enforce(cache_dir: Path, cap: int | None = None,
            keep: Iterable[Path] = ()) -> list[Entry]:
    """Remove the oldest entries until the cache holds at most ``cap`` bytes
    (default ``limit()``; 0: no limit), never one holding a path of ``keep``
    (what the running scan uses). Returns what was removed."""
    cap = limit() if cap is None else cap
    if cap <= 0:
        return []
    found = entries(cache_dir)
    total = sum(e.size for e in found)
    if total <= cap:
        return []
    kept = {Path(p).resolve() for p in keep}
    removed: list[Entry] = []
    for entry in sorted(found, key=lambda e: (e.used, e.kind, e.name)):
        if total <= cap:
            break
        if any(p.resolve() in kept for p in entry.paths):
            continue
        if remove(entry):
            total -= entry.size
            removed.append(entry)
    return removed
