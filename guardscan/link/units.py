"""link (units): linking done in units that a later scan replays when nothing they read changed.

A unit is one file's gates, one file's option-tested calls, one registered
file, one module named for a choice, or the quantization tables. ``Units.unit``
runs it, noting what it read, asked the vocabulary, followed and took as a
quantization context, or replays it from the earlier scan's record when none
of that changed (``guardscan.incremental`` describes the scheme). A unit that
raises loses only its own findings and becomes an ``internal-error``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from guardscan.guards import Answer, QueryKey
from guardscan.incremental import Changes, LinkRecord, Table, Unit, UnitKey, numbers
from guardscan.link.model import Links
from guardscan.messages import internal_error, scanned_line
from guardscan.predicate import Predicate

if TYPE_CHECKING:
    from guardscan.link.context import LinkContext

__all__ = ["UnitState", "Units"]

#: how to take, and restore, what a unit leaves for later units
UnitState = tuple[Callable[[], Any], Callable[[Any], None]]


class Units:
    """This scan's units; an earlier scan's, and what changed since."""

    def __init__(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        self.units: dict[UnitKey, Unit] = {}
        self.prior: LinkRecord | None = None
        #: numbers for reads, extending the earlier record's
        self.reads = Table()
        self.changes: Changes | None = None
        #: units replayed / run (for progress and tests)
        self.replayed = 0
        self.ran = 0
        self._followed: set[tuple[str, str, str]] = set()
        #: while a unit runs: what it followed, and the quantization contexts it took
        self._followed_log: list[tuple[Any, bool]] | None = None
        self.quant_log: list[tuple[tuple[str, str], Predicate]] | None = None

    def start_from(self, prior: tuple[LinkRecord, Changes]) -> None:
        """Replay from an earlier scan's linking (made with the same
        ``context``): its answers that read nothing changed are kept."""
        record, changes = prior
        vocab = self.ctx.vocab
        self.ctx.links.changed = Links()
        changes.table = record.reads
        stored: dict[QueryKey, Answer] = {}
        former: dict[QueryKey, Answer] = {}
        for number, answer in record.answers.items():
            (former if changes.any(answer.reads) else stored)[record.keys[number]] = answer
        vocab.stored, vocab.former = stored, former
        self.prior, self.changes = record, changes
        self.reads = Table(record.reads)

    def unit(self, key: UnitKey, run: Callable[[], None], state: UnitState | None = None) -> None:
        """Run one unit of linking, or replay it from the earlier scan (see
        ``guardscan.incremental``). ``state``: how to take and restore what the
        unit leaves for later units."""
        links, vocab, index = self.ctx.links, self.ctx.vocab, self.ctx.index
        prior = self.prior.units.get(key) if self.prior is not None else None
        if prior is not None and self._replayable(prior):
            if state is not None:
                state[1](prior.state)
            links.findings.extend(prior.findings)
            links.kernel_calls.extend(prior.kernel_calls)
            self._followed.update(k for k, present in prior.followed if not present)
            for query in self._queries(prior):
                answer = vocab.answers.get(query) or vocab.stored.get(query)
                if answer is not None and answer.diagnostic is not None:
                    vocab.report(answer.diagnostic)
            self.units[key] = prior
            self.replayed += 1
            return
        self.ran += 1
        findings, calls = len(links.findings), len(links.kernel_calls)
        greps = len(index.grep_log)
        recorder = index.recorder
        saved = recorder.open()
        asked: list[QueryKey] = []
        followed: list[tuple[Any, bool]] = []
        quant: list[tuple[tuple[str, str], Predicate]] = []
        vocab.asked, self._followed_log, self.quant_log = asked, followed, quant
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - one unit never stops the scan
            self._unit_failed(key, exc, findings, calls)
            return
        finally:
            reads = recorder.close(saved, merge=False)
            vocab.asked = self._followed_log = self.quant_log = None
        unit = self.units[key] = Unit(
            self.reads.encode(reads), tuple(dict.fromkeys(asked)), tuple(followed),
            tuple(dict.fromkeys(quant)), links.findings[findings:], links.kernel_calls[calls:],
            tuple(index.grep_log[greps:]), state[0]() if state is not None else None)
        if self.prior is not None:
            self._changed(prior, unit)

    def _unit_failed(self, key: UnitKey, exc: Exception, findings: int, calls: int) -> None:
        """A unit that raised: what it found so far is dropped (it may be half
        of it), an ``internal-error`` diagnostic says where, and the unit is
        not recorded, so a later scan runs it again rather than replaying it."""
        links, quantization = self.ctx.links, self.ctx.quantization
        del links.findings[findings:]
        del links.kernel_calls[calls:]
        rel = next((str(part) for part in reversed(key) if str(part).endswith(".py")),
                   quantization.path if quantization is not None else "")
        unit = " ".join(str(part) for part in key[:-1] if part) or str(key[0])
        links.diagnostics.append(internal_error(
            rel, scanned_line(rel, exc), f"link unit `{unit}` of {rel}", exc))
        if self.prior is not None:
            self._changed(self.prior.units.get(key), None)

    def _changed(self, old: Unit | None, new: Unit | None) -> None:
        """Note the findings and kernel calls a unit no longer gives or gives
        anew (all of them when their order changed): verdicts that read none of
        them stand (see ``verdict.judge``)."""
        changed = self.ctx.links.changed
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
            if self.ctx.quant.condition_unlogged(*where) != cond:
                return False
        for pattern, within, matched in prior.greps:
            if tuple(index.grep_re(pattern, within)) != matched:
                return False
        added: set[Any] = set()
        for key, present in prior.followed:
            if (key in self._followed or key in added) != present:
                return False
            added.add(key)
        return True

    def already_followed(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` was followed before in this scan (else it is now)."""
        present = key in self._followed
        if self._followed_log is not None:
            self._followed_log.append((key, present))
        self._followed.add(key)
        return present

    def finish(self) -> None:
        """After the last unit: units of the earlier scan not run now changed
        too; this scan's record and counts go into the links."""
        if self.prior is not None:
            for key, unit in self.prior.units.items():
                if key not in self.units:
                    self._changed(unit, None)
        self.ctx.links.record = self.record()
        self.ctx.links.units = (self.replayed, self.ran)

    def record(self) -> LinkRecord:
        """This scan's linking, for the next scan: its units, and the answers
        they used (extending the earlier record's tables, whose numbers the
        replayed units and kept answers use)."""
        vocab = self.ctx.vocab
        reads = self.reads
        keys = Table(self.prior.keys if self.prior is not None else None)
        answers: dict[int, Answer] = {}
        units: dict[UnitKey, Unit] = {}
        for key, unit in self.units.items():
            queries = self._queries(unit)
            for query in queries:
                number = keys.id(query)
                if number in answers:
                    continue
                answer = vocab.answers.get(query) or vocab.stored.get(query)
                if answer is not None:
                    if not isinstance(answer.reads, bytes):
                        answer = Answer(answer.value, answer.diagnostic, reads.encode(answer.reads))
                    answers[number] = answer
            if not isinstance(unit.queries, bytes):
                unit = replace(unit, queries=keys.encode(queries))
            units[key] = unit
        return LinkRecord(self.context(), reads.items, keys.items, answers, units)

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
                     model.quantization,
                     [(o.dest, o.default, o.choices) for o in self.ctx.options],
                     sorted(self.ctx.kernel_packages)))
