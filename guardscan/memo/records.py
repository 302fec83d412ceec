"""memo (link records): what a scan's linking read and found, so the next scan replays what a change cannot touch.

Incremental linking: keep what a change cannot touch, redo the rest.

When the result cache misses because a file changed in a way the scan reads
(a guard's meaning, a new gate), the scan runs again, but most of what it
worked out still holds. Linking is done in *units* (one file's gates, one
file's option-tested calls, one registered function, one module named for a
choice); each unit records what it read of the facts directly and which
questions it asked the vocabulary. Each vocabulary answer records what it
read, its memos included (``observe.Recorder``). The next scan:

- drops the answers that read anything the change touches (``Changes``), and
  keeps the others;
- replays a unit (its findings, in order) when nothing it read directly
  changed, every answer it used is kept or comes out the same when asked
  again, and the calls it followed or skipped as already followed are
  followed or skipped the same way now; otherwise the unit runs again.

Every answer is what it would be in a scan from scratch (the vocabulary keeps
no answer that depends on what was asked before it), and units are replayed
in the order a scan from scratch runs them, so the result is the same, byte
for byte; tests/test_incremental.py checks this for every kind of edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardscan.guards import Answer, QueryKey
from guardscan.index.extract import source_lines
from guardscan.index.facts import FileOutcome
from guardscan.index.observe import (
    ALL,
    DATA,
    OUTCOME,
    Read,
    Reads,
    Table,
    changed_keys,
    numbers,
    text_answer_changed,
)
from guardscan.predicate import Predicate

__all__ = ["Changes", "LinkRecord", "Table", "Unit", "UnitKey", "numbers"]

UnitKey = tuple[str, ...]


@dataclass
class Unit:
    """One unit of linking as it ran: what it read, asked and found. ``reads``
    are numbers in the record's table of reads (the index recorder's, see
    ``observe.Recorder``); stored, ``queries`` are numbers in its table of
    questions."""

    reads: Reads
    #: vocabulary questions, each once, in the order first asked
    queries: tuple[QueryKey, ...] | bytes
    #: (key, whether it was followed already) for every follow-up it checked
    followed: tuple[tuple[Any, bool], ...]
    #: ((file, scope, variant), condition) for every quantization context it used
    quant: tuple[tuple[tuple[str, ...], Predicate], ...]
    findings: list[Any] = field(default_factory=list)
    kernel_calls: list[Any] = field(default_factory=list)
    #: pre-filters it asked: (pattern, files asked or None, files matched)
    greps: tuple[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]], ...] = ()
    #: what it left in the linker's state for later units, if anything
    state: Any = None
    #: a part (a unit run inside another, ``RecordingUnits.part``): what it
    #: was handed besides what it read, compared when it is replayed
    given: Any = None
    #: the parts run inside it, which go with it when it is replayed
    parts: tuple[UnitKey, ...] = ()


@dataclass
class LinkRecord:
    """A scan's linking, kept beside its result for the next scan."""

    #: what the units assume of the scan beyond the tree (options, enums...)
    context: str
    #: the tables the numbers in answers and units refer to
    reads: list[Read]
    keys: list[QueryKey]
    #: answers (their reads as numbers) by question number
    answers: dict[int, Answer]
    units: dict[UnitKey, Unit]
    #: the option catalog: (reads, pre-filters asked, catalog), see ``scan``
    catalog: Any = None
    #: the files read that did not parse or were not read (their outcome,
    #: without facts): a scan that reuses what read them reports them too
    failed: dict[str, FileOutcome] = field(default_factory=dict)


class Changes:
    """The files changed since a recorded scan: which of its reads they touch."""

    def __init__(self, changed: Mapping[str, tuple[FileOutcome | None, FileOutcome | None,
                                                   bytes]]) -> None:
        self._files = {rel: (changed_keys(old, new), data)
                       for rel, (old, new, data) in changed.items()}
        self._lines: dict[str, list[str]] = {}
        self._memo: dict[Read, bool] = {}
        #: the record's table of reads, for reads stored as numbers
        self.table: list[Read] = []
        self._touched: set[int] | None = None

    def touches(self, read: Read) -> bool:
        """Can the change tell apart what ``read`` saw before and now?"""
        change = self._files.get(read[0])
        if change is None:
            return False
        known = self._memo.get(read)
        if known is None:
            known = self._memo[read] = self._touches(read, change[0], change[1])
        return known

    def _touches(self, read: Read, keys: tuple[frozenset[tuple[Any, ...]], bool] | None,
                 data: bytes) -> bool:
        rel, key = read
        if key[0] == "line":
            lines = self._lines.get(rel)
            if lines is None:
                lines = self._lines[rel] = source_lines(data)
            line = key[1]
            now: str = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            before: str = key[2]
            return now != before
        if key[0] in ("re", "findall", "count", "reader"):
            return text_answer_changed(key, data)
        if keys is None or key in (ALL, DATA):
            return True
        if key == OUTCOME:
            return False
        return key in keys[0] or (keys[1] and key[0] == "name")

    def any(self, reads: tuple[Read, ...] | bytes) -> bool:
        """Does the change touch any of ``reads``?"""
        if isinstance(reads, bytes):
            if self._touched is None:
                files = self._files
                self._touched = {i for i, read in enumerate(self.table)
                                 if read[0] in files and self.touches(read)}
            return not self._touched.isdisjoint(numbers(reads))
        files = self._files
        return any(read[0] in files and self.touches(read) for read in reads)
