"""guards (questions): the outside questions asked of the guards stage and their
answers, kept with what they read so a later scan can reuse them.

A question is ``QueryKey`` ("p" for a guard's predicate or "v" for a value,
the expression text, file, scope, line); its ``Answer`` holds the value, the
diagnostic it gives and the reads. ``guardscan.memo.records`` keeps the answers
whose reads a change cannot touch.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass

from guardscan.guards.values import UnkV
from guardscan.index.observe import Reads
from guardscan.messages import internal_error
from guardscan.pickling import fields_reduce
from guardscan.predicate import Const, OptionIs, Predicate, QuantIs, Unknown, atoms
from guardscan.results import Diagnostic
from guardscan.syntax import short

__all__ = ["Answer", "QueryKey", "Resolved", "StoredAnswer", "failed_answer",
           "looks_like_arch_guard", "only_unknown", "readable", "value_blob"]

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
    _cls.__reduce__ = fields_reduce  # type: ignore[method-assign]


#: ``StoredAnswer``'s value before it is first read
_UNREAD = object()


class StoredAnswer(Answer):
    """An answer as a stored record of linking keeps it: its value a pickle
    of its own, read the first time it is asked for. A scan after a change
    reads few of the record's answers (those its units ask again), and
    stores the rest as they came (``blob``).

    >>> import pickle
    >>> kept = StoredAnswer(pickle.dumps(UnkV("x")), None, b"")
    >>> kept.value, kept == Answer(UnkV("x"), None, b"")
    (UnkV(reason='x'), False)
    >>> pickle.loads(pickle.dumps(kept))
    Answer(value=UnkV(reason='x'), diagnostic=None, reads=b'', greps=())
    """

    __slots__ = ("_value", "blob")
    _value: object
    blob: bytes

    def __init__(self, blob: bytes, diagnostic: Diagnostic | None, reads: Reads,
                 greps: tuple[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]], ...] = (),
                 ) -> None:
        # (set past the frozen dataclass's ``__setattr__``, as its ``__init__`` does)
        for name, value in (("diagnostic", diagnostic), ("reads", reads), ("greps", greps),
                            ("blob", blob), ("_value", _UNREAD)):
            object.__setattr__(self, name, value)

    @property
    def value(self) -> object:
        value = self._value
        if value is _UNREAD:
            value = pickle.loads(self.blob)
            object.__setattr__(self, "_value", value)
        return value

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return Answer, (self.value, self.diagnostic, self.reads, self.greps)


def readable(answer: Answer) -> bool:
    """Whether the answer's value can be had: a stored one's pickle may not
    read (a damaged cache), and is then asked again, never an error.

    >>> readable(StoredAnswer(b"not a pickle", None, b""))
    False
    """
    if not isinstance(answer, StoredAnswer):
        return True
    try:
        answer.value  # noqa: B018 - read once, kept
    except Exception:  # noqa: BLE001 - whatever a damaged pickle raises
        return False
    return True


def value_blob(answer: Answer) -> bytes:
    """The pickle of an answer's value, as a stored record keeps it."""
    if isinstance(answer, StoredAnswer):
        return answer.blob
    return pickle.dumps(answer.value, protocol=pickle.HIGHEST_PROTOCOL)


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
