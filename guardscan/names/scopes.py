"""names (shared by every stage): one module's names, by scope, from its index facts.

Scopes are ``""`` for the module and a qualname for a function or class body.
Each scope knows the functions and classes it defines, what it imports
(star imports at module level apart), what it assigns (tuple targets split:
``major, minor = ...`` binds both) and, for a function, its parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from guardscan.index.facts import AssignFact, ClassFact, FileFacts, FunctionFact, ImportFact

__all__ = ["ModuleScopes", "identifier_targets", "split_targets"]


def identifier_targets(targets: Iterable[str]) -> list[str]:
    """The plain names among an assignment's targets (not ``a.b`` / ``a[i]``)."""
    return [t for t in targets if t.isidentifier()]


def split_targets(target_text: str) -> list[str]:
    """``"major, minor"`` / ``"(a, b)"`` -> names; other targets keep their text."""
    text = target_text.strip()
    if text.startswith(("(", "[")) and text.endswith((")", "]")):
        text = text[1:-1]
    return [part.strip() for part in text.split(",") if part.strip()]


@dataclass(slots=True)
class ModuleScopes:
    """One module's names by scope ("" is the module, else a def or class qualname)."""

    module: str
    rel: str
    facts: FileFacts
    functions: dict[str, FunctionFact] = field(default_factory=dict)
    classes: dict[str, ClassFact] = field(default_factory=dict)
    defs: dict[str, dict[str, str]] = field(default_factory=dict)  # scope -> name -> qualname
    imports: dict[str, dict[str, list[ImportFact]]] = field(default_factory=dict)
    local_names: dict[str, set[str]] = field(default_factory=dict)  # scope -> bound names
    assigns: dict[str, dict[str, list[AssignFact]]] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    scope_assigns: dict[str, list[AssignFact]] = field(default_factory=dict)

    @classmethod
    def build(cls, facts: FileFacts) -> ModuleScopes:
        table = cls(facts.module, facts.rel, facts)
        table.add_names(facts)
        return table

    def add_names(self, facts: FileFacts) -> None:
        for fn in facts.functions:
            self.functions[fn.qualname] = fn
            self.defs.setdefault(fn.scope, {})[fn.name] = fn.qualname
            self.local_names.setdefault(fn.qualname, set()).update(fn.params)
        for klass in facts.classes:
            self.classes[klass.qualname] = klass
            name = klass.qualname.rpartition(".")[2]
            self.defs.setdefault(klass.scope, {})[name] = klass.qualname
        for imp in facts.imports:
            if imp.local == "*":
                if imp.scope == "":
                    self.star_imports.append(imp.module)
                continue
            self.imports.setdefault(imp.scope, {}).setdefault(imp.local, []).append(imp)
        for assign in facts.assigns:
            self.scope_assigns.setdefault(assign.scope, []).append(assign)
            for target in assign.targets:
                for name in split_targets(target):
                    if name.isidentifier():
                        self.local_names.setdefault(assign.scope, set()).add(name)
                        self.assigns.setdefault(assign.scope, {}).setdefault(name, []).append(
                            assign)

    def enclosing_class(self, scope: str) -> str:
        """The class whose method (or a function nested in one) ``scope`` is."""
        parts = scope.split(".")
        for end in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.classes:
                return candidate
        return ""

    def scope_chain(self, scope: str) -> list[str]:
        """Scopes whose names ``scope`` sees: itself, enclosing functions, the module
        (class bodies are not visible from their methods)."""
        chain = [scope]
        parts = scope.split(".") if scope else []
        for end in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:end])
            if candidate not in self.classes:
                chain.append(candidate)
        if scope:
            chain.append("")
        return chain

    def module_constant(self, name: str) -> AssignFact | None:
        found = self.assigns.get("", {}).get(name)
        return found[0] if found and len(found) == 1 else None
