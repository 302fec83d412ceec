"""options (choice values): which strings a ``choices=`` expression holds.

Shared by every option-definition form: a form hands the catalog the
expression as text, and :func:`recognise_choice_expression` reads it here, with
the extensions that the choice-extensions form found for the constants it
reads (:attr:`ChoiceReader.extensions`). Values computed at run time are never
guessed: the result says it is incomplete, and why.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guardscan.index.facts import AssignFact, CallFact, FileFacts
from guardscan.names import Binding, Names, identifier_targets
from guardscan.syntax import NOT_LITERAL, literal, parse_expr, short

if TYPE_CHECKING:
    from guardscan.options.enum_classes import EnumReader

__all__ = [
    "MUTATORS",
    "ChoiceExtension",
    "ChoiceReader",
    "ChoiceValues",
    "choice_item",
    "literal_strings",
    "mutator_values",
    "recognise_choice_expression",
]


#: Calls that keep the values of their one argument (``sorted`` also orders them).
_BUILTIN_WRAPPERS = frozenset({"list", "tuple", "set", "frozenset", "sorted"})


@dataclass
class ChoiceValues:
    """Choices read from an expression, and how far they could be read."""

    items: list[str] = field(default_factory=list)
    complete: bool = True
    problems: list[str] = field(default_factory=list)
    sources: list[tuple[str, int]] = field(default_factory=list)  # statements holding literals
    roots: set[tuple[str, str]] = field(default_factory=set)  # module-level constants read

    def merge(self, other: ChoiceValues) -> None:
        for item in other.items:
            if item not in self.items:
                self.items.append(item)
        self.complete = self.complete and other.complete
        self.problems.extend(p for p in other.problems if p not in self.problems)
        self.sources.extend(s for s in other.sources if s not in self.sources)
        self.roots |= other.roots

    def remove(self, other: ChoiceValues) -> None:
        self.items = [i for i in self.items if i not in other.items]
        self.complete = self.complete and other.complete

    @classmethod
    def failed(cls, reason: str) -> ChoiceValues:
        return cls(complete=False, problems=[reason])


@dataclass(frozen=True, slots=True)
class ChoiceExtension:
    """Literal choices that a call at ``rel:line`` adds to a constant."""

    values: tuple[str, ...]
    rel: str
    line: int


def literal_strings(node: ast.AST | None, single: bool) -> list[str] | None:
    value = literal(node)
    if single:
        return [value] if isinstance(value, str) else None
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value) if not isinstance(value, (set, frozenset)) else sorted(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return list(value)
    return None


def choice_item(value: object) -> str | None:
    """How an argparse choice reads on the command line (None is no choice)."""
    if value is None or value is NOT_LITERAL:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


class ChoiceReader:
    """Evaluate choice expressions to lists of strings (see
    :func:`recognise_choice_expression`)."""

    def __init__(self, names: Names, enums: EnumReader) -> None:
        self.names = names
        self.enums = enums
        self.extensions: dict[tuple[str, str], list[ChoiceExtension]] = {}
        self._memo: dict[tuple[str, str], ChoiceValues] = {}
        self._active: set[tuple[str, str, str]] = set()

    def reset(self, extensions: dict[tuple[str, str], list[ChoiceExtension]]) -> None:
        self.extensions = extensions
        self._memo.clear()

    def read(self, node: ast.AST | None, module: str, scope: str, line: int,
             env: dict[str, ChoiceValues] | None = None, depth: int = 0) -> ChoiceValues:
        if node is None:
            return ChoiceValues.failed("no expression")
        if depth > 40:
            return ChoiceValues.failed("nested too deeply")
        env = env or {}
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = ChoiceValues()
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    out.merge(self.read(element.value, module, scope, line, env, depth + 1))
                    continue
                item = choice_item(literal(element))
                if item is not None:
                    if item not in out.items:
                        out.items.append(item)
                elif not (isinstance(element, ast.Constant) and element.value is None):
                    part = self.read(element, module, scope, line, env, depth + 1)
                    if part.items or not part.complete:
                        out.complete = False
                        out.problems.append(f"element `{short(ast.unparse(element), 40)}`")
            return out
        if isinstance(node, ast.Dict):
            out = ChoiceValues()
            for key in node.keys:
                item = choice_item(literal(key))
                if item is None:
                    out.complete = False
                    out.problems.append("dict key that is not a literal")
                elif item not in out.items:
                    out.items.append(item)
            return out
        if isinstance(node, ast.Constant):
            item = choice_item(node.value)
            if isinstance(node.value, str) and item is not None:
                # a bare string is iterated character by character by argparse
                return ChoiceValues.failed(f"a string, not a list: {item!r}")
            return ChoiceValues.failed(f"not a collection: `{short(ast.unparse(node), 70)}`")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):
            out = self.read(node.left, module, scope, line, env, depth + 1)
            out = _copy(out)
            out.merge(self.read(node.right, module, scope, line, env, depth + 1))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            out = _copy(self.read(node.left, module, scope, line, env, depth + 1))
            out.remove(self.read(node.right, module, scope, line, env, depth + 1))
            return out
        if isinstance(node, ast.IfExp):
            out = _copy(self.read(node.body, module, scope, line, env, depth + 1))
            out.merge(self.read(node.orelse, module, scope, line, env, depth + 1))
            return out
        if isinstance(node, ast.Name) and node.id in env:
            return _copy(env[node.id])
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._named(node, module, scope, line, depth)
        if isinstance(node, ast.Call):
            return self._call(node, module, scope, line, env, depth)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._comprehension(node, module, scope)
        return ChoiceValues.failed(f"`{short(ast.unparse(node), 70)}` is not a form read here")

    def _named(self, node: ast.Name | ast.Attribute, module: str, scope: str, line: int,
               depth: int) -> ChoiceValues:
        text = short(ast.unparse(node), 70)
        if isinstance(node, ast.Attribute) and node.attr in ("keys", "values"):
            return ChoiceValues.failed(f"`{text}` is a method")
        binding = self.names.resolve(module, node, scope)
        if binding is None:
            return ChoiceValues.failed(f"`{text}` is not defined in the tree")
        if binding.kind == "assign" and binding.scope:
            return self._local(binding, line, depth)
        if binding.kind == "assign":
            return self.constant(binding.module, binding.name, depth)
        if binding.kind == "classattr":
            return self._class_attribute(binding, depth)
        if binding.kind == "class":
            return ChoiceValues.failed(f"`{text}` is a class (its members, not strings)")
        if binding.kind == "param":
            return ChoiceValues.failed(f"`{text}` is a parameter")
        if binding.kind == "external":
            return ChoiceValues.failed(f"`{text}` is `{binding.name}`, outside the tree")
        return ChoiceValues.failed(f"`{text}` is a {binding.kind}, not a list")

    def constant(self, module: str, name: str, depth: int = 0) -> ChoiceValues:
        """A module-level constant: its assignments in order (an ``else``
        branch or a conditional rebinding adds to it), then its extensions."""
        key = (module, name)
        if key in self._memo:
            return _copy(self._memo[key])
        active = (module, "", name)
        if active in self._active:
            return ChoiceValues.failed(f"`{name}` is defined in terms of itself")
        facts = self.names.facts(module)
        if facts is None:
            return ChoiceValues.failed(f"{module} not analysed")
        self._active.add(active)
        try:
            assigns = [a for a in facts.assigns
                       if not a.scope and name in identifier_targets(a.targets)]
            current = self._sequence(assigns, facts, module, "", name, depth)
        finally:
            self._active.discard(active)
        current.roots.add(key)
        for extension in self.extensions.get(key, ()):
            current.merge(ChoiceValues(list(extension.values),
                                  sources=[(extension.rel, extension.line)]))
        self._memo[key] = _copy(current)
        return current

    def _sequence(self, assigns: Sequence[AssignFact], facts: FileFacts, module: str,
                  scope: str, name: str, depth: int) -> ChoiceValues:
        current: ChoiceValues | None = None
        for assign in sorted(assigns, key=lambda a: a.line):
            if assign.annotation and not assign.value:
                continue
            if len(assign.targets) != 1 or not assign.targets[0].isidentifier():
                value = ChoiceValues.failed(
                    f"`{name}` is unpacked from `{short(assign.value, 70)}`")
            else:
                env = {name: current} if current is not None else {}
                value = self.read(parse_expr(assign.value), module, scope, assign.line, env,
                                  depth + 1)
                if _holds_literal(assign.value):
                    value.sources.insert(0, (facts.rel, assign.line))
            if current is None or not assign.path:
                current = value
            else:
                current = _copy(current)
                current.merge(value)
        return current if current is not None else ChoiceValues.failed(f"`{name}` has no value")

    def _local(self, binding: Binding, line: int, depth: int) -> ChoiceValues:
        """A name bound inside a function: its assignments before ``line`` and
        the ``.add``/``.extend``/``.append`` calls on it with literal arguments."""
        facts = self.names.facts(binding.module)
        if facts is None:
            return ChoiceValues.failed(f"{binding.module} not analysed")
        active = (binding.module, binding.scope, binding.name)
        if active in self._active:
            return ChoiceValues.failed(f"`{binding.name}` is defined in terms of itself")
        self._active.add(active)
        try:
            assigns = [a for a in facts.assigns
                       if a.scope == binding.scope and a.line < line
                       and binding.name in identifier_targets(a.targets)]
            current = self._sequence(assigns, facts, binding.module, binding.scope,
                                     binding.name, depth)
        finally:
            self._active.discard(active)
        first = min((a.line for a in assigns), default=0)
        for call in facts.calls:
            if call.scope != binding.scope or not first < call.line < line:
                continue
            head, _, method = call.func.rpartition(".")
            if head != binding.name or method not in MUTATORS:
                continue
            values = mutator_values(call, method)
            if values:
                current.merge(ChoiceValues(values, sources=[(facts.rel, call.line)]))
        return current

    def _class_attribute(self, binding: Binding, depth: int) -> ChoiceValues:
        facts = self.names.facts(binding.module)
        if facts is None:
            return ChoiceValues.failed(f"{binding.module} not analysed")
        assigns = [a for a in facts.assigns
                   if a.scope == binding.scope and binding.name in identifier_targets(a.targets)]
        if not assigns:
            return ChoiceValues.failed(f"`{binding.scope}.{binding.name}` is not assigned")
        return self._sequence(assigns, facts, binding.module, binding.scope, binding.name, depth)

    def _call(self, node: ast.Call, module: str, scope: str, line: int,
              env: dict[str, ChoiceValues], depth: int) -> ChoiceValues:
        text = short(ast.unparse(node), 70)
        func = self.names.qualname(module, node.func, scope)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            return self.read(node.func.value, module, scope, line, env, depth + 1)
        if func is not None and func in _BUILTIN_WRAPPERS and len(node.args) == 1 \
                and not node.keywords:
            argument = node.args[0]
            binding = (self.names.resolve(module, argument, scope)
                       if isinstance(argument, (ast.Name, ast.Attribute)) else None)
            if binding is not None and binding.kind == "class":
                return ChoiceValues.failed(f"`{text}` lists enum members, not their values")
            out = self.read(argument, module, scope, line, env, depth + 1)
            if func == "sorted":
                out.items.sort()
            return out
        return ChoiceValues.failed(f"`{text}` is computed at run time")

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, module: str,
                       scope: str) -> ChoiceValues:
        """``[m.value for m in SomeEnum]``: the enum's values."""
        text = short(ast.unparse(node), 70)
        if len(node.generators) != 1 or node.generators[0].ifs:
            return ChoiceValues.failed(f"`{text}` is computed at run time")
        generator = node.generators[0]
        element = node.elt
        if not (isinstance(generator.target, ast.Name) and isinstance(element, ast.Attribute)
                and element.attr == "value" and isinstance(element.value, ast.Name)
                and element.value.id == generator.target.id):
            return ChoiceValues.failed(f"`{text}` is computed at run time")
        binding = self.names.resolve(module, generator.iter, scope)
        found = self.names.class_fact(binding) if binding is not None else None
        if found is None:
            return ChoiceValues.failed(f"`{text}` iterates something not read here")
        facts, cls = found
        members = self.enums.members(facts, cls)
        if members is None:
            return ChoiceValues.failed(f"`{text}` iterates a class that is not a string enum")
        return ChoiceValues([value for _, value in members], sources=[(facts.rel, cls.line)])


