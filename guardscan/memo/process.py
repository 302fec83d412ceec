"""memo (process): whole scans kept for the life of one process, for ``preflight`` and ``check``.

A launcher that calls ``guardscan.preflight`` for several commands pays for one
scan per (target, archs, quantization, kernel library, cache settings); the
on-disk result cache (``memo.results``) answers across processes. Which flags
a tree defines beyond the backend catalog (``tree_defines``) is kept the same
way, per tree and flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from guardscan.arch import Arch
from guardscan.results import ScanResult

__all__ = ["SCANS", "scan_once", "tree_defines"]

#: (target, arch names, quantization, flashinfer, cache dir, kernels, cache, offline,
#: compiled)
#: -> (result, package root); one process pays once for each.
SCANS: dict[tuple[object, ...], tuple[ScanResult, Path | None, tuple[str, ...] | None]] = {}



def scan_once(target: str | None, archs: list[Arch], quantization: str | None,
          flashinfer: str | None, cache_dir: Path | None, kernels: bool, use_cache: bool,
          offline: bool, progress: Callable[[str], None] | None = None,
          compiled: str | None = None, model_config: Path | None = None,
          ) -> tuple[ScanResult, Path | None, tuple[str, ...] | None]:
    from guardscan.acquire import default_cache_dir
    from guardscan.driver import ScanOptions, analyse

    resolved = (cache_dir or default_cache_dir()).expanduser().resolve()
    key = (target, tuple(a.name for a in archs), quantization, flashinfer, str(resolved),
           kernels, use_cache, offline, compiled, str(model_config) if model_config else None)
    if key not in SCANS:
        analysis = analyse(ScanOptions(target=target, archs=archs, quantization=quantization,
                                       kernels=kernels, flashinfer=flashinfer,
                                       compiled=compiled, model_config=model_config,
                                       cache_dir=cache_dir, use_cache=use_cache,
                                       offline=offline, progress=progress))
        tree = analysis.tree
        quant = (analysis.catalog.quantization.choices if analysis.catalog is not None
                 and analysis.catalog.quantization is not None else None)
        SCANS[key] = (analysis.result, tree.root, quant)
    return SCANS[key]


_DEFINED: dict[tuple[str, str], bool] = {}


def tree_defines(root: Path, package: str, flag: str) -> bool:
    """Whether the tree under ``root / package`` defines ``flag`` although the
    backend catalog does not hold it (it has no finite choices): the flag as a
    quoted string (``add_argument("--x-y", ...)``), or its dest as an annotated
    class field (``x_y: A[...]``, the field form of SGLang 0.5.23)."""
    key = (str(root / package), flag)
    if key in _DEFINED:
        return _DEFINED[key]
    dest = flag.lstrip("-").replace("-", "_").encode()
    quoted = (f'"{flag}"'.encode(), f"'{flag}'".encode())
    field_line = re.compile(rb"^[ \t]+" + re.escape(dest) + rb"[ \t]*:[ \t]*[A-Za-z_]",
                            re.MULTILINE)
    found = False
    for path in sorted((root / package).rglob("*.py")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(q in data for q in quoted) or (dest in data and field_line.search(data)):
            found = True
            break
    _DEFINED[key] = found
    return found


