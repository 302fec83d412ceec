"""report (text): a table per option, choices as rows, architectures as columns."""

from __future__ import annotations

from collections import defaultdict
from typing import IO, Any

from guardscan.report import register
from guardscan.results import BackendVerdict, Role, ScanResult

_CELL = {"blocked": "blocked", "unsupported": "unsupported", "supported": "supported",
         "unknown": "unknown"}


@register("text")
def render_text(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    target = result.target
    stream.write(f"guardscan {result.guardscan}: {target.package} {target.version or '?'}"
                 f" ({target.path})\n")
    if result.kernels:
        for kernel in result.kernels:
            stream.write(f"kernels: {kernel.package} {kernel.version or '?'} ({kernel.path})\n")
    for note in result.notes:
        stream.write(f"note: {note}\n")
    if result.quantization:
        stream.write(f"quantization: {result.quantization}\n")
    rows: dict[tuple[str, str], dict[str, BackendVerdict]] = defaultdict(dict)
    order: list[tuple[str, str]] = []
    for backend in result.backends:
        key = (backend.option, backend.choice)
        if key not in rows:
            order.append(key)
        rows[key][backend.arch] = backend
    archs = result.archs
    width = max([len(_CELL["unsupported"]) + 1, *(len(a) for a in archs)]) + 1
    current_option = None
    for option, choice in order:
        if option != current_option:
            current_option = option
            choices = [c for o, c in order if o == option]
            first = max(24, *(len(c) + 3 for c in choices))
            stream.write("\n" + option + "\n" + "  choice".ljust(first)
                         + "".join(a.ljust(width) for a in archs).rstrip() + "\n")
        cells = []
        marks = ""
        for arch in archs:
            verdict = rows[(option, choice)].get(arch)
            if verdict is None:
                cells.append("-".ljust(width))
                continue
            word = _CELL[verdict.verdict.value]
            if verdict.conditions or any(e.role == Role.GATE and "could raise" in e.note
                                         for e in verdict.evidence):
                word += "*"
            cells.append(word.ljust(width))
            if verdict.platform:
                marks = f"  ({verdict.platform} only, per its docs)"
        stream.write(f"  {choice}".ljust(first) + "".join(cells).rstrip() + marks + "\n")
    stream.write(
        "\n* = a gate could still raise there under conditions guardscan cannot decide "
        "(model, env, quantization).\n"
        "Evidence: guardscan explain CHOICE --option OPTION --arch ARCH TARGET, "
        "or --format json for every chain.\n")
    if result.diagnostics:
        counts: dict[str, int] = defaultdict(int)
        for diag in result.diagnostics:
            counts[diag.code] += 1
        summary = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
        stream.write(f"diagnostics: {summary} (--format json lists them)\n")
