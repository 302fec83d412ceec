"""names (shared by every stage): what a dotted reference ends at, settled to a Target.

``resolve_path`` takes a public or module path (``flashinfer.fp4_quantize``)
to what defines it; ``resolve_reference`` takes a reference used in a scope
(a callee ``self.run``, a base class, an alias's value). A module-level name
is taken as its definition (def or class), else the first of its imports
that leads somewhere, else its assignment (an alias when the value is a
dotted name, a constant otherwise), else the first star import that binds
it (``_names`` are not star-imported), else the module's lazy
``__getattr__`` table. Local names (parameters, assignments, and whatever
the ``unrecorded_locals`` callback names) are runtime values: ``dynamic``.
A name the package should define but does not is ``unresolved``, with the
reason; a chain longer than ``MAX_PATH_DEPTH`` or an import cycle is
unresolved too.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardscan.index.facts import ImportFact
from guardscan.names.members import find_method, is_data_attribute, member
from guardscan.names.model import MAX_PATH_DEPTH, Target
from guardscan.names.scopes import ModuleScopes

if TYPE_CHECKING:
    from guardscan.names.resolver import Names

__all__ = ["References"]

_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_BUILTINS = frozenset(dir(builtins))


def _no_unrecorded_locals(table: ModuleScopes, scope: str) -> frozenset[str]:
    return frozenset()


class References:
    """Settles dotted references for one :class:`Names` (answers memoised)."""

    def __init__(self, names: Names,
                 unrecorded_locals: Callable[[ModuleScopes, str], frozenset[str]] | None,
                 ) -> None:
        self.names = names
        self._unrecorded_locals = unrecorded_locals or _no_unrecorded_locals
        self._path_memo: dict[str, Target] = {}
        self._reference_memo: dict[tuple[str, str, str], Target] = {}

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
            if self.names.index.has_module(module):
                rest = parts[end:]
                if not rest:
                    return Target("module", module)
                return self._lookup_path(module, rest, depth)
        if parts[0] != self.names.package:
            return Target("external", path)
        return Target("unresolved", path, "no such module in the package")

    def _lookup_path(self, module: str, rest: list[str], depth: int) -> Target:
        """``rest`` (a name and its attributes) at the top level of ``module``:
        definitions, then imports, then assignments, then star imports."""
        table = self.names.scopes(module)
        path = ".".join([module, *rest])
        if table is None:
            return Target("unresolved", path, f"{module} could not be read")
        name, more = rest[0], rest[1:]
        if name in table.defs.get("", {}):
            return member(self.names, table, table.defs[""][name], more)
        for imp in table.imports.get("", {}).get(name, []):
            found = self._follow_import(imp, more, depth)
            if found.kind != "unresolved":
                return found
        alias = self._alias_target(table, "", name, more, depth)
        if alias is not None:
            return alias
        for star in table.star_imports:
            star_table = self.names.scopes(star)
            if star_table is not None and not name.startswith("_"):
                found = self._lookup_path(star, rest, depth + 1)
                if found.kind != "unresolved":
                    return found
        lazy = self.names.lazy_exports(module).get(name)
        if lazy is not None:
            return self._follow_import(lazy, more, depth)
        return Target("unresolved", path, f"{name} is not bound in {module}")

    def _follow_import(self, imp: ImportFact, more: list[str], depth: int) -> Target:
        base = f"{imp.module}.{imp.name}" if imp.name else imp.module
        path = ".".join([base, *more])
        if not (base == self.names.package or base.startswith(self.names.package + ".")):
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
        table = self.names.scopes(module)
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
                found = find_method(self.names, table, klass, more[0])
                if found is not None:
                    return found
                if is_data_attribute(self.names, table, klass, more[0]):
                    return Target("dynamic", text)
                return Target("unresolved", text, f"{klass} has no method {more[0]}")
        for current in table.scope_chain(scope):
            if root in table.defs.get(current, {}):
                return member(self.names, table, table.defs[current][root], more)
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
            if self.names.scopes(star) is not None:
                found = self._lookup_path(star, parts, depth + 1)
                if found.kind != "unresolved":
                    return found
            elif not star.startswith(self.names.package):
                return Target("external", text)
        return Target("unresolved", text, f"{root} is not bound in {module}")
