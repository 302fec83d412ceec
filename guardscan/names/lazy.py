"""names (shared by every stage): what a module hands out through a lazy ``__getattr__``.

What it recognises
    A module-level ``def __getattr__(name)`` that serves names from a table,
    in either of two forms::

        _LAZY = frozenset({"prims_ts_bf16_moe", ...})
        def __getattr__(name):
            if name not in _LAZY:                 # or: if name in _LAZY: <below>
                raise AttributeError(name)
            from . import fused_moe as _fused_moe
            return getattr(_fused_moe, name)

        _LAZY_EXPORTS = {"mxfp4_quantize_cute_dsl": ".mxfp4_quantize", ...}
        def __getattr__(name):
            module_name = _LAZY_EXPORTS.get(name)
            ...
            module = importlib.import_module(module_name, __name__)
            return getattr(module, name)

        _FUNCTIONS = {"b12x_gemm": (".dense", "b12x_gemm"), ...}
        def __getattr__(name):
            if name in _FUNCTIONS:
                module_name, attribute = _FUNCTIONS[name]
                return getattr(importlib.import_module(module_name, __name__), attribute)

    Each name of the table is then bound as if imported from the module the
    branch imports (``from flashinfer.fused_moe import prims_ts_bf16_moe``).

Why it matters
    FlashInfer 0.7 serves part of its public API this way (``flashinfer``,
    ``flashinfer.mla``, ``flashinfer.quantization.kernels``); without it such
    a name is unresolved.

Known limits
    Tables must be module-level literals (set, frozenset, list, tuple, a dict
    of relative module names, or of (module, attribute) pairs); a ``__getattr__`` computing names any
    other way hands out nothing, so the name stays unresolved (never guessed).
"""

from __future__ import annotations

import ast

from guardscan.index.facts import ImportFact
from guardscan.names.scopes import ModuleScopes
from guardscan.syntax import NOT_LITERAL, literal, parse_expr

__all__ = ["lazy_exports"]


def lazy_exports(table: ModuleScopes, source: bytes | None) -> dict[str, ImportFact]:
    """Name -> the import that would bind it, for a module with a lazy ``__getattr__``."""
    function = table.functions.get("__getattr__")
    if function is None or function.scope or not function.params or source is None:
        return {}
    text = b"\n".join(source.split(b"\n")[function.line - 1:function.end_line])
    try:
        parsed = ast.parse(text.decode("utf-8", "replace"))
    except SyntaxError:
        return {}
    if not parsed.body or not isinstance(parsed.body[0], ast.FunctionDef):
        return {}
    reader = _Reader(table, function.line - 1, function.params[0])
    reader.read(parsed.body[0].body)
    return reader.exports


