"""guards (comparisons): a device quantity or the CUDA version compared with a
literal, as a Predicate. Shared by the guard forms and the kernel library's
capability reader (``kernels/conditions.py``), so both read ``major >= 10`` or
``cap == (12, 0)`` the same way.
"""

from __future__ import annotations

import ast
import re

from guardscan.predicate import CudaAtLeast, Device, Predicate, Unknown, neg
from guardscan.syntax import unparse

__all__ = ["cuda_compare", "device_compare", "scalar_device_compare"]

#: device quantities compared as integers
INTEGER_QUANTITIES = ("major", "minor", "sm")


def scalar_device_compare(kind: str, op: str, value: object) -> Device | None:
    """``major >= 10``, ``sm != 90``, ``cap == (12, 0)``: one quantity, one literal."""
    if kind in INTEGER_QUANTITIES:
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return Device(kind, op, value)
    if kind == "cap" and isinstance(value, tuple) and len(value) == 2 and all(
            isinstance(v, int) for v in value):
        return Device("cap", op, (int(value[0]), int(value[1])))
    return None


def device_compare(kind: str, op: str, value: object, node: ast.AST) -> Predicate:
    """A guard's device quantity (``DevQ.kind``) compared with a constant;
    ``Unknown`` (the comparison's text) when it does not read as one."""
    if op in ("is", "is not"):
        return Unknown(unparse(node))
    if kind == "sm_text":
        values = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
        try:
            ints = tuple(int(str(v)) for v in values)
        except ValueError:
            return Unknown(unparse(node))
        if op in ("in", "not in"):
            return Device("sm", op, ints)
        if op in ("==", "!="):
            return Device("sm", op, ints[0])
        return Unknown(unparse(node))
    if op in ("in", "not in"):
        if isinstance(value, (tuple, list, set, frozenset)):
            items = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            return Device(kind, op, tuple(sorted(items)))
        return Unknown(unparse(node))
    if kind == "cap":
        if isinstance(value, (tuple, list)) and len(value) == 1:
            return Device("major", op, int(value[0]))
        scalar = scalar_device_compare(kind, op, tuple(value) if isinstance(value, list)
                                       else value)
        return scalar if scalar is not None else Unknown(unparse(node))
    scalar = scalar_device_compare(kind, op, value)
    return scalar if scalar is not None else Unknown(unparse(node))


def cuda_compare(op: str, value: object, node: ast.AST) -> Predicate:
    """``torch.version.cuda`` compared with a version (text or tuple)."""
    version: tuple[int, int] | None = None
    if isinstance(value, str):
        match = re.match(r"^(\d+)\.(\d+)", value)
        if match:
            version = (int(match.group(1)), int(match.group(2)))
    elif isinstance(value, (tuple, list)) and len(value) >= 2 and all(
            isinstance(v, int) for v in value[:2]):
        version = (int(value[0]), int(value[1]))
    if version is None:
        return Unknown(unparse(node))
    if op == ">=":
        return CudaAtLeast(version)
    if op == ">":
        return CudaAtLeast((version[0], version[1] + 1))
    if op == "<":
        return neg(CudaAtLeast(version))
    if op == "<=":
        return neg(CudaAtLeast((version[0], version[1] + 1)))
    return Unknown(unparse(node))
