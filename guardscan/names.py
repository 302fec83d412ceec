"""names (shared by every stage): what a name in a module of the tree means,
by qualified name, through imports, aliases, star imports and re-exports.

The one resolver over index facts. A name is looked up in its own module, in
the scope where it is used (function scopes first, innermost first; class
bodies do not enclose their methods), then the module's top level, then the
modules it star-imports. An imported name is followed to the module that
defines it (``from a import b`` where ``a/__init__.py`` re-exports ``b`` from
``a.c`` ends at ``a.c``). Module-level aliases whose only value is a dotted
name (``A = Annotated``, ``Alias = other.Name``) are followed too.

The answer is a :class:`Binding`: an assignment, an in-tree class or
function, a class attribute, a module, a parameter, or something outside the
tree (named by its dotted name). Where the tree gives no answer the resolver
returns None rather than guess by spelling.

    names = Names(index)
    names.lookup("sglang.srt.server_args", "ServerArgs")       # module + name (+ scope)
    names.attribute(binding, "attention_backend")              # attribute of a binding
    names.resolve(module, ast_node, scope)                     # a Name / dotted Attribute
    names.qualname(module, ast_node, scope)                    # "typing.Annotated", ...
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from guardscan.index import Index
from guardscan.index.extract import dotted
from guardscan.index.facts import AssignFact, ClassFact, FileFacts, FunctionFact, ImportFact
from guardscan.syntax import parse_expr

__all__ = ["Binding", "BindingKind", "Names", "identifier_targets"]

#: What a name is bound to (see :class:`Binding`).
BindingKind: TypeAlias = Literal[
    "assign", "class", "classattr", "function", "module", "param", "external"]

#: Chains of imports and aliases longer than this are not followed (a cycle
#: in the tree, or a tree too odd to resolve): the name stays unresolved.
MAX_DEPTH = 12

_Entry: TypeAlias = AssignFact | ClassFact | FunctionFact | ImportFact


def identifier_targets(targets: Iterable[str]) -> list[str]:
    """The plain names among an assignment's targets (not ``a.b`` / ``a[i]``)."""
    return [t for t in targets if t.isidentifier()]


@dataclass(frozen=True, slots=True)
class Binding:
    """What a name means.

    ``kind`` says which fields matter:

    assign     ``module``, ``name`` and ``scope`` ("" at module level)
    class      ``module`` and ``name`` (the class qualname)
    function   ``module`` and ``name`` (the function qualname)
    classattr  ``module``, ``name`` (the attribute) and ``scope`` (the class qualname)
    param      ``module``, ``name`` and ``scope`` (the function qualname)
    module     ``name`` (the module's dotted name)
    external   ``name`` (a dotted name outside the tree, or a builtin)
    """

    kind: BindingKind
    module: str = ""
    name: str = ""
    scope: str = ""

    @property
    def qualname(self) -> str | None:
        """The dotted name of what is bound, where it has one: modules,
        external names, in-tree classes and functions, module-level
        assignments (``sglang.srt.server_args.ATTENTION_BACKEND_CHOICES``)."""
        if self.kind in ("module", "external"):
            return self.name
        if self.kind in ("class", "function"):
            return f"{self.module}.{self.name}"
        if self.kind == "assign" and not self.scope:
            return f"{self.module}.{self.name}"
        return None


