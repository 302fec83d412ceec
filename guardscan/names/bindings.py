"""names (shared by every stage): every binding of a name, in a stated order, with each read recorded.

:meth:`Names.lookup` picks one winner. A reader that weighs the ways a name
is bound (the guard interpreter combines conditional bindings with their
conditions) needs all of them instead; :class:`BindingTables` gives them,
per file:

``module_bindings(rel, name)``
    the module-level bindings of ``name``: assignments (with those of
    functions that declare it ``global``), then functions, then classes, then
    imports, each in file order;
``scope_assigns`` / ``scope_imports`` / ``functions``
    what a function scope binds, for local lookups (the caller picks among
    them by line);
``star_provider(rel, name)``
    the in-tree module a star import of ``rel`` takes ``name`` from (star
    imports followed :data:`STAR_DEPTH` deep);
``function_scopes(view, scope)`` / ``class_function(view, cls, name)``
    the scopes a name used in ``scope`` is looked for in (class bodies do
    not enclose their methods), and a function of one class's own body;
``imported(module, name)``
    where ``import module`` / ``from module import name`` leads, one step.

Tuple targets are split as the index's observations split them
(:func:`~guardscan.index.facts.target_names`), so a recorded ``("name", n)``
read sees every fact listed here. Every table is read through
:class:`~guardscan.index.observe.FactsView` and each lookup notes what it
read (``("name", n)``, ``STARS``, ``("scope", s)``, ``("class", q)``, ``("cls", c)``): the
result cache reuses an answer only while those reads answer the same.
Tables are keyed by file (``rel``), modules map to files through the index.
"""

from __future__ import annotations

from collections.abc import Callable

from guardscan.index import Index
from guardscan.index.facts import (
    AssignFact,
    ClassFact,
    FunctionFact,
    ImportFact,
    target_names,
)
from guardscan.index.observe import STARS, FactsView
from guardscan.names.model import Binding

__all__ = ["STAR_DEPTH", "BindingTables", "FunctionTables", "ModuleBinding"]

#: How many star imports deep a name is looked for behind a star import.
STAR_DEPTH = 3

#: One module-level way a name is bound.
ModuleBinding = AssignFact | FunctionFact | ClassFact | ImportFact

#: A file's functions by qualified name (all, in order) and by (enclosing
#: scope, name) (the first).
FunctionTables = tuple[dict[str, list[FunctionFact]], dict[tuple[str, str], FunctionFact]]