def _copy(values: ChoiceValues) -> ChoiceValues:
    return ChoiceValues(list(values.items), values.complete, list(values.problems),
                   list(values.sources), set(values.roots))


def _holds_literal(text: str) -> bool:
    return "[" in text or "{" in text or "(" in text


#: Methods that add to a list or set, and which argument carries the values.
MUTATORS: dict[str, str] = {"extend": "many", "update": "many", "append": "one",
                             "add": "one", "insert": "second"}


def mutator_values(call: CallFact, method: str, offset: int = 0) -> list[str] | None:
    """Literal values added by ``X.method(args)`` (``offset`` skips a bound
    argument, as when a helper is called)."""
    kind = MUTATORS[method]
    index = 1 if kind == "second" else 0
    args = call.args[offset:]
    if len(args) <= index:
        return None
    return literal_strings(parse_expr(args[index]), single=kind != "many")


# --------------------------------------------------------------------------
# Recogniser


def recognise_choice_expression(reader: ChoiceReader, text: str, module: str, scope: str,
                                line: int) -> ChoiceValues:
    """Read a ``choices=`` expression to the list of strings it holds.

    What it recognises:
        list / tuple / set / dict literals of strings; ``[*OTHER, "x"]``
        spreads; ``A + B`` and ``A | B``; ``A - B`` on sets; ``x if c else y``
        (both branches); names bound in the same function, the module, or
        imported from another module (re-exports and star imports followed);
        ``Cls.ATTR`` class attributes; ``list(X)`` / ``set(X)`` /
        ``frozenset(X)`` / ``sorted(X)`` wrappers; ``d.keys()``;
        ``[m.value for m in SomeEnum]``.
    Why it matters:
        The choices are the backends a user can pick; SGLang keeps them in
        module-level constants that move between releases (``server_args.py``
        in 0.5.9, ``arg_groups/choices.py`` in 0.5.23).
    Known limits:
        Values computed at run time (function calls, ``list(SomeEnum)``, which
        yields members) are not read: the result is marked incomplete and an
        ``unresolved-choices`` / ``partial-choices`` diagnostic says where.
        It never guesses a value.
    Example:
        ``choices=[*QUANTIZATION_CHOICES, "unquant"]`` with ``QUANTIZATION_CHOICES``
        imported from ``sglang.srt.arg_groups.choices`` reads that module's list
        and adds ``"unquant"``.
    """
    node = parse_expr(text)
    if node is None:
        return ChoiceValues.failed(f"unparseable `{short(text, 70)}`")
    return reader.read(node, module, scope, line)

