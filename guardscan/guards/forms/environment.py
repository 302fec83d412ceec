"""guards (form): environment variables, read as the launch most users run: unset.

What it recognises:
    ``os.getenv(NAME, DEFAULT)`` and ``os.environ.get(NAME, DEFAULT)`` with a
    constant name (a parameter bound at the call site counts:
    ``get_bool_env_var("SGLANG_IS_FLASHINFER_AVAILABLE", default="true")``
    reads ``os.getenv(name, default)`` in its body), then ``.lower()`` /
    ``.upper()`` / ``.strip()``, compared ``==`` / ``!=`` / ``in`` / ``not
    in`` with constant strings, or used as a condition (set and non-empty).
    The value is the default where the variable is unset.
Why it matters:
    SGLang gates many choices on helpers built on the environment:
    ``is_flashinfer_available()`` is ``get_bool_env_var(...,
    default="true") and find_spec("flashinfer") ...``; read as unknown, every
    gate behind it "may still raise" on every arch.
Known limits:
    A verdict is the one with every variable unset; what setting one would
    change is said in the verdict's conditions (``blocked with NAME=1``), for
    the values ``0``, ``1`` and those the code compares with. A name built at
    run time, ``int(...)`` of a value, and SGLang's typed ``envs.NAME.get()``
    registry are not read (unknown).
Example:
    ``os.getenv("SGLANG_USE_X", "false").lower() in ("true", "1")`` is false on
    every arch (unset: ``"false"``); ``blocked with SGLANG_USE_X=1`` where a
    raise sits behind it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import ConstV, FormValue, Value
from guardscan.predicate import EnvIs, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["EnvValue", "Environment"]

_READS = frozenset({"os.getenv", "os.environ.get"})
_TRANSFORMS = frozenset({"lower", "upper", "strip"})
_IMPORT = "import os\n"


@dataclass(frozen=True, slots=True)
class EnvValue(FormValue):
    """What ``os.getenv(name, default)`` returns, after ``transform``."""

    name: str
    default: str | None
    transform: str = ""


@dataclass(frozen=True, slots=True)
class _EnvMethod(FormValue):
    value: EnvValue
    method: str


def _strings(value: Value) -> frozenset[str] | None:
    if isinstance(value, ConstV):
        if isinstance(value.value, str):
            return frozenset({value.value})
        if isinstance(value.value, (tuple, frozenset)) and all(
                isinstance(v, str) for v in value.value):
            return frozenset(value.value)
    return None


class Environment(GuardForm):
    __doc__ = __doc__
    name = "environment"
    subjects = (EnvValue,)
    VALID = (
        Example(_IMPORT, 'os.getenv("SGLANG_USE_X", "false").lower() in ("true", "1")',
                "FFFFFFFFF"),
        Example(_IMPORT + 'def flag(name, default="false"):\n'
                '    value = os.getenv(name, default)\n    value = value.lower()\n'
                '    return value in ("true", "1")\n',
                'flag("SGLANG_IS_FLASHINFER_AVAILABLE", default="true")', "TTTTTTTTT"),
        Example(_IMPORT, 'os.environ.get("SGLANG_MODE") == "fast"', "FFFFFFFFF"),
        Example(_IMPORT, 'not os.getenv("SGLANG_DISABLE_X")', "TTTTTTTTT"),
    )
    INVALID = (
        Example(_IMPORT, 'int(os.getenv("SGLANG_N", "0")) > 1'),
        Example(_IMPORT + 'def name():\n    return input()\n', 'os.getenv(name()) == "1"'),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path not in _READS or not args or len(args) > 2:
            return None
        name = args[0]
        default: Value = args[1] if len(args) == 2 else kwargs.get("default", ConstV(None))
        if not (isinstance(name, ConstV) and isinstance(name.value, str)):
            return None
        if not (isinstance(default, ConstV) and (default.value is None
                                                 or isinstance(default.value, str))):
            return None
        return EnvValue(name.value, default.value)

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, EnvValue) and attr in _TRANSFORMS and not base.transform:
            return _EnvMethod(base, attr)
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        if isinstance(callee, _EnvMethod) and not args and not kwargs:
            return replace(callee.value, transform=callee.method)
        return None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if not isinstance(left, EnvValue) or op not in ("==", "!=", "in", "not in"):
            return None
        values = _strings(right)
        if values is None or (op in ("==", "!=") and len(values) != 1):
            return None
        positive = op in ("==", "in")
        pred: Predicate = EnvIs(left.name, "in", values, left.default, left.transform)
        return pred if positive else neg(pred)

    def truth(self, value: Value) -> Predicate | None:
        if isinstance(value, EnvValue):
            return EnvIs(value.name, "truthy", frozenset(), value.default, value.transform)
        return None
