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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from guardscan.guards import QueryKey, Vocabulary
    from guardscan.index import Index
    from guardscan.index.observe import Reads

__all__ = ["RecordedMemo"]

T = TypeVar("T")


class RecordedMemo(Generic[T]):
    """Values by key, each with the reads and questions that computed it."""

    def __init__(self, index: Index, vocab: Vocabulary) -> None:
        self.index = index
        self.vocab = vocab
        self._memo: dict[Hashable, tuple[T, Reads, tuple[QueryKey, ...]]] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for ``key``: ``compute()``'s, computed once."""
        hit = self._memo.get(key)
        if hit is not None:
            value, reads, asked = hit
            self.index.recorder.add(reads)
            self.vocab.note_asked(asked)
            return value
        recorder = self.index.recorder
        saved = recorder.open()
        try:
            with self.vocab.noting_questions() as questions:
                value = compute()
        finally:
            # what it read counts for the computation that asked, too
            reads = recorder.close(saved)
        self.vocab.note_asked(questions)
        self._memo[key] = (value, reads, tuple(questions))
        return value
