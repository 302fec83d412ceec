"""kernels: where the kernel library's own source says each function runs.

Facts come from FlashInfer's source text (never imported): one recogniser per
form, each in its own module with its examples in the docstring:

    decorator.py            @supported_compute_capability([100, 103, ...])
    backend_requirement.py  @backend_requirement({"cudnn": check, ...})
    jit_spec.py             supported_major_versions=[10] / -gencode=arch=compute_100a
    dispatch.py             if backend in ("120", "121"): gen_..._sm120_module() ... else: raise
    check.py                if major < 10: raise ...
    exports.py              from .fused_moe import cutlass_fused_moe
    callgraph.py            calls resolved by qualified name

``support.py`` combines them along the call graph; ``library.py`` holds the
result (``KernelLibrary``) and builds it (``build_kernel_library``).
"""

from guardscan.kernels.library import KernelLibrary, build_kernel_library
from guardscan.kernels.model import FACT_KINDS, BackendCheck, Branch, GuardFn, KernelFact
from guardscan.kernels.support import Outcome

__all__ = [
    "FACT_KINDS",
    "BackendCheck",
    "Branch",
    "GuardFn",
    "KernelFact",
    "KernelLibrary",
    "Outcome",
    "build_kernel_library",
]
