"""matrix (JSON and Markdown): the same matrix for programs and for PR comments.

JSON (``matrix_json``, schema in docs/matrix.md): each release with its
verdict entries as the scan's JSON contract writes them (docs/json.md), the
targets that could not be scanned, and every change between consecutive
releases with the deciding line of each side. Markdown: the legend, one table
per release (rows option x choice, columns architecture), then the changes.
"""

from __future__ import annotations

import json
from typing import IO, Any

from guardscan.matrix.model import Change, Matrix
from guardscan.report.json_ import portable
from guardscan.results import BackendVerdict, Evidence

__all__ = ["SCHEMA", "matrix_json", "render_json", "render_markdown"]

#: the version of ``guardscan matrix --format json`` (docs/matrix.md)
SCHEMA = 1


def _deciding(verdict: BackendVerdict) -> dict[str, object] | None:
    ev = verdict.deciding
    return ev.to_json() if ev is not None else None


def _change_json(matrix: Matrix, change: Change) -> dict[str, object]:
    cell = change.cell
    return {
        "option": cell.option, "choice": cell.choice, "arch": cell.arch,
        "from": matrix.releases[change.before].label,
        "to": matrix.releases[change.after].label,
        "direction": change.direction,
        "old": {"verdict": cell.old.verdict.value, "deciding": _deciding(cell.old)},
        "new": {"verdict": cell.new.verdict.value, "deciding": _deciding(cell.new)},
    }


def matrix_json(matrix: Matrix) -> dict[str, object]:
    releases = []
    for release in matrix.releases:
        result = release.result
        archs = set(matrix.archs)
        releases.append({
            "label": release.label,
            "target": portable(result.target),
            "kernels": [portable(k) for k in result.kernels],
            "notes": [note.text for note in result.notes],
            "backends": [b.to_json() for b in result.backends if b.arch in archs],
            "diagnostics": len(set(result.diagnostics)),
        })
    return {
        "schema": SCHEMA,
        "guardscan": matrix.releases[0].result.guardscan if matrix.releases else None,
        "archs": list(matrix.archs),
        "quantization": matrix.quantization,
        "releases": releases,
        "failed": [{"target": target, "error": error} for target, error in matrix.failed],
        "changes": [_change_json(matrix, change) for change in matrix.changes],
    }


def render_json(matrix: Matrix, stream: IO[str], options: dict[str, Any]) -> None:
    json.dump(matrix_json(matrix), stream, indent=2)
    stream.write("\n")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _where(ev: Evidence | None) -> str:
    if ev is None:
        return "nothing decides it"
    note = f": {_md(ev.note)}" if ev.note else ""
    return f"`{ev.path}:{ev.line}`{note}"


def render_markdown(matrix: Matrix, stream: IO[str], options: dict[str, Any]) -> None:
    out = [f"# guardscan matrix: {', '.join(r.label for r in matrix.releases) or 'nothing'}",
           ""]
    if matrix.quantization:
        out += [f"Judged with `--quantization {matrix.quantization}`.", ""]
    out += [("**blocked**: SGLang rejects it on that arch; **unsupported**: a kernel on its "
             "path does not run there; **supported**: evidence it runs, nothing blocks; "
             "**unknown**: no evidence either way (safe to try). `*`: under a condition or a "
             "caveat."), ""]
    for target, error in matrix.failed:
        out += [f"- not scanned: `{_md(target)}`: {_md(error)}"]
    if matrix.failed:
        out.append("")
    for number, release in enumerate(matrix.releases):
        kernels = ", ".join(f"{k.package} {k.version or '(version unknown)'}"
                        for k in release.result.kernels)
        out += [f"## {release.label}" + (f" (with {kernels})" if kernels else ""), "",
                "| option | choice | " + " | ".join(matrix.archs) + " |",
                "|---|---|" + "---|" * len(matrix.archs)]
        for row in matrix.rows:
            if row.platform or not matrix.offers(number, row):
                continue
            cells = []
            for arch in matrix.archs:
                verdict = matrix.cell(number, row.option, row.choice, arch)
                if verdict is None:
                    cells.append("-")
                    continue
                mark = "*" if verdict.conditions or verdict.caveats else ""
                cells.append(verdict.verdict.value + mark)
            out.append(f"| `{row.option}` | `{_md(row.choice)}` | " + " | ".join(cells) + " |")
        out.append("")
    if len(matrix.releases) > 1:
        out += ["## Changes between releases", ""]
        if not matrix.changes:
            out.append("No verdict changed.")
        for change in matrix.changes:
            cell = change.cell
            out.append(f"- `{cell.option} {_md(cell.choice)}` on {cell.arch}: "
                       f"{matrix.releases[change.before].label} {cell.old.verdict.value} -> "
                       f"{matrix.releases[change.after].label} {cell.new.verdict.value} "
                       f"({change.direction})")
            out.append(f"  - before: {_where(cell.old.deciding)}")
            out.append(f"  - after: {_where(cell.new.deciding)}")
        out.append("")
    out.append("Choices documented for another platform only (ROCm, NPU, ...) are left out; "
               "`--format html` or `json` has them.")
    stream.write("\n".join(out) + "\n")
