"""guards (form): the SM number, ``major * 10 + minor``, and its text.

What it recognises:
    ``major * 10 + minor`` (also through a helper such as SGLang's
    ``get_device_sm()``), ``sm // 10`` (the major), ``sm % 10`` (the minor),
    and ``f"{major}{minor}"`` (the SM number as text, compared with
    ``"90"`` or ``("100", "103")``).
Why it matters:
    ``get_device_sm() >= 100`` and ``has_device_capability(90)`` (which
    computes ``major * 10 + minor >= capability``) gate Blackwell and Hopper
    code paths.
Known limits:
    Only these spellings: ``10 * major + minor`` or other arithmetic on device
    quantities stays unknown, as do f-strings with other text in them.
Example:
    ``def get_device_sm(): major, minor = torch.cuda.get_device_capability();
    return major * 10 + minor`` then ``get_device_sm() >= 100`` is true on
    sm100 and newer.
"""

from __future__ import annotations

import ast

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import ConstV, DevQ, MajorTimesTen, UnkV, Value

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
    )
    INVALID = (
        Example(_SM, "get_device_sm() * 2 > 100"),
        Example("import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
                "arch = f\"sm{major}{minor}\"\n", "arch == \"sm90\""),
    )

    def binop(self, op: ast.operator, left: Value, right: Value) -> Value | None:
        if isinstance(left, DevQ) and left.kind == "sm" and right == ConstV(10):
            if isinstance(op, ast.FloorDiv):
                return DevQ("major")
            if isinstance(op, ast.Mod):
                return DevQ("minor")
        if isinstance(op, ast.Mult) and left == DevQ("major") and right == ConstV(10):
            return MajorTimesTen()
        if isinstance(left, MajorTimesTen) and isinstance(op, ast.Add) and right == DevQ("minor"):
            return DevQ("sm")
        return None

    def formatted(self, parts: list[str | Value]) -> Value | None:
        values = [p for p in parts if not isinstance(p, str)]
        if values == [DevQ("major"), DevQ("minor")] and all(
                p == "" for p in parts if isinstance(p, str)):
            return DevQ("sm_text")
        if any(isinstance(p, DevQ) for p in parts):
            return UnkV("formatted device value")
        return None
