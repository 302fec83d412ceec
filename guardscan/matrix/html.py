"""matrix (HTML): one self-contained page, no server, no network, readable from ``file://``.

The markup is complete without the script: one table per release (rows option x
choice, columns architecture, each cell coloured by verdict, ``*`` where the
verdict carries a condition or a caveat), the history (each choice across the
releases, one chip per architecture, the chips where a verdict changed from
the release before marked and listed below with both verdicts), a legend, and
the releases that could not be scanned. Everything a detail panel shows
(evidence chains, field reports, both sides of a change) is embedded once as
JSON, evidence lines and chains interned (five releases of 0.5.x on three
architectures: about 1 MB). The CSS and the script are ``matrix/page.py``.
"""

from __future__ import annotations

import json
from html import escape
from typing import IO, Any

from guardscan.evidence import FactKind
from guardscan.matrix.model import Matrix, Release, Row
from guardscan.matrix.page import CSS, SCRIPT
from guardscan.results import BackendVerdict, Evidence, Verdict

__all__ = ["LEGEND", "cell_id", "page_data", "render_html"]

#: verdict -> what its colour means (the page's legend)
LEGEND = {
    Verdict.BLOCKED: "SGLang itself rejects it on that arch (a gate raises)",
    Verdict.UNSUPPORTED: "accepted, but a kernel on its path does not run there",
    Verdict.SUPPORTED: "positive evidence it runs there, and nothing blocks",
    Verdict.UNKNOWN: "no architecture evidence either way (safe to try, no promise)",
}


def cell_id(release: Release, option: str, choice: str, arch: str) -> str:
    """The element id of a cell, also its fragment (``#cell:...``)."""
    return ":".join(("cell", release.label.replace(" ", "_"), option, choice, arch))


class _Interner:
    """Evidence lines and chains stored once, referred to by index."""

    def __init__(self) -> None:
        self.evidence: list[list[Any]] = []
        self.chains: list[list[int]] = []
        self._evidence: dict[Evidence, int] = {}
        self._chains: dict[tuple[int, ...], int] = {}

    def line(self, ev: Evidence) -> int:
        index = self._evidence.get(ev)
        if index is None:
            args = ev.to_json().get("args") if ev.kind == FactKind.FIELD.value else None
            index = self._evidence[ev] = len(self.evidence)
            self.evidence.append([ev.path, ev.line, ev.role, ev.text, ev.note, ev.status,
                                  ev.kind, ev.tier, args])
        return index

    def chain(self, evidence: tuple[Evidence, ...]) -> int:
        key = tuple(self.line(ev) for ev in evidence)
        index = self._chains.get(key)
        if index is None:
            index = self._chains[key] = len(self.chains)
            self.chains.append(list(key))
        return index


class _Page:
    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        self.interner = _Interner()
        self.cells: list[dict[str, Any]] = []
        self._cell_index: dict[tuple[int, str, str, str], int] = {}

    def cell(self, release: int, verdict: BackendVerdict) -> int:
        key = (release, verdict.option, verdict.choice, verdict.arch)
        index = self._cell_index.get(key)
        if index is None:
            index = self._cell_index[key] = len(self.cells)
            entry: dict[str, Any] = {"r": release, "o": verdict.option, "c": verdict.choice,
                                     "a": verdict.arch, "v": verdict.verdict.value,
                                     "e": self.interner.chain(verdict.evidence)}
            if verdict.conditions:
                entry["k"] = list(verdict.conditions)
            if verdict.platform:
                entry["p"] = verdict.platform
            self.cells.append(entry)
        return index


