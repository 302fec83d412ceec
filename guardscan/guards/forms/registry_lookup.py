"""guards (form): ``REG.get(key)`` on a dictionary that decorators fill at import time.

What it recognises:
    ``.get(key)`` on a dictionary that a module or a class body defines empty
    and that only writes ``REG[key] = value`` in its own file fill, where
    every key comes from constants at the calls that register
    (``@register_fused_func("none", "flashinfer_trtllm")`` through a
    decorator factory and a class method: ``guards.registries``).
Why it matters:
    ``MoeRunner`` raises when no fused function is registered for the
    launch's (all-to-all, runner) pair; whether one is depends on which
    modules registered one and when those are imported (an
    ``experimental_sgl_trtllm`` entry only under
    ``SGLANG_EXPERIMENTAL_LORA_OPTI``).
Known limits:
    A registry another file names, one changed with ``update`` or
    ``setdefault``, or one whose registering calls are not all read stays
    unknown. The tree is read as closed (a plug-in registering from outside
    adds nothing), and an importing module is taken to be imported.
Example:
    ``_REG.get("x") is not None`` where ``@register("x")`` decorates a
    function defined under ``if is_sm100():`` is true on sm100 and sm103.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.registries import RegistryGetV, RegistryV
from guardscan.guards.values import Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["RegistryLookup"]

_REGISTER = ("import torch\n\n_REG = {}\n\n"
             "def register(name):\n"
             "    def decorator(func):\n"
             "        _REG[name] = func\n"
             "        return func\n"
             "    return decorator\n\n"
             "def is_sm100():\n"
             "    return torch.cuda.get_device_capability()[0] == 10\n\n")


class RegistryLookup(GuardForm):
    __doc__ = __doc__
    name = "registry-lookup"
    VALID = (
        Example(_REGISTER + "if is_sm100():\n    @register(\"x\")\n    def fx():\n"
                "        pass\n", "_REG.get(\"x\") is not None", "FFFFTTFFF"),
        Example(_REGISTER + "@register(\"x\")\ndef fx():\n    pass\n",
                "_REG.get(\"y\") is None", "TTTTTTTTT"),
    )
    INVALID = (
        Example(_REGISTER + "_REG.update(extra)\n@register(\"x\")\ndef fx():\n    pass\n",
                "_REG.get(\"y\") is None"),
        Example(_REGISTER + "for name in names:\n    register(name)(print)\n",
                "_REG.get(\"y\") is None"),
    )

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, RegistryV) and attr == "get":
            return RegistryGetV(base)
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        if isinstance(callee, RegistryGetV) and len(args) == 1 and not kwargs:
            return ctx.registries.get(callee.registry, args[0])
        return None
