"""guards (form): membership in a set, ``major in {10, 12}``, ``in frozenset(...)``.

What it recognises:
    A device quantity tested for membership in a set literal or in a
    ``frozenset(...)`` / ``set(...)`` call of constants:
    ``get_device_capability() in frozenset({(10, 0), (10, 3)})``,
    ``major in {10, 12}``, ``sm in frozenset([100, 103])``, also through a
    module constant (``_SM100_FAMILY = frozenset({100, 103})``).
Why it matters:
    Families of architectures are named as sets (the SM100 family, the
    consumer Blackwell parts) and tested with ``in``.
Known limits:
    Only sets of literals (or of names bound to literals); a set built by a
    comprehension or from a function's result stays unknown.
Example:
    ``torch.cuda.get_device_capability() in frozenset({(10, 0), (10, 3)})`` is
    true on sm100 and sm103.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["SetMembership"]

_CAP = ("import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
        "sm = major * 10 + minor\n")


class SetMembership(GuardForm):
    __doc__ = __doc__
    name = "set-membership"
    builtins = frozenset({"frozenset", "set"})
    VALID = (
        Example(_CAP, "torch.cuda.get_device_capability() in frozenset({(10, 0), (10, 3)})",
                "FFFFTTFFF"),
        Example(_CAP, "major in {10, 12}", "FFFFTTFTT"),
        Example(_CAP, "sm in frozenset([100, 103])", "FFFFTTFFF"),
        Example(_CAP + "_FAMILY = set([120, 121])\n", "sm not in _FAMILY", "TTTTTTTFF"),
    )
    INVALID = (
        Example(_CAP, "sm in frozenset(x for x in range(100, 104))"),
        Example(_CAP, "sm in frozenset(load_family())"),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if builtin_name(path) in ("frozenset", "set") and len(args) == 1 and isinstance(
                args[0], ConstV) and isinstance(args[0].value, (tuple, frozenset)):
            return ConstV(frozenset(args[0].value))
        return None
