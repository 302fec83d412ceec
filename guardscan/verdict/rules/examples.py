"""verdict rules (examples): the shape of each rule's ``EXAMPLES``, which the suite expands into tests.

An example is a finding's kind, its condition (a ``Predicate``; ``X`` is the
option ``moe_runner_backend`` holding the judged choice ``x``), the choice the
finding names (for defaults, docs and selects), its text, the arch, and what
the rule must return there: which of the outcome's fields is filled
(``blocking``, ``positive``, ``caveats``, ``docs``, or ``nothing``) and, for
evidence, the ``effect`` argument of the deciding line when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass

from guardscan.predicate import Device, OptionIs, Predicate, Unknown

__all__ = ["DEST", "Example", "X", "major", "unknown"]

#: the option every example judges, and a test of it holding the choice ``x``
DEST = "moe_runner_backend"
X: Predicate = OptionIs(DEST, frozenset({"x"}))


def major(op: str, value: int) -> Predicate:
    return Device("major", op, value)


def unknown(reason: str) -> Predicate:
    return Unknown(reason)


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    kind: str
    condition: Predicate
    arch: str
    expect: str  # blocking | positive | caveats | docs | nothing
    effect: str = ""
    choice: str | None = None
    text: str = ""
    target: tuple[str, ...] = ()
    #: for a gate: the interface method it implements (``Finding.implements``)
    implements: str = ""
    #: the options the judged choice requires (``Values.needs``)
    needs: tuple[str, ...] = ()
    #: what a hook rewrites the judged choice into (``Values.becomes``)
    becomes: str | None = None



