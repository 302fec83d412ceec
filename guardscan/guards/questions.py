"""guards (questions): the outside questions asked of the guards stage and their
answers, kept with what they read so a later scan can reuse them.

A question is ``QueryKey`` ("p" for a guard's predicate or "v" for a value,
the expression text, file, scope, line); its ``Answer`` holds the value, the
diagnostic it gives and the reads. ``guardscan.memo.records`` keeps the answers
whose reads a change cannot touch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guardscan.guards.values import UnkV
from guardscan.index.observe import Reads
from guardscan.messages import internal_error
from guardscan.predicate import Const, OptionIs, Predicate, QuantIs, Unknown, atoms, fast_reduce
from guardscan.results import Diagnostic
from guardscan.syntax import short

__all__ = ["Answer", "QueryKey", "Resolved", "failed_answer", "looks_like_arch_guard",
           "only_unknown"]

_ARCH_WORDS = re.compile(
    r"(sm_?\d{2,3}|capabilit|blackwell|hopper|ampere|device_sm|compute_cap|\bgfx\d|is_sm|cuda_version)",
    re.IGNORECASE,
)


def looks_like_arch_guard(text: str) -> bool:
    """Does this expression mention architecture words (so failing to resolve it matters)?"""
    return bool(_ARCH_WORDS.search(text))


@dataclass(frozen=True, slots=True)
class Resolved:
    """A guard expression's meaning and the definitions it was read from."""

    predicate: Predicate
    trail: tuple[tuple[str, int], ...] = ()


#: ("p" predicate | "v" value, expression text, file, scope, line)
QueryKey = tuple[str, str, str, str, int]


@dataclass(frozen=True, slots=True)
class Answer:
    """A question's answer, the diagnostic it gives, and what it read."""

    value: object
    diagnostic: Diagnostic | None
    #: numbers in the index recorder's table of reads, which a scan's record
    #: of linking stores (``guardscan.memo.records``)
    reads: Reads
    #: the whole-tree searches it made (pattern, files asked, files matched):
    #: a file it never read can change its answer by matching now
    #: (``guards.call_sites`` looks for every caller of a function); when one
    #: answers differently, a later scan links afresh (answers that reused the
    #: search through a memo did not record it)
    greps: tuple[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]], ...] = ()


for _cls in (Resolved, Answer):
    _cls.__reduce__ = fast_reduce  # type: ignore[method-assign]


def failed_answer(key: QueryKey, exc: Exception) -> tuple[object, Diagnostic]:
    """The answer to a question whose evaluation raised: undecided, with an
    ``internal-error`` diagnostic at the question's file and line. The
    evaluation's own state was restored on the way out (each step undoes
    its bookkeeping in ``finally``), so later questions are unaffected."""
    kind, text, rel, _, line = key
    what = "guard" if kind == "p" else "expression"
    reason = f"internal error: {type(exc).__name__}"
    value: object = Resolved(Unknown(reason)) if kind == "p" else UnkV(reason)
    return value, internal_error(rel, line, f"the {what} `{short(text)}`", exc)


def only_unknown(pred: Predicate) -> bool:
    """Nothing about the device could be read (a constant is a reading)."""
    if isinstance(pred, Const):
        return False
    return all(isinstance(a, (Unknown, OptionIs, QuantIs, Const)) for a in atoms(pred))
