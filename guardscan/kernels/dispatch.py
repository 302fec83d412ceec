"""kernels (form 4): functions that dispatch among per-arch implementations.

What it recognises
    (a) an ``if`` / ``elif`` chain on a capability-derived value whose branches
    call something and whose fall-through raises::

        if backend in ("120", "121"): module = gen_cutlass_fused_moe_sm120_module()
        elif backend == "103":        module = gen_cutlass_fused_moe_sm103_module()
        else: raise ValueError(f"Invalid backend: {backend}")

    (b) a literal table keyed by arch with a membership check that raises::

        backend_modules = {"120": gen_fp4_quantization_sm120_module, ...}
        if backend not in backend_modules: raise ValueError(...)
        module = backend_modules[backend]()

    The fact's predicate is where the raise is *not* reached (the union of the
    branches); each branch is recorded with the archs it is taken on and its
    callees, and the calls become ``select`` edges so ``support`` follows the
    branch the arch takes.
Why it matters
    The arch either has its own implementation (whose JIT spec or decorator
    then decides), or the dispatch raises: that is the whole per-arch story of
    ``flashinfer_cutlass`` MoE and FP4 quantization.
Known limits
    The key's meaning comes from ``bindings``: when the callers cannot be read
    the digit strings are read as SM numbers and the fact's note says
    ``unknown-key``. Dispatch through ``getattr`` or registries is not read.
Example
    The chain above, with ``backend`` always ``f"{major * 10 + minor}"``, gives
    ``sm in [120, 121] or sm == 103`` and on sm120 the branch calling
    ``gen_cutlass_fused_moe_sm120_module``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from guardscan.index.facts import CallFact, FunctionFact, RaiseFact
from guardscan.kernels.model import Branch, KernelFact
from guardscan.kernels.paths import BRANCH_KINDS, PathReader, negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Predicate
from guardscan.syntax import dotted, parse_expr, segment

__all__ = ["DispatchResult", "TableEdge", "recognise_dispatch"]


@dataclass(frozen=True, slots=True)
class TableEdge:
    """A callee reached through a dispatch table, and the archs that pick it."""

    callee: str
    predicate: Predicate
    line: int
    text: str  # ``backend == "120"``


@dataclass(slots=True)
class DispatchResult:
    facts: list[KernelFact] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    claimed: set[int] = field(default_factory=set)  # raise lines explained as dispatch
    edges: list[TableEdge] = field(default_factory=list)


def _names_in(text: str) -> set[str]:
    node = parse_expr(text)
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def recognise_dispatch(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                       paths: PathReader) -> DispatchResult:
    """Dispatch facts and branches of one function."""
    result = DispatchResult()
    scope = fn.qualname
    calls = table.calls.get(scope, [])
    raises = table.raises.get(scope, [])
    names = paths.names(table, scope)
    for found in raises:
        raise_ = found._replace(
            path=paths.effective_path(table, scope, found.line, found.path))
        if any(table.facts.cond(i).kind not in BRANCH_KINDS for i in raise_.path):
            continue
        if _chain(resolver, table, fn, paths, raise_, calls, names.guessed, result):
            continue
        _table(resolver, table, fn, paths, raise_, names.guessed, result)
    return result


def _callee_names(resolver: Resolver, table: ModuleSymbols, calls: list[CallFact]) -> list[str]:
    out = []
    for call in calls:
        target = resolver.resolve_call(table.module, call.scope, call.func)
        if target.kind == "function":
            out.append(target.name)
    return list(dict.fromkeys(out))


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _fact(table: ModuleSymbols, fn: FunctionFact, resolver: Resolver, raise_: RaiseFact,
          predicate: Predicate, branches: list[Branch], guessed: bool) -> KernelFact:
    arms = [f"{b.predicate.describe()} -> {', '.join(_short(c) for c in b.callees) or '?'}"
            for b in branches]
    note = "branches: " + "; ".join(arms) + "; otherwise raises"
    if guessed:
        note += "; unknown-key: callers do not establish the key, digit strings read as SM"
    return KernelFact(
        function=f"{table.module}.{fn.qualname}", kind="dispatch", rel=table.rel,
        line=raise_.line, text=resolver.line_text(table.rel, raise_.line),
        predicate=predicate, note=note,
    )


def _chain(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact, paths: PathReader,
           raise_: RaiseFact, calls: list[CallFact], guessed: set[str],
           result: DispatchResult) -> bool:
    scope = fn.qualname
    branches: list[Branch] = []
    uses_guess = False
    # the raise must sit in the chain's fall-through: its path ends in the chain's
    # negated tests (a raise nested inside one branch is a check, not a dispatch)
    suffix: list[int] = []
    for signed in reversed(raise_.path):
        if signed > 0 or paths.device_predicate(table, scope, signed) is None:
            break
        suffix.insert(0, signed)
    for signed in suffix:
        pred = paths.device_predicate(table, scope, signed)
        assert pred is not None
        in_branch = [c for c in calls if -signed in c.path]
        callees = _callee_names(resolver, table, in_branch)
        if not callees:
            continue  # a branch that only raises or computes is not an implementation
        cond = table.facts.cond(signed)
        branches.append(Branch(pred, tuple(callees), table.rel, cond.line, cond.text))
        uses_guess = uses_guess or bool(_names_in(cond.text) & guessed)
    if not branches:
        return False
    predicate = negate(paths.path_predicate(table, scope, raise_.path))
    result.facts.append(_fact(table, fn, resolver, raise_, predicate, branches, uses_guess))
    result.branches.extend(branches)
    result.claimed.add(raise_.line)
    return True


def _table(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact, paths: PathReader,
           raise_: RaiseFact, guessed: set[str], result: DispatchResult) -> bool:
    """``if key not in TABLE: raise`` with ``TABLE = {"100": gen_sm100, ...}``."""
    scope = fn.qualname
    names = paths.names(table, scope)
    for signed in raise_.path:
        if signed < 0 or paths.device_predicate(table, scope, signed) is None:
            continue
        cond = table.facts.cond(signed)
        node = parse_expr(cond.text)
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                and isinstance(node.ops[0], ast.NotIn) and isinstance(node.left, ast.Name)
                and isinstance(node.comparators[0], ast.Name)):
            continue
        key, table_name = node.left.id, node.comparators[0].id
        quantity = names.quantities.get(key)
        assigns = table.assigns.get(scope, {}).get(table_name, [])
        if quantity is None or len(assigns) != 1:
            continue
        assign = assigns[0]
        dict_node = parse_expr(assign.value)
        if not isinstance(dict_node, ast.Dict):
            continue
        branches: list[Branch] = []
        for key_node, value in zip(dict_node.keys, dict_node.values):
            if not isinstance(key_node, ast.Constant):
                continue
            # ``key == "100"`` read as any condition is, ``key`` holding its quantity
            pred = paths.reader.read(f"{key} == {segment(assign.value, key_node)}", table.rel,
                                     scope, cond.line, {key: quantity})
            value_text = dotted(value)
            if pred is None or value_text is None:
                continue
            target = resolver.resolve_call(table.module, scope, value_text)
            callees = (target.name,) if target.kind == "function" else ()
            line = assign.line + key_node.lineno - 1
            branches.append(Branch(pred, callees, table.rel, line,
                                   segment(assign.value, key_node) + ": " + value_text))
            if callees:
                key_text = f"{key} == {segment(assign.value, key_node)}"
                result.edges.append(TableEdge(target.name, pred, line, key_text))
        if not branches:
            continue
        predicate = negate(paths.path_predicate(table, scope, raise_.path))
        result.facts.append(_fact(table, fn, resolver, raise_, predicate, branches,
                                  key in guessed))
        result.branches.extend(branches)
        result.claimed.add(raise_.line)
        return True
    return False