def page_data(matrix: Matrix) -> tuple[dict[str, Any], _Page]:
    """What the script reads: releases, cells, interned chains, changes."""
    page = _Page(matrix)
    for number, _release in enumerate(matrix.releases):
        for row in matrix.rows:
            for arch in matrix.archs:
                verdict = matrix.cell(number, row.option, row.choice, arch)
                if verdict is not None:
                    page.cell(number, verdict)
    changes = [{"old": page.cell(c.before, c.cell.old), "new": page.cell(c.after, c.cell.new),
                "direction": c.direction} for c in matrix.changes]
    data = {
        "releases": [{"label": r.label, "target": r.target,
                      "kernels": ", ".join(f"{k.package} {k.version or '(version unknown)'}"
                                           for k in r.result.kernels)}
                     for r in matrix.releases],
        "archs": matrix.archs,
        "cells": page.cells,
        "evidence": page.interner.evidence,
        "chains": page.interner.chains,
        "changes": changes,
        "initial": "r0" if len(matrix.releases) == 1 else f"r{len(matrix.releases) - 1}",
    }
    return data, page


def _marked(verdict: BackendVerdict) -> bool:
    return bool(verdict.conditions) or any(ev.caveat for ev in verdict.evidence)


def _release_table(matrix: Matrix, page: _Page, number: int) -> list[str]:
    release = matrix.releases[number]
    rows = [row for row in matrix.rows if matrix.offers(number, row)]
    kernels = ", ".join(f"{k.package} {k.version or '(version unknown)'}"
                        for k in release.result.kernels)
    out = [f'<section class="view" id="view-r{number}">',
           (f"<h2>{escape(release.label)} <small>"
            f"{escape('with ' + kernels if kernels else 'SGLang-only')}</small></h2>")]
    notes = [note.text for note in release.result.notes]
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes)
                   + "</ul>")
    out.append('<table class="grid"><thead><tr><th>option / choice</th>'
               + "".join(f"<th>{escape(a)}</th>" for a in matrix.archs) + "</tr></thead><tbody>")
    for option, group in _groups(rows):
        out.append(_option_row(option, group, len(matrix.archs)))
        for row in group:
            out.append(_tr_open(row)
                       + f'<td class="choice"{_platform_attr(row)}>{escape(row.choice)}</td>')
            for arch in matrix.archs:
                verdict = matrix.cell(number, row.option, row.choice, arch)
                if verdict is None:
                    out.append('<td class="v-absent">-</td>')
                    continue
                index = page.cell(number, verdict)
                mark = "*" if _marked(verdict) else ""
                out.append(f'<td class="cell v-{verdict.verdict.value}" tabindex="0" '
                           f'id="{escape(cell_id(release, row.option, row.choice, arch))}" '
                           f'data-cell="{index}" title="{escape(arch)}: '
                           f'{verdict.verdict.value}">{verdict.verdict.value}{mark}</td>')
            out.append("</tr>")
    out.append("</tbody></table></section>")
    return out


def _groups(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.option, []).append(row)
    return list(groups.items())


def _option_row(option: str, group: list[Row], columns: int) -> str:
    """The header row of an option's choices (hidden with them when every
    choice is for another platform)."""
    hidden = ' class="other-platform"' if all(row.platform for row in group) else ""
    return (f'<tr{hidden}><th class="opt" colspan="{columns + 1}">{escape(option)}</th></tr>')


def _tr_open(row: Row) -> str:
    return '<tr class="other-platform">' if row.platform else "<tr>"


def _platform_attr(row: Row) -> str:
    return f' data-platform="{escape(row.platform)}"' if row.platform else ""


