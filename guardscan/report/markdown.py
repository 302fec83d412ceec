"""report (Markdown): a table per option (choices x architectures), then why each
blocked/unsupported cell is so, then a diagnostics summary.

Meant for pull-request comments and wiki pages; deterministic (no timestamps,
options and choices in scan order, archs in the order asked for).
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from guardscan.report import register
from guardscan.results import BackendVerdict, Evidence, ScanResult, Verdict

__all__ = ["render_markdown"]

_EXPLAINED = (Verdict.BLOCKED, Verdict.UNSUPPORTED)


@register("markdown")
def render_markdown(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    stream.write("\n".join(_lines(result)).rstrip("\n") + "\n")


def _lines(result: ScanResult) -> list[str]:
    target = result.target
    out = [f"# guardscan report: {target.package} {target.version or '?'}", ""]
    out.append(f"- guardscan: {result.guardscan}")
    out.append(f"- target: {_code(target.package)} {target.version or '?'} "
               f"({_code(target.path)})")
    if result.kernels:
        for kernel in result.kernels:
            out.append(f"- kernels: {_code(kernel.package)} {kernel.version or '?'} "
                       f"({_code(kernel.path)})")
    else:
        out.append("- kernels: none read")
    out.append(f"- architectures: {', '.join(result.archs) if result.archs else 'none'}")
    if result.quantization:
        out.append(f"- quantization: {_code(result.quantization)}")
    for note in result.notes:
        out.append(f"- note: {_escape(note)}")
    out.append("")
    out.extend(_tables(result))
    out.extend(_why(result))
    out.extend(_diagnostics(result))
    return out


def _grouped(result: ScanResult) -> dict[str, dict[str, dict[str, BackendVerdict]]]:
    """option -> choice -> arch -> verdict, in scan order."""
    grouped: dict[str, dict[str, dict[str, BackendVerdict]]] = {}
    for verdict in result.backends:
        grouped.setdefault(verdict.option, {}).setdefault(verdict.choice, {})[
            verdict.arch] = verdict
    return grouped


def _archs(result: ScanResult) -> list[str]:
    archs = list(result.archs)
    for verdict in result.backends:
        if verdict.arch not in archs:
            archs.append(verdict.arch)
    return archs


def _tables(result: ScanResult) -> list[str]:
    archs = _archs(result)
    out = ["## Verdicts", ""]
    grouped = _grouped(result)
    if not grouped:
        return [*out, "No backend options judged.", ""]
    marked = False
    for option, choices in grouped.items():
        out.append(f"### {_code(option)}")
        out.append("")
        out.append("| choice | " + " | ".join(archs) + " |")
        out.append("|---|" + "---|" * len(archs))
        for choice, cells in choices.items():
            label = _code(choice, table=True)
            platforms = sorted({v.platform for v in cells.values() if v.platform})
            if platforms:
                label += f" ({', '.join(platforms)} only, per its docs)"
            words = []
            for arch in archs:
                verdict = cells.get(arch)
                if verdict is None:
                    words.append("-")
                    continue
                word = verdict.verdict.value
                if verdict.verdict in _EXPLAINED:
                    word = f"**{word}**"
                if verdict.conditions:
                    word += "\\*"
                    marked = True
                words.append(word)
            out.append(f"| {label} | " + " | ".join(words) + " |")
        out.append("")
    if marked:
        out.append("\\* the verdict changes under conditions listed in the JSON output "
                   "(`conditions`), such as the quantization method.")
        out.append("")
    return out


def _why(result: ScanResult) -> list[str]:
    cells = [v for v in result.backends if v.verdict in _EXPLAINED]
    if not cells:
        return []
    out = ["## Why", ""]
    for verdict in cells:
        heading = (f"### {_code(verdict.option)} {_code(verdict.choice)} on {verdict.arch}: "
                   f"{verdict.verdict.value}")
        if verdict.quantization:
            heading += f" (with {_code('--quantization ' + verdict.quantization)})"
        out.extend([heading, ""])
        for number, ev in enumerate(verdict.evidence, start=1):
            out.append(f"{number}. {_hop(ev)}")
        if not verdict.evidence:
            out.append("No evidence recorded.")
        for condition in verdict.conditions:
            out.append(f"- note: {_escape(condition)}")
        out.append("")
    return out


def _hop(ev: Evidence) -> str:
    parts = [_code(f"{ev.path}:{ev.line}"), ev.role, _code(ev.text.strip()) if ev.text.strip()
             else "(no text)"]
    if ev.note:
        parts.append(_escape(ev.note))
    return " — ".join(parts)


def _diagnostics(result: ScanResult) -> list[str]:
    out = ["## Diagnostics", ""]
    diagnostics = sorted(set(result.diagnostics))
    if not diagnostics:
        return [*out, "None.", ""]
    counts = Counter(d.code for d in diagnostics)
    out.append(f"{len(diagnostics)} places guardscan could not fully analyse "
               "(`--format json` lists each with path, line and message):")
    out.append("")
    out.append("| code | count |")
    out.append("|---|---|")
    for code, count in sorted(counts.items()):
        out.append(f"| {_code(code, table=True)} | {count} |")
    out.append("")
    return out


def _code(text: str, table: bool = False) -> str:
    """An inline code span that survives backticks in the text (and, in a table
    cell, pipes: GFM splits cells before it reads code spans)."""
    text = text.replace("\n", " ")
    if table:
        text = text.replace("|", "\\|")
    fence = "`"
    while fence in text:
        fence += "`"
    if text.startswith("`") or text.endswith("`"):
        return f"{fence} {text} {fence}"
    return f"{fence}{text}{fence}"


def _escape(text: str) -> str:
    """Plain text in a Markdown line: no accidental tables, emphasis or HTML."""
    out = text.replace("\n", " ")
    for char in "\\`*_|<":
        out = out.replace(char, "\\" + char)
    return out
