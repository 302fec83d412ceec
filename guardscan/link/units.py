"""link (units): linking runs as a sequence of units, each confined so that one failure loses only its own findings.

A unit is one file's gates, one file's option-tested calls, one registered
file, one module named for a choice, the quantization tables, one quantization
method's path, or the code other code runs too. Each unit
returns what it found (``link.model.Found``); the stage hands every unit to a
:class:`Units` runner, which returns what the unit returned, or, when it
raised, only an ``internal-error`` diagnostic (nothing half-found). This one,
the plain runner, runs each unit as it comes; the driver may hand the stage
another runner instead (``guardscan.memo.link_units`` replays units of an
earlier scan that nothing changed for), so the stage itself never knows about
any cache.

What a runner is told besides, so that one that records can record it:
``already_followed`` (a call followed for a choice), ``took_context`` (a
condition taken from the quantization methods' paths). ``bind`` hands it the
scan's inputs and how to ask the methods' paths again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from guardscan.link.model import Found
from guardscan.link.recorded import RecordedMemo
from guardscan.messages import internal_error, scanned_line
from guardscan.predicate import Predicate

if TYPE_CHECKING:
    from guardscan.guards import Vocabulary
    from guardscan.index import Index
    from guardscan.link.context import LinkContext

__all__ = ["QuantCondition", "UnitKey", "UnitState", "Units"]

#: ("file", rel), ("follow", rel), ("registered", rel), ("table", rel), ("named", dest, choice, rel),
#: ("quantization",) (the method tables), ("quantization", method, rel, class, *dirs) (one method's
#: path), ("quantization", "escapes DIGEST") (what code outside the methods runs too)
UnitKey = tuple[str, ...]
#: how to take, and restore, what a unit leaves for later units
UnitState = tuple[Callable[[], Any], Callable[[Any], None]]
#: the condition under which the quantization methods run (rel, scope, variant)
QuantCondition = Callable[[str, str, str], Predicate]


class Units:
    """Runs the units of one scan's linking, in order, each confined."""

    def __init__(self) -> None:
        self._ctx: LinkContext | None = None
        self._quant_condition: QuantCondition | None = None
        self.followed: set[tuple[str, str, str]] = set()
        #: units replayed / run (for progress and tests)
        self.replayed = 0
        self.ran = 0

    @property
    def ctx(self) -> LinkContext:
        assert self._ctx is not None, "Units.bind first"
        return self._ctx

    def quant_condition(self, rel: str, scope: str, variant: str) -> Predicate:
        assert self._quant_condition is not None, "Units.bind first"
        return self._quant_condition(rel, scope, variant)

    def bind(self, ctx: LinkContext, quant_condition: QuantCondition) -> None:
        """Start this scan's linking: its inputs, and how to ask the condition
        of the quantization methods' code (without it being noted)."""
        self._ctx = ctx
        self._quant_condition = quant_condition

    @property
    def cold(self) -> bool:
        """Whether every unit is going to run (then the candidate files are
        worth parsing on every core up front)."""
        return True

    def unit(self, key: UnitKey, run: Callable[[], Found],
             state: UnitState | None = None) -> Found:
        """Run one unit, and return what it found. ``state``: how to take and
        restore what the unit leaves for later units (a runner that replays
        units needs it)."""
        self.ran += 1
        try:
            return run()
        except Exception as exc:  # noqa: BLE001 - one unit never stops the scan
            return self.failed(key, exc)

    def recorded_memo(self, name: str, index: Index, vocab: Vocabulary) -> RecordedMemo[Any]:
        """A memo the units share (``link.recorded``), named for the scan's
        record: what it computes depends on its key and ``name`` alone. A
        runner that records keeps its entries for the next scan."""
        return RecordedMemo(index, vocab)

    def part(self, key: UnitKey, run: Callable[[], Found], given: Any) -> Found:
        """Run a part of the unit running now (``key`` and ``given`` say which:
        ``given`` holds whatever it is handed besides what it reads), and
        return what it found. A part is no unit of its own: what it raises
        goes to the unit. The plain runner runs it; one that records may
        replay it when the unit runs again (``memo.link_units``)."""
        return run()

    def failed(self, key: UnitKey, exc: Exception) -> Found:
        """A unit that raised: what it found so far is lost with it (it may
        be half of it), and an ``internal-error`` diagnostic says where."""
        quantization = self.ctx.quantization
        rel = next((str(part) for part in reversed(key) if str(part).endswith(".py")),
                   quantization.path if quantization is not None else "")
        unit = " ".join(str(part) for part in key[:-1] if part) or str(key[0])
        return Found(diagnostics=[internal_error(
            rel, scanned_line(rel, exc), f"link unit `{unit}` of {rel}", exc)])

    def already_followed(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` was followed before in this scan (else it is now)."""
        present = key in self.followed
        self.followed.add(key)
        return present

    def took_context(self, where: tuple[str, str, str], cond: Predicate) -> None:
        """A unit took ``cond`` as the condition of the quantization methods'
        code at ``where`` (rel, scope, variant). The plain runner needs not know."""

    def finish(self) -> None:
        """After the last unit."""
