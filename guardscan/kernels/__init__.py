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
    artifacts.py            write_filtered_metainfo(..., BLACKWELL_CUBIN_ARCHS)  (cubin lists)
    cubins.py               get_artifact(f"{ArtifactPath.TRTLLM_GEN_BMM}/...") + the pinned
                            flashinfer-cubin's file list and kernel tables
    cpp_checks.py           module.trtllm_paged_attention_decode(...) -> the C++ export's
                            FLASHINFER_CHECK(mSM == kSM_100 || ...) (``guardscan.cpp``)
    argument_check.py       if counter is not None: raise ...  (decided by what the caller
                            passes: ``arguments.py`` reads those tests)
    auto_backend.py         if backend == "auto": ... backend = "xqa"  (FlashInfer's own pick)

``support.py`` combines them along the call graph; ``library.py`` holds the
result (``KernelLibrary``) and builds it (``build_kernel_library``).
"""

from guardscan.kernels.argument_check import recognise_argument_checks
from guardscan.kernels.artifacts import recognise_artifacts
from guardscan.kernels.auto_backend import read_auto_backend
from guardscan.kernels.backend_requirement import recognise_backend_requirement
from guardscan.kernels.callgraph import function_edges
from guardscan.kernels.check import recognise_checks
from guardscan.kernels.cpp_checks import recognise_cpp_checks
from guardscan.kernels.cubins import recognise_cubin_package
from guardscan.kernels.decorator import recognise_decorators
from guardscan.kernels.dispatch import recognise_dispatch
from guardscan.kernels.exports import collect_exports
from guardscan.kernels.jit_spec import recognise_jit_specs
from guardscan.kernels.library import KernelLibrary, build_kernel_library
from guardscan.kernels.model import FACT_KINDS, BackendCheck, Branch, KernelFact
from guardscan.kernels.support import Outcome

#: every kernel-fact form, in the order above; docs/guard-forms.md lists each
#: with its module's docstring
RECOGNISERS = [recognise_decorators, recognise_backend_requirement, recognise_jit_specs,
               recognise_dispatch, recognise_checks, collect_exports, function_edges,
               recognise_artifacts, recognise_cubin_package, recognise_cpp_checks,
               recognise_argument_checks, read_auto_backend]

__all__ = [
               "FACT_KINDS",
               "RECOGNISERS",
               "BackendCheck",
               "Branch",
               "KernelFact",
               "KernelLibrary",
               "Outcome",
               "build_kernel_library",
]
