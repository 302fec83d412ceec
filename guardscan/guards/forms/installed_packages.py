"""guards (form): whether a package is installed, ``importlib.util.find_spec(NAME)``.

What it recognises:
    ``importlib.util.find_spec("NAME")`` (``from importlib.util import
    find_spec`` alike) with a constant top-level name, compared ``is not
    None`` / ``is None`` or used as a condition. It is TRUE where the scan
    reads that package beside the target (the kernel library it pins,
    ``flashinfer``; the import names of the compiled packages it pins,
    ``flash_mla``, ``deep_gemm``), else unknown.
Why it matters:
    ``is_flashinfer_available()`` is ``get_bool_env_var(...) and
    find_spec("flashinfer") is not None and is_cuda()``; a release that pins
    FlashInfer installs it, so every gate behind that helper is decided.
Known limits:
    Never false: a package the release does not pin may still be installed
    by the user. Submodules (``find_spec("flashinfer.comm")``) and names
    computed at run time stay unknown. Judged at the verdict stage, where the
    scan knows what it read (a scan with ``--no-kernels`` reads none).
Example:
    ``find_spec("flashinfer") is not None`` is TRUE in a scan paired with
    FlashInfer, unknown in one with ``--no-kernels``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import ConstV, FormValue, Value
from guardscan.predicate import Installed, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["InstalledPackages"]

_IMPORT = "import importlib.util\nimport torch\n"


@dataclass(frozen=True, slots=True)
class _Spec(FormValue):
    package: str


class InstalledPackages(GuardForm):
    __doc__ = __doc__
    name = "installed-packages"
    subjects = (_Spec,)
    VALID = (
        # unknown alone (nothing is paired in an example); decided with a platform
        Example(_IMPORT, 'importlib.util.find_spec("flashinfer") is not None '
                         'and torch.version.hip is not None', "FFFFFFFFF"),
        Example(_IMPORT, 'importlib.util.find_spec("flashinfer") is None '
                         'or torch.version.hip is None', "TTTTTTTTT"),
    )
    INVALID = (
        Example(_IMPORT, 'importlib.util.find_spec("flashinfer") is not None'),
        Example(_IMPORT, 'importlib.util.find_spec("flashinfer.comm") is not None'),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if path != "importlib.util.find_spec" or len(args) != 1:
            return None
        name = args[0]
        if isinstance(name, ConstV) and isinstance(name.value, str) and name.value.isidentifier():
            return _Spec(name.value)
        return None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if isinstance(left, _Spec) and isinstance(right, ConstV) and right.value is None \
                and op in ("is", "is not", "==", "!="):
            pred: Predicate = Installed(left.package)
            return pred if op in ("is not", "!=") else neg(pred)
        return None

    def truth(self, value: Value) -> Predicate | None:
        return Installed(value.package) if isinstance(value, _Spec) else None
