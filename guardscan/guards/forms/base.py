"""guards (forms): what a guard form is: the hooks the interpreter asks, and the
examples each form carries.

A form answers only for what it recognises and returns ``None`` for the rest,
so the interpreter can ask every registered form in order. The hooks are the
places where names from outside the tree (``torch.cuda.*``, ``functools.*``,
builtins) or device quantities meet the expression language: calls,
attributes, subscripts, arithmetic, comparisons, truth and unpacking.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from guardscan.guards.values import Value
from guardscan.predicate import Predicate

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["BUILTIN_MODULES", "Example", "GuardForm", "builtin_name"]

#: Modules whose functions the forms model by name, never by importing them.
BUILTIN_MODULES = ("functools", "builtins", "packaging.version", "cachetools")

#: The file an example's ``source`` is written to; the guard is read at its end.
EXAMPLE_FILE = "sglang/srt/guard_example.py"


@dataclass(frozen=True, slots=True)
class Example:
    """A source snippet, a guard expression read at the end of it (in ``scope``),
    and the expected truth row over sm80 sm86 sm89 sm90 sm100 sm103 sm110
    sm120 sm121 (``T``/``F``/``U``). An INVALID example expects ``U`` on every
    arch: the form must not claim it. ``files`` adds other files to the tree;
    ``model``, the model the launch serves (``architectures``,
    ``model_type``, ``attention_arch``: ``model_facts.ModelFacts``), where
    the guard tests one."""

    source: str
    guard: str
    row: str = "UUUUUUUUU"
    scope: str = ""
    files: tuple[tuple[str, str], ...] = ()
    model: tuple[tuple[str, str], ...] = ()


def builtin_name(path: str) -> str | None:
    """``functools.partial`` -> ``partial``, when the module is one the forms model."""
    module, _, name = path.rpartition(".")
    return name if module in BUILTIN_MODULES else None


class GuardForm:
    """One guard form. Subclasses set ``name``, carry the documented docstring
    (What it recognises / Why it matters / Known limits / Example), their
    ``VALID`` and ``INVALID`` examples, and override the hooks they need."""

    name: ClassVar[str] = ""
    #: builtin names the form reads (a name the tree does not define resolves to
    #: ``builtins.<name>`` only when some form reads it)
    builtins: ClassVar[frozenset[str]] = frozenset()
    #: value types that this form compares; they are put on the left of a comparison
    subjects: ClassVar[tuple[type, ...]] = ()
    VALID: ClassVar[tuple[Example, ...]] = ()
    INVALID: ClassVar[tuple[Example, ...]] = ()

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        """A call of a name from outside the tree, by qualified name."""
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        """A call of a value that is not a function of the tree."""
        return None

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        return None

    def subscript(self, base: Value, index: Value) -> Value | None:
        return None

    def binop(self, op: ast.operator, left: Value, right: Value) -> Value | None:
        return None

    def tuple_of(self, items: list[Value]) -> Value | None:
        return None

    def either(self, left: Value, right: Value) -> Value | None:
        """``left or right`` as a value (``config.architectures or [None]``)."""
        return None

    def formatted(self, parts: list[str | Value]) -> Value | None:
        """An f-string of these parts (text and values)."""
        return None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        return None

    def truth(self, value: Value) -> Predicate | None:
        """``value`` used as a condition."""
        return None

    def unpack(self, value: Value, index: int) -> Value | None:
        """Item ``index`` of ``a, b = value``."""
        return None
