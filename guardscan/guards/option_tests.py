"""guards (option tests): conditions on a backend option inside a guard, such as
``server_args.moe_runner_backend == "flashinfer_trtllm"``, ``backend.startswith(
"flashinfer")`` or the enum predicate method ``is_flashinfer_trtllm()``.

They read as ``OptionIs`` (``QuantIs`` for the quantization option), so the
link stage can tell which choice a guarded region belongs to. The options
themselves come from the options stage, as an ``OptionModel``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guardscan.guards.choices import choice_text
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConstV,
    EnumMemberV,
    FuncV,
    OptV,
    PredV,
    UnkV,
    Value,
)
from guardscan.index.facts import AssignFact, ImportFact
from guardscan.predicate import FALSE, TRUE, OptionIs, Predicate, QuantIs, Unknown, conj, disj, neg
from guardscan.syntax import parse_expr, unparse

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["OptionModel", "OptionTests"]


@dataclass
class OptionModel:
    """What the vocabulary needs to know about options to recognise option tests.

    ``dests``: option dest -> its choices; ``enum_predicates``: method name ->
    (dest, values) for enum predicate methods (``is_flashinfer_trtllm``);
    ``enum_members``: "Enum.MEMBER" -> value; ``enum_dests``: enum class name -> dest;
    ``quantization``: the quantization option's dest, if any; ``dest_enums``:
    dest -> the enum classes that model it, where their methods are read.
    """

    dests: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: method -> [(enum class, dest or None when the enum models no option, values)]
    enum_predicates: dict[str, list[tuple[str, str | None, frozenset[str]]]] = field(
        default_factory=dict)
    enum_members: dict[str, str] = field(default_factory=dict)
    enum_dests: dict[str, str] = field(default_factory=dict)
    quantization: str | None = None
    #: the file that defines the quantization option (its runtime's method
    #: tables are the ones nearest it)
    quantization_path: str = ""
    #: dest -> [(rel, class qualname in its file)] of the enums that model it
    dest_enums: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: names of the functions those enum classes define (methods read per choice)
    enum_methods: set[str] = field(default_factory=set)
    #: dest -> the options whose values the tree stores where its value is
    #: read (``link.shared_values``): its enum tests name them (``OptionIs.shared``)
    #: for the linker to copy what is found under them
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)


class OptionTests:
    """Option comparisons, enum members and enum predicate methods."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.options = interpreter.options
        self.index = interpreter.index

    def option_is(self, dest: str, values: frozenset[str]) -> Predicate:
        if self.options.quantization and dest == self.options.quantization:
            return QuantIs(values)
        return OptionIs(dest, values)

    def enum_member(self, cls: ClassV, attr: str) -> Value | None:
        members = self.options.enum_members
        member = f"{cls.qualname}.{attr}"
        if member in members:
            return EnumMemberV(frozenset({members[member]}))
        short = f"{cls.qualname.rsplit('.', 1)[-1]}.{attr}"
        if short in members:
            return EnumMemberV(frozenset({members[short]}))
        return None

    def enum_of(self, dest: str, arg: Value) -> Value:
        """``E(x)`` for an enum ``E`` that models option ``dest``. A member made
        from the option's value, or from a value not known here (a setter's
        argument: ``FP4_BACKEND = Fp4GemmRunnerBackend(backend)``), is read as the
        option's value, as an ``E``-typed value is everywhere else (enum
        predicate methods); a constant gives that member."""
        if isinstance(arg, (OptV, ChoiceV)):
            return arg
        text = choice_text(arg)
        if text is not None:
            return EnumMemberV(frozenset({text}))
        return OptV(dest)

    def compare(self, left: OptV, op: str, right: Value) -> Predicate | None:
        pred: Predicate
        if isinstance(right, ConstV) and right.value is None:
            choices = frozenset(self.options.dests.get(left.dest, ()))
            if choices:
                pred = self.option_is(left.dest, choices)
                return pred if op in ("is not", "!=") else neg(pred)
        values = _string_set(right)
        if values is not None and op in ("==", "!=", "is", "is not", "in", "not in"):
            pred = self.option_is(left.dest, values)
            return neg(pred) if op in ("!=", "is not", "not in") else pred
        return None

    def compare_choices(self, left: Value, op: str, right: Value) -> Predicate | None:
        """A value computed from the option (``ChoiceV``) compared with a
        constant: the option holds one of the choices for which the comparison
        is true. None when some choice's value can't be compared here."""
        choice, other = (left, right) if isinstance(left, ChoiceV) else (right, left)
        if not isinstance(choice, ChoiceV) or op not in _EQUALITY or (
                choice is right and op in ("in", "not in")):
            return None
        wanted = _string_set(other)
        if wanted is None:
            return None
        holds = set()
        for name, value in choice.table:
            texts = _string_set(value)
            if texts is None or len(texts) != 1:
                return None
            if (next(iter(texts)) in wanted) == (op in ("==", "is", "in")):
                holds.add(name)
        return self.option_is(choice.dest, frozenset(holds))

    def call(self, node: ast.Call, rel: str, scope: str, line: int,
             env: dict[str, Value]) -> Value | None:
        """``x.is_choice()`` and ``option.startswith(...)``; ``None`` for other calls."""
        func_node = node.func
        if not isinstance(func_node, ast.Attribute):
            return None
        options = self.options
        if not node.args and func_node.attr in options.enum_predicates:
            entry = self._enum_predicate(func_node, rel, scope, line)
            if entry is None:
                return UnkV(f"{unparse(node)}: receiver type unknown")
            dest, values = entry
            receiver = func_node.value
            if isinstance(receiver, ast.Name) and isinstance(env.get(receiver.id),
                                                             (OptV, EnumMemberV, AltV)):
                # a parameter bound to what one call passes: the test of that value
                return PredV(self._test_of(env[receiver.id], values))
            holder = unparse(func_node.value)
            # get_speculative_moe_runner_backend() vs get_moe_runner_backend()
            for candidate in sorted(options.dests, key=len, reverse=True):
                if candidate in holder and options.enum_dests.get(
                        self._dest_enum(dest)) == options.enum_dests.get(
                        self._dest_enum(candidate)) and candidate in options.dests:
                    dest = candidate
                    break
            held = self.option_is(dest, values)
            # another option's value stored where this one is read
            # (``link.shared_values``): marked, for the linker to copy
            shared = tuple(other for other in options.shared.get(dest, ())
                           if other not in holder)
            if shared and isinstance(held, OptionIs):
                held = OptionIs(held.option, held.choices, shared)
            return PredV(held)
        if func_node.attr in ("startswith", "endswith"):
            value_of = self.interpreter.value_of
            base = value_of(func_node.value, rel, scope, line, env)
            if isinstance(base, OptV) and node.args:
                arg = value_of(node.args[0], rel, scope, line, env)
                choices = options.dests.get(base.dest, ())
                if isinstance(arg, ConstV) and isinstance(arg.value, (str, tuple)) and choices:
                    prefixes = arg.value if isinstance(arg.value, tuple) else (arg.value,)
                    test: Callable[[str], bool] = (
                        (lambda c: c.startswith(prefixes)) if func_node.attr == "startswith"
                        else (lambda c: c.endswith(prefixes)))
                    return PredV(self.option_is(
                        base.dest, frozenset(c for c in choices if test(c))))
        return None

    def _test_of(self, value: Value, values: frozenset[str]) -> Predicate:
        """``value.is_x()`` for a value known here, ``values`` being what the
        method accepts: the option's test, a constant for one of the enum's
        members, each alternative's test under its condition."""
        if isinstance(value, OptV):
            return self.option_is(value.dest, values)
        if isinstance(value, EnumMemberV):
            if value.values <= values:
                return TRUE
            return FALSE if not value.values & values else Unknown("enum member")
        if isinstance(value, AltV):
            return disj(*(conj(cond, self._test_of(item, values))
                          for cond, item in value.alternatives))
        return Unknown("is_*() of a value not known here")

    def getter(self, callee: FuncV) -> OptV | None:
        """The option's value, for a call of a function of no arguments named
        for an option and annotated to return its enum
        (``get_moe_a2a_backend() -> MoeA2ABackend``); None for other calls.
        The option is picked by name among those sharing the enum, as the
        option tests pick it (``get_speculative_moe_runner_backend``)."""
        facts = self.index.view(callee.rel)
        fdef = facts.function(callee.qualname) if facts is not None else None
        if fdef is None or fdef.cls or not fdef.returns or fdef.params or callee.bound \
                or callee.positional:
            return None
        enums = {e for m in self.options.enum_predicates.values() for e, _, _ in m}
        enum = self._annotation_enum(fdef.returns, callee.rel, enums, 3)
        dest = self.options.enum_dests.get(enum) if enum is not None else None
        if dest is None:
            return None
        for candidate in sorted(self.options.dests, key=len, reverse=True):
            if candidate in fdef.name and self.options.enum_dests.get(
                    self._dest_enum(dest)) == self.options.enum_dests.get(
                    self._dest_enum(candidate)):
                return OptV(candidate)
        return None

    def _dest_enum(self, dest: str) -> str:
        for enum, enum_dest in self.options.enum_dests.items():
            if enum_dest == dest and "." not in enum:
                return enum
        return ""

    def _enum_predicate(self, func_node: ast.Attribute, rel: str, scope: str, line: int,
                        ) -> tuple[str, frozenset[str]] | None:
        """(dest, values) for ``x.is_choice()``: by x's enum type when it can be read
        from annotations and assignments, else only when the method is unambiguous."""
        entries = self.options.enum_predicates[func_node.attr]
        enum = self._enum_type(func_node.value, rel, scope, line, 3)
        if enum is not None:
            for short, dest, values in entries:
                if short == enum:
                    return (dest, values) if dest is not None else None
            return None
        linked = [(d, v) for _, d, v in entries if d is not None]
        if len(entries) == 1 and linked:
            return linked[0]
        holder = unparse(func_node.value)
        named = [(d, v) for d, v in linked if d in holder]
        if len(named) == 1:
            return named[0]
        return None

    def _enum_type(self, node: ast.AST, rel: str, scope: str, line: int,
                   depth: int) -> str | None:
        """The enum class (short name) of an expression, from annotations."""
        if depth <= 0:
            return None
        enums = {e for m in self.options.enum_predicates.values() for e, _, _ in m}
        facts = self.index.view(rel)
        if facts is None:
            return None
        if isinstance(node, ast.Call):
            callee = self.interpreter.value_of(node.func, rel, scope, line, {})
            if isinstance(callee, FuncV):
                cfacts = self.index.view(callee.rel)
                fdef = cfacts.function(callee.qualname) if cfacts else None
                if fdef is not None:
                    return self._annotation_enum(fdef.returns, callee.rel, enums, 3)
            if isinstance(callee, ClassV):
                name = callee.qualname.rsplit(".", 1)[-1]
                return name if name in enums else None
            return None
        if isinstance(node, ast.Name):
            for sc in self.interpreter.tables.function_scopes(facts, scope):
                fdef = facts.function(sc)
                if fdef is not None:
                    for pname, annotation in fdef.annotations:
                        if pname == node.id:
                            return self._annotation_enum(annotation, rel, enums, 3)
                assigns = [a for a in facts.in_scope("assigns", sc) if a.line < line
                           and node.id in a.targets]
                if assigns:
                    last = max(assigns, key=lambda a: a.line)
                    value = parse_expr(last.value)
                    return self._enum_type(value, rel, sc, last.line, depth - 1) \
                        if value is not None else None
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "self":
            fdef = facts.function(scope)
            cls = fdef.cls if fdef is not None else ""
            for assign in facts.in_tree("assigns", cls) if cls else ():
                if assign.scope.startswith(cls + ".") and f"self.{node.attr}" in assign.targets:
                    value = parse_expr(assign.value)
                    if value is not None:
                        found = self._enum_type(value, rel, assign.scope, assign.line, depth - 1)
                        if found:
                            return found
        return None

    def _annotation_enum(self, annotation: str, rel: str, enums: set[str],
                         depth: int) -> str | None:
        """The one enum an annotation names, through aliases such as
        ``BackendLike = Backend | RegisteredBackend`` and string annotations."""
        node = parse_expr(annotation.strip().strip("\"'"))
        if node is None or depth <= 0:
            return None
        module_bindings = self.interpreter.tables.module_bindings
        found = []
        for sub in ast.walk(node):
            name = sub.attr if isinstance(sub, ast.Attribute) else (
                sub.id if isinstance(sub, ast.Name) else None)
            if name is None:
                continue
            if name in enums:
                found.append(name)
                continue
            for entry in module_bindings(rel, name):
                if isinstance(entry, AssignFact):
                    inner = self._annotation_enum(entry.value, rel, enums, depth - 1)
                    if inner:
                        found.append(inner)
                elif isinstance(entry, ImportFact) and entry.name:
                    target = self.interpreter.tables.rel_of(entry.module)
                    if target is not None:
                        for tentry in module_bindings(target, entry.name):
                            if isinstance(tentry, AssignFact):
                                inner = self._annotation_enum(tentry.value, target, enums,
                                                              depth - 1)
                                if inner:
                                    found.append(inner)
        distinct = set(found)
        return found[0] if len(distinct) == 1 else None


_EQUALITY = ("==", "!=", "is", "is not", "in", "not in")


def _string_set(value: Value) -> frozenset[str] | None:
    if isinstance(value, EnumMemberV):
        return value.values
    if isinstance(value, ConstV):
        if isinstance(value.value, str):
            return frozenset({value.value})
        if isinstance(value.value, (tuple, list, set, frozenset)) and all(
                isinstance(v, str) for v in value.value):
            return frozenset(value.value)
    return None
