"""link (units): linking runs as a sequence of units, each confined so that one failure loses only its own findings.

A unit is one file's gates, one file's option-tested calls, one registered
file, one module named for a choice, or the quantization tables. The stage
hands every unit to a :class:`Units` runner. This one, the plain runner, runs
each unit as it comes; the driver may hand the stage another runner instead
(``guardscan.memo.link_units`` replays units of an earlier scan that nothing
changed for), so the stage itself never knows about any cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from guardscan.messages import internal_error, scanned_line
from guardscan.predicate import Predicate

if TYPE_CHECKING:
    from guardscan.link.context import LinkContext

__all__ = ["UnitKey", "UnitState", "Units"]

#: ("file", rel), ("follow", rel), ("registered", rel), ("table", rel), ("named", dest, choice, rel),
#: ("quantization",)
UnitKey = tuple[str, ...]
#: how to take, and restore, what a unit leaves for later units
UnitState = tuple[Callable[[], Any], Callable[[Any], None]]


class Units:
    """Runs the units of one scan's linking, in order, each confined."""

    def __init__(self) -> None:
        self._ctx: LinkContext | None = None
        self.followed: set[tuple[str, str, str]] = set()
        #: while a unit runs, a runner that records may collect the
        #: quantization contexts it took here (None: nobody asks)
        self.quant_log: list[tuple[tuple[str, ...], Predicate]] | None = None
        #: units replayed / run (for progress and tests)
        self.replayed = 0
        self.ran = 0

    @property
    def ctx(self) -> LinkContext:
        assert self._ctx is not None, "Units.bind first"
        return self._ctx

    def bind(self, ctx: LinkContext) -> None:
        """Start this scan's linking."""
        self._ctx = ctx

    @property
    def cold(self) -> bool:
        """Whether every unit is going to run (then the candidate files are
        worth parsing on every core up front)."""
        return True

    def unit(self, key: UnitKey, run: Callable[[], None], state: UnitState | None = None) -> None:
        """Run one unit. ``state``: how to take and restore what the unit
        leaves for later units (a runner that replays units needs it)."""
        self.ran += 1
        links = self.ctx.links
        findings, calls = len(links.findings), len(links.kernel_calls)
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - one unit never stops the scan
            self.failed(key, exc, findings, calls)

    def failed(self, key: UnitKey, exc: Exception, findings: int, calls: int) -> None:
        """A unit that raised: what it found so far is dropped (it may be half
        of it) and an ``internal-error`` diagnostic says where."""
        links, quantization = self.ctx.links, self.ctx.quantization
        del links.findings[findings:]
        del links.kernel_calls[calls:]
        rel = next((str(part) for part in reversed(key) if str(part).endswith(".py")),
                   quantization.path if quantization is not None else "")
        unit = " ".join(str(part) for part in key[:-1] if part) or str(key[0])
        links.diagnostics.append(internal_error(
            rel, scanned_line(rel, exc), f"link unit `{unit}` of {rel}", exc))

    def already_followed(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` was followed before in this scan (else it is now)."""
        present = key in self.followed
        self.followed.add(key)
        return present

    def finish(self) -> None:
        """After the last unit."""
