"""kernels (paths): the condition a statement of the kernel library runs under, as a Predicate.

Index facts give each call / raise a *path*: signed indexes of the branch
conditions around it in its scope (``+i`` the condition held, ``-i`` it did
not). ``PathReader`` turns a path into a Predicate with the scope's bindings:
capability conditions read exactly, anything else becomes ``Unknown(text)``
(an ``except`` clause, a ``while`` test, a model-config flag), so Kleene logic
keeps what cannot be decided undecided.
"""

from __future__ import annotations

from collections.abc import Mapping

from guardscan.index.facts import CondPath, FunctionFact
from guardscan.kernels.arguments import unassigned_params
from guardscan.kernels.bindings import Bindings, ScopeNames
from guardscan.kernels.conditions import CapabilityReader
from guardscan.kernels.symbols import ModuleSymbols
from guardscan.names import split_targets
from guardscan.predicate import And, Or, Predicate, Unknown, conj, disj, mentions_device, neg

__all__ = ["BRANCH_KINDS", "PathReader", "negate"]

#: Condition kinds that are branch tests (``while`` / ``except`` / ``match`` are not read).
BRANCH_KINDS = frozenset({"if", "elif"})


def negate(pred: Predicate) -> Predicate:
    """``not pred`` with the negation pushed through and/or (De Morgan), so a
    dispatch's fall-through reads ``sm in [120, 121] or sm == 103``."""
    if isinstance(pred, And):
        return disj(*(negate(p) for p in pred.items))
    if isinstance(pred, Or):
        return conj(*(negate(p) for p in pred.items))
    return neg(pred)


