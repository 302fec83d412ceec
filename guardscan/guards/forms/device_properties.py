"""guards (form): ``torch.cuda.get_device_properties(...).major`` / ``.minor``.

What it recognises:
    ``torch.cuda.get_device_properties(device)`` (any argument) as the device's
    properties, whose ``.major`` and ``.minor`` are the capability major and
    minor, inline (``torch.cuda.get_device_properties(0).major == 12``) or
    through a name (``props = torch.cuda.get_device_properties(dev);
    props.major >= 10``), and so ``props.major * 10 + props.minor`` is the SM
    number.
Why it matters:
    Kernels and newer SGLang helpers read the capability from the device
    properties rather than from ``get_device_capability()``.
Known limits:
    Other properties (``name``, ``total_memory``, ``multi_processor_count``)
    stay unknown, so a guard on them never decides an arch. Which device is
    asked is ignored: every device is taken to be the judged one.
Example:
    ``torch.cuda.get_device_properties(0).major == 12`` is true on sm120 and
    sm121.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import DevQ, FormValue, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["DeviceProperties", "DevicePropertiesV"]

_IMPORT = "import torch\n"


@dataclass(frozen=True, slots=True)
class DevicePropertiesV(FormValue):
    """The value of ``torch.cuda.get_device_properties(...)``."""


class DeviceProperties(GuardForm):
    __doc__ = __doc__
    name = "device-properties"
    VALID = (
        Example(_IMPORT, "torch.cuda.get_device_properties(0).major == 12", "FFFFFFFTT"),
        Example(_IMPORT, "torch.cuda.get_device_properties(0).minor == 0", "TFFTTFTTF"),
        Example(_IMPORT + "props = torch.cuda.get_device_properties(0)\n",
                "props.major >= 10", "FFFFTTTTT"),
        Example(_IMPORT + "def is_sm103(dev):\n"
                "    props = torch.cuda.get_device_properties(dev)\n"
                "    return props.major * 10 + props.minor == 103\n",
                "is_sm103(0)", "FFFFFTFFF"),
    )
    INVALID = (
        Example(_IMPORT, "torch.cuda.get_device_properties(0).total_memory > 80 * 2**30"),
        Example(_IMPORT, 'torch.cuda.get_device_properties(0).name == "NVIDIA H100"'),
        Example(_IMPORT + "props = torch.cuda.get_device_properties(0)\n", "props"),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path.startswith("torch.") and path.endswith("get_device_properties"):
            return DevicePropertiesV()
        return None

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, DevicePropertiesV) and attr in ("major", "minor"):
            return DevQ(attr)
        return None
