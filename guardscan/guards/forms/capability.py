"""guards (form): the device capability tuple and comparisons of it.

What it recognises:
    ``torch.cuda.get_device_capability()`` (any ``torch`` path ending in
    ``get_device_capability``) as the (major, minor) tuple; ``cap[0]``,
    ``cap[1]``, ``cap[:2]``, ``cap.major``, ``cap.minor``, ``tuple(cap)``,
    ``(major, minor)``; and comparisons of any device quantity with a
    literal: ``cap >= (9, 0)``, ``cap == (12,)`` (the major), ``major == 9``,
    ``cap in ((10, 0), (10, 3))``, ``cap is None`` (off CUDA/ROCm/MUSA the
    getter gives ``(None, None)``).
Why it matters:
    The most common guard spelling in SGLang: ``is_sm90_supported``,
    ``is_hopper`` and friends are built on it.
Known limits:
    Errs towards unknown: ``is`` comparisons with numbers, comparisons with
    non-literal values and ordering comparisons on SM strings stay
    ``Unknown``. Which device is asked (an index, ``device=``) is ignored:
    every device is taken to be the judged one.
Example:
    ``torch.cuda.get_device_capability()[0] == 9`` reads as
    ``capability major == 9``: true on sm90 only.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards.compare import device_compare
from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, DevQ, FrozenSlice, Value
from guardscan.predicate import Platform, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["CapabilityComparison"]

_IMPORT = "import torch\n"


class CapabilityComparison(GuardForm):
    __doc__ = __doc__
    name = "capability-comparison"
    subjects = (DevQ,)
    VALID = (
        Example(_IMPORT, "torch.cuda.get_device_capability()[0] == 9", "FFFTFFFFF"),
        Example(_IMPORT, "torch.cuda.get_device_capability() >= (9, 0)", "FFFTTTTTT"),
        Example(_IMPORT, "torch.cuda.get_device_capability() == (12, 0)", "FFFFFFFTF"),
        Example(_IMPORT, "torch.cuda.get_device_capability()[1] == 3", "FFFFFTFFF"),
        Example(_IMPORT, "tuple(torch.cuda.get_device_capability()) in ((10, 0), (10, 3))",
                "FFFFTTFFF"),
        Example(_IMPORT + "cap = torch.cuda.get_device_capability()\n",
                "cap.major >= 10 and cap.minor == 0", "FFFFTFTTF"),
    )
    INVALID = (
        Example(_IMPORT, "torch.cuda.get_device_capability()[0] is 9"),
        Example(_IMPORT, "torch.cuda.get_device_capability() >= some_threshold"),
        Example(_IMPORT, "torch.cuda.get_device_capability()[2] == 0"),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path.startswith("torch.") and path.endswith("get_device_capability"):
            return DevQ("cap")
        if builtin_name(path) in ("tuple", "int", "list") and args and isinstance(
                args[0], DevQ) and args[0].kind not in ("sm_text", "sm_key"):
            return args[0]
        return None

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, DevQ) and base.kind == "cap" and attr in ("major", "minor"):
            return DevQ(attr)
        return None

    def subscript(self, base: Value, index: Value) -> Value | None:
        if isinstance(base, DevQ) and base.kind == "cap" and isinstance(index, ConstV):
            if index.value == 0:
                return DevQ("major")
            if index.value == 1:
                return DevQ("minor")
            if index.value == FrozenSlice(None, 2, None):
                return base
        return None

    def tuple_of(self, items: list[Value]) -> Value | None:
        return DevQ("cap") if items == [DevQ("major"), DevQ("minor")] else None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if not (isinstance(left, DevQ) and isinstance(right, ConstV)):
            return None
        if right.value is None:
            # get_device_capability() gives (None, None) off CUDA/ROCm/MUSA
            pred: Predicate = Platform("cuda_alike")
            return pred if op in ("is not", "!=") else neg(pred)
        return device_compare(left.kind, op, right.value, node)
