"""verdicts (notes): a quantization method rejected whatever the backend, one note per method.
"""

from __future__ import annotations

from guardscan.arch import Arch, parse_arch
from guardscan.index import Index
from guardscan.link import (
    FindingKind,
    Links,
)
from guardscan.predicate import (
    Context,
    QuantIs,
    Tri,
    leaves,
)
from guardscan.results import CHECKPOINT_ONLY, ScanNote

__all__ = ['quantization_notes']


def quantization_notes(index: Index, links: Links, archs: list[Arch]) -> list[ScanNote]:
    """Gates of a quantization method that hold whatever the backend choice:
    one line per method, naming the archs it is rejected on."""
    notes = []
    per_method: dict[str, tuple[list[str], str]] = {}
    for finding in links.findings:
        if finding.kind != FindingKind.QUANT_GATE or finding.option is not None:
            continue
        methods = sorted({m for a in leaves(finding.condition) if isinstance(a, QuantIs)
                          for m in a.methods})
        for method in methods:
            blocked = [arch.name for arch in archs if finding.condition.evaluate(
                Context(arch=arch, quantization=method)) is Tri.TRUE]
            if blocked:
                names, where = per_method.get(method, ([], ""))
                per_method[method] = (sorted(set(names) | set(blocked),
                                             key=lambda name: parse_arch(name)),
                                      where or f"{finding.rel}:{finding.line}")
    for method, (names, where) in sorted(per_method.items()):
        if method in links.checkpoint_methods:
            # only a checkpoint names it: no flag to judge under
            notes.append(ScanNote(
                "quantization", f"a {method} checkpoint is rejected on {', '.join(names)} "
                f"whatever the backend ({where})", method=method, reason=CHECKPOINT_ONLY))
            continue
        notes.append(ScanNote(
            "quantization", f"--quantization {method} is rejected on {', '.join(names)} "
            f"whatever the backend ({where}; use --quantization {method} to judge choices "
            "under it)", method=method))
    return notes
