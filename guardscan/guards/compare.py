"""guards (comparisons): a device quantity or the CUDA version compared with a
literal, as a Predicate. The one place where a device comparison becomes a
``Device`` atom, for SGLang's guards and the kernel library's conditions
alike (both are read by the same interpreter).

Membership is strict: ``major in (...)`` needs ints, ``cap in (...)``
(major, minor) pairs, the SM as text (``f"{major}{minor}"``, kind
``sm_text``) digit strings (``"90" == 90`` and ``"100" == "100a"`` are false
in Python: unknown here, never read as a match); anything else stays
``Unknown``, and the members are de-duplicated and sorted. A kernel
library's dispatch key (kind ``sm_key``: a parameter its callers pass the SM
string for, or one guessed to be, see ``kernels.bindings``) reads
``"100a"`` and ``"120f"`` as their SM, as the library's own tables key them.
"""

from __future__ import annotations

import ast
import re

from guardscan.predicate import CudaAtLeast, Device, Predicate, Unknown, neg
from guardscan.syntax import as_ints, as_sm_strings, unparse

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
    membership = op in ("in", "not in")
    read: Predicate | None = None
    if kind in ("sm_text", "sm_key"):
        # the SM as text compares equal to strings only (``"90" == 90`` is false)
        sms = as_sm_strings(value) if membership or isinstance(value, str) else None
        texts = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
        if kind == "sm_text" and not all(isinstance(t, str) and t.isdigit() for t in texts):
            sms = None
        if sms and op in ("==", "!="):
            read = Device("sm", op, sms[0])
        elif sms and membership:
            read = Device("sm", op, sms)
    elif membership:
        if kind in INTEGER_QUANTITIES:
            ints = as_ints(value)
            read = Device(kind, op, ints) if ints else None
        elif kind == "cap" and isinstance(value, (tuple, list, set, frozenset)):
            pairs = [tuple(v) if isinstance(v, list) else v for v in value]
            if pairs and all(isinstance(v, tuple) and len(v) == 2 and all(
                    isinstance(i, int) and not isinstance(i, bool) for i in v) for v in pairs):
                read = Device("cap", op, tuple(sorted(set(pairs))))
    elif kind == "cap" and isinstance(value, (tuple, list)) and len(value) == 1 and \
            isinstance(value[0], int) and not isinstance(value[0], bool):
        read = Device("major", op, int(value[0]))
    else:
        read = scalar_device_compare(kind, op, tuple(value) if isinstance(value, list)
                                     else value)
    return read if read is not None else Unknown(unparse(node))


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
