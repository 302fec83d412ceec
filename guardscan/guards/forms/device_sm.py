"""guards (form): the SM number, ``major * 10 + minor``, and its text.

What it recognises:
    ``major * 10 + minor`` in either order of either operation (also through
    a helper such as SGLang's ``get_device_sm()``), ``sm // 10`` (the major),
    ``sm % 10`` (the minor), ``f"{major}{minor}"``, ``f"{sm}"`` and
    ``str(sm)`` (the SM number as text, compared with ``"90"`` or
    ``("100", "103")``), and ``int()`` of that text (the SM number).
Why it matters:
    ``get_device_sm() >= 100`` and ``has_device_capability(90)`` (which
    computes ``major * 10 + minor >= capability``) gate Blackwell and Hopper
    code paths.
Known limits:
    Only these spellings: other arithmetic on device quantities stays
    unknown, as do f-strings with other text in them.
Example:
    ``def get_device_sm(): major, minor = torch.cuda.get_device_capability();
    return major * 10 + minor`` then ``get_device_sm() >= 100`` is true on
    sm100 and newer.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, DevQ, MajorTimesTen, UnkV, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["DeviceSm"]

_SM = ("import torch\n\ndef get_device_sm():\n"
       "    major, minor = torch.cuda.get_device_capability()\n"
       "    return major * 10 + minor\n")


class DeviceSm(GuardForm):
    __doc__ = __doc__
    name = "device-sm"
    VALID = (
        Example(_SM, "get_device_sm() >= 100", "FFFFTTTTT"),
        Example(_SM, "get_device_sm() // 10 == 12", "FFFFFFFTT"),
        Example(_SM, "get_device_sm() % 10 == 9", "FFTFFFFFF"),
        Example("import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
                "arch = f\"{major}{minor}\"\n", "arch in (\"100\", \"103\")", "FFFFTTFFF"),
        Example("import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
                "sm = minor + 10 * major\n", "sm == 120", "FFFFFFFTF"),
        Example(_SM + "arch = str(get_device_sm())\n", "arch in (\"120\", \"121\")",
                "FFFFFFFTT"),
        Example(_SM + "arch = f\"{get_device_sm()}\"\n", "int(arch) >= 100", "FFFFTTTTT"),
    )
    INVALID = (
        Example(_SM, "get_device_sm() * 2 > 100"),
        Example("import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
                "arch = f\"sm{major}{minor}\"\n", "arch == \"sm90\""),
        Example(_SM + "arch = str(get_device_sm())\n", "arch == 90"),
    )

    def binop(self, op: ast.operator, left: Value, right: Value) -> Value | None:
        if isinstance(left, DevQ) and left.kind == "sm" and right == ConstV(10):
            if isinstance(op, ast.FloorDiv):
                return DevQ("major")
            if isinstance(op, ast.Mod):
                return DevQ("minor")
        if isinstance(op, ast.Mult) and (left, right) in ((DevQ("major"), ConstV(10)),
                                                          (ConstV(10), DevQ("major"))):
            return MajorTimesTen()
        if isinstance(op, ast.Add) and (
                (isinstance(left, MajorTimesTen) and right == DevQ("minor"))
                or (isinstance(right, MajorTimesTen) and left == DevQ("minor"))):
            return DevQ("sm")
        return None

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        name = builtin_name(path)
        if len(args) == 1 and name == "str" and args[0] == DevQ("sm"):
            return DevQ("sm_text")
        if len(args) == 1 and name == "int" and args[0] in (DevQ("sm_text"), DevQ("sm_key")):
            return DevQ("sm")
        return None

    def formatted(self, parts: list[str | Value]) -> Value | None:
        values = [p for p in parts if not isinstance(p, str)]
        if values in ([DevQ("major"), DevQ("minor")], [DevQ("sm")]) and all(
                p == "" for p in parts if isinstance(p, str)):
            return DevQ("sm_text")
        if any(isinstance(p, DevQ) for p in parts):
            return UnkV("formatted device value")
        return None
