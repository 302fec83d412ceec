"""names (shared by every stage): the answers of the name resolver.

A :class:`Binding` says where a name is bound (an assignment, a parameter, a
class attribute, an in-tree class or function, a module, something outside
the tree); a :class:`Target` says what a dotted reference ends at once it is
settled (a function, a class, a module, a module-level constant, something
outside the package, a builtin, a runtime value, or unresolved with the
reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = ["MAX_PATH_DEPTH", "Binding", "BindingKind", "Target", "TargetKind"]

#: Reference resolution (``Names.resolve_path``, ``Names.resolve_reference``)
#: gives up past this many hops (imports, aliases, star imports, base
#: classes): the answer is ``unresolved`` with the reason.
MAX_PATH_DEPTH = 24

#: What a name is bound to (see :class:`Binding`).
BindingKind: TypeAlias = Literal[
    "assign", "class", "classattr", "function", "module", "param", "external", "member"]

#: What a dotted reference ends at (see :class:`Target`).
TargetKind: TypeAlias = Literal[
    "function", "class", "module", "constant", "external", "builtin", "dynamic", "unresolved"]


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
    member     ``module`` and ``name``: what that in-tree module binds as
               ``name``, not looked up yet (one step of an import)
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


@dataclass(frozen=True, slots=True)
class Target:
    """What a dotted reference ends at, settled (see :meth:`Names.resolve_reference`).

    ``kind``: function | class | module | constant (a module-level value) |
    external (outside the package) | builtin | dynamic (a runtime value) |
    unresolved (should be in the package, but is not found; ``reason`` says
    why). ``name`` is the defining dotted name, or the reference's text for
    dynamic and unresolved answers.
    """

    kind: TargetKind
    name: str
    reason: str = field(default="", compare=False)

    @property
    def in_tree(self) -> bool:
        return self.kind in ("function", "class", "module", "constant")
