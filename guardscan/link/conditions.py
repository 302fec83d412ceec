"""link (conditions): what must hold for a line to run, and the guards shown on the way.

Branch tests are read by the vocabulary in the scope they are written in; a
path's condition is the conjunction of its tests, with two deliberate
omissions (``Conditions.path``). Every ``raise`` and failing ``assert`` comes
with its condition (``failure_conditions``), and the device guards on its path
with the definition lines that give them meaning (``guard_hops``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from guardscan.guards import Resolved, Vocabulary
from guardscan.index import Index
from guardscan.index.observe import FactsView
from guardscan.link.model import Hop, HopRole
from guardscan.link.unbound_imports import unbound_uses
from guardscan.predicate import (
    Not,
    OptionIs,
    Predicate,
    Unknown,
    conj,
    leaves,
    mentions_device,
    neg,
)

__all__ = ["MAX_DEFINITION_HOPS", "Conditions", "option_atoms"]

_MISSING_VALUE_CHECK = re.compile(
    r"^\s*(?:[\w.]+|getattr\(\s*[\w.]+\s*,\s*(?:'\w+'|\"\w+\")\s*,\s*None\s*\))"
    r"\s+is\s+(?:not\s+)?None\s*$")

#: Definition lines shown per guard (the closest first: the rest is in the graph).
MAX_DEFINITION_HOPS = 4

#: (scope, line, text, condition, path) of a raise or an assert
Failure = tuple[str, int, str, Predicate, tuple[int, ...]]


def option_atoms(pred: Predicate) -> list[OptionIs]:
    return [a for a in leaves(pred) if isinstance(a, OptionIs)]


class Conditions:
    """Conditions of branches, paths and failures in one scan's files."""

    def __init__(self, index: Index, vocab: Vocabulary) -> None:
        self.index = index
        self.vocab = vocab
        self._assert_trail: dict[tuple[str, int], tuple[tuple[str, int], ...]] = {}
        #: file -> fact kind -> scope -> that kind's facts directly in it
        self._scoped: dict[str, dict[str, dict[str, list[Any]]]] = {}
        # built from a file's facts: let go with them
        index.let_go_with(self.forget)

    def forget(self, rel: str) -> None:
        """Let go of ``rel``'s tables (the index let go of its facts)."""
        self._scoped.pop(rel, None)

    def cond(self, facts: FactsView, signed: int, scope: str = "") -> Predicate:
        """Branch test ``signed`` (negated when below 0), read in the scope it
        is written in."""
        pred = self.resolved(facts, signed).predicate
        return pred if signed > 0 else neg(pred)

    def resolved(self, facts: FactsView, signed: int) -> Resolved:
        cond = facts.cond(signed)
        return self.vocab.predicate(cond.text, facts.rel, facts.cond_scope_of(signed), cond.line)

    def path(self, facts: FactsView, path: tuple[int, ...], scope: str) -> Predicate:
        """The condition of a path.

        In an ``if/elif`` chain that dispatches on an option, an earlier branch
        whose test says nothing about device or options (a plug-in lookup such as
        ``(f := CUSTOM.get(name)) is not None``) is taken as not taken: the chain
        exists to reach the option's own branch. Likewise a guard clause for a
        missing value (``if quant_config is None: return``) is taken as passed,
        and so is a lazy initialiser's early exit (``if self._wrapper is not
        None: return``, ``if getattr(layer, "_wrapper", None) is not None:
        return``): what follows runs the first time.
        Both err toward finding a gate, never toward calling a choice supported.
        """
        parts = []
        for position, signed in enumerate(path):
            pred = self.cond(facts, signed, scope)
            if signed < 0 and (self._extension_point(facts, path, position, scope, pred)
                               or _MISSING_VALUE_CHECK.match(facts.cond(signed).text)):
                continue
            parts.append(pred)
        return conj(*parts)

    def _extension_point(self, facts: FactsView, path: tuple[int, ...], position: int,
                         scope: str, pred: Predicate) -> bool:
        # (only before an ``elif``: looked at first, it is the cheaper test)
        if position + 1 >= len(path) or facts.cond(path[position + 1]).kind != "elif":
            return False
        if not all(isinstance(a, Unknown) for a in leaves(pred)):
            return False
        for later in path[position + 1:]:
            cond = facts.cond(later)
            if cond.kind != "elif":
                return False
            if later > 0:
                return bool(option_atoms(self.cond(facts, later, scope)))
        return False

    def guard_hops(self, facts: FactsView, path: tuple[int, ...], scope: str,
                   line: int = 0) -> list[Hop]:
        """Device guards on the path (and, for an assert at ``line``, its test),
        each followed by the definition lines that give it meaning."""
        hops = []
        shown = 0
        for trel, tline in self._assert_trail.get((facts.rel, line), ()):
            text = self.index.line_text(trel, tline)
            if (trel, tline) == (facts.rel, line) or text.startswith(("import ", "from ")) \
                    or shown >= MAX_DEFINITION_HOPS:
                continue
            shown += 1
            hops.append(Hop(trel, tline, HopRole.DEFINITION, "what the assert tests"))
        for signed in path:
            pred = self.cond(facts, signed, scope)
            if mentions_device(pred):
                cond = facts.cond(signed)
                hops.append(Hop(facts.rel, cond.line, HopRole.GUARD,
                                (pred if signed > 0 else Not(pred)).describe()))
                shown = 0
                for trel, tline in self.resolved(facts, signed).trail:
                    text = self.index.line_text(trel, tline)
                    if (trel, tline) == (facts.rel, cond.line) or text.startswith(
                            ("import ", "from ")) or shown >= MAX_DEFINITION_HOPS:
                        continue
                    shown += 1
                    hops.append(Hop(trel, tline, HopRole.DEFINITION, "what the guard means"))
        return hops

    def by_scope(self, facts: FactsView, kind: str, scope: str) -> list[Any]:
        """One kind of a file's facts (``calls``, ``raises``...) directly in
        ``scope``, in file order."""
        facts.note("scope", scope)
        tables = self._scoped.get(facts.rel)
        if tables is None:
            tables = self._scoped[facts.rel] = {}
        table = tables.get(kind)
        if table is None:
            table = tables[kind] = {}
            for fact in getattr(facts.unobserved, kind):
                table.setdefault(fact.scope, []).append(fact)
        return table.get(scope, [])

    def failure_conditions(self, facts: FactsView, scope_filter: str | None = None,
                           ) -> Iterable[Failure]:
        """(scope, line, text, condition, path) for every raise and assert, and
        every call through a name only a conditional import binds
        (``link.unbound_imports``)."""
        raises, asserts = (facts.raises, facts.asserts) if scope_filter is None else (
            self.by_scope(facts, "raises", scope_filter),
            self.by_scope(facts, "asserts", scope_filter))
        for fact in raises:
            yield fact.scope, fact.line, f"raise {fact.exc}", self.path(facts, fact.path,
                                                                         fact.scope), fact.path
        for afact in asserts:
            resolved = self.vocab.predicate(afact.test, facts.rel, afact.scope, afact.line)
            self._assert_trail[(facts.rel, afact.line)] = resolved.trail
            yield (afact.scope, afact.line, f"assert {afact.test}",
                   conj(self.path(facts, afact.path, afact.scope), neg(resolved.predicate)),
                   afact.path)
        yield from unbound_uses(facts, self, scope_filter)