class _Reader:
    def __init__(self, table: ModuleScopes, line_offset: int, param: str) -> None:
        self.table = table
        self.line_offset = line_offset
        self.param = param
        self.exports: dict[str, ImportFact] = {}

    def read(self, body: list[ast.stmt]) -> None:
        for index, stmt in enumerate(body):
            if isinstance(stmt, ast.If):
                member, table_name = self._membership(stmt.test)
                if member and self._pair_table(table_name, stmt.body):
                    continue
                names = self._name_table(table_name)
                if names is None:
                    continue
                # ``if name in T: serve`` / ``if name not in T: raise; serve``
                served = stmt.body if member else body[index + 1:]
                if not member and not any(isinstance(s, ast.Raise) for s in stmt.body):
                    continue
                source = self._served_module(served)
                if source is not None:
                    self._add({name: (source, name) for name in names})
            elif isinstance(stmt, ast.Assign):
                self._dict_table(stmt, body)

    def _membership(self, test: ast.expr) -> tuple[bool, str | None]:
        """(``name in T``?, T) for ``name in T`` / ``name not in T``."""
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.left, ast.Name) and test.left.id == self.param
                and isinstance(test.comparators[0], ast.Name)
                and isinstance(test.ops[0], ast.In | ast.NotIn)):
            return isinstance(test.ops[0], ast.In), test.comparators[0].id
        return False, None

    def _constant(self, name: str | None) -> object:
        assign = self.table.module_constant(name) if name else None
        node = parse_expr(assign.value) if assign is not None else None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("frozenset", "set", "tuple", "list") and len(node.args) == 1):
            node = node.args[0]
        return literal(node)

    def _name_table(self, name: str | None) -> list[str] | None:
        value = self._constant(name)
        if isinstance(value, set | frozenset | list | tuple) and all(
                isinstance(v, str) for v in value):
            return sorted(value)
        return None

    def _pair_table(self, name: str | None, body: list[ast.stmt]) -> bool:
        """``if name in T: module_name, attribute = T[name]`` then
        ``getattr(importlib.import_module(module_name, __name__), attribute)``."""
        value = self._constant(name)
        if not isinstance(value, dict) or not value or not all(
                isinstance(k, str) and isinstance(v, tuple) and len(v) == 2
                and all(isinstance(p, str) for p in v) for k, v in value.items()):
            return False
        if not any(_imports_module(node) for s in body for node in ast.walk(s)):
            return False
        self._add({key: (self._absolute(module), attribute)
                   for key, (module, attribute) in sorted(value.items())})
        return True

    def _served_module(self, body: list[ast.stmt]) -> str | None:
        """The module whose attribute ``getattr(M, name)`` serves, M imported in ``body``."""
        alias = self._getattr_source(body)
        if alias is None:
            return None
        lines = [n.lineno + self.line_offset for s in body for n in ast.walk(s)
                 if isinstance(n, ast.ImportFrom | ast.Import)]
        for imp in self.table.imports.get("__getattr__", {}).get(alias, []):
            if imp.line in lines:
                return f"{imp.module}.{imp.name}" if imp.name else imp.module
        return None

    def _getattr_source(self, body: list[ast.stmt]) -> str | None:
        for stmt in body:
            for node in ast.walk(stmt):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "getattr" and len(node.args) >= 2
                        and isinstance(node.args[0], ast.Name)
                        and isinstance(node.args[1], ast.Name) and node.args[1].id == self.param):
                    return node.args[0].id
        return None

    def _dict_table(self, stmt: ast.Assign, body: list[ast.stmt]) -> None:
        """``V = T.get(name)`` then ``importlib.import_module(V, __name__)``."""
        value = stmt.value
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr == "get" and isinstance(value.func.value, ast.Name)
                and value.args and isinstance(value.args[0], ast.Name)
                and value.args[0].id == self.param):
            return
        mapping = self._constant(value.func.value.id)
        if mapping is NOT_LITERAL or not isinstance(mapping, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            return
        variable = stmt.targets[0].id
        if not any(_imports_module_named(node, variable) for s in body for node in ast.walk(s)):
            return
        self._add({name: (self._absolute(mapping[name]), name) for name in sorted(mapping)})

    def _absolute(self, relative: str) -> str:
        """``.mxfp4_quantize`` relative to this module as the package anchor."""
        level = len(relative) - len(relative.lstrip("."))
        if not level:
            return relative
        anchor = self.table.module.split(".")
        anchor = anchor[:len(anchor) - (level - 1)]
        rest = relative[level:]
        return ".".join([*anchor, rest]) if rest else ".".join(anchor)

    def _add(self, sources: dict[str, tuple[str, str]]) -> None:
        """Bind each name as if imported (module, attribute); the first table wins."""
        for name, (module, attribute) in sources.items():
            self.exports.setdefault(name, ImportFact("", name, module, attribute, 0))


def _imports_module(node: ast.AST) -> bool:
    """``importlib.import_module(...)`` / ``import_module(...)`` with arguments."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "import_module"


def _imports_module_named(node: ast.AST, variable: str) -> bool:
    """``importlib.import_module(variable, __name__)``."""
    if not _imports_module(node):
        return False
    assert isinstance(node, ast.Call)
    first = node.args[0]
    return isinstance(first, ast.Name) and first.id == variable