def _history(matrix: Matrix, page: _Page) -> list[str]:
    change_at: dict[tuple[int, str, str, str], int] = {}
    for number, change in enumerate(matrix.changes):
        change_at[(change.after, change.cell.option, change.cell.choice, change.cell.arch)] = number
    out = ['<section class="view" id="view-history">',
           ("<h2>History <small>each choice across the releases, one chip per architecture "
            f"({escape(' '.join(matrix.archs))}); &#9650; where the verdict changed from the "
            "release before</small></h2>"),
           '<table class="grid history"><thead><tr><th>option / choice</th>'
           + "".join(f"<th>{escape(r.label)}</th>" for r in matrix.releases)
           + "</tr></thead><tbody>"]
    for option, group in _groups(matrix.rows):
        out.append(_option_row(option, group, len(matrix.releases)))
        for row in group:
            out.append(_tr_open(row)
                       + f'<td class="choice"{_platform_attr(row)}>{escape(row.choice)}</td>')
            for number in range(len(matrix.releases)):
                chips = []
                for arch in matrix.archs:
                    verdict = matrix.cell(number, row.option, row.choice, arch)
                    if verdict is None:
                        continue
                    changed = change_at.get((number, row.option, row.choice, arch))
                    what = (f'class="chip changed v-{verdict.verdict.value}" '
                            f'data-change="{changed}"' if changed is not None else
                            f'class="chip v-{verdict.verdict.value}" '
                            f'data-cell="{page.cell(number, verdict)}"')
                    chips.append(f'<span {what} title="{escape(arch)}: '
                                 f'{verdict.verdict.value}">{escape(arch)}</span>')
                out.append(f'<td class="hist">{"".join(chips) or "-"}</td>')
            out.append("</tr>")
    out.append("</tbody></table>")
    out.append(f"<h3>{len(matrix.changes)} verdict change"
               f"{'' if len(matrix.changes) == 1 else 's'}</h3>")
    if matrix.changes:
        out.append('<ol class="changes">')
        for number, change in enumerate(matrix.changes):
            cell = change.cell
            out.append(f'<li data-change="{number}">{escape(cell.option)} '
                       f"{escape(cell.choice)} on {escape(cell.arch)}: "
                       f"{escape(matrix.releases[change.before].label)} "
                       f"{cell.old.verdict.value} &rarr; "
                       f"{escape(matrix.releases[change.after].label)} "
                       f"{cell.new.verdict.value} ({change.direction})</li>")
        out.append("</ol>")
    out.append("</section>")
    return out


def _json_script(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    # inside <script>, "</" would end the element; "<!--" would open a comment
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(matrix: Matrix, stream: IO[str], options: dict[str, Any]) -> None:
    data, page = page_data(matrix)
    labels = [r.label for r in matrix.releases]
    span = labels[0] if len(labels) == 1 else f"{labels[0]} \u2026 {labels[-1]}" \
        if len(labels) > 2 else " and ".join(labels)
    version = matrix.releases[0].result.guardscan if matrix.releases else ""
    head = (f"{span} on {' '.join(matrix.archs)}" if matrix.releases else "no release scanned")
    quant = f", with --quantization {matrix.quantization}" if matrix.quantization else ""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>guardscan matrix: {escape(head)}</title>",
           f"<style>{CSS}</style></head><body>",
           (f"<header><h1>guardscan support matrix</h1><p>{escape(head + quant)}: what the "
            "source of each release says per backend choice and GPU architecture. Open a cell "
            f"for its evidence chain.</p><p>guardscan {escape(version)}</p></header>"),
           "<nav>" + "".join(f'<button type="button" data-view="r{n}">{escape(label)}</button>'
                             for n, label in enumerate(labels))
           + ('<button type="button" data-view="history">History</button>'
              if len(labels) > 1 else "")
           + '<label><input type="checkbox" id="show-other"> choices for other platforms'
             " (ROCm, NPU, XPU, ...)</label></nav>",
           '<div class="legend">' + "".join(
               f'<span><span class="sw v-{v.value}"></span><b>{v.value}</b>: {escape(text)}'
               "</span>" for v, text in LEGEND.items())
           + "<span><b>*</b>: the verdict holds under a condition or a caveat (open the "
             "cell)</span></div>"]
    for target, reason in matrix.failed:
        out.append(f'<p class="failed">not scanned: {escape(target)}: {escape(reason)}</p>')
    out.append("<main>")
    for number in range(len(matrix.releases)):
        out.extend(_release_table(matrix, page, number))
    if len(matrix.releases) > 1:
        out.extend(_history(matrix, page))
    out.append("</main>")
    out.append('<aside id="detail" hidden><button type="button" class="close" '
               'id="detail-close" aria-label="close">&times;</button>'
               '<div id="detail-body"></div></aside>')
    out.append('<script type="application/json" id="matrix-data">'
               f"{_json_script(data)}</script>")
    out.append(f"<script>{SCRIPT}</script></body></html>")
    stream.write("\n".join(out) + "\n")
