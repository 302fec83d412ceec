"""link (recorded): a memo shared by linking units, whose hits count as read again by the unit that asks.

A linking unit is replayed by a later scan when nothing it read changed
(``guardscan.memo.link_units``): the facts it read (the index's recorder
frame) and the questions it asked the vocabulary. A memo that several units
share would hide both from every unit but the first to ask, and a unit
replayed on an incomplete record keeps a stale answer. An entry of this memo
keeps what computing it read and asked, and a hit hands both to whoever asks,
as the interpreter's own memos do (``guards.stack``).

Example: the methods' paths (``link.method_paths``) share what a function
calls between the ``--quantization`` methods, one unit each: the second
method to reach ``fp8_utils.apply_fp8_linear`` reads its calls from here, and
its unit still records that it read them.

Because an entry keeps what it read and asked, it outlives the scan as a
unit does: the recording runner (``Units.recorded_memo``) stores the entries
in the record, and a unit that runs again after a change takes an earlier
entry that still holds instead of computing it (the functions on a method's
path that the change did not touch).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from guardscan.guards import QueryKey, Vocabulary
    from guardscan.index import Index
    from guardscan.index.observe import Reads

__all__ = ["Entry", "MemoFactory", "RecordedMemo"]

T = TypeVar("T")

#: a value, what computing it read, the questions it asked, the pre-filters
#: it asked (pattern, files asked or None, files matched)
Entry = tuple[T, "Reads", tuple["QueryKey", ...],
              tuple[tuple[bytes, "tuple[str, ...] | None", tuple[str, ...]], ...]]


class RecordedMemo(Generic[T]):
    """Values by key, each with the reads and questions that computed it.
    ``earlier``: an entry of the earlier scan's record that still holds for
    ``key`` (value, reads, questions, pre-filters asked), or None (the unit
    runner's, ``Units.recorded_memo``); a unit that runs again takes it as a
    hit instead of computing it."""

    def __init__(self, index: Index, vocab: Vocabulary,
                 earlier: Callable[[Hashable], Entry[T] | None] | None = None) -> None:
        self.index = index
        self.vocab = vocab
        self.earlier = earlier
        #: what this scan computed or took from the earlier one
        self.entries: dict[Hashable, Entry[T]] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for ``key``: ``compute()``'s, computed once."""
        hit = self.entries.get(key)
        if hit is None and self.earlier is not None:
            hit = self.earlier(key)
            if hit is not None:
                self.entries[key] = hit
        if hit is not None:
            value, reads, asked, _ = hit
            self.index.recorder.add(reads)
            self.vocab.note_asked(asked)
            return value
        index = self.index
        recorder = index.recorder
        greps = len(index.grep_log)
        saved = recorder.open()
        try:
            with self.vocab.noting_questions() as questions:
                value = compute()
        finally:
            # what it read counts for the computation that asked, too
            reads = recorder.close(saved)
        self.vocab.note_asked(questions)
        self.entries[key] = (value, reads, tuple(questions), tuple(index.grep_log[greps:]))
        return value


#: makes a memo the units share, by its name (``Units.recorded_memo``)
MemoFactory = Callable[[str, "Index", "Vocabulary"], RecordedMemo[Any]]
