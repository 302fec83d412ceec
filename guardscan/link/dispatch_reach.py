"""link (dispatch reach): when code that a module hands out from an option dispatcher runs at all.

What it recognises
    A gate inside a method of a module-level class ``C`` whose own module
    hands ``C`` out only from branches that test an option: it is
    returned or called there under those tests, and nowhere in the module
    without one::

        def get_moe_impl_class(quant_config):
            if get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake():
                return DeepEPMoE

    The gate's reach is the disjunction of those branch conditions. A subclass
    defined in the same module (``class MoriEPMoE(DeepEPMoE)``) runs its base's
    methods, so where it is handed out counts too.

Why it matters
    A gate found by reading a file is a gate for every option its condition
    tests. ``DeepEPMoE.__init__`` asserts ``ENABLE_JIT_DEEPGEMM`` unless
    ``--moe-runner-backend`` is ``flashinfer_cutedsl``; without its reach that
    assert blocked Triton MoE on A100 (sglang 0.5.6 to 0.5.23), although the
    class is built only with ``--moe-a2a-backend deepep`` or ``mooncake``.

Known limits
    Only the module's own dispatch is read: a construction of ``C`` in another
    module is not seen, so the reach can come out narrower than the truth. That
    errs toward a gate not applied (``unknown``), never toward a wrong
    ``blocked``. A module that never hands ``C`` out, that hands it out once
    without a test, or under tests that name no option, adds no condition; a
    plain function's gates are left as they are (functions are called from
    everywhere, and the calls followed from a choice's code find them).

Example
    ``--moe-runner-backend triton`` on sm80 (sglang 0.5.9): the assert at
    ``ep_moe/layer.py:140`` holds only when ``moe_a2a_backend in {deepep,
    mooncake, mori, ascend_fuseep}``; the other options hold their defaults
    (``none``) while the runner is judged, so it does not block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guardscan.index import Index
from guardscan.index.observe import FactsView
from guardscan.link.conditions import Conditions, option_atoms
from guardscan.predicate import Predicate, disj

__all__ = ["Reach", "dispatch_reach"]


@dataclass(frozen=True, slots=True)
class Reach:
    """Where a module hands code out: the condition, and the lines doing it."""

    condition: Predicate
    lines: tuple[int, ...]


def dispatch_reach(index: Index, conditions: Conditions, facts: FactsView, scope: str,
                   ) -> Reach | None:
    """The condition under which code in ``scope`` is reached through its
    module's option dispatcher, or None when the module does not say.

    The module's text is asked first (which lines name the class as a base,
    a return value or a callee), so a module that never hands the class out
    records only that question for the incremental scan, not all its calls."""
    owner = scope.split(".", 1)[0]
    if not owner or "." not in scope or not facts.has_class(owner):
        return None
    names = _with_subclasses(index, facts.rel, owner)
    if not index.findall(facts.rel, _handing_out(names)):
        return None
    handed: list[Predicate] = []
    lines: list[int] = []
    sites = [(r.value, r.scope, r.path, r.line) for r in facts.returns]
    sites += [(c.func, c.scope, c.path, c.line) for c in facts.calls]
    for value, where, path, line in sorted(sites, key=lambda site: site[3]):
        if value not in names or where.split(".", 1)[0] in names:
            continue  # another name, or the class's own code
        if not path:
            return None  # handed out unconditionally somewhere
        cond = conditions.path(facts, path, where)
        if not option_atoms(cond):
            return None  # a branch that is not an option dispatch
        handed.append(cond)
        lines.append(line)
    if not handed:
        return None
    return Reach(disj(*handed), tuple(lines))


def _with_subclasses(index: Index, rel: str, name: str) -> frozenset[str]:
    """``name`` and the module-level classes of the module derived from it."""
    names = {name}
    grew = True
    while grew:
        grew = False
        for found in index.findall(rel, _subclass_of(frozenset(names))):
            subclass = found.decode()
            if subclass not in names:
                names.add(subclass)
                grew = True
    return frozenset(names)


def _alternatives(names: frozenset[str]) -> bytes:
    return b"|".join(re.escape(name.encode()) for name in sorted(names))


def _subclass_of(names: frozenset[str]) -> re.Pattern[bytes]:
    return re.compile(rb"^class[ \t]+(\w+)[ \t]*\([^)]*\b(?:" + _alternatives(names) + rb")\b",
                      re.MULTILINE)


def _handing_out(names: frozenset[str]) -> re.Pattern[bytes]:
    """``return NAME`` or ``NAME(`` for one of ``names``."""
    alternatives = _alternatives(names)
    return re.compile(rb"\breturn[ \t]+(?:" + alternatives + rb")\b|\b(?:" + alternatives
                      + rb")[ \t]*\(")
