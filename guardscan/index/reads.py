"""index (reads): what a computation adds to an index's record of reads, carried from one process to another.

The result cache stores, with a result, what the scan read: the facts asked
of each file (``Index.seen``), the lines shown as evidence (``lines_read``),
each analysed file's facts key and outcome, and the text searches asked
(``grep_log``). When part of a scan runs in a forked process (the judging of
some options, ``verdict.split``), what that part read is in the child's
index only: ``mark`` notes where the index stands, ``since`` gives what was
added after it, and ``absorb`` adds that to the index of the process that
goes on, so the stored result records every read the scan made, as one
process would.

>>> from guardscan.acquire import SourceTree
>>> from pathlib import Path
>>> index = Index(SourceTree(Path("."), "pkg", None, (), "test"))
>>> index.lines_read["pkg/a.py"] = {1: "x = 1"}
>>> start = mark(index)
>>> index.lines_read["pkg/a.py"][2] = "y = 2"
>>> index.seen.setdefault("pkg/b.py", set()).add(("all",))
>>> other = Index(SourceTree(Path("."), "pkg", None, (), "test"))
>>> absorb(other, since(index, start))
>>> other.lines_read, other.seen
({'pkg/a.py': {1: 'x = 1', 2: 'y = 2'}}, {'pkg/b.py': {('all',)}})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardscan.index import Index
from guardscan.index.facts import FileOutcome

__all__ = ["Added", "Mark", "absorb", "mark", "since"]


@dataclass(frozen=True)
class Mark:
    """Where an index's record of reads stood: the size of each file's
    entries (they only grow), the facts keys and outcomes as they were, the
    number of searches asked."""

    seen: dict[str, int]
    lines: dict[str, int]
    fact_keys: dict[str, str]
    outcomes: dict[str, FileOutcome]
    greps: int


@dataclass(frozen=True)
class Added:
    """What was added after a ``Mark``: each file's entries whole where they
    grew (``absorb`` takes their union), the facts keys and outcomes of files
    that had none (outcomes without their facts)."""

    seen: dict[str, frozenset[tuple[Any, ...]]]
    lines: dict[str, dict[int, str]]
    fact_keys: dict[str, str]
    outcomes: list[FileOutcome]
    greps: list[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]]]


def mark(index: Index) -> Mark:
    return Mark({rel: len(keys) for rel, keys in index.seen.items()},
                {rel: len(lines) for rel, lines in index.lines_read.items()},
                dict(index.fact_keys), dict(index.outcomes), len(index.grep_log))


def since(index: Index, start: Mark) -> Added:
    return Added(
        {rel: frozenset(keys) for rel, keys in index.seen.items()
         if len(keys) != start.seen.get(rel, -1)},
        {rel: dict(lines) for rel, lines in index.lines_read.items()
         if len(lines) != start.lines.get(rel, -1)},
        {rel: key for rel, key in index.fact_keys.items() if rel not in start.fact_keys},
        [FileOutcome(rel, outcome.status, reason=outcome.reason, line=outcome.line)
         for rel, outcome in index.outcomes.items() if rel not in start.outcomes],
        index.grep_log[start.greps:])


def absorb(index: Index, added: Added) -> None:
    for rel, keys in added.seen.items():
        index.seen.setdefault(rel, set()).update(keys)
    for rel, lines in added.lines.items():
        index.lines_read.setdefault(rel, {}).update(lines)
    for rel, key in added.fact_keys.items():
        index.fact_keys.setdefault(rel, key)
    for outcome in added.outcomes:
        index.take_outcome(outcome)
    index.grep_log.extend(added.greps)
