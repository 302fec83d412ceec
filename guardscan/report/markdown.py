"""report (Markdown): a table per option (choices x architectures), then why each
blocked/unsupported cell is so, the field reports beside the verdicts (one row
each, with the thread), then a diagnostics summary.

Meant for pull-request comments and wiki pages: a legend of the verdict words
first, the condition behind each ``*`` under its table, paths relative to the
directory holding each package (never a local path), deterministic (no
timestamps, options and choices in scan order, archs in numeric order).
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from guardscan.evidence import FactKind, arg
from guardscan.report import register
from guardscan.report.answer import caveats, field_notes, marked, platform_source, sorted_archs
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
    out.append(f"- target: {_code(target.package)} {target.version or '?'}")
    if result.kernels:
        for kernel in result.kernels:
            out.append(f"- kernels: {_code(kernel.package)} {kernel.version or '?'}")
    else:
        out.append("- kernels: none read")
    archs = sorted_archs(result)
    out.append(f"- architectures: {', '.join(archs) if archs else 'none'}")
    if result.quantization:
        out.append(f"- quantization: {_code(result.quantization)}")
    for note in result.notes:
        out.append(f"- note: {_escape(note.text)}")
    out.append("- paths are relative to the directory holding each package "
               f"({_code(target.package + '/...')}"
               + "".join(f", {_code(k.package + '/...')}" for k in result.kernels) + ")")
    out.append("")
    out.extend(_LEGEND)
    out.extend(_tables(result))
    out.extend(_why(result))
    out.extend(_field(result))
    out.extend(_diagnostics(result))
    return out


_LEGEND = [
    "| verdict | meaning | safe to try |",
    "|---|---|---|",
    "| **blocked** | SGLang itself raises on that architecture | no |",
    "| **unsupported** | SGLang accepts it, but a kernel on its path does not run there | no |",
    "| supported | evidence that it runs there, and nothing blocks it | yes |",
    "| unknown | no evidence either way | yes, without a promise |",
    "",
    ("\\* after a verdict: it changes under a condition, or a gate could still raise under "
     "something guardscan cannot decide; the condition is listed under the table."),
    "",
]


def _grouped(result: ScanResult) -> dict[str, dict[str, dict[str, BackendVerdict]]]:
    """option -> choice -> arch -> verdict, in scan order."""
    grouped: dict[str, dict[str, dict[str, BackendVerdict]]] = {}
    for verdict in result.backends:
        grouped.setdefault(verdict.option, {}).setdefault(verdict.choice, {})[
            verdict.arch] = verdict
    return grouped


def _archs(result: ScanResult) -> list[str]:
    return sorted_archs(result)


def _tables(result: ScanResult) -> list[str]:
    archs = _archs(result)
    out = ["## Verdicts", ""]
    grouped = _grouped(result)
    if not grouped:
        return [*out, "No backend options judged.", ""]
    for option, choices in grouped.items():
        starred: list[str] = []
        out.append(f"### {_code(option)}")
        out.append("")
        out.append("| choice | " + " | ".join(archs) + " |")
        out.append("|---|" + "---|" * len(archs))
        for choice, cells in choices.items():
            label = _code(choice, table=True)
            platforms = sorted({v.platform for v in cells.values() if v.platform})
            if platforms:
                sources = sorted({platform_source(v) for v in cells.values() if v.platform})
                label += f" ({', '.join(platforms)} only, per its {' and '.join(sources)})"
            words = []
            for arch in archs:
                verdict = cells.get(arch)
                if verdict is None:
                    words.append("-")
                    continue
                word = verdict.verdict.value
                if verdict.verdict in _EXPLAINED:
                    word = f"**{word}**"
                if marked(verdict):
                    word += "\\*"
                    starred.append(_star_line(verdict))
                words.append(word)
            out.append(f"| {label} | " + " | ".join(words) + " |")
        out.append("")
        if starred:
            out.extend(dict.fromkeys(starred))
            out.append("")
    return out


def _star_line(verdict: BackendVerdict) -> str:
    """What a ``*`` stands for, said under its table."""
    if verdict.conditions:
        why = "; ".join(_escape(c) for c in verdict.conditions)
    else:
        why = "a gate could still raise at " + ", ".join(
            _code(c.place) for c in caveats(verdict))
    return f"- \\* {_code(verdict.choice)} on {verdict.arch}: {why}"


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
        chain = [ev for ev in verdict.evidence if ev.kind != FactKind.FIELD]
        for number, ev in enumerate(chain, start=1):
            out.append(f"{number}. {_hop(ev)}")
        if not chain:
            out.append("No evidence recorded.")
        for condition in verdict.conditions:
            out.append(f"- note: {_escape(condition)}")
        out.append("")
    return out


def _field(result: ScanResult) -> list[str]:
    """One row per field report beside the verdicts: what people saw, never a verdict."""
    notes = field_notes(result)
    if not notes:
        return []
    out = ["## Field reports", "",
           ("What people saw running these choices, with the thread that says so; shown "
            "beside the verdicts, never deciding them."), "",
           "| option | choice | seen on | outcome | releases | symptom | thread |",
           "|---|---|---|---|---|---|---|"]
    for option, found in notes.items():
        for note in found:
            args = note.evidence.args
            releases = ", ".join(note.holds_for())
            url = arg(args, "url")
            out.append(f"| {_code(option, table=True)} | {_code(note.choice, table=True)} | "
                       f"{', '.join(note.archs)} | {note.outcome} | {_escape(releases)} | "
                       f"{_escape(arg(args, 'symptom'))} | <{url}> |")
    out.append("")
    return out


def _hop(ev: Evidence) -> str:
    parts = [_code(ev.place), ev.role, _code(ev.text.strip()) if ev.text.strip()
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
