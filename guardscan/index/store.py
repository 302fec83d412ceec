"""index (store): the facts cache on disk, one pickle per parsed file, and atomic pickle
writes for every cache of a scan.

A file's facts are kept at ``<cache>/facts/<key[:2]>/<key>.pickle``, ``key``
being the hash of its bytes, the facts version and its path (``Index._key``):
any tree holding the same file reuses them. A missing or corrupt entry is a
miss, never an error; it heals by being written again.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterable
from pathlib import Path

from guardscan.index.facts import FileOutcome

__all__ = ["FactsStore", "load_pickles", "store_pickle", "store_pickles"]


class FactsStore:
    """Parsed files' outcomes by key, under ``folder`` (None: nothing is kept)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def path(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / key[:2] / f"{key}.pickle"

    def load(self, key: str) -> FileOutcome | None:
        path = self.path(key)
        if path is None:
            return None
        try:
            with path.open("rb") as handle:
                loaded = pickle.load(handle)
            return loaded if isinstance(loaded, FileOutcome) else None
        except Exception:  # noqa: BLE001 - missing, or corrupt: heals by being rewritten
            return None

    def store(self, key: str, outcome: FileOutcome) -> None:
        path = self.path(key)
        if path is not None:
            store_pickle(path, outcome)


def store_pickle(path: Path, value: object) -> bool:
    """Write ``value`` to ``path`` atomically (a temporary file, then a rename:
    concurrent readers see the old file or the new one, never half of one);
    False when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def store_pickles(path: Path, values: Iterable[object]) -> bool:
    """Like ``store_pickle``, for a sequence written as one pickle after
    another: each has its own memo, so a large record costs little memory to
    write (a single pickle's memo holds every object it wrote)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            for value in values:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def load_pickles(path: Path) -> list[object] | None:
    """What ``store_pickles`` wrote; None when missing or corrupt."""
    values = []
    try:
        with path.open("rb") as handle:
            while True:
                try:
                    values.append(pickle.load(handle))
                except EOFError:
                    return values
    except Exception:  # noqa: BLE001 - missing or corrupt
        return None