class Names:
    """Resolve names by qualified name over one index (answers are memoised
    per module; the index's facts do not change under it)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._tables: dict[str, dict[str, list[_Entry]]] = {}
        self._class_scopes: dict[str, frozenset[str]] = {}
        self._local_tables: dict[str, tuple[set[tuple[str, str]],
                                            dict[tuple[str, str], ImportFact],
                                            dict[str, tuple[str, ...]]]] = {}

    def facts(self, module: str) -> FileFacts | None:
        """The facts of an in-tree module, None when it is not in the tree
        (or could not be read)."""
        return self.index.module(module)

    def class_scopes(self, facts: FileFacts) -> frozenset[str]:
        """The qualnames of every class of a file (class bodies as scopes)."""
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

    def lookup(self, module: str, name: str, scope: str = "",
               depth: int = 0) -> Binding | None:
        """What ``name`` means where it is used: in ``scope`` of ``module``
        (function scopes, then the module, then its star imports)."""
        facts = self.facts(module)
        if facts is None or depth > MAX_DEPTH:
            return None
        if scope:
            assigned, imported, params = self._locals(facts)
            for local in self.function_scopes(facts, scope):
                if (local, name) in assigned:
                    return Binding("assign", module, name, local)
                imp = imported.get((local, name))
                if imp is not None:
                    return self._follow(imp.module, imp.name, depth)
                if name in params.get(local, ()):
                    return Binding("param", module, name, local)
        entries = self._table(module).get(name, [])
        if any(isinstance(e, AssignFact) for e in entries):
            return Binding("assign", module, name, "")
        for entry in entries:
            if isinstance(entry, ClassFact):
                return Binding("class", module, entry.qualname)
        for entry in entries:
            if isinstance(entry, FunctionFact):
                return Binding("function", module, entry.qualname)
        if entries:  # only imports are left: the last one binds the name
            last = entries[-1]
            assert isinstance(last, ImportFact)
            return self._follow(last.module, last.name, depth)
        for imp in facts.imports:
            if imp.local == "*" and not imp.scope and imp.module != module:
                found = self.lookup(imp.module, name, "", depth + 1)
                if found is not None:
                    return found
        return None

    def attribute(self, base: Binding, attr: str) -> Binding | None:
        """``base.attr`` for a module, external or class binding (None for
        the others: their attributes are not modelled)."""
        if base.kind == "module":
            full = f"{base.name}.{attr}"
            if self.index.has_module(full):
                return Binding("module", name=full)
            if self.index.has_module(base.name):
                return self.lookup(base.name, attr)
            return Binding("external", name=full)
        if base.kind == "external":
            return Binding("external", name=f"{base.name}.{attr}")
        if base.kind == "class":
            return Binding("classattr", base.module, attr, base.name)
        return None

    def resolve(self, module: str, node: ast.AST, scope: str = "",
                depth: int = 0) -> Binding | None:
        """The binding of a Name or dotted Attribute expression; a head name
        the tree does not define is taken as external (a builtin)."""
        name = dotted(node)
        if name is None or depth > MAX_DEPTH:
            return None
        head, *rest = name.split(".")
        binding = self.lookup(module, head, scope)
        if binding is None:
            binding = Binding("external", name=head)
        for attr in rest:
            binding = self._through_alias(binding, depth)
            next_binding = self.attribute(binding, attr)
            if next_binding is None:
                return None
            binding = next_binding
        return self._through_alias(binding, depth)

    def qualname(self, module: str, node: ast.AST, scope: str = "") -> str | None:
        """The qualified name of a Name or dotted Attribute expression (see
        :attr:`Binding.qualname`)."""
        binding = self.resolve(module, node, scope)
        return binding.qualname if binding is not None else None

    def class_fact(self, binding: Binding) -> tuple[FileFacts, ClassFact] | None:
        """The in-tree class a class binding names, with its file's facts."""
        if binding.kind != "class":
            return None
        facts = self.facts(binding.module)
        if facts is None:
            return None
        for cls in facts.classes:
            if cls.qualname == binding.name:
                return facts, cls
        return None

    def _table(self, module: str) -> dict[str, list[_Entry]]:
        """Module-level bindings by name, in source order of each kind."""
        table = self._tables.get(module)
        if table is not None:
            return table
        table = {}
        facts = self.facts(module)
        if facts is not None:
            for assign in facts.assigns:
                if not assign.scope:
                    for name in identifier_targets(assign.targets):
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
                        for n in identifier_targets(a.targets)}
            imported = {(i.scope, i.local): i for i in facts.imports if i.scope}
            params = {f.qualname: f.params for f in facts.functions}
            found = (assigned, imported, params)
            self._local_tables[facts.module] = found
        return found

    def _follow(self, module: str, name: str | None, depth: int) -> Binding:
        """Where ``from module import name`` (or ``import module``) leads."""
        if name is None:
            return Binding("module", name=module)
        full = f"{module}.{name}"
        if self.index.has_module(full):
            return Binding("module", name=full)
        if self.index.has_module(module):
            found = self.lookup(module, name, "", depth + 1)
            if found is not None:
                return found
        return Binding("external", name=full)

    def _through_alias(self, binding: Binding, depth: int) -> Binding:
        """``A = Annotated`` / ``Alias = other.Name``: follow a module-level
        assignment whose only value is a dotted name."""
        if binding.kind != "assign" or binding.scope:
            return binding
        facts = self.facts(binding.module)
        if facts is None:
            return binding
        assigns = [a for a in facts.assigns
                   if not a.scope and binding.name in identifier_targets(a.targets)]
        if len(assigns) != 1:
            return binding
        value = parse_expr(assigns[0].value)
        if value is None or dotted(value) is None:
            return binding
        target = self.resolve(binding.module, value, "", depth + 1)
        return target if target is not None else binding
