"""names (shared by every stage): what an attribute of an in-tree class names.

A method is looked up in the class, then in its in-tree bases in base order
(each base resolved by qualified name from the class's own scope). An
attribute that is not a method is a value when the class body or a method
sets it (``self.x = ...``), when it is a dunder, or when a base lies outside
the package (it may come from there); otherwise it is missing, and the
answer is ``unresolved`` with the reason, never a same-named method of some
other class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.names.model import MAX_PATH_DEPTH, Target
from guardscan.names.scopes import ModuleScopes

if TYPE_CHECKING:
    from guardscan.names.resolver import Names

__all__ = ["find_method", "is_data_attribute", "member"]

def member(names: Names, table: ModuleScopes, qualname: str, more: list[str]) -> Target:
    """``qualname`` (a def or class in ``table``) followed by attributes ``more``."""
    full = f"{table.module}.{qualname}"
    if not more:
        return Target("class" if qualname in table.classes else "function", full)
    if qualname not in table.classes:
        return Target("dynamic", ".".join([full, *more]))  # an attribute of a function
    found = find_method(names, table, qualname, more[0])
    if found is None:
        if is_data_attribute(names, table, qualname, more[0]):
            return Target("dynamic", ".".join([full, *more]))
        return Target("unresolved", ".".join([full, *more]),
                      f"{qualname} has no method or attribute {more[0]}")
    if len(more) > 1:
        return Target("dynamic", ".".join([found.name, *more[1:]]))
    return found


def is_data_attribute(names: Names, table: ModuleScopes, class_qualname: str, name: str,
                      depth: int = 0) -> bool:
    """Whether ``name`` on the class is a value rather than a missing method: set
    in the class body or on ``self`` (here or in an in-tree base), a dunder, or
    maybe inherited from a base outside the package (``logging.Logger.setLevel``)."""
    if depth > MAX_PATH_DEPTH:
        return True
    if name.startswith("__") or name in table.assigns.get(class_qualname, {}):
        return True
    target = f"self.{name}"
    for method in table.functions.values():
        if method.scope == class_qualname and any(
                target in a.targets for a in table.scope_assigns.get(method.qualname, [])):
            return True
    klass = table.classes.get(class_qualname)
    if klass is None:
        return False
    for base in klass.bases:
        found = names.resolve_reference(table.module, klass.scope, base)
        if found.kind != "class":
            return True
        base_module, base_qual = names.split_qualified(found.name)
        base_table = names.scopes(base_module) if base_module else None
        if base_table is None or is_data_attribute(names, base_table, base_qual, name,
                                                   depth + 1):
            return True
    return False


def find_method(names: Names, table: ModuleScopes, class_qualname: str, name: str,
                depth: int = 0) -> Target | None:
    """A method of a class or of its in-tree bases (first found, in base order)."""
    if depth > MAX_PATH_DEPTH:
        return None
    candidate = f"{class_qualname}.{name}"
    if candidate in table.functions:
        return Target("function", f"{table.module}.{candidate}")
    if candidate in table.classes:
        return Target("class", f"{table.module}.{candidate}")
    klass = table.classes.get(class_qualname)
    if klass is None:
        return None
    for base in klass.bases:
        base_target = names.resolve_reference(table.module, klass.scope, base, depth + 1)
        if base_target.kind != "class":
            continue
        base_module, base_qual = names.split_qualified(base_target.name)
        base_table = names.scopes(base_module) if base_module else None
        if base_table is not None:
            found = find_method(names, base_table, base_qual, name, depth + 1)
            if found is not None:
                return found
    return None
