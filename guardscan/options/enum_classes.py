"""options (enum classes): which classes of the tree are string enums, with
their members and methods.

Shared by the choice reader (``[m.value for m in SomeEnum]`` is that enum's
values) and the string-enum form (``forms/string_enums.py``), which reads the
enums' predicate methods and ties them to options.
"""

from __future__ import annotations

import ast

from guardscan.index.facts import ClassFact, FileFacts, FunctionFact
from guardscan.names import Names
from guardscan.syntax import literal, parse_expr

__all__ = ["EnumReader"]


#: The bases that make a class an enum (by qualified name).
_ENUM_BASES = frozenset({"enum.Enum", "enum.StrEnum"})

#: Enum base chains longer than this are not followed.
_MAX_BASE_DEPTH = 8


class EnumReader:
    """Which in-tree classes are string enums, their members and methods
    (answers memoised for one catalog)."""

    def __init__(self, names: Names) -> None:
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
            elif depth < _MAX_BASE_DEPTH and self.is_enum(base[0], base[1], depth + 1):
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
        if depth < _MAX_BASE_DEPTH:
            for base in reversed(self.bases(facts, cls)):
                if not isinstance(base, str):
                    out.update(self.methods(base[0], base[1], depth + 1))
        for func in facts.functions:
            if func.cls == cls.qualname and func.scope == cls.qualname:
                out[func.name] = (facts, func, cls.qualname)
        return out

