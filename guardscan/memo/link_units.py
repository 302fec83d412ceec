"""memo (link units): linking units recorded for the next scan, and replayed from the last one when nothing they read changed.

The link stage hands each unit to a runner (``guardscan.link.units.Units``).
This runner, which the driver hands it when the cache is on, runs a unit
while noting what it read, asked the vocabulary, followed and took as a
quantization context, or replays it from the earlier scan's record when none
of that changed (``guardscan.memo.records`` describes the scheme). It also
notes what the units give differently from the earlier scan (``changed``),
which tells the judge which choices to judge again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from guardscan.guards import Answer, QueryKey
from guardscan.guards.questions import readable
from guardscan.link.model import Found, Links
from guardscan.link.recorded import Entry, RecordedMemo
from guardscan.link.units import QuantCondition, UnitKey, Units, UnitState
from guardscan.memo.records import Changes, LinkRecord, Table, Unit, numbers
from guardscan.predicate import Predicate

if TYPE_CHECKING:
    from guardscan.guards import Vocabulary
    from guardscan.index import Index
    from guardscan.link.context import LinkContext

__all__ = ["RecordingUnits"]

#: a memo's entry's ``given`` (``recorded_memo``)
_MEMO = "a memo's entry"


@dataclass(slots=True)
class _Log:
    """What a unit or part did while it ran (``RecordingUnits._logging``)."""

    greps: int
    followed: list[tuple[Any, bool]] = field(default_factory=list)
    quant: list[tuple[tuple[str, ...], Predicate]] = field(default_factory=list)
    parts: list[UnitKey] = field(default_factory=list)
    asked: list[QueryKey] = field(default_factory=list)
    reads: bytes = b""


class RecordingUnits(Units):
    """This scan's units, recorded; an earlier scan's, and what changed since."""

    def __init__(self, prior: tuple[LinkRecord, Changes] | None = None) -> None:
        super().__init__()
        self.units: dict[UnitKey, Unit] = {}
        #: the earlier scan's record, taken over in ``bind`` when it was made
        #: with the same options (``context``)
        self._offered = prior
        self.prior: LinkRecord | None = None
        self.changes: Changes | None = None
        #: after replaying: what differs from the earlier scan's linking (None:
        #: not known, everything may differ)
        self.changed: Links | None = None
        #: this scan's record, once ``finish`` ran
        self.record_out: LinkRecord | None = None
        #: while a unit runs: what it followed, the quantization contexts it took
        self._followed_log: list[tuple[Any, bool]] | None = None
        self._quant_log: list[tuple[tuple[str, ...], Predicate]] | None = None
        #: while a unit runs: its key, and the parts it ran or replayed
        self._running: UnitKey = ()
        self._parts_log: list[UnitKey] | None = None
        #: parts run again / replayed (not counted among the units)
        self.parts_ran = 0
        self.parts_replayed = 0
        #: the memos the units share, by name (``recorded_memo``)
        self._memos: dict[str, RecordedMemo[Any]] = {}

    def bind(self, ctx: LinkContext, quant_condition: QuantCondition) -> None:
        super().bind(ctx, quant_condition)
        prior, self._offered = self._offered, None
        if prior is not None and prior[0].context == self.context() \
                and not self._searches_moved(prior[0]):
            self.start_from(prior)

    @property
    def cold(self) -> bool:
        return self.prior is None

    def _searches_moved(self, record: LinkRecord) -> bool:
        """Does a whole-tree search that an answer made (``Answer.greps``: the
        callers of a function, ``guards.call_sites``) answer differently now?
        A file the earlier scan never read may have gained a match; the
        answers that reused that search through a memo did not record it, so
        none of the earlier answers is kept: linking runs afresh."""
        index = self.ctx.index
        asked: set[tuple[bytes, tuple[str, ...] | None]] = set()
        for answer in record.answers.values():
            for pattern, within, matched in answer.greps:
                if (pattern, within) in asked:
                    continue
                asked.add((pattern, within))
                if tuple(index.grep_re(pattern, within)) != matched:
                    return True
        return False

    def start_from(self, prior: tuple[LinkRecord, Changes]) -> None:
        """Replay from an earlier scan's linking (made with the same
        ``context``): its answers that read nothing changed are kept."""
        record, changes = prior
        vocab = self.ctx.vocab
        self.changed = Links()
        changes.table = record.reads
        # (the index's recorder numbers reads on from ``record.reads``:
        # ``ScanMemo.start`` had it adopt them)
        stored: dict[QueryKey, Answer] = {}
        former: dict[QueryKey, Answer] = {}
        for number, answer in record.answers.items():
            (former if changes.any(answer.reads) else stored)[record.keys[number]] = answer
        vocab.resume(stored, former)
        self.prior, self.changes = record, changes

    def unit(self, key: UnitKey, run: Callable[[], Found],
             state: UnitState | None = None) -> Found:
        """Run one unit of linking, or replay it from the earlier scan (see
        ``guardscan.memo.records``), and return what it found. ``state``: how
        to take and restore what the unit leaves for later units."""
        prior = self.prior.units.get(key) if self.prior is not None else None
        if prior is not None and self._replayable(prior):
            if state is not None:
                state[1](prior.state)
            self.replayed += 1
            return self._replay(key, prior)
        self.ran += 1
        try:
            with self._logging(key, merge=False) as log:
                found = run()
        except Exception as exc:  # noqa: BLE001 - one unit never stops the scan
            return self.failed(key, exc)
        unit = self.units[key] = self._recorded(
            log, found, state[0]() if state is not None else None, None)
        if self.prior is not None:
            self._changed(prior, unit)
        return found

    def part(self, key: UnitKey, run: Callable[[], Found], given: Any) -> Found:
        """Run a part of the unit running now, or replay it from the earlier
        scan when it was handed the same (``given``, compared by equality) and
        nothing it read changed (as a unit, ``_replayable``). Either way, what
        it read, asked, followed and took counts for the unit too: a unit that
        runs again replays the parts a change did not reach (the calls
        followed out of one file, each its own part). What it raises goes to
        the unit, and it is not recorded."""
        if self._parts_log is None or self._followed_log is None or self._quant_log is None:
            return run()  # no unit runs: nothing records it
        assert given is not None
        key = (*self._running, "part", *key)
        self._parts_log.append(key)
        vocab, index = self.ctx.vocab, self.ctx.index
        prior = self.prior.units.get(key) if self.prior is not None else None
        if prior is not None and prior.given == given and self._replayable(prior):
            self.parts_replayed += 1
            self._followed_log.extend(prior.followed)
            self._quant_log.extend(prior.quant)
            index.recorder.add(prior.reads)
            vocab.note_asked(self._queries(prior))
            return self._replay(key, prior)
        self.parts_ran += 1
        followed_log, quant_log = self._followed_log, self._quant_log
        with self._logging(key, merge=True) as log:  # the unit read it too
            found = run()
        followed_log.extend(log.followed)
        quant_log.extend(log.quant)
        vocab.note_asked(log.asked)
        self.units[key] = self._recorded(log, found, None, given)
        return found

    @contextmanager
    def _logging(self, key: UnitKey, merge: bool) -> Iterator[_Log]:
        """While the unit or part ``key`` runs: what it followed, took, ran
        as parts and asked, into its own log; what it read, in ``log.reads``
        once it ends (also the enclosing frame's when ``merge``)."""
        index = self.ctx.index
        log = _Log(len(index.grep_log))
        outer = (self._running, self._followed_log, self._quant_log, self._parts_log)
        self._running, self._followed_log, self._quant_log, self._parts_log = \
            key, log.followed, log.quant, log.parts
        saved = index.recorder.open()
        try:
            with self.ctx.vocab.noting_questions() as asked:
                log.asked = asked
                yield log
        finally:
            log.reads = index.recorder.close(saved, merge=merge)
            self._running, self._followed_log, self._quant_log, self._parts_log = outer

    def _recorded(self, log: _Log, found: Found, state: Any, given: Any) -> Unit:
        """A unit or part as it ran, for the record."""
        return Unit(log.reads, tuple(dict.fromkeys(log.asked)), tuple(log.followed),
                    tuple(dict.fromkeys(log.quant)), list(found.findings),
                    list(found.kernel_calls), tuple(self.ctx.index.grep_log[log.greps:]),
                    state, given, tuple(dict.fromkeys(log.parts)))

    def recorded_memo(self, name: str, index: Index, vocab: Vocabulary) -> RecordedMemo[Any]:
        """A memo the units share, whose entries go into the record (a unit
        of their own each, keyed ``("memo", name, key)``, its value the
        unit's ``state``) and are taken from the earlier scan's while they
        hold, as a unit is replayed."""
        memo: RecordedMemo[Any] = RecordedMemo(index, vocab, partial(self._earlier, name))
        self._memos[name] = memo
        return memo

    def _earlier(self, name: str, key: Hashable) -> Entry[Any] | None:
        """The earlier scan's entry of memo ``name`` for ``key``, if it holds."""
        if self.prior is None:
            return None
        ukey: Any = ("memo", name, key)
        prior = self.prior.units.get(ukey)
        if prior is None or not self._replayable(prior):
            return None
        self.units[ukey] = prior
        return prior.state, prior.reads, tuple(self._queries(prior)), prior.greps

    def _memo_units(self) -> None:
        """The memos' entries into this scan's record: those computed now,
        and the earlier scan's that no unit took but that hold without
        asking anything again (what they read is unchanged, every answer
        they used is kept or was asked again and came out the same)."""
        for name, memo in self._memos.items():
            for key, (value, reads, asked, greps) in memo.entries.items():
                ukey: Any = ("memo", name, key)
                if ukey not in self.units:
                    self.units[ukey] = Unit(reads, tuple(dict.fromkeys(asked)), (), (), [], [],
                                            greps, value, _MEMO)
        if self.prior is None or self.changes is None:
            return
        for ukey, unit in self.prior.units.items():
            if unit.given == _MEMO and ukey not in self.units and self._holds(unit):
                self.units[ukey] = unit

    def _holds(self, unit: Unit) -> bool:
        """Whether ``unit`` (a memo's entry) holds now, asking nothing again."""
        assert self.changes is not None
        if self.changes.any(unit.reads) or unit.greps:
            return False
        vocab = self.ctx.vocab
        for query in self._queries(unit):
            if query in vocab.stored:
                continue
            new, old = vocab.answers.get(query), vocab.former.get(query)
            if new is None or old is None or not readable(old) or new.value != old.value \
                    or new.diagnostic != old.diagnostic:
                return False
        return True

    def _replay(self, key: UnitKey, prior: Unit) -> Found:
        """What replaying ``prior`` (a unit or a part) leaves: the calls it
        followed marked followed, the diagnostics of its answers reported, it
        and its parts in this scan's record; and what it found."""
        vocab = self.ctx.vocab
        self.followed.update(k for k, present in prior.followed if not present)
        for query in self._queries(prior):
            answer = vocab.stored_answer(query)
            if answer is not None and answer.diagnostic is not None:
                vocab.report(answer.diagnostic)
        self._keep(key, prior)
        return Found(list(prior.findings), list(prior.kernel_calls))

    def _keep(self, key: UnitKey, prior: Unit) -> None:
        """``prior`` goes into this scan's record as it is, with its parts."""
        self.units[key] = prior
        assert self.prior is not None
        for part in prior.parts:
            unit = self.prior.units.get(part)
            if unit is not None:
                self._keep(part, unit)

    def failed(self, key: UnitKey, exc: Exception) -> Found:
        """As the plain runner; and the unit is not recorded, so a later scan
        runs it again rather than replaying it."""
        found = super().failed(key, exc)
        if self.prior is not None:
            self._changed(self.prior.units.get(key), None)
        return found

    def took_context(self, where: tuple[str, str, str], cond: Predicate) -> None:
        if self._quant_log is not None:
            self._quant_log.append((where, cond))

    def _changed(self, old: Unit | None, new: Unit | None) -> None:
        """Note the findings and kernel calls a unit no longer gives or gives
        anew (all of them when their order changed): verdicts that read none of
        them stand (see ``verdict.judge``)."""
        changed = self.changed
        assert changed is not None
        for kind in ("findings", "kernel_calls"):
            before = getattr(old, kind) if old is not None else []
            after = getattr(new, kind) if new is not None else []
            if before == after:
                continue
            gone, came = Counter(before), Counter(after)
            gone.subtract(after)
            came.subtract(before)
            moved = [f for f, n in gone.items() if n > 0] + [f for f, n in came.items() if n > 0]
            getattr(changed, kind).extend(moved or [*before, *after])

    def _replayable(self, prior: Unit) -> bool:
        changes, vocab, index = self.changes, self.ctx.vocab, self.ctx.index
        if changes is None or changes.any(prior.reads):
            return False
        for query in self._queries(prior):
            if query not in vocab.stored and not vocab.same_answer(query):
                return False
        for where, cond in prior.quant:
            if self.quant_condition(*where) != cond:
                return False
        for pattern, within, matched in prior.greps:
            if tuple(index.grep_re(pattern, within)) != matched:
                return False
        added: set[Any] = set()
        for key, present in prior.followed:
            if (key in self.followed or key in added) != present:
                return False
            added.add(key)
        return True

    def already_followed(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` was followed before in this scan (else it is now)."""
        present = super().already_followed(key)
        if self._followed_log is not None:
            self._followed_log.append((key, present))
        return present

    def finish(self) -> None:
        """After the last unit: units of the earlier scan not run now changed
        too; this scan's record and counts go into the links."""
        if self.prior is not None:
            for key, unit in self.prior.units.items():
                if key not in self.units and unit.given is None:  # (a part's unit says)
                    self._changed(unit, None)
        self._memo_units()
        self.record_out = self.record()

    def record(self) -> LinkRecord:
        """This scan's linking, for the next scan: its units, and the answers
        they used (extending the earlier record's tables, whose numbers the
        replayed units and kept answers use)."""
        vocab = self.ctx.vocab
        keys = Table(self.prior.keys if self.prior is not None else None)
        answers: dict[int, Answer] = {}
        units: dict[UnitKey, Unit] = {}
        prior_keys = self.prior.keys if self.prior is not None else []
        for key, unit in self.units.items():
            if isinstance(unit.queries, bytes):
                # the earlier record's numbers: this table numbers on from it
                for number in numbers(unit.queries):
                    if number not in answers:
                        answer = vocab.stored_answer(prior_keys[number])
                        if answer is not None:
                            answers[number] = answer
                units[key] = unit
                continue
            for query in unit.queries:
                number = keys.id(query)
                if number in answers:
                    continue
                answer = vocab.stored_answer(query)
                if answer is not None:
                    answers[number] = answer
            units[key] = replace(unit, queries=keys.encode(unit.queries))
        # the recorder's table as it stands (judging numbers on, then afresh)
        return LinkRecord(self.context(), list(self.ctx.index.recorder.table.items), keys.items,
                          answers, units)

    def _queries(self, unit: Unit) -> list[QueryKey] | tuple[QueryKey, ...]:
        if isinstance(unit.queries, bytes):
            assert self.prior is not None
            return [self.prior.keys[i] for i in numbers(unit.queries)]
        return unit.queries

    def context(self) -> str:
        """What units assume beyond the tree: the options and the enums."""
        model = self.ctx.vocab.options
        return repr((sorted(model.dests.items()),
                     sorted((method, [(enum, dest, sorted(values)) for enum, dest, values in v])
                            for method, v in model.enum_predicates.items()),
                     sorted(model.enum_members.items()),
                     sorted(model.enum_dests.items()),
                     sorted(model.shared.items()),
                     model.quantization,
                     [(o.dest, o.default, o.choices) for o in self.ctx.options],
                     sorted(self.ctx.kernel_packages)))
