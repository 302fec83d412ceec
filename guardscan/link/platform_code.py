"""link (another platform's code): a call from a choice's code into a package the tree keeps for a non-CUDA platform.

What it recognises:
    A call followed out of code that runs for a choice (``Gates._follow_one``)
    whose callee is defined in a package named for a platform: a directory of
    the module's path is ``npu``, ``xpu``, ``hpu``, ``mps``, ``musa``, ``hip``
    or ``rocm`` (``sglang/srt/hardware_backend/npu/moe/fuseep.py``). The call
    becomes a ``platform`` finding with the call's condition and the hops that
    lead to it.
Why it matters:
    SGLang keeps each platform's code in its own package and reaches it from
    shared code behind an option test (``if self._use_ascend_fuseep: from
    sglang.srt.hardware_backend.npu.moe.fuseep import forward_fuseep``). A
    choice whose own code hands its work to another platform's package is that
    platform's choice: without this, ``--moe-a2a-backend ascend_fuseep`` is
    offered on NVIDIA GPUs as "unknown, try it".
Known limits:
    Only the directory names above count: a platform's module kept beside the
    CUDA ones (``token_dispatcher/moriep.py``, AMD's MORI) is not recognised.
    The finding labels the choice (``verdict.rules.platform``), it never
    blocks it: a platform package's code may still run on CUDA.
Example:
    ``sglang/srt/hardware_backend/npu/moe/fuseep.py`` -> ``npu``;
    ``sglang/srt/layers/moe/fused_moe_triton/layer.py`` -> none.

>>> platform_package("sglang/srt/hardware_backend/npu/moe/fuseep.py")
'npu'
>>> platform_package("sglang/srt/layers/attention/hip/decode.py")
'rocm'
>>> platform_package("sglang/srt/layers/moe/fused_moe_triton/layer.py") is None
True
>>> platform_package("sglang/srt/layers/npu.py") is None
True
"""

from __future__ import annotations

from guardscan.guards.forms.platform_probes import PLATFORM_NAMES

__all__ = ["platform_package"]

#: a directory name -> the platform label the options stage gives it
_LABELS = {**{name: name for name in PLATFORM_NAMES}, "hip": "rocm", "rocm": "rocm"}


def platform_package(rel: str) -> str | None:
    """The platform whose package holds the module at ``rel`` (a directory of
    its path names one), or None."""
    for part in rel.split("/")[:-1]:
        label = _LABELS.get(part)
        if label is not None:
            return label
    return None
