"""guards (instance attributes): what ``self.x`` holds in a method, from where the class sets it.

SGLang often decides once, in ``__init__``, and reads the decision elsewhere::

    if get_platform().is_sm100:
        self._fi_kernel = "trtllm_sm100"
    elif get_platform().is_sm90:
        self._fi_kernel = "cutlass_sm90"
    ...
    def apply(self, ...):
        if self._fi_kernel == "cutlass_sm90":
            return self._apply_sm90_cutlass(...)

``self._fi_kernel`` read in ``apply`` is an ``AltV``: each value the class
assigns, under the condition of its assignment (later assignments in the
setting method override earlier ones where their condition holds). Compared
with a constant it is the disjunction of the conditions of the equal values,
so the branch taken on each arch can be told apart. Attributes set in more than
one method keep the other methods' values under an undecided condition (which
method ran last is not known here); an attribute never set reads as unknown.
Read in the method that sets it, after its own unconditional assignment, the
attribute is that assignment's value. An attribute the class never assigns
but defines in its own body as a ``@property`` is what the property returns
(``self._is_cutedsl_v1_deepep``: ``is_flashinfer_cutedsl_v1_path()``; the
interpreter's ``_own_property``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.values import AltV, ConstV, EnumMemberV, OptV, PredV, UnkV, Value
from guardscan.index.facts import AssignFact
from guardscan.index.observe import FactsView, Reads
from guardscan.predicate import FALSE, TRUE, Predicate, Unknown, conj, disj, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["MAX_ALTERNATIVES", "InstanceAttributes", "enclosing_class"]

#: More alternatives than this and the attribute reads as unknown.
MAX_ALTERNATIVES = 8

#: More alternatives than this, read with a method's arguments, and it is unknown.
MAX_BOUND_ALTERNATIVES = 24

#: values an alternative may hold (decidable in a comparison or as a truth)
_COMPARABLE = (ConstV, PredV, EnumMemberV, OptV)


class InstanceAttributes:
    """``self.<attr>`` in a method: its value from the class's assignments."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.memo: dict[tuple[str, str, str], tuple[
            Value | None, tuple[tuple[str, int], ...], Reads]] = {}

    def clear(self) -> None:
        self.memo.clear()

    def value(self, rel: str, scope: str, attr: str, line: int = 0) -> Value | None:
        """The value of ``self.attr`` read in ``scope`` at ``line`` (None: the
        class sets no such attribute, or ``scope`` is not in a method)."""
        facts = self.interpreter.index.view(rel)
        if facts is None:
            return None
        if line:
            latest = self._set_just_before(facts, scope, attr, line)
            if latest is not None:
                return self.interpreter.names.assign_value(rel, latest, f"self.{attr}")
        cls = enclosing_class(facts, scope)
        if not cls:
            return None
        key = (rel, cls, attr)
        stack = self.interpreter.stack
        hit = self.memo.get(key)
        if hit is not None:
            stack.replay(hit[1], hit[2])
            return hit[0]
        if key in stack.active:
            stack.cut(key)
            return UnkV(f"self.{attr} depends on itself")
        state = stack.enter(key)
        try:
            value = self._compute(facts, rel, cls, attr)
        finally:
            pure, reads = stack.leave(key, state)
        if pure:
            self.memo[key] = (value, stack.trail_since(state), reads)
        return value

    def bound(self, rel: str, scope: str, attr: str, line: int, env: dict[str, Value]
              ) -> Value | None:
        """``self.attr`` read at ``line`` of the method ``scope``, which sets
        it itself before that line, with the method's arguments bound in
        ``env`` and the line read along a path (``Interpreter.reading_along``):
        each of the method's own assignments before the line under its branch
        tests read with those arguments, a later one overriding an earlier one
        where it runs; unknown on a way that sets it nowhere in the method.
        Never memoised: it depends on the arguments."""
        facts = self.interpreter.index.view(rel)
        if facts is None:
            return None
        target = f"self.{attr}"
        before = sorted((a for a in facts.in_scope("assigns", scope)
                         if target in a.targets and a.line < line), key=lambda a: a.line)
        if not before:
            return None
        interp = self.interpreter
        # alternatives as the method leaves them: (condition, value); None: not set
        alternatives: list[tuple[Predicate, Value | None]] = [(TRUE, None)]
        for assign in before:
            along = interp.dominates(rel, scope, assign.path)
            cond = TRUE if along else interp.names.path_pred(facts, rel, scope, assign.path, env)
            node = interp.parse(assign.value) if assign.value else None
            if node is None:
                return None
            with interp.reading_along(rel, scope, assign.path):
                value = interp.value_of(node, rel, scope, assign.line, dict(env))
            alternatives = [(cond, value), *[(conj(neg(cond), c), v) for c, v in alternatives]]
            alternatives = [(c, v) for c, v in alternatives if c != FALSE]
            if len(alternatives) > MAX_BOUND_ALTERNATIVES:
                return None
        merged: dict[Value, Predicate] = {}
        for cond, held in alternatives:
            value = held if held is not None else UnkV(f"self.{attr} not set on this way")
            merged[value] = disj(merged[value], cond) if value in merged else cond
        if len(merged) == 1:
            return next(iter(merged))
        return AltV(tuple((c, v) for v, c in merged.items()))

    @staticmethod
    def _set_just_before(facts: FactsView, scope: str, attr: str, line: int
                         ) -> AssignFact | None:
        """The method's own latest assignment of ``self.attr`` before ``line``,
        when it is unconditional: read later in the same method, that is the
        value (``self.use_mxfp8 = ...`` then ``if self.use_mxfp8 and ...``),
        whatever other methods set."""
        target = f"self.{attr}"
        before = [a for a in facts.in_scope("assigns", scope)
                  if target in a.targets and a.line < line]
        if not before:
            return None
        latest = max(before, key=lambda a: a.line)
        return None if latest.path else latest

    def _compute(self, facts: FactsView, rel: str, cls: str, attr: str) -> Value | None:
        target = f"self.{attr}"
        assigns = [a for a in facts.in_tree("assigns", cls)
                   if target in a.targets and a.scope.startswith(cls + ".")]
        if not assigns:
            return None
        by_method: dict[str, list[AssignFact]] = {}
        for assign in assigns:
            method = cls + "." + assign.scope[len(cls) + 1:].split(".")[0]
            by_method.setdefault(method, []).append(assign)
        setter = f"{cls}.__init__" if f"{cls}.__init__" in by_method else next(iter(by_method))
        lookup = self.interpreter.names
        if len(assigns) == 1 and not assigns[0].path:
            return lookup.assign_value(rel, assigns[0], target)
        # alternatives as the setter leaves them: (condition, value); None: not set
        alternatives: list[tuple[Predicate, Value | None]] = [(TRUE, None)]
        for assign in sorted(by_method[setter], key=lambda a: a.line):
            if assign.scope != setter:
                return UnkV(f"self.{attr} is set in a nested function")
            assigned = lookup.assign_value(rel, assign, target)
            if not isinstance(assigned, _COMPARABLE):
                return UnkV(f"self.{attr} is set to a value not known here")
            cond = lookup.path_pred(facts, rel, assign.scope, assign.path)
            alternatives = [(cond, assigned), *[
                (conj(neg(cond), c), v) for c, v in alternatives]]
            alternatives = [(c, v) for c, v in alternatives if c != FALSE]
            if len(alternatives) > MAX_ALTERNATIVES:
                return UnkV(f"self.{attr} has too many values")
        others = [m for m in by_method if m != setter]
        out: list[tuple[Predicate, Value]] = []
        for cond, held in alternatives:
            if others:  # another method may have set it since
                cond = conj(cond, Unknown(f"self.{attr} not set since by "
                                          f"{others[0].rsplit('.', 1)[-1]}()"))
            out.append((cond, held if held is not None else UnkV(f"self.{attr} not set")))
        if others:
            out.append((Unknown(f"self.{attr} set by {others[0].rsplit('.', 1)[-1]}()"),
                        UnkV(f"self.{attr} as another method sets it")))
        return AltV(tuple(out))


def enclosing_class(facts: FactsView, scope: str) -> str:
    """The class whose method ``scope`` is (or is nested in)."""
    current = scope
    while current:
        func = facts.function(current)
        if func is not None and func.cls:
            return func.cls
        current = current.rpartition(".")[0]
    return ""
