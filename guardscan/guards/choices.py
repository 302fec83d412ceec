"""guards (choice values): what a computation on a backend option's value comes to, choice by choice.

SGLang rarely hands the option's string on unchanged. It maps it first:
``backend.removeprefix("flashinfer_")``, an enum method such as
``Fp4GemmRunnerBackend.get_flashinfer_backend()``, an f-string, ``.lower()``.
Where the interpreter meets such a computation on an ``OptV`` (the option's
value), it interprets it once per choice, with the value as a known input:
the enum's method body is read with ``self`` bound to that member, a string
method is applied to the choice's text. The result is a ``ChoiceV``: for each
choice, what the computation gives (a constant where it can be decided). Later
stages read it where the value goes next: a ``backend=`` argument handed to
the kernel library is judged against that key for each choice, and a
comparison of a ``ChoiceV`` with a constant is an option test.

String methods are applied by Python's own ``str``, to constants only: no
scanned code is run. Known limits: a computation that is not a string method,
an enum method, an f-string or a comparison stays unknown (errs toward
``unknown``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardscan.guards.values import ChoiceV, ConstV, EnumMemberV, FuncV, OptV, UnkV, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["STRING_METHODS", "ChoiceValues", "choice_text"]

#: ``str`` methods applied to constant text (pure functions of their arguments).
STRING_METHODS = frozenset({
    "removeprefix", "removesuffix", "replace", "lower", "upper", "strip", "lstrip", "rstrip",
    "startswith", "endswith", "title", "capitalize", "casefold", "split", "partition",
})


def choice_text(value: Value) -> str | None:
    """The text of a constant string, or of an enum member of one known value."""
    if isinstance(value, ConstV) and isinstance(value.value, str):
        return value.value
    if isinstance(value, EnumMemberV) and len(value.values) == 1:
        return next(iter(value.values))
    return None


class ChoiceValues:
    """Per-choice interpretation of computations on an option's value."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self._method_names: set[str] | None = None

    def clear(self) -> None:
        self._method_names = None

    def method_call(self, node: ast.Call, func: ast.Attribute, rel: str, scope: str,
                    line: int, env: dict[str, Value]) -> Value | None:
        """``x.m(...)`` where ``x`` is an option's value, or constant text: a
        string method or the option's enum method, read per choice
        (``guards.choices``); None for any other call."""
        base = self.interpreter.value_of(func.value, rel, scope, line, env)
        if not isinstance(base, (OptV, ChoiceV, ConstV, EnumMemberV)):
            return None
        args = [self.interpreter.value_of(a, rel, scope, line, env) for a in node.args
                if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.interpreter.value_of(k.value, rel, scope, line, env)
                  for k in node.keywords if k.arg}
        if isinstance(base, (OptV, ChoiceV)):
            value = self.enum_method(base, func.attr, args, kwargs)
            if value is not None:
                return value
        return self.string_method(base, func.attr, args, kwargs)

    def may_be_method(self, name: str) -> bool:
        """Could ``x.name(...)`` be a computation on an option's value (a string
        method, or a method of an enum that models an option)?"""
        if name in STRING_METHODS:
            return True
        interpreter = self.interpreter
        names = self._method_names
        if names is None:
            names = self._method_names = set()
            for entries in interpreter.options.dest_enums.values():
                for rel, cls in entries:
                    view = interpreter.index.view(rel)
                    if view is not None:
                        names.update(f.name for f in view.unobserved.functions if f.cls == cls)
        if name not in names:
            # (an enum class's file is read whole by the options stage: a method
            # added there is a change every scan sees)
            return False
        for entries in interpreter.options.dest_enums.values():
            for rel, cls in entries:
                view = interpreter.index.view(rel)
                if view is not None:
                    view.note("cls", cls)  # what the answer was made of, for this reader
        return True

    def choices(self, dest: str) -> tuple[str, ...]:
        return self.interpreter.options.dests.get(dest, ())

    def per_choice(self, dest: str, compute: Callable[[Value], Value]) -> Value:
        """``compute`` applied to each choice of ``dest`` (as an enum member of
        that one value); one value when every choice gives the same."""
        table = []
        for choice in self.choices(dest):
            table.append((choice, compute(EnumMemberV(frozenset({choice})))))
        if not table:
            return UnkV(f"{dest} has no known choices")
        first = table[0][1]
        if all(v == first for _, v in table):
            return first
        if all(isinstance(v, UnkV) for _, v in table):
            return first
        return ChoiceV(dest, tuple(table))

    def spread(self, value: Value, compute: Callable[[Value], Value]) -> Value:
        """``compute`` over a value that depends on the choice: the option's
        own value, or a ``ChoiceV`` (each choice's entry in turn)."""
        if isinstance(value, OptV):
            return self.per_choice(value.dest, compute)
        if isinstance(value, ChoiceV):
            table = tuple((c, compute(v)) for c, v in value.table)
            first = table[0][1] if table else UnkV("no choices")
            if all(v == first for _, v in table):
                return first
            return ChoiceV(value.dest, table)
        return compute(value)

    def string_method(self, base: Value, name: str, args: list[Value],
                      kwargs: dict[str, Value]) -> Value | None:
        """``base.name(*args)`` for a ``str`` method on constant text; None when
        this is not such a call."""
        if name not in STRING_METHODS or kwargs:
            return None
        if isinstance(base, (OptV, ChoiceV)):
            return self.spread(base, lambda v: self.string_method(v, name, args, kwargs)
                               or UnkV(f".{name}()"))
        text = choice_text(base)
        if text is None:
            return None
        values = []
        for arg in args:
            if not isinstance(arg, ConstV) or not isinstance(arg.value, (str, int, tuple)):
                return UnkV(f".{name}() of a value not known here")
            values.append(arg.value)
        try:
            result = getattr(str, name)(text, *values)
        except Exception:  # noqa: BLE001 - arguments of any type may reach a str method
            return UnkV(f".{name}()")
        return ConstV(result)

    def enum_method(self, base: OptV | ChoiceV, name: str, args: list[Value],
                    kwargs: dict[str, Value]) -> Value | None:
        """``value.name(...)`` where ``name`` is a method of the enum that models
        the option: its body read once per choice with ``self`` that member."""
        dest = base.dest
        method = self._method(dest, name)
        if method is None:
            return None
        calls = self.interpreter.calls

        def call(member: Value) -> Value:
            if not isinstance(member, EnumMemberV):
                return UnkV(f".{name}() of a value not known here")
            bound = FuncV(method.rel, method.qualname, (("self", member),))
            return calls.call_function(bound, args, kwargs)
        return self.spread(base, call)

    def _method(self, dest: str, name: str) -> FuncV | None:
        interpreter = self.interpreter
        for rel, cls in interpreter.options.dest_enums.get(dest, ()):
            view = interpreter.index.view(rel)
            if view is None:
                continue
            func = interpreter.tables.class_function(view, cls, name)
            if func is not None:
                return FuncV(rel, func.qualname)
        return None

    def formatted(self, parts: list[str | Value]) -> Value | None:
        """An f-string with the option's value among its parts."""
        varying = [p for p in parts if isinstance(p, (OptV, ChoiceV))]
        if not varying:
            return None
        dests = {p.dest for p in varying}
        if len(dests) != 1:
            return UnkV("formatted string of several options")
        dest = dests.pop()

        def text_of(part: str | Value, member: EnumMemberV) -> str | None:
            if isinstance(part, str):
                return part
            if isinstance(part, OptV):
                return choice_text(member)
            if isinstance(part, ChoiceV):
                choice = choice_text(member)
                entry = part.of(choice) if choice is not None else None
                return choice_text(entry) if entry is not None else None
            return choice_text(part) if isinstance(part, (ConstV, EnumMemberV)) else None

        def compute(member: Value) -> Value:
            assert isinstance(member, EnumMemberV)
            texts = [text_of(p, member) for p in parts]
            if any(t is None for t in texts):
                return UnkV("formatted string")
            return ConstV("".join(t for t in texts if t is not None))
        return self.per_choice(dest, compute)
