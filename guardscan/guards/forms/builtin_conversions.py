"""guards (form): builtin conversions of constants and names.

What it recognises:
    ``tuple(...)``, ``int(...)``, ``list(...)`` of a constant (computed),
    ``bool(x)`` (``x`` itself), ``getattr(torch.cuda, "name")`` (the named
    attribute; of a quantization config object, its attribute or the
    default when nothing sets it, see ``guards.quant_configs``), read only when the name is the builtin (the tree does not
    define it). The other builtins listed here resolve as builtins so that a
    guard calling them says so, instead of a missing name.
Why it matters:
    Guard helpers convert their constants (``tuple(cuda_version)``) and wrap
    answers in ``bool()``.
Known limits:
    ``len``, ``min``, ``max``, ``any``, ``all``, ``isinstance``, ``str``,
    ``float`` calls are not computed: they stay unknown.
Example:
    ``bool(torch.cuda.get_device_capability()[0] >= 9)`` is true on sm90 and
    newer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, ExtV, UnkV, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["BuiltinConversions"]

_CONVERSIONS = {"tuple": tuple, "int": int, "list": list}
_IMPORT = "import torch\n"


class BuiltinConversions(GuardForm):
    __doc__ = __doc__
    name = "builtin-conversions"
    builtins = frozenset({"tuple", "int", "list", "map", "bool", "getattr", "str", "float",
                          "len", "isinstance", "any", "all", "min", "max", "set"})
    VALID = (
        Example(_IMPORT, "bool(torch.cuda.get_device_capability()[0] >= 9)", "FFFTTTTTT"),
        Example(_IMPORT + "MAJORS = [10, 12]\n",
                "torch.cuda.get_device_capability()[0] in tuple(MAJORS)", "FFFFTTFTT"),
        Example(_IMPORT, 'getattr(torch.cuda, "get_device_capability")() == (9, 0)',
                "FFFTFFFFF"),
    )
    INVALID = (
        Example(_IMPORT, "len(torch.cuda.get_device_capability()) == 2"),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        name = builtin_name(path)
        if name in _CONVERSIONS and args and isinstance(args[0], ConstV):
            try:
                return ConstV(_CONVERSIONS[name](args[0].value))
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV(f"{name}()")
        if name == "getattr" and len(args) >= 2 and isinstance(args[0], ExtV) and isinstance(
                args[1], ConstV):
            return ExtV(f"{args[0].path}.{args[1].value}")
        if name == "getattr" and len(args) >= 2 and isinstance(args[1], ConstV) and isinstance(
                args[1].value, str):
            # a quantization method's config object (``guards.quant_configs``)
            held = ctx.quant_configs.getattr_value(args[0], args[1].value,
                                                   args[2] if len(args) > 2 else None)
            if held is not None:
                return held
        if name == "bool" and args:
            return args[0]
        return None
