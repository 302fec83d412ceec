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
runtime value (``dynamic``), or ``unresolved`` with the reason. Classes'
methods are found through their in-tree bases (:mod:`guardscan.names.members`).

Neither ever matches by spelling: a same-named definition elsewhere in the
tree is only reached through the using module's own imports.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable

from guardscan.index import Index
from guardscan.index.extract import dotted
from guardscan.index.facts import ClassFact, FileFacts, ImportFact
from guardscan.names.lazy import lazy_exports
from guardscan.names.members import find_method, is_data_attribute, member
from guardscan.names.model import MAX_PATH_DEPTH, Binding, Target
from guardscan.names.scopes import ModuleScopes, identifier_targets
from guardscan.syntax import parse_expr

__all__ = ["MAX_DEPTH", "Names"]

#: Chains of imports and aliases longer than this are not followed by
#: ``lookup`` (a cycle in the tree, or a tree too odd to resolve): the name
#: stays unresolved.
MAX_DEPTH = 12

_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_BUILTINS = frozenset(dir(builtins))


def _no_unrecorded_locals(table: ModuleScopes, scope: str) -> frozenset[str]:
    return frozenset()


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
                 ) -> None:
        """``build_scopes`` makes a module's scope tables (a stage may keep
        more per module than names need); ``unrecorded_locals`` names what a
        function binds in ways the index does not record (``for`` targets,
        ``with ... as``, ...), so references to them are dynamic, not
        unresolved."""
        self.index = index
        self.package = index.tree.package
        self._build_scopes = build_scopes or ModuleScopes.build
        self._unrecorded_locals = unrecorded_locals or _no_unrecorded_locals
        self._scopes: dict[str, ModuleScopes | None] = {}
        self._lazy: dict[str, dict[str, ImportFact]] = {}
        self._path_memo: dict[str, Target] = {}
        self._reference_memo: dict[tuple[str, str, str], Target] = {}

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

    def resolve_path(self, path: str, depth: int = 0) -> Target:
        """A public or module path (``flashinfer.fp4_quantize``) -> what defines it,
        through ``__init__`` re-exports, star imports and aliases."""
        if path in self._path_memo:
            return self._path_memo[path]
        if depth > MAX_PATH_DEPTH:
            return Target("unresolved", path, "too many hops")
        self._path_memo[path] = Target("unresolved", path, "import cycle")
        result = self._resolve_path(path, depth)
        self._path_memo[path] = result
        return result

    def _resolve_path(self, path: str, depth: int) -> Target:
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                rest = parts[end:]
                if not rest:
                    return Target("module", module)
                return self._lookup_path(module, rest, depth)
        if parts[0] != self.package:
            return Target("external", path)
        return Target("unresolved", path, "no such module in the package")

    def _lookup_path(self, module: str, rest: list[str], depth: int) -> Target:
        """``rest`` (a name and its attributes) at the top level of ``module``:
        definitions, then imports, then assignments, then star imports."""
        table = self.scopes(module)
        path = ".".join([module, *rest])
        if table is None:
            return Target("unresolved", path, f"{module} could not be read")
        name, more = rest[0], rest[1:]
        if name in table.defs.get("", {}):
            return member(self, table, table.defs[""][name], more)
        for imp in table.imports.get("", {}).get(name, []):
            found = self._follow_import(imp, more, depth)
            if found.kind != "unresolved":
                return found
        alias = self._alias_target(table, "", name, more, depth)
        if alias is not None:
            return alias
        for star in table.star_imports:
            star_table = self.scopes(star)
            if star_table is not None and not name.startswith("_"):
                found = self._lookup_path(star, rest, depth + 1)
                if found.kind != "unresolved":
                    return found
        lazy = self.lazy_exports(module).get(name)
        if lazy is not None:
            return self._follow_import(lazy, more, depth)
        return Target("unresolved", path, f"{name} is not bound in {module}")

    def _follow_import(self, imp: ImportFact, more: list[str], depth: int) -> Target:
        base = f"{imp.module}.{imp.name}" if imp.name else imp.module
        path = ".".join([base, *more])
        if not (base == self.package or base.startswith(self.package + ".")):
            return Target("external", path)
        return self.resolve_path(path, depth + 1)

    def _alias_target(self, table: ModuleScopes, scope: str, name: str, more: list[str],
                      depth: int) -> Target | None:
        """``name = other.name`` at module level is an alias; other values are constants."""
        assigns = table.assigns.get(scope, {}).get(name)
        if not assigns:
            return None
        if len(assigns) == 1 and _DOTTED.match(assigns[0].value.strip()):
            value = assigns[0].value.strip()
            if value != name:
                return self.resolve_reference(table.module, scope, ".".join([value, *more]),
                                              depth + 1)
        if more:
            return Target("dynamic", ".".join([name, *more]))
        return Target("constant", f"{table.module}.{name}")

    def resolve_reference(self, module: str, scope: str, text: str, depth: int = 0) -> Target:
        """What the dotted reference ``text`` (a callee, a base class, an alias's
        value) names, used in ``scope`` of ``module``."""
        key = (module, scope, text)
        found = self._reference_memo.get(key)
        if found is None:
            found = self._resolve_reference(module, scope, text.strip(), depth)
            if depth == 0:
                self._reference_memo[key] = found
        return found

    def _resolve_reference(self, module: str, scope: str, text: str, depth: int) -> Target:
        if not _DOTTED.match(text):
            return Target("dynamic", text)  # a call on a call result, a subscript, ...
        table = self.scopes(module)
        if table is None:
            return Target("unresolved", text, f"{module} could not be read")
        if depth > MAX_PATH_DEPTH:
            return Target("unresolved", text, "too many hops")
        parts = text.split(".")
        root, more = parts[0], parts[1:]
        if root in ("self", "cls") and more:
            klass = table.enclosing_class(scope) if scope not in table.classes else scope
            if klass:
                if len(more) > 1:
                    return Target("dynamic", text)
                found = find_method(self, table, klass, more[0])
                if found is not None:
                    return found
                if is_data_attribute(self, table, klass, more[0]):
                    return Target("dynamic", text)
                return Target("unresolved", text, f"{klass} has no method {more[0]}")
        for current in table.scope_chain(scope):
            if root in table.defs.get(current, {}):
                return member(self, table, table.defs[current][root], more)
            imports = table.imports.get(current, {}).get(root)
            if imports:
                found = Target("unresolved", text, f"no import of {root} leads anywhere")
                for imp in imports:
                    found = self._follow_import(imp, more, depth)
                    if found.kind != "unresolved":
                        break
                return found
            if current == "":
                alias = self._alias_target(table, "", root, more, depth)
                if alias is not None:
                    return alias
            elif root in table.local_names.get(current, set()) or (
                    root in self._unrecorded_locals(table, current)):
                return Target("dynamic", text)
        if root in _BUILTINS:
            return Target("builtin", text)
        for star in table.star_imports:
            if self.scopes(star) is not None:
                found = self._lookup_path(star, parts, depth + 1)
                if found.kind != "unresolved":
                    return found
            elif not star.startswith(self.package):
                return Target("external", text)
        return Target("unresolved", text, f"{root} is not bound in {module}")
