"""index: the tree's text as one buffer, for the whole-tree pre-filters.

A scan asks a few hundred whole-tree questions while linking ("which files
name this function", "which classes derive from this config class"). Asked
of each file in turn, every question read every file again once the per-file
text was let go: on sglang 0.5.23 that was 234 passes over 4,700 files, 37 s
of a 75 s cold scan. Here the text is joined once (68 MB for that release)
and a question is one ``re`` search over the buffer that jumps to the next
file after each match.

The answer is the one a search of each file on its own gives: a match that
starts in one file and runs into the next is checked again inside its file
alone, and a pattern whose meaning depends on where the string begins or
ends (``^``, ``$``, ``\\A``, ``\\Z``, lookarounds) is asked of each file's
slice of the buffer, never of the joined text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

__all__ = ["WholeText", "edge_sensitive"]

#: between two files: no pattern of the pre-filters matches a NUL
_SEP = b"\0"

_CLASS = re.compile(rb"\[(?:\\.|[^\]\\])*\]")
_ESCAPE = re.compile(rb"\\(.)")


def edge_sensitive(pattern: bytes) -> bool:
    """Whether ``pattern`` may match differently at a file's edges inside
    the joined text than at the edges of the file's own string (anchors and
    lookarounds; ``\\b`` is not: the separator is a non-word byte, as the
    string's edge is)."""
    escapes = {m.group(1) for m in _ESCAPE.finditer(pattern)}
    if escapes & {b"A", b"Z"}:
        return True
    bare = _ESCAPE.sub(b"", _CLASS.sub(b"", pattern))
    return any(t in bare for t in (b"^", b"$", b"(?<", b"(?=", b"(?!"))


class WholeText:
    """The bytes of ``files`` (those that could be read), joined."""

    def __init__(self, files: Iterable[tuple[str, bytes]]) -> None:
        parts: list[bytes] = []
        self.rels: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.where: dict[str, int] = {}
        pos = 0
        for rel, data in files:
            self.where[rel] = len(self.rels)
            self.rels.append(rel)
            self.starts.append(pos)
            self.ends.append(pos + len(data))
            parts.append(data)
            pos += len(data) + len(_SEP)
        self.text = _SEP.join(parts)
        self._view = memoryview(self.text)

    def __contains__(self, rel: str) -> bool:
        return rel in self.where

    def data(self, rel: str) -> bytes:
        k = self.where[rel]
        return self.text[self.starts[k]:self.ends[k]]

    def matches(self, regex: re.Pattern[bytes], rel: str) -> bool:
        """Whether the file's own bytes match (its slice, never the joined text)."""
        k = self.where[rel]
        return regex.search(self._view[self.starts[k]:self.ends[k]]) is not None

    def matching(self, regex: re.Pattern[bytes]) -> set[str]:
        """Every file whose own bytes match ``regex``."""
        if edge_sensitive(regex.pattern):
            return {rel for rel in self.rels if self.matches(regex, rel)}
        found: set[str] = set()
        pos = 0
        count = len(self.rels)
        if not count:
            return found
        while True:
            m = regex.search(self.text, pos)
            if m is None:
                return found
            k = bisect_right(self.starts, m.start()) - 1
            if m.start() >= self.ends[k] and m.start() > self.starts[k]:
                # it starts on the separator: only a pattern that can match
                # a NUL does that; ask the next file on its own
                k += 1
                if k >= count:
                    return found
                if self.matches(regex, self.rels[k]):
                    found.add(self.rels[k])
            elif m.end() <= self.ends[k] or self.matches(regex, self.rels[k]):
                found.add(self.rels[k])
            if k + 1 >= count:
                return found
            pos = self.starts[k + 1]
