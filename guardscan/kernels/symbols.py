"""kernels (call graph): the kernel library's names as its call graph reads them.

Name resolution itself (imports, ``__init__`` re-exports, star imports,
aliases, methods through in-tree bases) is :class:`guardscan.names.Names`;
this module adds what only the call graph needs: per-scope statement tables
(calls, raises, asserts, returns, conditions), names bound in ways the Index
does not record (read from the function's lines), and source lines for
evidence. ``Resolver.resolve_call`` answers what a call's callee text names in
a given scope; ``Resolver.resolve_dotted`` follows a public or module path
(``flashinfer.fp4_quantize``) through re-exports to the defining function.

Known limits: names bound by ``for`` / ``with ... as`` / comprehensions /
``*args`` are not in the Index facts, so calls through them come back
``dynamic`` when the function's lines show such a binding and ``unresolved``
otherwise (never guessed); attribute calls on values (``x.view()``,
``get_module().run()``) are ``dynamic``: the callee depends on a runtime
value.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from guardscan.index import Index
from guardscan.index.facts import (
    AssertFact,
    CallFact,
    FileFacts,
    FunctionFact,
    RaiseFact,
    ReturnFact,
)
from guardscan.names import ModuleScopes, Names, Target, split_targets

__all__ = ["ModuleSymbols", "Resolver", "Target", "split_targets"]

#: Bindings the Index does not record (``for`` / ``with ... as`` / ``except ... as``
#: targets, comprehension and lambda variables, ``*args``, walrus), read from the
#: function's lines so calls through them count as dynamic, not unresolved.
_LOOSE_BINDINGS = (
    ("for", re.compile(r"\bfor\s+([\w\s,()\[\]*]+?)\s+in\b")),
    ("as", re.compile(r"\b(?:with|except)\b[^\n]*?\bas\s+\(?([\w\s,]+)\)?")),
    ("lambda", re.compile(r"\blambda\b([^:\n]*):")),
    ("*", re.compile(r"[(,]\s*\*\*?(\w+)")),
    (":=", re.compile(r"\b(\w+)\s*:=")),
    ("global", re.compile(r"\bglobal\s+([\w\s,]+)")),
    ("nonlocal", re.compile(r"\bnonlocal\s+([\w\s,]+)")),
)
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass(slots=True)
class ModuleSymbols(ModuleScopes):
    """A module's names (:class:`ModuleScopes`) and its statements by scope."""

    calls: dict[str, list[CallFact]] = field(default_factory=dict)
    raises: dict[str, list[RaiseFact]] = field(default_factory=dict)
    asserts: dict[str, list[AssertFact]] = field(default_factory=dict)
    returns: dict[str, list[ReturnFact]] = field(default_factory=dict)
    conds: dict[str, list[str]] = field(default_factory=dict)  # cond texts by scope

    @classmethod
    def build(cls, facts: FileFacts) -> ModuleSymbols:
        table = cls(facts.module, facts.rel, facts)
        table.add_names(facts)
        for call in facts.calls:
            table.calls.setdefault(call.scope, []).append(call)
        for raise_ in facts.raises:
            table.raises.setdefault(raise_.scope, []).append(raise_)
        for assert_ in facts.asserts:
            table.asserts.setdefault(assert_.scope, []).append(assert_)
        for return_ in facts.returns:
            table.returns.setdefault(return_.scope, []).append(return_)
        for cond, scope in zip(facts.conds, facts.cond_scope):
            table.conds.setdefault(scope, []).append(cond.text)
        return table


