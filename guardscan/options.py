"""options: the backend-selecting server options and their choices, as this
version of the tree defines them.

Nothing here is a table of option names, choices or versions: every option is
read from the scanned code, in whatever form that version uses.

* argparse calls, ``parser.add_argument("--fp4-gemm-backend", choices=...)``
  (SGLang 0.5.9 ``srt/server_args.py``), see :func:`recognise_argparse_option`;
* annotated fields, ``moe_runner_backend: A[str, Arg(choices=...)] = "auto"``
  (SGLang 0.5.23 ``srt/arg_groups/fields/*.py``), see
  :func:`recognise_annotated_field`, whose flag comes from the tree's own
  field-to-flag rule (:func:`recognise_cli_name_rule`);
* choice expressions: literals, spreads, ``+``, names followed through imports
  (:func:`recognise_choice_expression`), and the constants' extensions by
  ``.extend``/``.append`` calls, helper functions and bound-method aliases that
  the tree really calls with literal arguments
  (:func:`recognise_choice_extensions`);
* platform labels for choices that are for non-CUDA platforms only, from the
  definition's own comments (:func:`recognise_comment_platforms`) and help text
  (:func:`recognise_help_platforms`);
* string enums that model an option's choices, with their predicate methods
  (:func:`recognise_enum`, :func:`recognise_enum_predicate`), linked to options
  by the overlap of values (:func:`link_enums`).

The catalog holds every option whose flag ends in ``-backend`` and has finite
choices, plus ``--quantization`` (kept apart as ``catalog.quantization``).
Files are parsed only after a cheap text pre-filter (``Index.grep``) says they
can hold what is looked for; facts come from the index, so they are cached.
What cannot be resolved becomes a Diagnostic, never an exception.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from guardscan.index import Index
from guardscan.index.extract import dotted as _dotted
from guardscan.index.facts import (
    AssignFact,
    CallFact,
    ClassFact,
    FileFacts,
    FunctionFact,
    ImportFact,
)
from guardscan.messages import MESSAGES, diagnostic, internal_error
from guardscan.results import Diagnostic, OptionInfo
from guardscan.syntax import NOT_LITERAL, literal, parse_expr, short

__all__ = [
    "MESSAGES",
    "RECOGNISERS",
    "EnumInfo",
    "OptionCatalog",
    "build_catalog",
    "link_enums",
    "recognise_annotated_field",
    "recognise_argparse_option",
    "recognise_choice_expression",
    "recognise_choice_extensions",
    "recognise_cli_name_rule",
    "recognise_comment_platforms",
    "recognise_enum",
    "recognise_enum_predicate",
    "recognise_help_platforms",
]

#: The one option kept apart from the ``-backend`` ones: quantization changes
#: which kernels a backend runs, so later stages read it as a condition.
QUANTIZATION_FLAG = "--quantization"

#: Least Jaccard overlap between an enum's values and an option's choices for
#: the enum to count as modelling that option.
MIN_ENUM_OVERLAP = 0.5


# --------------------------------------------------------------------------
# Public data


@dataclass(frozen=True, slots=True)
class EnumInfo:
    """A string enum whose values model an option's choices.

    ``qualname`` is the dotted name (module + class), ``members`` are
    ``(MEMBER, "value")`` in definition order, ``predicates`` map each method
    that tests the value (``is_flashinfer_trtllm``) to the values for which it
    holds, and ``option_dests`` are the dests of the options this enum models.
    """

    qualname: str
    rel: str
    line: int
    members: tuple[tuple[str, str], ...]
    predicates: tuple[tuple[str, frozenset[str]], ...] = ()
    option_dests: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.members)

    def predicate(self, method: str) -> frozenset[str] | None:
        for name, values in self.predicates:
            if name == method:
                return values
        return None


@dataclass
class OptionCatalog:
    """The backend options of one tree, their enums, and what went unresolved."""

    options: list[OptionInfo] = field(default_factory=list)
    enums: list[EnumInfo] = field(default_factory=list)
    quantization: OptionInfo | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # extra flag -> primary flag

    def _all(self) -> Iterator[OptionInfo]:
        yield from self.options
        if self.quantization is not None:
            yield self.quantization

    def by_flag(self, flag: str) -> OptionInfo | None:
        flag = self.aliases.get(flag, flag)
        return next((o for o in self._all() if o.flag == flag), None)

    def by_dest(self, dest: str) -> OptionInfo | None:
        return next((o for o in self._all() if o.dest == dest), None)

    def enums_for(self, dest: str) -> list[EnumInfo]:
        return [e for e in self.enums if dest in e.option_dests]


# --------------------------------------------------------------------------
# Small helpers over expression text


def _string_value(node: ast.AST | None) -> str | None:
    """The text of a string expression: literals, implicit/``+`` concatenation,
    f-strings (placeholders kept as ``{expr}``), ``"...".format(...)``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                out.append(part.value)
            elif isinstance(part, ast.FormattedValue):
                out.append("{" + ast.unparse(part.value) + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string_value(node.left), _string_value(node.right)
        if left is not None and right is not None:
            return left + right
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        return _string_value(node.func.value)
    return None


def _identifier_targets(targets: Iterable[str]) -> list[str]:
    return [t for t in targets if t.isidentifier()]


def _flag_selected(flag: str) -> bool:
    return flag.lstrip("-").endswith("-backend") or flag == QUANTIZATION_FLAG


def _flag_to_dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


_BUILTIN_WRAPPERS = frozenset({"list", "tuple", "set", "frozenset", "sorted"})
_ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})
_OPTIONAL = frozenset({"typing.Optional"})
_UNION = frozenset({"typing.Union"})
_LITERAL = frozenset({"typing.Literal", "typing_extensions.Literal"})
_LIST_TYPES = frozenset({"typing.List", "list", "typing.Sequence", "typing.Tuple", "tuple"})
_ENUM_BASES = frozenset({"enum.Enum", "enum.StrEnum"})


# --------------------------------------------------------------------------
# Name resolution over index facts


@dataclass(frozen=True, slots=True)
class _Binding:
    """What a name means: an assignment (module, scope, name), an in-tree class
    or function (module, qualname), a class attribute (module, attribute,
    class qualname as scope), a module, a parameter, or something outside the
    tree (dotted name)."""

    kind: str  # assign | class | classattr | function | module | param | external
    module: str = ""
    name: str = ""
    scope: str = ""


