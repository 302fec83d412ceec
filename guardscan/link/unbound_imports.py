"""link (unbound imports): a call through a module name that only a conditional import binds.

What it recognises
    A module-level name whose every binding is an ``import`` under a branch
    test, and a call through it in a function of the same file, where no
    local binding shadows it::

        if ENABLE_JIT_DEEPGEMM:
            import deep_gemm
        ...
        def grouped_gemm_nt_f8f8bf16_masked(...):
            return deep_gemm.fp8_m_grouped_gemm_nt_masked(...)

    Where the test is false the name is never bound and the call raises
    ``NameError``: a failure whose condition is the call's path and the
    negation of the import's test. It joins the file's raises and asserts
    (``Conditions.failure_conditions``), so it counts wherever a choice's
    code reaches the function, like any other rejection.
Why it matters
    SGLang's DeepGEMM wrapper imports ``deep_gemm`` only where
    ``ENABLE_JIT_DEEPGEMM`` holds, which is false below SM90 and on SM120.
    ``--moe-runner-backend deep_gemm`` there raises no ``ValueError`` of its
    own: its first grouped GEMM meets an unbound name. Without this reading
    the choice had no architecture evidence at all.
Known limits
    Only calls (``name.attr(...)``, ``name(...)``) are uses; a name passed
    as a value is not. A use guarded by the import's own test (``if not
    ENABLE_JIT_DEEPGEMM: return`` before it) is a failure whose condition is
    false, so it never counts. A name bound by anything but an import at
    module level (an assignment in an ``except``, a ``def``), or declared
    ``global`` in a function, is left alone: some binding may hold. A
    function defined under the import's test never meets the name. Imports
    in ``try`` bodies carry no branch test and are unconditional here. One
    failure per function and name, at the first call.
Example
    >>> from guardscan.index.facts import AssignFact, ImportFact
    >>> imports = [ImportFact("", "deep_gemm", "deep_gemm", None, 19, (3,)),
    ...            ImportFact("", "torch", "torch", None, 5)]
    >>> conditional_imports(imports, [], ())
    {'deep_gemm': (((3,),), 19)}
    >>> conditional_imports(imports, [AssignFact("", ("deep_gemm",), "None", 25, (-3,))], ())
    {}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from guardscan.index.facts import AssignFact, CallFact, ImportFact
from guardscan.index.observe import FactsView
from guardscan.predicate import Predicate, conj, neg

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions, Failure

__all__ = ["conditional_imports", "is_unbound_use", "unbound_uses"]

#: how the text of such a failure names its import (``is_unbound_use``)
_BOUND_ONLY_BY = " is bound only by the import at line "


def is_unbound_use(text: str) -> bool:
    """Whether a failure's text is that of a call through a name only a
    conditional import binds (``unbound_uses``).

    >>> is_unbound_use("deep_gemm.fp8_gemm(): deep_gemm is bound only by the import at line 19")
    True
    >>> is_unbound_use("raise ValueError")
    False
    """
    return _BOUND_ONLY_BY in text


def conditional_imports(imports: Iterable[ImportFact], assigns: Iterable[AssignFact],
                        other_bindings: Iterable[str]) -> dict[str, tuple[tuple[tuple[int, ...],
                                                                                  ...], int]]:
    """Module-level names bound only by imports under branch tests: name ->
    (the paths of those imports, the first import's line)."""
    paths: dict[str, list[tuple[int, ...]]] = {}
    lines: dict[str, int] = {}
    bound: set[str] = set(other_bindings)
    for imp in imports:
        if imp.scope or imp.local == "*":
            continue
        local = imp.local.split(".")[0]
        if not imp.path:
            bound.add(local)
            continue
        paths.setdefault(local, []).append(imp.path)
        lines.setdefault(local, imp.line)
    for assign in assigns:
        if not assign.scope:
            bound.update(t.split(".")[0].split("[")[0] for t in assign.targets)
    return {name: (tuple(p), lines[name]) for name, p in paths.items() if name not in bound}


def unbound_uses(facts: FactsView, conditions: Conditions,
                 scope_filter: str | None = None) -> Iterator[Failure]:
    """(scope, line, text, condition, path) of each first call, per function
    and name, through a name only a conditional import binds."""
    # only the imports are read for every file; the other bindings of a
    # candidate name are looked up by name, so an edit elsewhere in the file
    # (a new helper) is no change to what this read
    names = conditional_imports(facts.imports, (), ())
    if not names:
        return
    raw = facts.unobserved
    for name in list(names):
        facts.note("name", name)
        facts.note("func", name)
        facts.note("class", name)
    top_defs = [f.name for f in raw.functions if not f.scope and not f.cls and f.name in names]
    top_defs += [c.qualname for c in raw.classes if c.qualname in names]
    names = conditional_imports(facts.imports, [a for a in raw.assigns if not a.scope],
                                top_defs)
    if not names:
        return
    declared_global = {g for f in raw.functions for g in f.globals if g in names}
    calls: Iterable[CallFact] = facts.calls if scope_filter is None else \
        conditions.by_scope(facts, "calls", scope_filter)
    seen: set[tuple[str, str]] = set()
    for call in calls:
        name = call.func.split(".")[0].split("(")[0]
        if name not in names or name in declared_global or not call.scope \
                or (call.scope, name) in seen or _bound_locally(facts, call.scope, name):
            continue
        seen.add((call.scope, name))
        import_paths, import_line = names[name]
        unbound = conj(*(neg(_path(conditions, facts, p)) for p in import_paths))
        cond = conj(conditions.path(facts, call.path, call.scope),
                    _defined_when(conditions, facts, call.scope), unbound)
        # the hops show the import's test negated where it is one test
        shown = tuple(-s for s in import_paths[0]) if len(import_paths) == 1 and len(
            import_paths[0]) == 1 else import_paths[0]
        yield (call.scope, call.line,
               f"{call.func}(): {name}{_BOUND_ONLY_BY}{import_line}",
               cond, (*call.path, *shown))


def _path(conditions: Conditions, facts: FactsView, path: tuple[int, ...]) -> Predicate:
    return conj(*(conditions.cond(facts, signed) for signed in path))


def _defined_when(conditions: Conditions, facts: FactsView, scope: str) -> Predicate:
    """The branch tests a function and the functions around it are defined
    under (a helper defined under the import's own test never meets the
    unbound name)."""
    parts = []
    current = scope
    while current:
        func = facts.function(current)
        if func is not None and func.path:
            parts.append(_path(conditions, facts, func.path))
        current = current.rpartition(".")[0]
    return conj(*parts)


def _bound_locally(facts: FactsView, scope: str, name: str) -> bool:
    """Whether ``name`` is a parameter, an assignment or an import of the
    function ``scope`` or a function around it."""
    current = scope
    while current:
        func = facts.function(current)
        if func is not None and name in func.params:
            return True
        if any(name in a.targets for a in facts.in_scope("assigns", current)) or any(
                i.local.split(".")[0] == name for i in facts.in_scope("imports", current)):
            return True
        current = current.rpartition(".")[0]
    return False
