"""kernels (callers): which files of the kernel library may call a function, by name.

``Bindings`` reads a parameter's meaning from the function's callers; this
finds the files to look in. A text search, never a reading: what a call site
really calls is resolved by qualified name afterwards (``symbols``).
"""

from __future__ import annotations

import bisect
import re

from guardscan.index import Index

__all__ = ["CALLER_SEARCHES", "CallerFiles"]

#: Per-name byte searches for callers before indexing every call site at once
#: (on flashinfer 0.7.2 a search costs ~30 ms, the index ~2 s; a full scan
#: makes about 260 searches, a one-option scan a handful).
CALLER_SEARCHES = 16

_CALL_SITE = re.compile(rb"\b([A-Za-z_]\w*)\(")


class CallerFiles:
    """The files of ``source_files`` where a name is called."""

    def __init__(self, index: Index, source_files: tuple[str, ...]) -> None:
        self.index = index
        self.source_files = source_files
        self._callers: dict[str, list[str]] = {}
        self._call_sites: dict[str, list[str]] | None = None
        self._reversed_names: list[str] = []

    def of(self, name: str) -> list[str]:
        """Files that may call ``name``: those where ``name(`` occurs, in file order.

        A byte search per name at first; after ``CALLER_SEARCHES`` of them, one
        pass indexes every ``identifier(`` of the package, and a name's callers
        are the files of the identifiers that end with it (``self._name(`` and
        ``a.b.name(`` both count), which is the same answer as the byte search.
        Once indexed, the package's text is no longer held (95 MB for
        flashinfer 0.7.2).
        """
        if name not in self._callers:
            if self._call_sites is None and len(self._callers) >= CALLER_SEARCHES:
                self._call_sites = {}
                for rel in self.source_files:
                    data = self.index.data(rel)
                    for found in set(_CALL_SITE.findall(data or b"")):
                        self._call_sites.setdefault(found.decode(), []).append(rel)
                self._reversed_names = sorted(n[::-1] for n in self._call_sites)
                self.index.release_text()
            if self._call_sites is not None:
                self._callers[name] = self._indexed(name)
            else:
                needle = f"{name}(".encode()
                self._callers[name] = [rel for rel in self.source_files
                                       if needle in (self.index.data(rel) or b"")]
        return self._callers[name]

    def _indexed(self, name: str) -> list[str]:
        assert self._call_sites is not None
        suffix = name[::-1]
        names = self._reversed_names
        found: set[str] = set()
        at = bisect.bisect_left(names, suffix)
        while at < len(names) and names[at].startswith(suffix):
            found.update(self._call_sites[names[at][::-1]])
            at += 1
        return [rel for rel in self.source_files if rel in found] if found else []