class _Names:
    """Resolve names by qualified name, through imports and re-exports."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._tables: dict[str, dict[str, list[object]]] = {}
        self._class_scopes: dict[str, frozenset[str]] = {}
        self._local_tables: dict[str, tuple[set[tuple[str, str]],
                                            dict[tuple[str, str], ImportFact],
                                            dict[str, tuple[str, ...]]]] = {}

    def facts(self, module: str) -> FileFacts | None:
        return self.index.module(module)

    def _table(self, module: str) -> dict[str, list[object]]:
        table = self._tables.get(module)
        if table is not None:
            return table
        table = {}
        facts = self.facts(module)
        if facts is not None:
            for assign in facts.assigns:
                if not assign.scope:
                    for name in _identifier_targets(assign.targets):
                        table.setdefault(name, []).append(assign)
            for cls in facts.classes:
                if not cls.scope:
                    table.setdefault(cls.qualname, []).append(cls)
            for func in facts.functions:
                if not func.scope:
                    table.setdefault(func.name, []).append(func)
            for imp in facts.imports:
                if not imp.scope:
                    table.setdefault(imp.local, []).append(imp)
        self._tables[module] = table
        return table

    def _locals(self, facts: FileFacts) -> tuple[
            set[tuple[str, str]], dict[tuple[str, str], ImportFact], dict[str, tuple[str, ...]]]:
        """Names bound inside functions: assigned, imported, parameters."""
        found = self._local_tables.get(facts.module)
        if found is None:
            assigned = {(a.scope, n) for a in facts.assigns if a.scope
                        for n in _identifier_targets(a.targets)}
            imported = {(i.scope, i.local): i for i in facts.imports if i.scope}
            params = {f.qualname: f.params for f in facts.functions}
            found = (assigned, imported, params)
            self._local_tables[facts.module] = found
        return found

    def class_scopes(self, facts: FileFacts) -> frozenset[str]:
        scopes = self._class_scopes.get(facts.module)
        if scopes is None:
            scopes = frozenset(c.qualname for c in facts.classes)
            self._class_scopes[facts.module] = scopes
        return scopes

    def function_scopes(self, facts: FileFacts, scope: str) -> list[str]:
        """``scope`` and the function scopes around it, innermost first (class
        bodies do not enclose their methods)."""
        out = []
        classes = self.class_scopes(facts)
        parts = scope.split(".") if scope else []
        while parts:
            candidate = ".".join(parts)
            if candidate not in classes:
                out.append(candidate)
            parts.pop()
        return out

    def bind(self, module: str, name: str, scope: str = "", depth: int = 0) -> _Binding | None:
        facts = self.facts(module)
        if facts is None or depth > 12:
            return None
        if scope:
            assigned, imported, params = self._locals(facts)
            for local in self.function_scopes(facts, scope):
                if (local, name) in assigned:
                    return _Binding("assign", module, name, local)
                imp = imported.get((local, name))
                if imp is not None:
                    return self._follow(imp.module, imp.name, depth)
                if name in params.get(local, ()):
                    return _Binding("param", module, name, local)
        entries = self._table(module).get(name, [])
        if any(isinstance(e, AssignFact) for e in entries):
            return _Binding("assign", module, name, "")
        for entry in entries:
            if isinstance(entry, ClassFact):
                return _Binding("class", module, entry.qualname)
        for entry in entries:
            if isinstance(entry, FunctionFact):
                return _Binding("function", module, entry.qualname)
        for entry in reversed(entries):
            return self._follow(entry.module, entry.name, depth)  # type: ignore[attr-defined]
        for imp in facts.imports:
            if imp.local == "*" and not imp.scope and imp.module != module:
                found = self.bind(imp.module, name, "", depth + 1)
                if found is not None:
                    return found
        return None

    def _follow(self, module: str, name: str | None, depth: int) -> _Binding:
        if name is None:
            return _Binding("module", name=module)
        full = f"{module}.{name}"
        if self.index.has_module(full):
            return _Binding("module", name=full)
        if self.index.has_module(module):
            found = self.bind(module, name, "", depth + 1)
            if found is not None:
                return found
        return _Binding("external", name=full)

    def attribute(self, base: _Binding, attr: str) -> _Binding | None:
        """``base.attr`` for a module or class binding."""
        if base.kind == "module":
            full = f"{base.name}.{attr}"
            if self.index.has_module(full):
                return _Binding("module", name=full)
            if self.index.has_module(base.name):
                return self.bind(base.name, attr)
            return _Binding("external", name=full)
        if base.kind == "external":
            return _Binding("external", name=f"{base.name}.{attr}")
        if base.kind == "class":
            return _Binding("classattr", base.module, attr, base.name)
        return None

    def resolve(self, module: str, node: ast.AST, scope: str = "",
                depth: int = 0) -> _Binding | None:
        """The binding of a Name or dotted Attribute expression."""
        dotted = _dotted(node)
        if dotted is None or depth > 12:
            return None
        head, *rest = dotted.split(".")
        binding = self.bind(module, head, scope)
        if binding is None:
            binding = _Binding("external", name=head)  # a builtin, or undefined
        for attr in rest:
            binding = self._through_alias(binding, depth)
            next_binding = self.attribute(binding, attr)
            if next_binding is None:
                return None
            binding = next_binding
        return self._through_alias(binding, depth)

    def _through_alias(self, binding: _Binding, depth: int) -> _Binding:
        """``A = Annotated`` / ``Alias = other.Name``: follow a module-level
        assignment whose only value is a dotted name."""
        if binding.kind != "assign" or binding.scope:
            return binding
        facts = self.facts(binding.module)
        if facts is None:
            return binding
        assigns = [a for a in facts.assigns
                   if not a.scope and binding.name in _identifier_targets(a.targets)]
        if len(assigns) != 1:
            return binding
        value = parse_expr(assigns[0].value)
        if value is None or _dotted(value) is None:
            return binding
        target = self.resolve(binding.module, value, "", depth + 1)
        return target if target is not None else binding

    def qualname(self, module: str, node: ast.AST, scope: str = "") -> str | None:
        binding = self.resolve(module, node, scope)
        if binding is None:
            return None
        if binding.kind in ("module", "external"):
            return binding.name
        if binding.kind in ("class", "function"):
            return f"{binding.module}.{binding.name}"
        if binding.kind == "assign" and not binding.scope:
            return f"{binding.module}.{binding.name}"
        return None

    def class_fact(self, binding: _Binding) -> tuple[FileFacts, ClassFact] | None:
        if binding.kind != "class":
            return None
        facts = self.facts(binding.module)
        if facts is None:
            return None
        for cls in facts.classes:
            if cls.qualname == binding.name:
                return facts, cls
        return None


# --------------------------------------------------------------------------
# Choice values


@dataclass
class _Values:
    """Choices read from an expression, and how far they could be read."""

    items: list[str] = field(default_factory=list)
    complete: bool = True
    problems: list[str] = field(default_factory=list)
    sources: list[tuple[str, int]] = field(default_factory=list)  # statements holding literals
    roots: set[tuple[str, str]] = field(default_factory=set)  # module-level constants read

    def merge(self, other: _Values) -> None:
        for item in other.items:
            if item not in self.items:
                self.items.append(item)
        self.complete = self.complete and other.complete
        self.problems.extend(p for p in other.problems if p not in self.problems)
        self.sources.extend(s for s in other.sources if s not in self.sources)
        self.roots |= other.roots

    def remove(self, other: _Values) -> None:
        self.items = [i for i in self.items if i not in other.items]
        self.complete = self.complete and other.complete

    @classmethod
    def failed(cls, reason: str) -> _Values:
        return cls(complete=False, problems=[reason])


@dataclass(frozen=True, slots=True)
class _Extension:
    values: tuple[str, ...]
    rel: str
    line: int


def _literal_strings(node: ast.AST | None, single: bool) -> list[str] | None:
    value = literal(node)
    if single:
        return [value] if isinstance(value, str) else None
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value) if not isinstance(value, (set, frozenset)) else sorted(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return list(value)
    return None


def _choice_item(value: object) -> str | None:
    """How an argparse choice reads on the command line (None is no choice)."""
    if value is None or value is NOT_LITERAL:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


class _ChoiceReader:
    """Evaluate choice expressions to lists of strings (see
    :func:`recognise_choice_expression`)."""

    def __init__(self, names: _Names, enums: _EnumReader) -> None:
        self.names = names
        self.enums = enums
        self.extensions: dict[tuple[str, str], list[_Extension]] = {}
        self._memo: dict[tuple[str, str], _Values] = {}
        self._active: set[tuple[str, str, str]] = set()

    def reset(self, extensions: dict[tuple[str, str], list[_Extension]]) -> None:
        self.extensions = extensions
        self._memo.clear()

    def read(self, node: ast.AST | None, module: str, scope: str, line: int,
             env: dict[str, _Values] | None = None, depth: int = 0) -> _Values:
        if node is None:
            return _Values.failed("no expression")
        if depth > 40:
            return _Values.failed("nested too deeply")
        env = env or {}
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = _Values()
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    out.merge(self.read(element.value, module, scope, line, env, depth + 1))
                    continue
                item = _choice_item(literal(element))
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
            out = _Values()
            for key in node.keys:
                item = _choice_item(literal(key))
                if item is None:
                    out.complete = False
                    out.problems.append("dict key that is not a literal")
                elif item not in out.items:
                    out.items.append(item)
            return out
        if isinstance(node, ast.Constant):
            item = _choice_item(node.value)
            if isinstance(node.value, str) and item is not None:
                # a bare string is iterated character by character by argparse
                return _Values.failed(f"a string, not a list: {item!r}")
            return _Values.failed(f"not a collection: `{short(ast.unparse(node), 70)}`")
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
        return _Values.failed(f"`{short(ast.unparse(node), 70)}` is not a form read here")

    def _named(self, node: ast.Name | ast.Attribute, module: str, scope: str, line: int,
               depth: int) -> _Values:
        text = short(ast.unparse(node), 70)
        if isinstance(node, ast.Attribute) and node.attr in ("keys", "values"):
            return _Values.failed(f"`{text}` is a method")
        binding = self.names.resolve(module, node, scope)
        if binding is None:
            return _Values.failed(f"`{text}` is not defined in the tree")
        if binding.kind == "assign" and binding.scope:
            return self._local(binding, line, depth)
        if binding.kind == "assign":
            return self.constant(binding.module, binding.name, depth)
        if binding.kind == "classattr":
            return self._class_attribute(binding, depth)
        if binding.kind == "class":
            return _Values.failed(f"`{text}` is a class (its members, not strings)")
        if binding.kind == "param":
            return _Values.failed(f"`{text}` is a parameter")
        if binding.kind == "external":
            return _Values.failed(f"`{text}` is `{binding.name}`, outside the tree")
        return _Values.failed(f"`{text}` is a {binding.kind}, not a list")

    def constant(self, module: str, name: str, depth: int = 0) -> _Values:
        """A module-level constant: its assignments in order (an ``else``
        branch or a conditional rebinding adds to it), then its extensions."""
        key = (module, name)
        if key in self._memo:
            return _copy(self._memo[key])
        active = (module, "", name)
        if active in self._active:
            return _Values.failed(f"`{name}` is defined in terms of itself")
        facts = self.names.facts(module)
        if facts is None:
            return _Values.failed(f"{module} not analysed")
        self._active.add(active)
        try:
            assigns = [a for a in facts.assigns
                       if not a.scope and name in _identifier_targets(a.targets)]
            current = self._sequence(assigns, facts, module, "", name, depth)
        finally:
            self._active.discard(active)
        current.roots.add(key)
        for extension in self.extensions.get(key, ()):
            current.merge(_Values(list(extension.values),
                                  sources=[(extension.rel, extension.line)]))
        self._memo[key] = _copy(current)
        return current

    def _sequence(self, assigns: Sequence[AssignFact], facts: FileFacts, module: str,
                  scope: str, name: str, depth: int) -> _Values:
        current: _Values | None = None
        for assign in sorted(assigns, key=lambda a: a.line):
            if assign.annotation and not assign.value:
                continue
            if len(assign.targets) != 1 or not assign.targets[0].isidentifier():
                value = _Values.failed(f"`{name}` is unpacked from `{short(assign.value, 70)}`")
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
        return current if current is not None else _Values.failed(f"`{name}` has no value")

    def _local(self, binding: _Binding, line: int, depth: int) -> _Values:
        """A name bound inside a function: its assignments before ``line`` and
        the ``.add``/``.extend``/``.append`` calls on it with literal arguments."""
        facts = self.names.facts(binding.module)
        if facts is None:
            return _Values.failed(f"{binding.module} not analysed")
        active = (binding.module, binding.scope, binding.name)
        if active in self._active:
            return _Values.failed(f"`{binding.name}` is defined in terms of itself")
        self._active.add(active)
        try:
            assigns = [a for a in facts.assigns
                       if a.scope == binding.scope and a.line < line
                       and binding.name in _identifier_targets(a.targets)]
            current = self._sequence(assigns, facts, binding.module, binding.scope,
                                     binding.name, depth)
        finally:
            self._active.discard(active)
        first = min((a.line for a in assigns), default=0)
        for call in facts.calls:
            if call.scope != binding.scope or not first < call.line < line:
                continue
            head, _, method = call.func.rpartition(".")
            if head != binding.name or method not in _MUTATORS:
                continue
            values = _mutator_values(call, method)
            if values:
                current.merge(_Values(values, sources=[(facts.rel, call.line)]))
        return current

    def _class_attribute(self, binding: _Binding, depth: int) -> _Values:
        facts = self.names.facts(binding.module)
        if facts is None:
            return _Values.failed(f"{binding.module} not analysed")
        assigns = [a for a in facts.assigns
                   if a.scope == binding.scope and binding.name in _identifier_targets(a.targets)]
        if not assigns:
            return _Values.failed(f"`{binding.scope}.{binding.name}` is not assigned")
        return self._sequence(assigns, facts, binding.module, binding.scope, binding.name, depth)

    def _call(self, node: ast.Call, module: str, scope: str, line: int,
              env: dict[str, _Values], depth: int) -> _Values:
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
                return _Values.failed(f"`{text}` lists enum members, not their values")
            out = self.read(argument, module, scope, line, env, depth + 1)
            if func == "sorted":
                out.items.sort()
            return out
        return _Values.failed(f"`{text}` is computed at run time")

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, module: str,
                       scope: str) -> _Values:
        """``[m.value for m in SomeEnum]``: the enum's values."""
        text = short(ast.unparse(node), 70)
        if len(node.generators) != 1 or node.generators[0].ifs:
            return _Values.failed(f"`{text}` is computed at run time")
        generator = node.generators[0]
        element = node.elt
        if not (isinstance(generator.target, ast.Name) and isinstance(element, ast.Attribute)
                and element.attr == "value" and isinstance(element.value, ast.Name)
                and element.value.id == generator.target.id):
            return _Values.failed(f"`{text}` is computed at run time")
        binding = self.names.resolve(module, generator.iter, scope)
        found = self.names.class_fact(binding) if binding is not None else None
        if found is None:
            return _Values.failed(f"`{text}` iterates something not read here")
        facts, cls = found
        members = self.enums.members(facts, cls)
        if members is None:
            return _Values.failed(f"`{text}` iterates a class that is not a string enum")
        return _Values([value for _, value in members], sources=[(facts.rel, cls.line)])


