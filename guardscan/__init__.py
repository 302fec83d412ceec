"""guardscan: which SGLang backend choices run on which NVIDIA GPU architecture,
answered from source text alone (nothing scanned is ever imported or run).

    import guardscan
    result = guardscan.scan("sglang==0.5.9", archs=["sm120"])
    for b in result.backends:
        print(b.option, b.choice, b.arch, b.verdict)

    answer = guardscan.preflight(["--moe-runner-backend", "flashinfer_trtllm"],
                                 arch="sm120", target="sglang==0.5.9")
    print(answer.ok, [str(p) for p in answer.problems])

The names below are the public API (docs/api.md); they are imported on first
use, so ``import guardscan`` stays cheap for a pre-commit hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    "scan": "guardscan.driver",
    "ScanResult": "guardscan.results",
    "BackendVerdict": "guardscan.results",
    "Evidence": "guardscan.results",
    "Diagnostic": "guardscan.results",
    "OptionInfo": "guardscan.results",
    "Verdict": "guardscan.results",
    "ExitCode": "guardscan.results",
    "Arch": "guardscan.arch",
    "ArchError": "guardscan.arch",
    "NoArchError": "guardscan.arch",
    "parse_arch": "guardscan.arch",
    "parse_arch_list": "guardscan.arch",
    "AcquireError": "guardscan.acquire",
    "preflight": "guardscan.launch",
    "Preflight": "guardscan.launch",
    "Problem": "guardscan.launch",
    "Check": "guardscan.launch",
    "LocalGPUError": "guardscan.launch",
}

__all__ = [
    "AcquireError",
    "Arch",
    "ArchError",
    "BackendVerdict",
    "Check",
    "Diagnostic",
    "Evidence",
    "ExitCode",
    "LocalGPUError",
    "NoArchError",
    "OptionInfo",
    "Preflight",
    "Problem",
    "ScanResult",
    "Verdict",
    "__version__",
    "parse_arch",
    "parse_arch_list",
    "preflight",
    "scan",
]

if TYPE_CHECKING:
    from guardscan.acquire import AcquireError
    from guardscan.arch import Arch, ArchError, NoArchError, parse_arch, parse_arch_list
    from guardscan.driver import scan
    from guardscan.launch import Check, LocalGPUError, Preflight, Problem, preflight
    from guardscan.results import (
        BackendVerdict,
        Diagnostic,
        Evidence,
        ExitCode,
        OptionInfo,
        ScanResult,
        Verdict,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guardscan' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
