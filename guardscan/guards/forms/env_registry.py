"""guards (form): a typed registry of boolean environment variables, ``envs.NAME.get()``.

What it recognises:
    ``REGISTRY.NAME.get()`` where ``REGISTRY`` is an instance of a class of
    the tree whose body declares ``NAME = Field(DEFAULT)``, ``DEFAULT`` a
    constant ``True`` / ``False``, and ``Field`` (or a class it derives from,
    by name in the same file) is a descriptor that names itself
    (``__set_name__``) and reads itself (``get``), with a ``parse`` method
    that returns ``True`` for the strings of ``if value in [...]: return
    True`` after ``value = value.lower()``. It is the variable ``NAME``,
    ``True`` where it is set to one of those strings, ``DEFAULT`` where it is
    unset (SGLang's ``environ.py``: ``SGLANG_USE_AITER = EnvBool(False)``).
Why it matters:
    SGLang's newer gates read their switches this way
    (``envs.SGLANG_FLASHINFER_CUTEDSL_NVFP4_W4A16.get()`` picks the W4A16 path
    before the FP4 GEMM's Blackwell check); read as unknown, every gate behind
    one may still raise on every arch.
Known limits:
    Boolean fields only (``EnvInt``, ``EnvStr`` and callable defaults such as
    ``EnvBool(_default_hip)`` stay unknown). The registry's file is read with
    ``ast`` (as text, seen again when it changes). As for ``os.getenv``, the
    verdict is the one with the variable unset, and what setting it would
    change goes in the verdict's conditions.
Example:
    ``class Envs: SGLANG_USE_X = EnvBool(False)`` and ``envs = Envs()``:
    ``envs.SGLANG_USE_X.get()`` is false on every arch, ``not
    envs.SGLANG_USE_X.get()`` true.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import FormValue, InstanceV, PredV, Value
from guardscan.predicate import EnvIs

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["EnvRegistry", "registry_fields"]

#: (owner class, field name) -> (truthy strings, default)
Fields = tuple[tuple[str, str, tuple[str, ...], bool], ...]

_REGISTRY = '''
import os


class EnvField:
    def __init__(self, default):
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        value = os.getenv(self.name)
        return self.default if value is None else self.parse(value)


class EnvBool(EnvField):
    def parse(self, value):
        value = value.lower()
        if value in ["true", "1", "yes"]:
            return True
        return False


class EnvInt(EnvField):
    def parse(self, value):
        return int(value)


class Envs:
    SGLANG_USE_X = EnvBool(False)
    SGLANG_KEEP_Y = EnvBool(True)
    SGLANG_N = EnvInt(3)


envs = Envs()
'''


@dataclass(frozen=True, slots=True)
class _Field(FormValue):
    name: str
    truthy: tuple[str, ...]
    default: bool


@dataclass(frozen=True, slots=True)
class _FieldGet(FormValue):
    field: _Field


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _truthy(parse: ast.FunctionDef) -> tuple[str, ...] | None:
    """The strings of ``if value in [...]: return True`` after ``value = value.lower()``."""
    lowered = any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                  and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "lower"
                  for n in parse.body)
    for node in parse.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.In)):
            continue
        seq = node.test.comparators[0]
        returns_true = any(isinstance(s, ast.Return) and isinstance(s.value, ast.Constant)
                           and s.value.value is True for s in node.body)
        if returns_true and isinstance(seq, (ast.List, ast.Tuple, ast.Set)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in seq.elts):
            values = tuple(str(e.value) for e in seq.elts)  # type: ignore[attr-defined]
            return values if lowered else tuple(v for v in values if v == v.lower())
    return None


def registry_fields(data: bytes) -> Fields:
    """Every boolean field declared in a class body of this file (an answer
    of the file's text, for ``Index.text_answer``).

    >>> [(o, n, d) for o, n, _, d in registry_fields(_REGISTRY.encode())]
    [('Envs', 'SGLANG_USE_X', False), ('Envs', 'SGLANG_KEEP_Y', True)]
    """
    if b"__set_name__" not in data:
        return ()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def lineage(name: str) -> list[ast.ClassDef]:
        out: list[ast.ClassDef] = []
        todo = [name]
        while todo and len(out) < 8:
            cls = classes.get(todo.pop(0))
            if cls is not None and cls not in out:
                out.append(cls)
                todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
        return out

    found = []
    for owner in classes.values():
        for node in owner.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and node.value.args
                    and isinstance(node.value.args[0], ast.Constant)
                    and isinstance(node.value.args[0].value, bool)):
                continue
            line = lineage(node.value.func.id)
            methods = [_methods(c) for c in line]
            if not any("__set_name__" in m and "get" in m for m in methods):
                continue
            parse = next((m["parse"] for m in methods if "parse" in m), None)
            truthy = _truthy(parse) if parse is not None else None
            if truthy:
                found.append((owner.name, node.targets[0].id, truthy,
                              bool(node.value.args[0].value)))
    return tuple(found)


class EnvRegistry(GuardForm):
    __doc__ = __doc__
    name = "env-registry"
    VALID = (
        Example(_REGISTRY, "envs.SGLANG_USE_X.get()", "FFFFFFFFF"),
        Example(_REGISTRY, "not envs.SGLANG_USE_X.get() and envs.SGLANG_KEEP_Y.get()",
                "TTTTTTTTT"),
    )
    INVALID = (
        Example(_REGISTRY, "envs.SGLANG_N.get() > 1"),
        Example(_REGISTRY.replace("__set_name__", "set_name"), "envs.SGLANG_USE_X.get()"),
    )

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, _Field):
            return _FieldGet(base) if attr == "get" else None
        if not isinstance(base, InstanceV):
            return None
        owner = base.qualname.rpartition(".")[2]
        for cls, name, truthy, default in ctx.index.text_answer(base.rel, registry_fields):
            if cls == owner and name == attr:
                return _Field(name, truthy, default)
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        if isinstance(callee, _FieldGet) and not args and not kwargs:
            field = callee.field
            return PredV(EnvIs(field.name, "in", frozenset(field.truthy),
                               field.truthy[0] if field.default else "false", "lower"))
        return None