def _copy(values: _Values) -> _Values:
    return _Values(list(values.items), values.complete, list(values.problems),
                   list(values.sources), set(values.roots))


def _holds_literal(text: str) -> bool:
    return "[" in text or "{" in text or "(" in text


#: Methods that add to a list or set, and which argument carries the values.
_MUTATORS: dict[str, str] = {"extend": "many", "update": "many", "append": "one",
                             "add": "one", "insert": "second"}


def _mutator_values(call: CallFact, method: str, offset: int = 0) -> list[str] | None:
    """Literal values added by ``X.method(args)`` (``offset`` skips a bound
    argument, as when a helper is called)."""
    kind = _MUTATORS[method]
    index = 1 if kind == "second" else 0
    args = call.args[offset:]
    if len(args) <= index:
        return None
    return _literal_strings(parse_expr(args[index]), single=kind != "many")


# --------------------------------------------------------------------------
# Recognisers: the choice expression and its extensions


def recognise_choice_expression(reader: _ChoiceReader, text: str, module: str, scope: str,
                                line: int) -> _Values:
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
        return _Values.failed(f"unparseable `{short(text, 70)}`")
    return reader.read(node, module, scope, line)


def recognise_choice_extensions(index: Index, names: _Names,
                                roots: Iterable[tuple[str, str]],
                                ) -> dict[tuple[str, str], list[_Extension]]:
    """Find the calls in the tree that add literal choices to choice constants.

    What it recognises:
        ``CONST.extend([...])`` / ``.append("x")`` / ``.add("x")`` /
        ``.insert(i, "x")`` / ``.update({...})`` on a module-level constant,
        anywhere in the tree (the name followed through imports); helper
        functions that only forward their parameter, ``def add_x(choices):
        CONST.extend(choices)``, and bound-method aliases, ``add_x =
        CONST.extend``, when the tree calls them with literal arguments.
    Why it matters:
        SGLang exposes these helpers so platforms can add backends; a choice
        added by code in the tree is a real choice of that release.
    Known limits:
        Only literal arguments count: an extension point that nothing in the
        tree calls adds nothing (out-of-tree plugins are not seen), and
        ``register(name)`` style calls with a variable are ignored. Conditions
        around the call are not evaluated (a choice added on one platform
        only is still listed).
    Example:
        ``add_attention_backend_choices(["my_backend"])`` in any module, with
        ``def add_attention_backend_choices(choices):
        ATTENTION_BACKEND_CHOICES.extend(choices)`` in ``server_args.py``,
        adds ``"my_backend"`` to ``--attention-backend``.
    """
    roots = sorted(set(roots))
    if not roots:
        return {}
    # helpers and aliases that forward to a root's mutator:
    # (module, name) -> (root, method, parameter position)
    adders: dict[tuple[str, str], tuple[tuple[str, str], str, int]] = {}
    for root in roots:
        module, constant = root
        facts = names.facts(module)
        if facts is None:
            continue
        calls_by_scope: dict[str, list[CallFact]] = {}
        for call in facts.calls:
            if call.scope and call.func.startswith(f"{constant}."):
                calls_by_scope.setdefault(call.scope, []).append(call)
        for func in facts.functions:
            if func.scope or not func.params:
                continue
            for call in calls_by_scope.get(func.qualname, ()):
                head, _, method = call.func.rpartition(".")
                if head != constant or method not in _MUTATORS:
                    continue
                position = 1 if _MUTATORS[method] == "second" else 0
                if len(call.args) > position and call.args[position] in func.params:
                    adders[(module, func.name)] = (root, method,
                                                   func.params.index(call.args[position]))
        for assign in facts.assigns:
            if assign.scope:
                continue
            value = " ".join(assign.value.split()).strip("() ")
            head, _, method = value.rpartition(".")
            if head == constant and method in _MUTATORS:
                for target in _identifier_targets(assign.targets):
                    adders[(module, target)] = (root, method, -1)
    tokens = sorted({f"{constant}." for _, constant in roots} | {name for _, name in adders})
    adder_names = {name for _, name in adders}
    root_set = set(roots)
    found: dict[tuple[str, str], list[_Extension]] = {}
    for rel in index.grep(tokens):
        facts = index.facts(rel)
        if facts is None:
            continue
        for call in facts.calls:
            last = call.func.rpartition(".")[2]
            if last not in _MUTATORS and last not in adder_names:
                continue
            callee = parse_expr(call.func)
            if callee is None or _dotted(callee) is None:
                continue
            hit = _extension_of_call(names, facts, call, callee, root_set, adders)
            if hit is not None:
                root, values = hit
                extension = _Extension(tuple(values), rel, call.line)
                if extension not in found.setdefault(root, []):
                    found[root].append(extension)
    for extensions in found.values():
        extensions.sort(key=lambda e: (e.rel, e.line))
    return found