class PathReader:
    def __init__(self, reader: CapabilityReader, bindings: Bindings) -> None:
        self.reader = reader
        self.bindings = bindings
        self._memo: dict[tuple[str, int], Predicate | None] = {}
        self._ends: dict[tuple[str, str], dict[tuple[CondPath, int], int]] = {}
        self._validation: dict[tuple[str, str], set[int]] = {}
        self._assigned: dict[tuple[str, str], dict[str, int]] = {}
        self._argument_memo: dict[tuple[str, int, tuple[tuple[tuple[str, str], ...], bool]],
                                  Predicate] = {}

    def names(self, table: ModuleSymbols, scope: str) -> ScopeNames:
        return self.bindings.scope_names(table, scope)

    def cond_predicate(self, table: ModuleSymbols, scope: str, index: int) -> Predicate | None:
        """Condition ``abs(index)`` as written (not negated); ``None`` if not about the device."""
        key = (table.rel, abs(index))
        if key not in self._memo:
            self._memo[key] = self._read(table, index)
        return self._memo[key]

    def _read(self, table: ModuleSymbols, index: int, arguments: Mapping[str, str] | None = None,
              backend_first: bool = False) -> Predicate | None:
        """Condition ``abs(index)`` read in its scope (``CapabilityReader.read``);
        ``arguments``: those not yet reassigned at its line are read as the
        caller's argument states."""
        cond = table.facts.cond(index)
        if cond.kind not in BRANCH_KINDS:
            return None
        scope = table.facts.cond_scope[abs(index) - 1]
        names = self.names(table, scope)
        live = None
        if arguments is not None:
            assigned = self._first_assigned(table, scope)
            live = {p: d for p, d in arguments.items()
                    if assigned.get(p, cond.line) >= cond.line}
        return self.reader.read(cond.text, table.rel, scope, cond.line, names.quantities,
                                names.consts, names.params, live, backend_first)

    def device_predicate(self, table: ModuleSymbols, scope: str, index: int) -> Predicate | None:
        """Condition ``abs(index)`` when it is about the device (not just the backend)."""
        pred = self.cond_predicate(table, scope, index)
        return pred if pred is not None and mentions_device(pred) else None

    def signed(self, table: ModuleSymbols, scope: str, index: int) -> Predicate:
        pred = self.cond_predicate(table, scope, index)
        if pred is None:
            pred = Unknown(table.facts.cond(index).text)
        return pred if index > 0 else neg(pred)

    def effective_path(self, table: ModuleSymbols, scope: str, line: int,
                       path: CondPath) -> CondPath:
        """``path`` plus the ``elif`` tests a statement after the chain has passed.

        After ``if a: return x`` / ``elif b: return y``, code below runs only when
        neither held, but the Index records just ``not a`` (the ``elif`` is nested in
        the ``else``). A test ``j`` (before ``line``) whose branch, reached under
        ``path``, ends in a ``return`` / ``raise`` at its top level is added as
        ``-j``; repeated for the next ``elif``."""
        ends = self._terminators(table, scope)
        current = path
        while True:
            extra = [j for (prefix, j), first in ends.items()
                     if prefix == current and j > 0 and first < line and -j not in current
                     and table.facts.cond(j).line < line]
            if not extra:
                return current
            current = (*current, -min(extra))

    def _terminators(self, table: ModuleSymbols, scope: str) -> dict[tuple[CondPath, int], int]:
        """(path before the last test, last test) -> first line, for returns and raises."""
        cached = self._ends.get((table.rel, scope))
        if cached is not None:
            return cached
        ends: dict[tuple[CondPath, int], int] = {}
        exits = [(r.path, r.line) for r in table.returns.get(scope, [])]
        exits += [(r.path, r.line) for r in table.raises.get(scope, [])]
        for path, line in exits:
            if path:
                slot = (path[:-1], path[-1])
                ends[slot] = min(ends.get(slot, line), line)
        self._ends[(table.rel, scope)] = ends
        return ends

    def path_predicate(self, table: ModuleSymbols, scope: str, path: CondPath) -> Predicate:
        """When a statement on ``path`` runs, in a call that passes the function's
        input validation: after ``if <not about the device>: raise ...`` the code
        below is the path of every successful call, so that test is left out."""
        return conj(*(self.signed(table, scope, i) for i in self.kept(table, scope, path)))

    def kept(self, table: ModuleSymbols, scope: str, path: CondPath) -> CondPath:
        """``path`` without the input-validation tests (see ``path_predicate``)."""
        validation = self._validation_exits(table, scope)
        return tuple(i for i in path if not (
            i < 0 and -i in validation and self.cond_predicate(table, scope, i) is None))

    def past_raises(self, table: ModuleSymbols, scope: str, path: CondPath) -> CondPath:
        """``path`` without the tests whose branch only raises: what runs
        after ``if bad: raise`` is the path of every call that returns."""
        validation = self._validation_exits(table, scope)
        return tuple(i for i in path if not (i < 0 and -i in validation))

    def _validation_exits(self, table: ModuleSymbols, scope: str) -> set[int]:
        """Tests whose branch raises at its top level and never returns."""
        key = (table.rel, scope)
        if key not in self._validation:
            raising = {r.path[-1] for r in table.raises.get(scope, []) if r.path}
            returning = {i for r in table.returns.get(scope, []) for i in r.path if i > 0}
            self._validation[key] = {i for i in raising if i > 0 and i not in returning}
        return self._validation[key]

    def path_text(self, table: ModuleSymbols, scope: str, path: CondPath) -> str:
        parts = []
        for index in self.kept(table, scope, path):
            text = table.facts.cond(index).text
            parts.append(text if index > 0 else f"not ({text})")
        return " and ".join(parts)

    def arguments(self, table: ModuleSymbols, fn: FunctionFact) -> dict[str, str]:
        """The parameters of ``fn`` -> their default's text: the ones a
        caller's arguments decide (``kernels.arguments``), each until the
        body first reassigns it (``argument_path`` drops it from there)."""
        return unassigned_params(fn, set())

    def _first_assigned(self, table: ModuleSymbols, scope: str) -> dict[str, int]:
        """Name -> the line of its first assignment in ``scope``."""
        key = (table.rel, scope)
        if key not in self._assigned:
            first: dict[str, int] = {}
            for assign in table.scope_assigns.get(scope, []):
                for target in assign.targets:
                    for name in split_targets(target):
                        first[name] = min(first.get(name, assign.line), assign.line)
            self._assigned[key] = first
        return self._assigned[key]

    def argument_path(self, table: ModuleSymbols, path: CondPath,
                      arguments: Mapping[str, str], backend_first: bool = False) -> Predicate:
        """When a statement on ``path`` runs, every test on it read, the
        tests of ``arguments`` not yet reassigned there as their argument
        states (no test left out: an input check is what these paths are
        asked about); ``backend_first``: see ``CapabilityReader.read``."""
        key = (tuple(sorted(arguments.items())), backend_first)
        parts = []
        for index in path:
            memo_key = (table.rel, abs(index), key)
            if memo_key not in self._argument_memo:
                read = self._read(table, index, arguments, backend_first)
                self._argument_memo[memo_key] = read if read is not None \
                    else Unknown(table.facts.cond(index).text)
            pred = self._argument_memo[memo_key]
            parts.append(pred if index > 0 else neg(pred))
        return conj(*parts)

    def mentions_device(self, table: ModuleSymbols, scope: str, path: CondPath) -> bool:
        """Whether a condition on the path is about the device (a capability ``select``)."""
        return any(self.device_predicate(table, scope, i) is not None for i in path)
