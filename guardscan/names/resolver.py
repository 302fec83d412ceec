"""names (shared by every stage): the one name resolver, by qualified name.

Two questions, one set of scope tables (:class:`ModuleScopes`) and one way of
following imports, re-exports, star imports, aliases and lazy ``__getattr__``
tables:

``lookup`` / ``resolve`` / ``qualname`` (options, guards): where is a name
bound, as a :class:`Binding`, None where the tree gives no answer.

``resolve_path`` / ``resolve_reference`` (kernels): what does a public path
(``flashinfer.fp4_quantize``) or a dotted reference used in a scope
(a callee, a base class) end at, as a :class:`Target`: the defining function
or class, a module, a constant, something outside the package, a builtin, a
runtime value (``dynamic``), or ``unresolved`` with the reason
(:mod:`guardscan.names.references`). Classes' methods are found through their
in-tree bases (:mod:`guardscan.names.members`).

The two questions still order a name bound several ways at module level
differently (``lookup``: the assignment first; references: the definition,
then imports); a condition-aware choice (each binding with the path it is
bound under) is left for the guard interpreter's switch-over. Neither ever
matches by spelling: a same-named definition elsewhere in the tree is only
reached through the using module's own imports.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from guardscan.index import Index
from guardscan.index.extract import dotted
from guardscan.index.facts import ClassFact, FileFacts, ImportFact
from guardscan.index.observe import FactsView
from guardscan.names.bindings import BindingTables, ModuleBinding
from guardscan.names.lazy import lazy_exports
from guardscan.names.members import find_method
from guardscan.names.model import Binding, Target
from guardscan.names.references import References
from guardscan.names.scopes import ModuleScopes, identifier_targets
from guardscan.syntax import parse_expr

__all__ = ["MAX_DEPTH", "Names"]

#: Chains of imports and aliases longer than this are not followed by
#: ``lookup`` (a cycle in the tree, or a tree too odd to resolve): the name
#: stays unresolved.
MAX_DEPTH = 12


def _assigned(table: ModuleScopes, scope: str, name: str) -> bool:
    """Whether ``scope`` assigns ``name`` itself (``name = ...``, not as part of
    a tuple target)."""
    return any(name in a.targets for a in table.assigns.get(scope, {}).get(name, ()))


class Names:
    """Resolve names by qualified name over one index (answers are memoised
    per module; the index's facts do not change under it)."""

    def __init__(self, index: Index,
                 build_scopes: Callable[[FileFacts], ModuleScopes] | None = None,
                 unrecorded_locals: Callable[[ModuleScopes, str], frozenset[str]] | None = None,
                 views: Callable[[str], FactsView | None] | None = None,
                 ) -> None:
        """``build_scopes`` makes a module's scope tables (a stage may keep
        more per module than names need); ``unrecorded_locals`` names what a
        function binds in ways the index does not record (``for`` targets,
        ``with ... as``, ...), so references to them are dynamic, not
        unresolved; ``views`` gives the recording view of a file that
        :attr:`tables` reads through (default ``index.view``)."""
        self.index = index
        #: every binding of a name, per file, reads recorded (see :mod:`.bindings`)
        self.tables = BindingTables(index, views or index.view)
        self.package = index.tree.package
        self._build_scopes = build_scopes or ModuleScopes.build
        self._scopes: dict[str, ModuleScopes | None] = {}
        self._lazy: dict[str, dict[str, ImportFact]] = {}
        self._references = References(self, unrecorded_locals)

    def facts(self, module: str) -> FileFacts | None:
        """The facts of an in-tree module, None when it is not in the tree
        (or could not be read)."""
        return self.index.module(module)

    def scopes(self, module: str) -> ModuleScopes | None:
        """The scope tables of an in-tree module (built on first use)."""
        if module not in self._scopes:
            facts = self.facts(module)
            self._scopes[module] = self._build_scopes(facts) if facts is not None else None
        return self._scopes[module]

    def class_scopes(self, facts: FileFacts) -> frozenset[str]:
        """The qualnames of every class of a file (class bodies as scopes)."""
        table = self.scopes(facts.module)
        return frozenset(table.classes) if table is not None else frozenset()

    def function_scopes(self, facts: FileFacts, scope: str) -> list[str]:
        """``scope`` and the function scopes around it, innermost first (class
        bodies do not enclose their methods)."""
        table = self.scopes(facts.module)
        classes = table.classes if table is not None else {}
        out = []
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
        (function scopes, then the module, then its star imports, then a
        lazy ``__getattr__`` table). A name bound several ways at module
        level is taken as the assignment, else the class, else the function,
        else the last import."""
        table = self.scopes(module)
        if table is None or depth > MAX_DEPTH:
            return None
        if scope:
            for local in self.function_scopes(table.facts, scope):
                if _assigned(table, local, name):
                    return Binding("assign", module, name, local)
                imports = table.imports.get(local, {}).get(name)
                if imports:
                    return self._follow(imports[-1].module, imports[-1].name, depth)
                function = table.functions.get(local)
                if function is not None and name in function.params:
                    return Binding("param", module, name, local)
        if _assigned(table, "", name):
            return Binding("assign", module, name, "")
        qualname = table.defs.get("", {}).get(name)
        if qualname is not None:
            return Binding("class" if qualname in table.classes else "function", module, qualname)
        imports = table.imports.get("", {}).get(name)
        if imports:  # only imports are left: the last one binds the name
            return self._follow(imports[-1].module, imports[-1].name, depth)
        for star in table.star_imports:
            if star != module:
                found = self.lookup(star, name, "", depth + 1)
                if found is not None:
                    return found
        lazy = self.lazy_exports(module).get(name)
        if lazy is not None:
            return self._follow(lazy.module, lazy.name, depth)
        return None

    def bindings(self, module: str, name: str) -> list[ModuleBinding]:
        """Every module-level binding of ``name`` in an in-tree module, in the
        order of :meth:`BindingTables.module_bindings` (no winner picked)."""
        rel = self.tables.rel_of(module)
        return self.tables.module_bindings(rel, name) if rel is not None else []

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

    def _follow(self, module: str, name: str | None, depth: int) -> Binding:
        """Where ``from module import name`` (or ``import module``) leads."""
        if name is None:
            return Binding("module", name=module)
        step = self.tables.imported(module, name)
        if step.kind == "member":
            found = self.lookup(module, name, "", depth + 1)
            return found if found is not None else Binding("external", name=f"{module}.{name}")
        return step

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

    def lazy_exports(self, module: str) -> dict[str, ImportFact]:
        """Names a module hands out through its ``__getattr__`` (as the import
        that would bind them); see :mod:`guardscan.names.lazy`."""
        found = self._lazy.get(module)
        if found is None:
            table = self.scopes(module)
            found = lazy_exports(table, self.index.data(table.rel)) if table is not None else {}
            self._lazy[module] = found
        return found

    def find_method(self, table: ModuleScopes, class_qualname: str, name: str) -> Target | None:
        """A method of an in-tree class or of its in-tree bases (first found, in base order)."""
        return find_method(self, table, class_qualname, name)

    # -- references: dotted paths and callee texts, settled to a Target --------------
    def loaded_modules(self) -> list[str]:
        """The in-tree modules whose scope tables have been built so far."""
        return [m for m, s in self._scopes.items() if s is not None]

    def split_qualified(self, qualified: str) -> tuple[str | None, str]:
        """``pkg.mod.Class.meth`` -> (``pkg.mod``, ``Class.meth``) by the longest module."""
        parts = qualified.split(".")
        for end in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                return module, ".".join(parts[end:])
        return None, qualified

    def resolve_path(self, path: str) -> Target:
        """A public or module path (``flashinfer.fp4_quantize``) -> what defines it,
        through ``__init__`` re-exports, star imports, aliases and lazy tables."""
        return self._references.resolve_path(path)

    def resolve_reference(self, module: str, scope: str, text: str, depth: int = 0) -> Target:
        """What the dotted reference ``text`` (a callee, a base class, an alias's
        value) names, used in ``scope`` of ``module``."""
        return self._references.resolve_reference(module, scope, text, depth)