def _extension_of_call(names: _Names, facts: FileFacts, call: CallFact, func: ast.AST,
                       roots: set[tuple[str, str]],
                       adders: dict[tuple[str, str], tuple[tuple[str, str], str, int]],
                       ) -> tuple[tuple[str, str], list[str]] | None:
    if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
        target = names.resolve(facts.module, func.value, call.scope)
        if target is not None and target.kind == "assign" and not target.scope \
                and (target.module, target.name) in roots:
            values = _mutator_values(call, func.attr)
            return ((target.module, target.name), values) if values else None
    binding = names.resolve(facts.module, func, call.scope)
    if binding is None or binding.kind not in ("function", "assign") or binding.scope:
        return None
    adder = adders.get((binding.module, binding.name))
    if adder is None:
        return None
    root, method, position = adder
    kind = _MUTATORS[method]
    if position < 0:  # a bound-method alias takes the mutator's own arguments
        values = _mutator_values(call, method)
    else:
        text = call.args[position] if len(call.args) > position else None
        values = _literal_strings(parse_expr(text), single=kind != "many") if text else None
    return (root, values) if values else None


# --------------------------------------------------------------------------
# Recognisers: option definitions


@dataclass
class _Found:
    """An option definition as read, before choices are final."""

    flag: str
    dest: str
    rel: str
    line: int
    module: str
    scope: str
    choices_text: str | None  # a ``choices=`` expression, or None for a Literal
    literal_choices: tuple[str, ...] = ()
    help: str = ""
    default: str | None = None
    aliases: tuple[str, ...] = ()


def recognise_argparse_option(names: _Names, facts: FileFacts, call: CallFact,
                              diagnostics: list[Diagnostic]) -> _Found | None:
    """An ``add_argument`` call that defines a backend option.

    What it recognises:
        ``<parser>.add_argument("--x-backend", ..., choices=EXPR, default=...,
        dest="...", help="...")`` where a long option string ends in
        ``-backend`` (or is ``--quantization``). The flag is the first long
        option string, the dest is ``dest=`` or the flag without dashes with
        ``-`` -> ``_`` (argparse's rule). A default ``Cls.attr`` is read from
        that class attribute (the 0.5.9 ``default=ServerArgs.x`` idiom).
    Why it matters:
        SGLang 0.5.9 defines every server option this way; 0.5.23 still
        registers a few (``--sampling-backend``) by hand.
    Known limits:
        An option name that is not a string literal is not recognised (an
        ``unresolved-flag`` diagnostic is given when the call mentions
        ``backend``). Calls with no ``choices=`` are free-form and skipped.
    Example:
        ``parser.add_argument("--fp4-gemm-backend", type=str,
        choices=FP4_GEMM_RUNNER_BACKEND_CHOICES, default=ServerArgs.fp4_gemm_runner_backend,
        dest="fp4_gemm_runner_backend", help="...")``
    """
    if call.func.rpartition(".")[2] != "add_argument":
        return None
    strings: list[str] = []
    for text in call.args:
        value = literal(parse_expr(text))
        if not isinstance(value, str):
            if "backend" in " ".join(call.args):
                shown = short(f"add_argument({', '.join(call.args)})", 70)
                diagnostics.append(diagnostic(facts.rel, call.line, "unresolved-flag",
                                               text=shown))
            return None
        strings.append(value)
    long_flags = [s for s in strings if s.startswith("--")]
    flags = long_flags or strings
    if not flags or not any(_flag_selected(f) for f in flags):
        return None
    kwargs = dict(call.kwargs)
    if literal(parse_expr(kwargs.get("choices", "None"))) is None:
        return None  # free-form: no finite choices
    flag = flags[0]
    dest = literal(parse_expr(kwargs.get("dest", "")))
    return _Found(
        flag=flag,
        dest=dest if isinstance(dest, str) else _flag_to_dest(flag),
        rel=facts.rel,
        line=call.line,
        module=facts.module,
        scope=call.scope,
        choices_text=kwargs.get("choices"),
        help=_string_value(parse_expr(kwargs.get("help", ""))) or "",
        default=_default_text(names, facts.module, call.scope, kwargs.get("default")),
        aliases=tuple(s for s in strings if s != flag),
    )


def _default_text(names: _Names, module: str, scope: str, text: str | None) -> str | None:
    """The default as source text; ``Cls.attr`` is replaced by that class
    attribute's own default when the tree defines it."""
    if text is None:
        return None
    node = parse_expr(text)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        binding = names.resolve(module, node, scope)
        if binding is not None and binding.kind == "classattr":
            facts = names.facts(binding.module)
            if facts is not None:
                for assign in facts.assigns:
                    if assign.scope == binding.scope and assign.value \
                            and binding.name in _identifier_targets(assign.targets):
                        return assign.value
    return text


@dataclass(frozen=True, slots=True)
class _CliNameRule:
    """A field-name -> flag rule read from the tree (``_field_to_cli_name``)."""

    steps: tuple[tuple[str, tuple[str, ...]], ...]  # ("prefix", (s,)) / ("replace", (a, b)) ...
    where: str = ""

    def apply(self, name: str) -> str:
        value = name
        for op, args in self.steps:
            if op == "prefix":
                value = args[0] + value
            elif op == "suffix":
                value = value + args[0]
            elif op == "replace":
                value = value.replace(args[0], args[1])
            elif op in ("lower", "upper", "strip", "lstrip", "rstrip"):
                value = getattr(value, op)(*args)
        return value


#: argparse's own convention, used when the tree defines no rule of its own.
DEFAULT_CLI_NAME_RULE = _CliNameRule((("replace", ("_", "-")), ("prefix", ("--",))))


def recognise_cli_name_rule(names: _Names, module: str,
                            diagnostics: list[Diagnostic]) -> _CliNameRule:
    """How the tree turns a field name into its command-line flag.

    What it recognises:
        A module-level function in the module that defines the ``Arg``
        metadata class, named ``*cli_name*``, taking one parameter and
        returning one expression built from string literals, the parameter,
        ``+``, f-strings and ``.replace(a, b)`` / ``.lower()`` / ``.strip()``.
    Why it matters:
        0.5.23 fields have no flag in the source unless ``cli_name=`` is given;
        the flag comes from ``arg_utils._field_to_cli_name``, whose rule is
        the tree's, not ours.
    Known limits:
        Other shapes of the rule give a ``cli-name-rule`` diagnostic and the
        argparse convention (``"--" + name.replace("_", "-")``), which is
        also used when no such function is found.
    Example:
        ``def _field_to_cli_name(name): return "--" + name.replace("_", "-")``
        makes ``moe_runner_backend`` the flag ``--moe-runner-backend``.
    """
    facts = names.facts(module)
    if facts is None:
        return DEFAULT_CLI_NAME_RULE
    for func in facts.functions:
        if func.scope or "cli_name" not in func.name or len(func.params) != 1:
            continue
        returns = [r for r in facts.returns if r.scope == func.qualname]
        steps = _string_steps(parse_expr(returns[0].value), func.params[0]) \
            if len(returns) == 1 and not returns[0].path else None
        if steps is None:
            diagnostics.append(diagnostic(facts.rel, func.line, "cli-name-rule",
                                           name=func.name, module=module))
            return DEFAULT_CLI_NAME_RULE
        return _CliNameRule(tuple(steps), f"{facts.rel}:{func.line}")
    return DEFAULT_CLI_NAME_RULE


