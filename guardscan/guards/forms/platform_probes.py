"""guards (form): platform probes, which platform the device is.

What it recognises:
    ``hasattr(torch, "npu")`` (also ``xpu``, ``hpu``, ``mps``, ``musa``,
    ``hip``; ``hasattr(torch, "cuda")`` is always true), ``hasattr(torch.version,
    "musa")`` (also ``npu``, ``hpu``, ``mps``: only that platform's build of
    torch has the attribute; ``hip`` it always has, set or ``None``),
    ``torch.cuda.is_available()`` (CUDA or ROCm), ``torch.xpu.is_available()``
    and the like, ``torch.version.hip`` (set on ROCm builds, so ``is not
    None`` / its truth say ROCm). Helpers of the tree built on them
    (``is_hip()``, ``is_npu()``) resolve through their bodies.
Why it matters:
    Guards mix platform and capability tests (``is_cuda() and
    get_device_capability() == (12, 0)``), and assignments under a
    non-NVIDIA branch must not be read as what runs on NVIDIA devices.
Known limits:
    Every architecture guardscan judges is NVIDIA CUDA: these fold to true or
    false there. Installed packages stay unknown (environment variables are
    the ``environment`` form's).
Example:
    ``not hasattr(torch, "npu") and torch.version.hip is None`` is true on
    every standard arch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, ExtV, PlatformV, PredV, Value
from guardscan.predicate import Platform, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["PLATFORM_NAMES", "PlatformProbes"]

PLATFORM_NAMES = ("npu", "xpu", "hpu", "mps", "musa", "hip")

#: ``torch.version`` attributes that only that platform's build of torch has
_VERSION_ONLY_ON = ("musa", "npu", "hpu", "mps")

_IMPORT = "import torch\n"


class PlatformProbes(GuardForm):
    __doc__ = __doc__
    name = "platform-probes"
    builtins = frozenset({"hasattr"})
    subjects = (PlatformV,)
    VALID = (
        Example(_IMPORT, 'hasattr(torch, "npu")', "FFFFFFFFF"),
        Example(_IMPORT, "torch.cuda.is_available()", "TTTTTTTTT"),
        Example(_IMPORT + "def is_hip():\n    return torch.version.hip is not None\n",
                "not is_hip()", "TTTTTTTTT"),
        Example(_IMPORT, "torch.xpu.is_available() or torch.version.musa", "FFFFFFFFF"),
        Example(_IMPORT, 'hasattr(torch.version, "musa") and torch.version.musa is not None',
                "FFFFFFFFF"),
        Example(_IMPORT, 'hasattr(torch.version, "hip")', "TTTTTTTTT"),
    )
    INVALID = (
        Example("import shutil\n", 'shutil.which("npu-smi") is not None'),
        Example(_IMPORT, 'hasattr(torch, "float8_e4m3fn")'),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path == "torch.cuda.is_available":
            return PredV(Platform("cuda_alike"))
        for platform in PLATFORM_NAMES:
            if path == f"torch.{platform}.is_available":
                return PredV(Platform(platform))
        if builtin_name(path) == "hasattr" and len(args) == 2 and isinstance(
                args[0], ExtV) and isinstance(args[1], ConstV) and args[0].path == "torch":
            if args[1].value in PLATFORM_NAMES:
                return PredV(Platform(str(args[1].value)))
            if args[1].value == "cuda":
                return ConstV(True)
        if builtin_name(path) == "hasattr" and len(args) == 2 and isinstance(
                args[0], ExtV) and isinstance(args[1], ConstV) and args[0].path == "torch.version":
            if args[1].value in _VERSION_ONLY_ON:
                return PredV(Platform(str(args[1].value)))
            if args[1].value in ("hip", "cuda"):
                return ConstV(True)
        return None

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, ExtV) and base.path == "torch.version" and attr in PLATFORM_NAMES:
            return PlatformV(attr)
        return None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if isinstance(left, PlatformV) and isinstance(right, ConstV) and right.value is None:
            pred: Predicate = Platform(left.name)
            return pred if op in ("is not", "!=") else neg(pred)
        return None

    def truth(self, value: Value) -> Predicate | None:
        return Platform(value.name) if isinstance(value, PlatformV) else None
