"""guards (form): the CUDA toolkit version, ``torch.version.cuda``.

What it recognises:
    ``torch.version.cuda`` and whatever is made of it (``.split(".")``,
    ``[:2]``, ``tuple(map(int, ...))``, ``packaging.version.Version(...)``)
    compared with a version: ``>= "12.8"``, ``>= (12, 8)``, ``< "12.3"``;
    ``torch.version.cuda is not None`` (a CUDA build) and its plain truth.
Why it matters:
    Blackwell helpers ask for a toolkit as well as a capability
    (``cuda_version=(12, 8)`` in ``_check_cuda_device_version``).
Known limits:
    ``CUDA >= x`` is true only where every toolkit able to target the arch is
    that new, and otherwise unknown, never false (the user may have a newer
    toolkit). ``==`` and ``!=`` on versions stay unknown.
Example:
    ``torch.version.cuda >= "12.9"`` is true on sm103, sm110 and sm121 (whose
    first toolkits are 12.9 or newer) and unknown elsewhere.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards.compare import cuda_compare
from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import ConstV, CudaV, ExtV, Value
from guardscan.predicate import Platform, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["CudaVersion"]

_IMPORT = "import torch\nfrom packaging.version import Version\n"


class CudaVersion(GuardForm):
    __doc__ = __doc__
    name = "cuda-version"
    subjects = (CudaV,)
    VALID = (
        Example(_IMPORT, 'torch.version.cuda is not None', "TTTTTTTTT"),
        Example(_IMPORT, 'Version(torch.version.cuda) < Version("11.0")', "FFFFFFFFF"),
        Example(_IMPORT, 'torch.version.cuda >= "12.9"', "UUUUUTTUT"),
        Example(_IMPORT, 'tuple(map(int, torch.version.cuda.split(".")[:2])) >= (12, 8)',
                "UUUUTTTTT"),
    )
    INVALID = (
        Example(_IMPORT, 'torch.version.cuda == "12.8"'),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path.startswith("torch.version.cuda"):
            return CudaV()
        name = builtin_name(path)
        if name in ("tuple", "int", "list", "Version", "parse", "version_parse") and args and \
                isinstance(args[0], CudaV):
            return args[0]
        if name == "map" and len(args) == 2 and isinstance(args[1], CudaV):
            return args[1]
        if name in ("Version", "parse") and args and isinstance(args[0], ConstV):
            return args[0]
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        return callee if isinstance(callee, CudaV) else None  # .split(".") and the like

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, ExtV) and f"{base.path}.{attr}" == "torch.version.cuda":
            return CudaV()
        return base if isinstance(base, CudaV) else None

    def subscript(self, base: Value, index: Value) -> Value | None:
        return base if isinstance(base, CudaV) else None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if not (isinstance(left, CudaV) and isinstance(right, ConstV)):
            return None
        if right.value is None:
            pred: Predicate = Platform("cuda")
            return pred if op in ("is not", "!=") else neg(pred)
        return cuda_compare(op, right.value, node)

    def truth(self, value: Value) -> Predicate | None:
        # torch.version.cuda is set only on CUDA builds
        return Platform("cuda") if isinstance(value, CudaV) else None