def _string_steps(node: ast.AST | None, param: str) -> list[tuple[str, tuple[str, ...]]] | None:
    if isinstance(node, ast.Name) and node.id == param:
        return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, str):
            inner = _string_steps(node.right, param)
            return None if inner is None else [*inner, ("prefix", (left,))]
        if isinstance(right, str):
            inner = _string_steps(node.left, param)
            return None if inner is None else [*inner, ("suffix", (right,))]
        return None
    if isinstance(node, ast.JoinedStr):
        values = node.values
        holes = [i for i, v in enumerate(values) if isinstance(v, ast.FormattedValue)]
        if len(holes) != 1:
            return None
        hole = values[holes[0]]
        assert isinstance(hole, ast.FormattedValue)
        inner = _string_steps(hole.value, param)
        before = "".join(str(v.value) for v in values[: holes[0]] if isinstance(v, ast.Constant))
        after = "".join(str(v.value) for v in values[holes[0] + 1:] if isinstance(v, ast.Constant))
        if inner is None or hole.format_spec is not None or hole.conversion != -1:
            return None
        return [*inner, ("prefix", (before,)), ("suffix", (after,))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        args = [literal(a) for a in node.args]
        if not all(isinstance(a, str) for a in args):
            return None
        method = node.func.attr
        if method == "replace" and len(args) == 2 or method in (
                "lower", "upper") and not args or method in ("strip", "lstrip", "rstrip"):
            inner = _string_steps(node.func.value, param)
            return None if inner is None else [*inner, (method, tuple(str(a) for a in args))]
    return None


_ARG_META_FIELDS = frozenset({"choices", "cli_name", "no_cli"})


def recognise_annotated_field(names: _Names, facts: FileFacts, assign: AssignFact,
                              rules: Callable[[str], _CliNameRule]) -> _Found | None:
    """A class field annotated with CLI metadata that defines a backend option.

    What it recognises:
        ``name: A[T, Arg(help=..., choices=EXPR, cli_name="--...")] = default``
        and ``name: A[Literal["a", "b"], "help text"] = default`` in a class
        body, where ``A`` resolves to ``typing.Annotated`` (directly or through
        an alias such as ``A = Annotated`` in another module). The metadata is
        the first string, or the first call of a class whose own fields include
        ``choices`` / ``cli_name`` (the tree's ``Arg``). The flag is
        ``cli_name=`` or the tree's field-to-flag rule; ``no_cli=True`` fields
        have no flag and are skipped. Choices are ``choices=`` (which wins, as
        in the tree's ``arg_utils``) or the ``Literal[...]`` values, through
        ``Optional[...]`` / ``X | None``. The dest is the field name.
    Why it matters:
        SGLang 0.5.23 declares its server options as msgspec Struct fields in
        ``srt/arg_groups/fields/*.py`` and derives argparse calls at run time.
    Known limits:
        Fields registered by code (``fields=[...]`` subsets, dynamic classes)
        are read as declared. Aliases (``aliases=[...]``) are kept for
        ``by_flag`` lookups only.
    Example:
        ``moe_runner_backend: A[str, Arg(help="Choose the runner backend for
        MoE.", choices=MOE_RUNNER_BACKEND_CHOICES, resolvable=True)] = "auto"``
        is ``--moe-runner-backend`` with the choices of that constant.
    """
    if not assign.annotation or not assign.scope or len(assign.targets) != 1:
        return None
    field_name = assign.targets[0]
    if not field_name.isidentifier():
        return None
    node = parse_expr(assign.annotation)
    if not isinstance(node, ast.Subscript):
        return None
    if names.qualname(facts.module, node.value, "") not in _ANNOTATED:
        return None
    parts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(parts) < 2:
        return None
    inner, metadata = parts[0], parts[1:]
    help_text = ""
    kwargs: dict[str, ast.expr] = {}
    meta_module: str | None = None
    for item in metadata:
        text = _string_value(item)
        if text is not None:
            help_text = text
            break
        if isinstance(item, ast.Call):
            meta_module = _arg_meta_module(names, facts.module, item)
            if meta_module is not None:
                kwargs = {k.arg: k.value for k in item.keywords if k.arg}
                if item.args:
                    first = _string_value(item.args[0])
                    help_text = first or ""
                help_text = _string_value(kwargs.get("help")) or help_text
                break
    else:
        return None
    if literal(kwargs.get("no_cli")) is True:
        return None
    cli_name = literal(kwargs.get("cli_name"))
    rule = rules(meta_module) if meta_module is not None else DEFAULT_CLI_NAME_RULE
    flag = cli_name if isinstance(cli_name, str) else rule.apply(field_name)
    if not _flag_selected(flag):
        return None
    choices_node = kwargs.get("choices")
    if choices_node is not None and literal(choices_node) is None:
        choices_node = None
    literal_choices: tuple[str, ...] = ()
    if choices_node is None:
        found = _literal_values(names, facts.module, inner)
        if found is None:
            return None  # free-form: no finite choices
        literal_choices = found
    aliases = literal(kwargs.get("aliases"))
    return _Found(
        flag=flag,
        dest=field_name,
        rel=facts.rel,
        line=assign.line,
        module=facts.module,
        scope=assign.scope,
        choices_text=ast.unparse(choices_node) if choices_node is not None else None,
        literal_choices=literal_choices,
        help=help_text,
        default=assign.value or None,
        aliases=tuple(a for a in aliases if isinstance(a, str))
        if isinstance(aliases, (list, tuple)) else (),
    )


def _arg_meta_module(names: _Names, module: str, call: ast.Call) -> str | None:
    """The module defining the metadata class of ``call``, when that class is
    the CLI metadata kind (its fields include ``choices`` or ``cli_name``); a
    call that resolves nowhere counts when it passes such keywords."""
    binding = names.resolve(module, call.func)
    found = names.class_fact(binding) if binding is not None else None
    if found is None:
        keywords = {k.arg for k in call.keywords}
        return module if keywords & (_ARG_META_FIELDS | {"help"}) else None
    facts, cls = found
    fields = {t for a in facts.assigns if a.scope == cls.qualname for t in a.targets}
    return facts.module if fields & _ARG_META_FIELDS else None


def _literal_values(names: _Names, module: str, node: ast.expr) -> tuple[str, ...] | None:
    """Values of ``Literal[...]`` inside ``T`` (through Optional / Union / ``| None``
    / ``List[...]``); None when ``T`` is no Literal."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        real = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        return _literal_values(names, module, real[0]) if len(real) == 1 else None
    if not isinstance(node, ast.Subscript):
        return None
    kind = names.qualname(module, node.value)
    elements = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if kind in _LITERAL:
        items = [_choice_item(literal(e)) for e in elements]
        return tuple(i for i in items if i is not None)
    if kind in _OPTIONAL and len(elements) == 1:
        return _literal_values(names, module, elements[0])
    if kind in _UNION:
        real = [e for e in elements
                if not (isinstance(e, ast.Constant) and e.value is None)
                and not (isinstance(e, ast.Name) and e.id == "None")]
        return _literal_values(names, module, real[0]) if len(real) == 1 else None
    if kind in _LIST_TYPES and len(elements) == 1:
        return _literal_values(names, module, elements[0])
    return None


# --------------------------------------------------------------------------
# Recognisers: platform labels (weak, documentary evidence)

#: Platform words -> label. Words name platforms, never backends; a text that
#: also names NVIDIA/CUDA gives no label (it is not "non-CUDA only").
_PLATFORM_WORDS: dict[str, frozenset[str]] = {
    "rocm": frozenset({"amd", "rocm", "hip"}),
    "npu": frozenset({"npu", "ascend"}),
    "xpu": frozenset({"intel", "xpu"}),
    "cpu": frozenset({"cpu"}),
}
_CUDA_WORDS = frozenset({"nvidia", "cuda"})
_OTHER_PLATFORMS = re.compile(r"\b(other|non-cuda|non-nvidia)\s+platforms?\b|\bnon-cuda\b",
                              re.IGNORECASE)
_CLAIM_WORDS = frozenset({"only", "specific"})
_CUDA = "cuda"  # internal: names CUDA, so clears a section label
_HEADER_MAX_WORDS = 5


def _platform_of(text: str, claim_required: bool) -> str | None:
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    if words & _CUDA_WORDS:
        return _CUDA
    if claim_required and not (words & _CLAIM_WORDS or re.match(r"\s*for\s", text, re.IGNORECASE)):
        return None
    if _OTHER_PLATFORMS.search(text):
        return "non-cuda"
    found = sorted(p for p, ws in _PLATFORM_WORDS.items() if words & ws)
    if len(found) > 1:
        return "non-cuda"
    return found[0] if found else None


@dataclass
class _Line:
    strings: list[str] = field(default_factory=list)
    comment: str | None = None
    other: bool = False


def _statement_lines(index: Index, rel: str, start: int, cache: dict[str, list[str]],
                     ) -> dict[int, _Line]:
    """Tokens of the statement starting at line ``start``, per physical line."""
    lines = cache.get(rel)
    if lines is None:
        data = index.data(rel)
        lines = data.decode("utf-8", "replace").splitlines(keepends=True) if data else []
        cache[rel] = lines
    out: dict[int, _Line] = {}
    if not 0 < start <= len(lines):
        return out
    depth = 0
    readline = iter(lines[start - 1:]).__next__
    try:
        for token in tokenize.generate_tokens(readline):
            number = token.start[0] + start - 1
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
            if depth < 0 or (depth == 0 and token.type == tokenize.NEWLINE):
                break
            record = out.setdefault(number, _Line())
            if token.type == tokenize.COMMENT:
                record.comment = token.string.lstrip("#").strip()
            elif token.type == tokenize.STRING:
                value = literal(parse_expr(token.string))
                if isinstance(value, str):
                    record.strings.append(value)
                else:
                    record.other = True
            elif token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                tokenize.DEDENT) or (token.type == tokenize.OP
                                                     and token.string == ","):
                pass
            else:
                record.other = True
            if number - start > 5000:
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def recognise_comment_platforms(index: Index, rel: str, line: int, choices: Sequence[str],
                                cache: dict[str, list[str]] | None = None,
                                ) -> list[tuple[str, str]]:
    """Platform labels from the comments inside a choice-list literal.

    What it recognises:
        In the statement starting at ``line``: a one-line comment of at most
        five words on its own line is a section header; the choices listed
        under it, up to the next comment or the end of the list, get the
        header's platform: AMD/ROCm/HIP -> ``rocm``, NPU/Ascend -> ``npu``,
        Intel/XPU -> ``xpu``, CPU -> ``cpu``, "Other platforms" (or several
        platforms) -> ``non-cuda``; a header naming NVIDIA/CUDA, or none of
        these ("Common"), clears the label. A trailing comment on a choice's
        own line that claims a platform ("for NPU", "ROCm only") labels that
        choice alone.
    Why it matters:
        A user on an NVIDIA GPU should not be told to try ``aiter``; the list
        literal is where SGLang itself says which backends are for which
        platform.
    Known limits:
        Documentary evidence only: comments drift. Longer comments are notes,
        not headers: they label nothing and end the section above them (so
        an unclear layout gives no label rather than a wrong one). The word
        lists map platform words, never backend names.
    Example:
        ``ATTENTION_BACKEND_CHOICES = [# Common "triton", ... # AMD specific
        "aiter", "wave", # Other platforms "intel_amx", "ascend", "intel_xpu"]``
        labels aiter/wave ``rocm`` and the last three ``non-cuda``.
    """
    wanted = set(choices)
    records = _statement_lines(index, rel, line, cache if cache is not None else {})
    labels: dict[str, str] = {}
    section: str | None = None
    block: list[str] = []

    def close_block() -> None:
        nonlocal section
        if block:
            found = None
            if len(block) == 1 and len(block[0].split()) <= _HEADER_MAX_WORDS:
                found = _platform_of(block[0], claim_required=False)
            section = None if found == _CUDA else found
        block.clear()

    for number in sorted(records):
        record = records[number]
        if record.comment is not None and not record.strings and not record.other:
            block.append(record.comment)
            continue
        close_block()
        if len(record.strings) == 1 and not record.other:
            value = record.strings[0]
            own = _platform_of(record.comment, claim_required=True) if record.comment else None
            label = None if own == _CUDA else own or section
            if value in wanted and label and value not in labels:
                labels[value] = label
            continue
        if record.strings or record.other:
            section = None
    return [(c, labels[c]) for c in choices if c in labels]


_HELP_CLAIM = re.compile(r"""(['"`])([\w.\-]+)\1\s*\(([^()]*)\)""")


def recognise_help_platforms(help_text: str, choices: Sequence[str]) -> list[tuple[str, str]]:
    """Platform labels from an option's help text.

    What it recognises:
        A quoted choice followed by a parenthesis that claims a platform:
        ``'aiter' (ROCm only)``, ``"ascend" (NPU specific)``, ``'x' (for AMD
        GPUs)``, with the same platform words as
        :func:`recognise_comment_platforms`; the claim needs ``only`` /
        ``specific`` or a leading ``for``, and must not also name NVIDIA/CUDA.
    Why it matters:
        Help texts are where 0.5.9 and 0.5.23 mark ``aiter`` of
        ``--fp8-gemm-backend`` as ROCm only; the choice list itself says
        nothing.
    Known limits:
        Documentary evidence; prose in other shapes ("aiter, for AMD GPUs") is
        not read. ``'auto' (DeepGEMM on CUDA, aiter on ROCm)`` gives nothing.
    Example:
        ``"... 'triton' (fallback, widely compatible), 'aiter' (ROCm only)."``
        gives ``("aiter", "rocm")``.
    """
    wanted = set(choices)
    labels: dict[str, str] = {}
    for match in _HELP_CLAIM.finditer(help_text):
        choice, claim = match.group(2), match.group(3)
        if choice in wanted and choice not in labels:
            found = _platform_of(claim, claim_required=True)
            if found and found != _CUDA:
                labels[choice] = found
    return [(c, labels[c]) for c in choices if c in labels]


# --------------------------------------------------------------------------
# Recognisers: enums and their predicates


class _EnumReader:
    def __init__(self, names: _Names) -> None:
        self.names = names
        self._is_enum: dict[tuple[str, str], bool] = {}

    def is_enum(self, facts: FileFacts, cls: ClassFact, depth: int = 0) -> bool:
        key = (facts.module, cls.qualname)
        if key in self._is_enum:
            return self._is_enum[key]
        self._is_enum[key] = False
        result = False
        for base in self.bases(facts, cls):
            if isinstance(base, str):
                if base in _ENUM_BASES:
                    result = True
            elif depth < 8 and self.is_enum(base[0], base[1], depth + 1):
                result = True
        self._is_enum[key] = result
        return result

    def bases(self, facts: FileFacts, cls: ClassFact,
              ) -> list[str | tuple[FileFacts, ClassFact]]:
        """Each base as an in-tree class, or its dotted name."""
        out: list[str | tuple[FileFacts, ClassFact]] = []
        for text in cls.bases:
            node = parse_expr(text)
            if node is None or isinstance(node, ast.Call):
                continue
            binding = self.names.resolve(facts.module, node, cls.scope)
            found = self.names.class_fact(binding) if binding is not None else None
            if found is not None:
                out.append(found)
            elif binding is not None and binding.kind in ("external", "module"):
                out.append(binding.name)
        return out

    def members(self, facts: FileFacts, cls: ClassFact) -> list[tuple[str, str]] | None:
        if not self.is_enum(facts, cls):
            return None
        members = []
        for assign in facts.assigns:
            if assign.scope != cls.qualname or len(assign.targets) != 1:
                continue
            name = assign.targets[0]
            if not name.isidentifier() or name.startswith("_"):
                continue
            value = literal(parse_expr(assign.value))
            if isinstance(value, str):
                members.append((name, value))
        return members or None

    def methods(self, facts: FileFacts, cls: ClassFact, depth: int = 0,
                ) -> dict[str, tuple[FileFacts, FunctionFact, str]]:
        """Methods by name: the class's own over its in-tree bases' (mixins)."""
        out: dict[str, tuple[FileFacts, FunctionFact, str]] = {}
        if depth < 8:
            for base in reversed(self.bases(facts, cls)):
                if not isinstance(base, str):
                    out.update(self.methods(base[0], base[1], depth + 1))
        for func in facts.functions:
            if func.cls == cls.qualname and func.scope == cls.qualname:
                out[func.name] = (facts, func, cls.qualname)
        return out


def recognise_enum(reader: _EnumReader, facts: FileFacts, cls: ClassFact) -> EnumInfo | None:
    """A string enum and the predicate methods it (or a mixin base) defines.

    What it recognises:
        A class whose bases reach ``enum.Enum`` / ``enum.StrEnum`` (by
        qualified name, through aliases and in-tree enum bases), with members
        ``NAME = "value"``. Methods of the class and of its in-tree mixin
        bases are read by :func:`recognise_enum_predicate`.
    Why it matters:
        SGLang turns ``--moe-runner-backend`` into ``MoeRunnerBackend`` and
        then tests ``backend.is_flashinfer_trtllm()`` instead of comparing
        strings; the link stage must know which choices each test means.
    Known limits:
        Members with computed values (``auto()``, expressions) are not read;
        an enum without any string member is not returned. Int enums are not
        string enums.
    Example:
        ``class MoeRunnerBackend(Enum): AUTO = "auto"; FLASHINFER_TRTLLM =
        "flashinfer_trtllm"`` with ``def is_flashinfer_trtllm(self): return
        self == MoeRunnerBackend.FLASHINFER_TRTLLM``.
    """
    members = reader.members(facts, cls)
    if members is None:
        return None
    qualname = f"{facts.module}.{cls.qualname}"
    context = _EnumContext(reader, qualname, cls.qualname.rpartition(".")[2], tuple(members),
                           reader.methods(facts, cls))
    predicates = []
    for name, (method_facts, method, _) in sorted(context.methods.items(),
                                                  key=lambda kv: (kv[1][0].rel, kv[1][1].line)):
        values = recognise_enum_predicate(context, method_facts, method)
        if values is not None:
            predicates.append((name, values))
    return EnumInfo(qualname, facts.rel, cls.line, tuple(members), tuple(predicates))


@dataclass
class _EnumContext:
    reader: _EnumReader
    qualname: str
    name: str
    members: tuple[tuple[str, str], ...]
    methods: dict[str, tuple[FileFacts, FunctionFact, str]]
    memo: dict[str, frozenset[str] | None] = field(default_factory=dict)

    @property
    def values(self) -> frozenset[str]:
        return frozenset(v for _, v in self.members)


def recognise_enum_predicate(context: _EnumContext, facts: FileFacts,
                             method: FunctionFact) -> frozenset[str] | None:
    """The values for which an enum method returns true.

    What it recognises:
        A method whose body is one unconditional ``return`` of a test of
        ``self``: ``self == E.M`` / ``self is E.M`` / ``!=``;
        ``self in (E.A, E.B)`` / ``not in``; ``self.value == E.M.value`` or
        ``== "literal"``; ``self.value.startswith("p")`` / ``endswith`` (over
        the member values); calls of other such predicates
        (``self.is_marlin()``); ``and`` / ``or`` / ``not`` of these. In an
        ``and``, parts that do not test ``self`` (an environment flag) are
        left out: the values are those the method can be true for.
    Why it matters:
        ``if backend.is_flashinfer_trtllm():`` is how SGLang code selects a
        choice; mapping the method to ``{"flashinfer_trtllm"}`` lets the link
        stage find the code a choice runs.
    Known limits:
        Bodies with branches, several returns, or tests it cannot read give
        None (the method is skipped), never a guess.
    Example:
        ``def is_lora(self): return self.value in (MoeRunnerBackend.LORA_CUTEDSL.value,
        MoeRunnerBackend.LORA_TRITON.value)`` -> ``{"lora_cutedsl", "lora_triton"}``.
    """
    if method.name in context.memo:
        return context.memo[method.name]
    context.memo[method.name] = None  # cycle guard
    result: frozenset[str] | None = None
    decorators = {d.split("(")[0].rpartition(".")[2] for d, _ in method.decorators}
    if method.params and method.params[0] == "self" and not decorators & {
            "staticmethod", "classmethod"}:
        returns = [r for r in facts.returns if r.scope == method.qualname]
        branches = any(s == method.qualname for s in facts.cond_scope)
        if len(returns) == 1 and not returns[0].path and not branches:
            result = _test_values(context, facts, parse_expr(returns[0].value))
    context.memo[method.name] = result
    return result


def _mentions_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


def _is_self_value(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id == "self":
        return True
    return (isinstance(node, ast.Attribute) and node.attr in ("value", "_value_")
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def _member_refs(context: _EnumContext, facts: FileFacts, node: ast.AST,
                 ) -> frozenset[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({node.value}) & context.values
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out: set[str] = set()
        for element in node.elts:
            part = _member_refs(context, facts, element)
            if part is None:
                return None
            out |= part
        return frozenset(out)
    if isinstance(node, ast.Attribute) and node.attr == "value":
        return _member_refs(context, facts, node.value)
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        owner = _dotted(node.value)
        if owner is None:
            return None
        by_name = dict(context.members)
        if node.attr not in by_name:
            return None
        if owner.rpartition(".")[2] == context.name or owner == "cls" or \
                context.reader.names.qualname(facts.module, node.value) == context.qualname:
            return frozenset({by_name[node.attr]})
    return None


def _test_values(context: _EnumContext, facts: FileFacts,
                 node: ast.AST | None) -> frozenset[str] | None:
    everything = context.values
    if node is None:
        return None
    if isinstance(node, ast.BoolOp):
        parts = [(p, _test_values(context, facts, p) if _mentions_self(p) else None)
                 for p in node.values]
        if isinstance(node.op, ast.And):
            tested = [values for p, values in parts if _mentions_self(p)]
            if not tested or any(v is None for v in tested):
                return None
            out = everything
            for values in tested:
                out = out & values  # type: ignore[operator]
            return out
        if any(values is None for _, values in parts):
            return None
        return frozenset().union(*(v for _, v in parts if v is not None))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _test_values(context, facts, node.operand)
        return None if inner is None else everything - inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if not _is_self_value(left) and _is_self_value(right) and isinstance(
                op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            left, right = right, left
        if not _is_self_value(left):
            return None
        refs = _member_refs(context, facts, right)
        if refs is None:
            return None
        if isinstance(op, (ast.Eq, ast.Is)) and len(refs) <= 1 \
                and not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return refs
        if isinstance(op, (ast.NotEq, ast.IsNot)) and len(refs) <= 1 \
                and not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return everything - refs
        if isinstance(op, ast.In):
            return refs
        if isinstance(op, ast.NotIn):
            return everything - refs
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        target, method = node.func.value, node.func.attr
        if method in ("startswith", "endswith") and _is_self_value(target) and len(node.args) == 1:
            affix = literal(node.args[0])
            affixes = (affix,) if isinstance(affix, str) else affix
            if isinstance(affixes, tuple) and all(isinstance(a, str) for a in affixes):
                return frozenset(v for v in everything
                                 if getattr(v, method)(affixes))
            return None
        if isinstance(target, ast.Name) and target.id == "self" and not node.args \
                and method in context.methods:
            method_facts, method_fact, _ = context.methods[method]
            return recognise_enum_predicate(context, method_facts, method_fact)
    return None


def link_enums(enums: Sequence[EnumInfo], options: Sequence[OptionInfo]) -> list[EnumInfo]:
    """Tie each option to the enum(s) that model its choices.

    What it recognises:
        For each option, the enums whose value set overlaps its choices best
        by Jaccard index, when that is at least 0.5; ties keep every enum.
        An enum's ``option_dests`` are the options that chose it, so one enum
        can model several options (``--moe-runner-backend`` and
        ``--speculative-moe-runner-backend`` share ``MoeRunnerBackend``, even
        when the draft option's list is a little shorter).
    Why it matters:
        Enum predicates (``is_flashinfer_trtllm``) only say which choice they
        test once the enum is tied to an option.
    Known limits:
        Overlap is a heuristic: an enum that also lists internal values
        (``CUSTOMIZED``) still links; two options with the same choices but
        different enums would each take the better overlap.
    Example:
        ``MoeA2ABackend`` (13 values) and ``--moe-a2a-backend`` (12 choices,
        all members) overlap 12/13 and link.
    """
    chosen: dict[str, list[str]] = {}
    for option in options:
        choices = set(option.choices)
        if not choices:
            continue
        scored = []
        for enum in enums:
            values = set(enum.values)
            union = values | choices
            score = len(values & choices) / len(union) if union else 0.0
            scored.append((score, enum.qualname))
        if not scored:
            continue
        best = max(score for score, _ in scored)
        if best < MIN_ENUM_OVERLAP:
            continue
        for score, qualname in scored:
            if score == best:
                chosen.setdefault(qualname, [])
                if option.dest not in chosen[qualname]:
                    chosen[qualname].append(option.dest)
    return [replace(e, option_dests=tuple(chosen.get(e.qualname, ()))) for e in enums]


#: Every recogniser, in pipeline order (docs are generated from their docstrings).
RECOGNISERS: tuple[Callable[..., object], ...] = (
    recognise_argparse_option,
    recognise_annotated_field,
    recognise_cli_name_rule,
    recognise_choice_expression,
    recognise_choice_extensions,
    recognise_comment_platforms,
    recognise_help_platforms,
    recognise_enum,
    recognise_enum_predicate,
    link_enums,
)


# --------------------------------------------------------------------------
# The catalog

# Text pre-filters: a file is parsed only when its bytes can hold what a
# recogniser looks for. They may let through more than the recognisers accept,
# never less for the usual spellings (documented in each finder).
_ARGPARSE_TOKENS = ("-backend", QUANTIZATION_FLAG)
_ARGPARSE_TEXT = re.compile(
    rb"""add_argument\(\s*(?:["'][\w-]+["']\s*,\s*)*["'](?:--[\w-]*-backend|--quantization)["']""")
_FIELD_TOKENS = ("_backend", "quantization", "cli_name")
_ANNOTATED_ALIAS = re.compile(rb"^(\w+)\s*=\s*(?:typing\.|typing_extensions\.)?Annotated\s*$",
                              re.MULTILINE)
_CLI_NAME_TEXT = re.compile(rb"""cli_name\s*=\s*["']--[\w-]*-backend["']""")
_ENUM_CLASS = re.compile(rb"^([ \t]*)class\s+\w+\s*\(([^)]*Enum[^)]*)\)\s*:", re.MULTILINE)
_MEMBER_LINE = re.compile(
    rb"""^([ \t]+)([A-Za-z]\w*)\s*=\s*[rRuU]?(["'])([^"'\\]*)\3\s*(?:#.*)?$""")


def build_catalog(index: Index, *, all_backends: bool = True) -> OptionCatalog:
    """Every backend option of the tree (flag ending in ``-backend``, with
    finite choices), ``--quantization``, and the string enums that model them.

    ``all_backends=False`` drops the choices that the tree labels as for a
    non-CUDA platform only (see ``OptionInfo.platforms``); options left with
    no choices are dropped too.
    """
    diagnostics: list[Diagnostic] = []
    names = _Names(index)
    enum_reader = _EnumReader(names)
    reader = _ChoiceReader(names, enum_reader)

    found = _find_argparse(index, names, diagnostics) + _find_fields(index, names, diagnostics)
    found = _dedupe(found, diagnostics)

    # Choices: read once to learn which constants matter, find their
    # extensions in one pass over the tree, then read again with them.
    first = [_choices_of(reader, f) for f in found]
    roots = set().union(*(v.roots for v in first)) if first else set()
    extensions = recognise_choice_extensions(index, names, roots)
    reader.reset(extensions)
    read = [_choices_of(reader, f) for f in found] if extensions else first

    options: list[OptionInfo] = []
    aliases: dict[str, str] = {}
    line_cache: dict[str, list[str]] = {}
    for definition, values in zip(found, read):
        if not values.complete:
            reason = "; ".join(values.problems) or "unknown form"
            code = "partial-choices" if values.items else "unresolved-choices"
            diagnostics.append(diagnostic(definition.rel, definition.line, code,
                                           flag=definition.flag, reason=reason,
                                           count=len(values.items)))
        if not values.items:
            continue
        choices = tuple(values.items)
        sources = [(definition.rel, definition.line)] + values.sources
        labels: dict[str, str] = {}
        for rel, line in sources:
            for choice, platform in recognise_comment_platforms(index, rel, line, choices,
                                                                line_cache):
                labels.setdefault(choice, platform)
        for choice, platform in recognise_help_platforms(definition.help, choices):
            labels.setdefault(choice, platform)
        platforms = tuple((c, labels[c]) for c in choices if c in labels)
        options.append(OptionInfo(
            flag=definition.flag,
            dest=definition.dest,
            choices=choices,
            path=definition.rel,
            line=definition.line,
            help=definition.help,
            default=definition.default,
            platforms=platforms,
        ))
        for alias in definition.aliases:
            aliases[alias] = definition.flag

    enums = link_enums(_find_enums(index, names, enum_reader, options, diagnostics), options)

    if not all_backends:
        options = [_cuda_only(o) for o in options]
        options = [o for o in options if o.choices]
    quantization = next((o for o in options if o.flag == QUANTIZATION_FLAG), None)
    backend_options = sorted((o for o in options if o.flag != QUANTIZATION_FLAG),
                             key=lambda o: (o.path, o.line))
    return OptionCatalog(
        options=backend_options,
        enums=enums,
        quantization=quantization,
        diagnostics=sorted(set(diagnostics)),
        aliases=aliases,
    )


_T = TypeVar("_T")


def _facts_or_report(index: Index, rel: str, diagnostics: list[Diagnostic]) -> FileFacts | None:
    outcome = index.outcome(rel)
    if outcome.facts is None:
        diagnostics.append(diagnostic(rel, outcome.line, "unreadable-file",
                                       reason=outcome.reason or outcome.status))
    return outcome.facts


def _guarded(diagnostics: list[Diagnostic], rel: str, line: int, text: str,
             recognise: Callable[[], _T | None]) -> _T | None:
    """Run one recogniser on one definition; odd code it cannot take (nesting
    too deep for the interpreter) becomes a diagnostic, not a failed scan."""
    try:
        return recognise()
    except (RecursionError, MemoryError) as exc:
        diagnostics.append(diagnostic(rel, line, "unreadable-definition", text=short(text, 70),
                                       reason=type(exc).__name__))
        return None
    except Exception as exc:  # noqa: BLE001 - one definition never stops the catalog
        diagnostics.append(internal_error(rel, line, f"the option definition `{short(text, 70)}`",
                                          exc))
        return None


def _cuda_only(option: OptionInfo) -> OptionInfo:
    other = {choice for choice, _ in option.platforms}
    return replace(option, choices=tuple(c for c in option.choices if c not in other),
                   platforms=())


def _choices_of(reader: _ChoiceReader, definition: _Found) -> _Values:
    if definition.choices_text is None:
        return _Values(list(definition.literal_choices))
    return recognise_choice_expression(reader, definition.choices_text, definition.module,
                                       definition.scope, definition.line)


def _find_argparse(index: Index, names: _Names, diagnostics: list[Diagnostic]) -> list[_Found]:
    """argparse options, in files whose text has ``add_argument("--x-backend"``
    (or ``--quantization``) as the call's first option strings."""
    out = []
    for rel in index.grep(_ARGPARSE_TOKENS, within=index.grep(["add_argument"])):
        if not index.search(rel, _ARGPARSE_TEXT):
            continue
        facts = _facts_or_report(index, rel, diagnostics)
        if facts is None:
            continue
        for call in facts.calls:
            if call.func.endswith("add_argument"):
                option = _guarded(diagnostics, facts.rel, call.line, call.func,
                                  partial(recognise_argparse_option, names, facts, call,
                                          diagnostics))
                if option is not None:
                    out.append(option)
    return out


def _find_fields(index: Index, names: _Names, diagnostics: list[Diagnostic]) -> list[_Found]:
    """Annotated fields, in files whose text has ``_backend: <Annotated or an
    alias of it>[`` (or ``quantization: ...[``, as formatters write them), or
    a ``cli_name="--x-backend"`` argument. Aliases are the names
    bound by a module-level ``X = Annotated`` anywhere in the tree."""
    aliases = {b"Annotated", b"typing.Annotated"}
    for rel in index.grep(["Annotated"]):
        aliases.update(index.findall(rel, _ANNOTATED_ALIAS))
    field_tokens = [name + b": " + alias + b"["
                    for name in (b"_backend", b"quantization") for alias in sorted(aliases)]
    field_text = re.compile(b"|".join([*(re.escape(t) for t in field_tokens),
                                       _CLI_NAME_TEXT.pattern]))
    rules: dict[str, _CliNameRule] = {}

    def rule_for(module: str) -> _CliNameRule:
        if module not in rules:
            rules[module] = recognise_cli_name_rule(names, module, diagnostics)
        return rules[module]

    out = []
    for rel in index.grep(_FIELD_TOKENS):
        if not index.search(rel, field_text):
            continue
        facts = _facts_or_report(index, rel, diagnostics)
        if facts is None:
            continue
        classes = names.class_scopes(facts)
        for assign in facts.assigns:
            if assign.annotation and assign.scope in classes:
                option = _guarded(diagnostics, facts.rel, assign.line, " ".join(assign.targets),
                                  partial(recognise_annotated_field, names, facts, assign,
                                          rule_for))
                if option is not None:
                    out.append(option)
    return out


def _dedupe(found: list[_Found], diagnostics: list[Diagnostic]) -> list[_Found]:
    """One definition per flag. A flag defined twice (a deprecated alias, a
    second CLI in the same package) keeps the definition with choices from
    the module that defines the most backend options (the server's own
    parser), and says so."""
    per_module: dict[str, int] = {}
    for definition in found:
        per_module[definition.module.rpartition(".")[0]] = \
            per_module.get(definition.module.rpartition(".")[0], 0) + 1
    by_flag: dict[str, list[_Found]] = {}
    for definition in found:
        by_flag.setdefault(definition.flag, []).append(definition)
    out = []
    for flag, group in by_flag.items():
        group.sort(key=lambda d: (-per_module[d.module.rpartition(".")[0]], d.rel, d.line))
        kept = group[0]
        for other in group[1:]:
            diagnostics.append(diagnostic(other.rel, other.line, "duplicate-option", flag=flag,
                                           kept=f"{kept.rel}:{kept.line}"))
        out.append(kept)
    out.sort(key=lambda d: (d.rel, d.line))
    return out


def _find_enums(index: Index, names: _Names, reader: _EnumReader,
                options: Sequence[OptionInfo], diagnostics: list[Diagnostic]) -> list[EnumInfo]:
    """String enums that could model an option, and the others in their files.

    A file is parsed only when it mentions ``Enum`` and one of its classes,
    read as text, has ``NAME = "value"`` lines whose values overlap some
    option's choices by the linking threshold. The recogniser then decides
    from facts; enums that a text reading cannot see (values built by
    expressions) are not looked for, as they could not be linked anyway.
    """
    choice_sets = [frozenset(o.choices) for o in options if o.choices]
    if not choice_sets:
        return []
    out = []
    for rel in index.grep(["Enum"]):
        member_sets = index.text_answer(rel, enum_member_sets)
        if not any(_overlaps(values, choice_sets) for values in member_sets):
            continue
        facts = _facts_or_report(index, rel, diagnostics)
        if facts is None:
            continue
        for cls in facts.classes:
            info = _guarded(diagnostics, facts.rel, cls.line, cls.qualname,
                            partial(recognise_enum, reader, facts, cls))
            if info is not None:
                out.append(info)
    out.sort(key=lambda e: (e.rel, e.line))
    return out


def _overlaps(values: frozenset[str], choice_sets: Sequence[frozenset[str]]) -> bool:
    return any(len(values & c) >= MIN_ENUM_OVERLAP * len(values | c) for c in choice_sets)


def enum_member_sets(data: bytes) -> tuple[frozenset[str], ...]:
    """``_class_string_members``, as a value (for ``Index.text_answer``)."""
    return tuple(_class_string_members(data))


def _class_string_members(data: bytes) -> Iterator[frozenset[str]]:
    """For each class whose bases name an ``...Enum``, the string values of
    ``NAME = "value"`` lines at the first indentation of its body."""
    for header in _ENUM_CLASS.finditer(data):
        outer = len(header.group(1).expandtabs())
        body: int | None = None
        values: set[str] = set()
        for following in data[header.end():].split(b"\n")[1:]:
            stripped = following.strip()
            if not stripped or stripped.startswith(b"#"):
                continue
            indent = len(following) - len(following.lstrip())
            if indent <= outer:
                break
            if body is None:
                body = indent
            if indent != body or b"=" not in following:
                continue
            member = _MEMBER_LINE.match(following)
            if member is not None:
                values.add(member.group(4).decode("utf-8", "replace"))
        if values:
            yield frozenset(values)