class Resolver:
    """The kernel library's call-graph view of one package's tree; names are
    resolved by :attr:`names`, modules parsed on demand."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.package = index.tree.package
        self.names = Names(index, ModuleSymbols.build, self._loose_names_of)
        self._lines: dict[str, list[bytes]] = {}
        self._loose: dict[tuple[str, str], frozenset[str]] = {}
        self._loose_lines: dict[str, tuple[list[int], list[tuple[str, ...]]]] = {}
        #: per-tree memo for recognisers (keyed by a tuple starting with their name)
        self.cache: dict[tuple[str, ...], object] = {}

    def line_text(self, rel: str, line: int) -> str:
        """Line ``line`` (1-based) of ``rel``, stripped; files are split once."""
        if rel not in self._lines:
            data = self.index.data(rel)
            self._lines[rel] = data.split(b"\n") if data is not None else []
        lines = self._lines[rel]
        if not 0 < line <= len(lines):
            return ""
        return lines[line - 1].decode("utf-8", "replace").strip()

    # -- modules ---------------------------------------------------------------------
    def symbols(self, module: str) -> ModuleSymbols | None:
        table = self.names.scopes(module)
        assert table is None or isinstance(table, ModuleSymbols)  # built by ModuleSymbols.build
        return table

    def loaded_modules(self) -> list[str]:
        return self.names.loaded_modules()

    def function_fact(self, function_id: str) -> tuple[ModuleSymbols, FunctionFact] | None:
        """The symbols and FunctionFact behind a qualified function name."""
        module, qualname = self.split_id(function_id)
        if module is None:
            return None
        table = self.symbols(module)
        if table is None or qualname not in table.functions:
            return None
        return table, table.functions[qualname]

    def split_id(self, qualified: str) -> tuple[str | None, str]:
        """``pkg.mod.Class.meth`` -> (``pkg.mod``, ``Class.meth``) by the longest module."""
        return self.names.split_qualified(qualified)

    def loose_names(self, table: ModuleSymbols, scope: str) -> frozenset[str]:
        """Names a function binds in ways the Index does not record (see _LOOSE_BINDINGS).

        The file is scanned once; a function gets the names bound on its lines
        (a nested function's names count for the outer one too: they only ever
        turn an unresolved callee into a dynamic one)."""
        key = (table.module, scope)
        if key not in self._loose:
            fn = table.functions.get(scope)
            names: set[str] = set()
            if fn is not None:
                lines, bound = self._loose_by_line(table.rel)
                for index in range(bisect.bisect_left(lines, fn.line),
                                   bisect.bisect_right(lines, fn.end_line)):
                    names.update(bound[index])
            self._loose[key] = frozenset(names)
        return self._loose[key]

    def _loose_by_line(self, rel: str) -> tuple[list[int], list[tuple[str, ...]]]:
        """(sorted lines, names bound on each), from one pass of each pattern."""
        if rel not in self._loose_lines:
            data = self.index.data(rel) or b""
            text = data.decode("utf-8", "replace")
            starts = [0] + [m.end() for m in re.finditer("\n", text)]
            by_line: dict[int, list[str]] = {}
            for needle, pattern in _LOOSE_BINDINGS:
                if needle not in text:  # most files have no walrus, global, ...
                    continue
                for match in pattern.finditer(text):
                    line = bisect.bisect_right(starts, match.start())
                    by_line.setdefault(line, []).extend(_WORD.findall(match.group(1)))
            ordered = sorted(by_line)
            self._loose_lines[rel] = (ordered, [tuple(by_line[n]) for n in ordered])
        return self._loose_lines[rel]

    def _loose_names_of(self, table: ModuleScopes, scope: str) -> frozenset[str]:
        assert isinstance(table, ModuleSymbols)
        return self.loose_names(table, scope)

    # -- resolution (delegated to names) -------------------------------------------------
    def resolve_dotted(self, dotted: str) -> Target:
        """A public or module path -> what defines it (follows re-exports)."""
        return self.names.resolve_path(dotted)

    def resolve_call(self, module: str, scope: str, text: str) -> Target:
        """What the callee text ``text`` names, called from ``scope`` of ``module``."""
        return self.names.resolve_reference(module, scope, text)

    def find_method(self, table: ModuleSymbols, class_qualname: str, name: str) -> Target | None:
        """A method of a class or of its in-tree bases (first found, in base order)."""
        return self.names.find_method(table, class_qualname, name)
