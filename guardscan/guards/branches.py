"""guards (branches): what a local assigned on branches holds where it is used.

``NameLookup`` reads a local from its assignments before the use. When the
latest of them is on a branch, the value depends on which branches ran: in
SGLang's tree it is read as its alternatives (``branch_value``: the value
there where that branch was taken, what it held before where not), in the
kernel library's as its latest assignment (``latest_value``, see
``NameLookup.branch_values``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from guardscan.guards.values import AltV, ConstV, PredV, UnkV, Value
from guardscan.index.facts import AssignFact
from guardscan.index.observe import FactsView
from guardscan.predicate import (
    FALSE,
    TRUE,
    Context,
    Platform,
    Predicate,
    Tri,
    conj,
    disj,
    neg,
    substitute,
)

if TYPE_CHECKING:
    from guardscan.guards.lookup import NameLookup

__all__ = ["MAX_BRANCH_ASSIGNS", "branch_value", "latest_value", "on_nvidia"]


#: Branches that assign one local, read as alternatives; more stay unknown.
MAX_BRANCH_ASSIGNS = 4


def _use_path(facts: FactsView, scope: str, line: int) -> tuple[int, ...] | None:
    """The branch path of the statement at ``line`` of ``scope`` (None: no
    statement fact there). For a branch's own test, the path it stands on:
    that of a statement inside it, up to the test."""
    kinds = ("assigns", "calls", "returns", "raises", "asserts")
    for kind in kinds:  # (the scope's own facts only: a change elsewhere reads nothing here)
        for fact in facts.in_scope(kind, scope):
            if fact.line == line:
                path: tuple[int, ...] = fact.path
                return path
    # (each test asked by number: the whole list of tests would read the whole file)
    for kind in kinds[:4]:
        for fact in facts.in_scope(kind, scope):
            for at, signed in enumerate(fact.path):
                if facts.cond(signed).line == line:
                    prefix: tuple[int, ...] = fact.path[:at]
                    return prefix
    return None


def _exclusive(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Two paths that cannot both hold (one took a branch the other did not)."""
    return any(-i in b for i in a)


def on_nvidia(pred: Predicate) -> Tri:
    """Evaluate only the platform part of ``pred`` for an NVIDIA CUDA device."""
    def platform_only(atom: Predicate) -> Predicate | None:
        if isinstance(atom, Platform):
            return TRUE if atom.name in ("cuda", "cuda_alike") else FALSE
        return None
    return substitute(pred, platform_only).evaluate(Context())


def latest_value(lookup: NameLookup, facts: FactsView, rel: str, scope: str, name: str,
                  best: AssignFact, candidates: list[AssignFact]) -> Value:
    """The reading of a branch-assigned local when ``branch_values`` is
    off: the latest assignment's value, or, for if/else branches that each
    assign a truth value, their disjunction."""
    group = [best]
    for other in candidates[1:]:
        if all(_exclusive(other.path, g.path) for g in group):
            group.append(other)
        else:
            break
    if len(group) > 1:
        values = [lookup.assign_value(rel, g, name) for g in group]
        if all(isinstance(v, (PredV, ConstV)) for v in values):
            to_pred = lookup.interpreter.to_pred
            parts = [conj(lookup.path_pred(facts, rel, scope, g.path), to_pred(v))
                     for g, v in zip(group, values)]
            return PredV(disj(*parts))
    return lookup.assign_value(rel, best, name)

def branch_value(lookup: NameLookup, facts: FactsView, rel: str, scope: str, name: str,
                  candidates: list[AssignFact], functions: Mapping[str, Any],
                  line: int) -> Value:
    """A local whose latest assignment before the use is on a branch: its
    value there where that branch was taken, and what it held before
    where it was not, back to an assignment on no branch (``x = a``; ``if
    c: x = b``; ``elif d: x = e`` -> b where c, e where not c and d, a
    elsewhere). Read from where the use stands: an assignment on a branch
    the use is inside holds there, one on a branch the use is outside of
    never reaches it, and one on the same branch as a later one is
    shadowed by it; a branch every NVIDIA device takes (a platform probe)
    holds as if on no branch. More than ``MAX_BRANCH_ASSIGNS`` branches
    stay unknown."""
    at = _use_path(facts, scope, line)
    inside = set(at) if at is not None else set()
    alternatives: list[tuple[Predicate, Value]] = []
    taken: set[tuple[int, ...]] = set()
    rest: Value | None = None
    for assign in candidates:
        own = tuple(s for s in assign.path if s not in inside)
        if own in taken or (at is not None and _exclusive(assign.path, at)):
            continue
        value = lookup.assign_value(rel, assign, name)
        cond = lookup.path_pred(facts, rel, scope, own) if own else TRUE
        # a branch every NVIDIA device takes (``if torch.cuda.is_available():``)
        # holds as if on no branch
        if not own or on_nvidia(cond) is Tri.TRUE:
            rest = value
            break
        if len(alternatives) >= MAX_BRANCH_ASSIGNS:
            return UnkV(f"{name} assigned on many branches")
        taken.add(own)
        alternatives.append((cond, value))
    if rest is None:
        params = any(name in func.params for func in functions.get(scope, ()))
        # a parameter holds what the caller gave, where one was given
        # (``Interpreter.top_value_given``: the kernel library's ``backend``)
        given = lookup.interpreter.given_name(rel, scope, name) if params else None
        rest = given if given is not None else UnkV(
            f"parameter {name}" if params else f"{name} before it is assigned")
    # where an earlier branch holds, a later one not taken: nest from the last
    value = rest
    for cond, branch in reversed(alternatives):
        value = AltV(((cond, branch), (neg(cond), value)))
    return value