class BindingTables:
    """Per-file binding tables over an index's facts, built on first use and
    forgotten on :meth:`clear`. ``views`` gives a file's recording view
    (``Index.view``)."""

    def __init__(self, index: Index, views: Callable[[str], FactsView | None]) -> None:
        self.index = index
        self.views = views
        self._module: dict[str, dict[str, list[ModuleBinding]]] = {}
        self._assigns: dict[str, dict[str, dict[str, list[AssignFact]]]] = {}
        self._imports: dict[str, dict[str, dict[str, list[ImportFact]]]] = {}
        self._functions: dict[str, FunctionTables] = {}
        self._packages: set[str] | None = None
        index.let_go_with(self.forget)

    def clear(self) -> None:
        for memo in (self._module, self._assigns, self._imports, self._functions):
            memo.clear()

    def forget(self, rel: str) -> None:
        """Let go of ``rel``'s tables (the index let go of its facts)."""
        for memo in (self._module, self._assigns, self._imports, self._functions):
            memo.pop(rel, None)

    # -- modules and files ------------------------------------------------------------
    def rel_of(self, module: str) -> str | None:
        """The file of an in-tree module."""
        return self.index.by_module.get(module)

    def is_package(self, module: str) -> bool:
        """A directory of the tree (with or without ``__init__.py``)."""
        packages = self._packages
        if packages is None:
            parents = {m.rpartition(".")[0] for m in self.index.by_module}
            # and their parents: a namespace package may hold only packages
            packages = self._packages = parents | {p.rpartition(".")[0] for p in parents if p}
        return any(m == module or m.startswith(module + ".") for m in packages)

    def imported(self, module: str, name: str | None) -> Binding:
        """What ``import module`` (``name`` None) or ``from module import name``
        binds, one step: an in-tree module or package, a ``member`` of an
        in-tree module (to be looked up there), or an external name."""
        by_module = self.index.by_module
        if name is None:
            if module in by_module or self.is_package(module):
                return Binding("module", name=module)
            return Binding("external", name=module)
        submodule = f"{module}.{name}"
        if submodule in by_module:
            return Binding("module", name=submodule)
        if module not in by_module:
            return Binding("external", name=submodule)
        return Binding("member", module, name)

    # -- module level -----------------------------------------------------------------
    def module_bindings(self, rel: str, name: str) -> list[ModuleBinding]:
        """The module-level bindings of ``name`` in ``rel``: assignments, then
        functions, classes and imports, each in file order."""
        view = self.views(rel)
        if view is None:
            return []
        view.note("name", name)
        entries = self._module_table(rel, view).get(name, [])
        for entry in entries:
            if entry.scope:  # a setter's assignment: what else its function binds matters
                view.note("scope", entry.scope)
        return entries

    def _module_table(self, rel: str, view: FactsView) -> dict[str, list[ModuleBinding]]:
        cached = self._module.get(rel)
        if cached is not None:
            return cached
        facts = view.unobserved
        table: dict[str, list[ModuleBinding]] = {}
        for assign in facts.assigns:
            if assign.scope:
                continue
            for target in assign.targets:
                for name in target_names(target):
                    table.setdefault(name, []).append(assign)
        # functions that declare a name ``global`` assign the module's binding
        setters = {f.qualname: set(f.globals) for f in facts.functions if f.globals}
        if setters:
            for assign in facts.assigns:
                declared = setters.get(assign.scope)
                if not declared:
                    continue
                for target in assign.targets:
                    for name in target_names(target):
                        if name in declared:
                            table.setdefault(name, []).append(assign)
        for func in facts.functions:
            if not func.scope:
                table.setdefault(func.name, []).append(func)
        for cls in facts.classes:
            if not cls.scope:
                table.setdefault(cls.qualname, []).append(cls)
        for imp in facts.imports:
            if not imp.scope:
                table.setdefault(imp.local, []).append(imp)
        self._module[rel] = table
        return table

    def star_provider(self, view: FactsView, name: str) -> str | None:
        """The first file a module-level star import of ``view``'s file takes
        ``name`` from (bound there, or behind its own star imports), if any."""
        view.note(*STARS)
        for imp in view.unobserved.imports:
            if imp.local != "*" or imp.scope:
                continue
            target = self.rel_of(imp.module)
            if target is not None and target != view.rel and (
                    self.module_bindings(target, name)
                    or self._star_has(target, name, STAR_DEPTH)):
                return target
        return None

    def _star_has(self, rel: str, name: str, depth: int) -> bool:
        if depth <= 0:
            return False
        view = self.views(rel)
        if view is None:
            return False
        view.note(*STARS)
        for imp in view.unobserved.imports:
            if imp.local == "*" and not imp.scope:
                target = self.rel_of(imp.module)
                if target and (self.module_bindings(target, name)
                               or self._star_has(target, name, depth - 1)):
                    return True
        return False

    # -- function scopes --------------------------------------------------------------
    def scope_assigns(self, view: FactsView, scope: str) -> dict[str, list[AssignFact]]:
        """A function scope's assignments by bound name, in file order."""
        view.note("scope", scope)
        per_file = self._assigns.get(view.rel)
        if per_file is None:
            per_file = {}
            for assign in view.unobserved.assigns:
                if not assign.scope:
                    continue
                table = per_file.setdefault(assign.scope, {})
                for target in assign.targets:
                    for target_name in target_names(target):
                        table.setdefault(target_name, []).append(assign)
            self._assigns[view.rel] = per_file
        return per_file.get(scope, {})

    def scope_imports(self, view: FactsView, scope: str) -> dict[str, list[ImportFact]]:
        """A function scope's imports by bound name, in file order."""
        view.note("scope", scope)
        per_file = self._imports.get(view.rel)
        if per_file is None:
            per_file = {}
            for imp in view.unobserved.imports:
                if imp.scope:
                    per_file.setdefault(imp.scope, {}).setdefault(imp.local, []).append(imp)
            self._imports[view.rel] = per_file
        return per_file.get(scope, {})

    def function_scopes(self, view: FactsView, scope: str) -> list[str]:
        """``scope`` and the scopes around it that are not class bodies,
        innermost first (a class body does not enclose its methods)."""
        scopes = []
        current = scope
        while current:
            if not view.has_class(current):
                scopes.append(current)
            current = current.rpartition(".")[0]
        return scopes

    def class_function(self, view: FactsView, cls: str, name: str) -> FunctionFact | None:
        """The first function ``name`` defined in class ``cls``'s own body
        (its bases are not searched)."""
        view.note("cls", cls)
        for func in view.unobserved.functions:
            if func.cls == cls and func.name == name:
                return func
        return None

    def functions(self, view: FactsView) -> FunctionTables:
        """A file's functions by qualified name and by (enclosing scope, name).
        Nothing is noted: the caller notes the ``("func", q)`` / ``("scope", s)``
        it looks up."""
        tables = self._functions.get(view.rel)
        if tables is None:
            by_qualname: dict[str, list[FunctionFact]] = {}
            by_scope: dict[tuple[str, str], FunctionFact] = {}
            for func in view.unobserved.functions:
                by_qualname.setdefault(func.qualname, []).append(func)
                by_scope.setdefault((func.scope, func.name), func)
            tables = self._functions[view.rel] = (by_qualname, by_scope)
        return tables
