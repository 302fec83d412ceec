"""guards (calls): a call of a function of the tree, by interpreting its body with
the arguments bound.

Each function is read once per distinct set of bound arguments (the values are
hashable, so they key the memo). Its returns are combined with the conditions
they stand under; a raise leaves without a value, so the remaining returns
decide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ConstV,
    CudaV,
    DevQ,
    FuncV,
    OptV,
    PredV,
    TupleV,
    UnkV,
    Value,
    Wrapper,
)
from guardscan.index.facts import FunctionFact, ReturnFact
from guardscan.index.observe import FactsView, Reads
from guardscan.predicate import (
    FALSE,
    Const,
    Context,
    OptionIs,
    Predicate,
    Tri,
    Unknown,
    atoms,
    conj,
    disj,
)
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["MAX_GUARD_ATOMS", "FunctionCalls"]

#: A function whose meaning needs more atoms than this is not read as a guard.
MAX_GUARD_ATOMS = 16


class FunctionCalls:
    """Calls of the tree's functions, memoised by (function, bound arguments)."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.index = interpreter.index
        self.tables = interpreter.tables
        self.stack = interpreter.stack
        self.func_memo: dict[tuple[str, str, tuple[tuple[str, Value], ...]], tuple[
            Value, tuple[tuple[str, int], ...], Reads]] = {}
        self.returns_of: dict[str, dict[str, list[ReturnFact]]] = {}
        # built from a file's facts: let go with them
        self.index.let_go_with(self.forget)

    def forget(self, rel: str) -> None:
        """Let go of ``rel``'s table of returns (the index let go of its facts)."""
        self.returns_of.pop(rel, None)

    def clear(self) -> None:
        self.func_memo.clear()
        self.returns_of.clear()

    def returns_by_scope(self, facts: FactsView) -> dict[str, list[ReturnFact]]:
        """A file's return statements by function, in file order (the caller
        notes the scope it reads)."""
        table = self.returns_of.get(facts.rel)
        if table is None:
            table = self.returns_of[facts.rel] = {}
            for ret in facts.unobserved.returns:
                table.setdefault(ret.scope, []).append(ret)
        return table

    def call_value(self, callee: Value) -> Value:
        """Call a function value with no arguments (a probe, a partial, a cached helper)."""
        if isinstance(callee, FuncV):
            return self.call_function(callee, [], {})
        if isinstance(callee, Wrapper):
            applied = callee.apply([], {})
            if isinstance(applied, FuncV):
                return self.call_function(applied, [], {})
            return applied
        return UnkV("not callable")

    def call_function(self, func: FuncV, args: list[Value], kwargs: dict[str, Value]) -> Value:
        facts = self.index.view(func.rel)
        if facts is None:
            return UnkV("function's file not analysed")
        facts.note("func", func.qualname)
        defs = self.tables.functions(facts)[0].get(func.qualname)
        if not defs:
            return UnkV(f"no definition of {func.qualname}")
        fdef = defs[0]
        bindings: dict[str, Value] = {}
        params = list(fdef.params)
        if fdef.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        for pname, default in fdef.defaults:
            node = parse_expr(default)
            if node is not None:
                bindings[pname] = self.interpreter.value_of(node, func.rel, fdef.scope,
                                                            fdef.line, {})
        for pname, value in func.bound:
            bindings[pname] = value
        for pname, value in zip(params, [*func.positional, *args]):
            bindings[pname] = value
        bindings.update({k: v for k, v in kwargs.items() if k in fdef.params})
        key_bindings = tuple(sorted((k, v) for k, v in bindings.items()
                                    if not isinstance(v, UnkV)))
        key = (func.rel, func.qualname, key_bindings)
        stack = self.stack
        hit = self.func_memo.get(key)
        if hit is not None:
            stack.replay(hit[1], hit[2])
            return hit[0]
        if key in stack.active:
            stack.cut(key)
            return UnkV(f"recursive call to {func.qualname}")
        state = stack.enter(key)
        stack.trail.append((func.rel, fdef.line))
        try:
            value = self._interpret(facts, func.rel, fdef, bindings)
        finally:
            pure, reads = stack.leave(key, state)
        if pure:
            self.func_memo[key] = (value, stack.trail_since(state), reads)
        return value

    def _computed_value(self, results: list[tuple[Predicate, Value]]) -> Value | None:
        """Returns that compute a value rather than a truth (text, a number, the
        option's value): the one return that is reached, or, where the
        conditions test one option's value only, what each choice of it gets
        (a ``ChoiceV``). None for returns of truths, which combine as a guard."""
        def computed(value: Value) -> bool:
            return isinstance(value, (OptV, ChoiceV, TupleV, AltV)) or isinstance(
                value, ConstV) and value.value is not None and not isinstance(value.value, bool)
        if not any(computed(v) for _, v in results):
            return None
        live = [(c, v) for c, v in results if c != FALSE]
        if len(live) == 1:
            return live[0][1]
        if not all(computed(v) or isinstance(v, ConstV) for _, v in live):
            return None
        tests = [a for c, _ in live for a in atoms(c) if not isinstance(a, Const)]
        dests = {a.option for a in tests if isinstance(a, OptionIs)}
        if len(dests) != 1 or not all(isinstance(a, OptionIs) for a in tests):
            return None
        dest = dests.pop()
        table = []
        for choice in self.interpreter.options.dests.get(dest, ()):
            context = Context(options={dest: choice})
            taken = next((v for c, v in live if c.evaluate(context) is Tri.TRUE), None)
            if isinstance(taken, OptV):
                taken = ConstV(choice) if taken.dest == dest else None
            elif isinstance(taken, ChoiceV):
                taken = taken.of(choice) if taken.dest == dest else None
            table.append((choice, taken if taken is not None else UnkV("no return reached")))
        return ChoiceV(dest, tuple(table)) if table else None

    def _interpret(self, facts: FactsView, rel: str, fdef: FunctionFact,
                   bindings: dict[str, Value]) -> Value:
        facts.note("scope", fdef.qualname)
        returns = self.returns_by_scope(facts).get(fdef.qualname, ())
        if not returns:
            return UnkV(f"{fdef.name}() returns nothing readable")
        results: list[tuple[Predicate, Value]] = []
        for ret in returns:
            node = parse_expr(ret.value) if ret.value else None
            value: Value = self.interpreter.value_of(node, rel, fdef.qualname, ret.line, bindings) \
                if node is not None else ConstV(None)
            cond = self.interpreter.names.path_pred(facts, rel, fdef.qualname, ret.path, bindings)
            results.append((cond, value))
        # a raise leaves without a value; the remaining returns decide
        computed = self._computed_value(results)
        if computed is not None:
            return computed
        truths = [v for _, v in results if isinstance(v, PredV) or isinstance(
            v, ConstV) and isinstance(v.value, bool)]
        if all(isinstance(v, (PredV, ConstV)) for _, v in results) or truths and all(
                isinstance(v, (PredV, ConstV, UnkV)) for _, v in results):
            # a guard's returns; one not read here (``return envs.X.get()``)
            # is an undecided truth beside the others, never a guess
            pred = disj(*(conj(c, Unknown(v.reason) if isinstance(v, UnkV) else
                               self.interpreter.to_pred(v)) for c, v in results))
            if len(atoms(pred)) > MAX_GUARD_ATOMS:
                return UnkV(f"{fdef.name}() is too large to read as a guard")
            return PredV(pred)
        device = [v for _, v in results if isinstance(v, (DevQ, CudaV))]
        if device and all(v == device[0] for v in device):
            # the other returns are fallbacks (non-CUDA platforms, probing errors):
            # on the NVIDIA devices we judge the function yields this quantity.
            return device[0]
        live = [(c, v) for c, v in results if c != FALSE]
        if len(live) == 1:
            return live[0][1]
        if live and all(getattr(v, "or_none", False) or v == ConstV(None) for _, v in live):
            # an object or None by the path taken (``hybrid_gdn_config``
            # returning the model's config where ``isinstance`` holds)
            return AltV(tuple(live))
        kinds = {type(v).__name__ for _, v in results}
        return UnkV(f"{fdef.name}() returns {'/'.join(sorted(kinds))}")
