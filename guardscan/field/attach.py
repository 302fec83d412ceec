"""field (attach): each verdict's field reports, as ``field`` evidence beside it, never deciding it.

A scan's verdicts say what the source checks; the reports that hold for a
verdict (its option and choice, its arch, the scanned SGLang version, the
FlashInfer version read, the quantization judged under: ``match.matching``)
are appended to its evidence as lines of kind ``field`` with status
``context``. The verdict, its deciding line and its caveats stay what they
were: a report is never ``decides`` and never ``caveat``.

When the scanned tree names no release (a source build's ``0.0.0.dev``, a
tree without metadata), guardscan's own reports for a release range are left
out (``guardscan reports --arch A`` lists them); those for every release and a
team's own are kept.

This runs after the scan and outside its caches (the command line and
``preflight`` call it on the result they got), so a report file edited
between two runs is read afresh and no cached result ever holds a report.

An evidence line of a report names where the report was read, as a place:
``guardscan/data/field_reports.json`` and the line of its entry for the
bundled ones, the file as given (``.guardscan-reports.toml`` for a tree's own)
for a team's. Its ``args`` carry the report as data (``id``, ``outcome``,
``archs``, ``sglang``, ``kernel``, ``quantization``, ``model_family``,
``url``, ``fixed_in``); its ``text`` is the symptom; its note reads
``wrong-output reported on sm120 with --quantization modelopt_fp4, sglang
>=0.5.9: NaN from the first token (https://...)``.

Example::

    result = attach_reports(scan_result, load_reports(roots=[tree_root]))
    [ev.note for b in result.backends for ev in b.evidence if ev.kind == "field"]
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path

from guardscan.acquire.pairing import KERNEL_PACKAGE
from guardscan.evidence import FactKind, Status, arg, args_of
from guardscan.field.load import BUNDLED, TREE_FILE
from guardscan.field.match import known_release, matching
from guardscan.field.model import FieldReport, Outcome
from guardscan.results import BackendVerdict, Evidence, Role, ScanResult

__all__ = [
    "BUNDLED_PATH",
    "attach_reports",
    "field_evidence",
    "field_reports_of",
    "for_release",
    "kernel_version",
    "report_line",
]

#: Where the bundled reports are, as an evidence path.
BUNDLED_PATH = "guardscan/data/field_reports.json"


def kernel_version(result: ScanResult) -> str | None:
    """The version of the FlashInfer the scan read (None when it read none)."""
    return next((k.version for k in result.kernels if k.package == KERNEL_PACKAGE), None)


def attach_reports(result: ScanResult, reports: Iterable[FieldReport]) -> ScanResult:
    """A copy of ``result`` whose verdicts each carry the reports that hold for
    them as trailing ``field`` evidence (worst outcome first); ``result`` itself
    is left as it was (a process may keep it in a memo)."""
    version = result.target.version
    reports = for_release(reports, version)
    if not reports:
        return result
    kernel = kernel_version(result)
    backends: list[BackendVerdict] = []
    for verdict in result.backends:
        found = matching(reports, version, kernel, verdict.option, verdict.choice,
                         verdict.arch, verdict.quantization)
        if found:
            verdict = dataclasses.replace(
                verdict, evidence=(*verdict.evidence, *(field_evidence(r) for r in found)))
        backends.append(verdict)
    return dataclasses.replace(result, backends=backends)


def for_release(reports: Iterable[FieldReport], version: str | None
                ) -> tuple[FieldReport, ...]:
    """The reports worth showing beside a tree of this SGLang version: all of
    them for a release; for a tree that names none (a source build, a stand-in),
    where no range can be checked and every release's reports would bury the
    answer, those for every release and the team's own (written for this tree)."""
    if known_release(version):
        return tuple(reports)
    return tuple(r for r in reports if not r.sglang or r.source != BUNDLED)


def field_reports_of(verdict: BackendVerdict) -> tuple[Evidence, ...]:
    """The ``field`` evidence lines of a verdict, in the order attached."""
    return tuple(ev for ev in verdict.evidence if ev.kind == FactKind.FIELD)


def field_evidence(report: FieldReport) -> Evidence:
    """One report as an evidence line (status ``context``)."""
    kernel = report.kernel_library
    args = args_of(
        id=report.id, outcome=report.outcome.value, archs=",".join(report.archs),
        sglang=report.sglang or "any",
        kernel=f"{kernel.name} {kernel.specifier or 'any'}" if kernel is not None else None,
        quantization=report.quantization, model_family=report.model_family,
        symptom=report.symptom, url=report.url, fixed_in=report.fixed_in,
        source=report.source)
    # a checkout's own file is named as from its root (no local path in a report)
    path = (BUNDLED_PATH if report.source == BUNDLED else
            TREE_FILE if Path(report.source).name == TREE_FILE else report.source)
    return Evidence.of(path, report_line(report), Role.FIELD.value, report.symptom,
                       FactKind.FIELD, args, Status.CONTEXT)


def outcome_of(ev: Evidence) -> Outcome:
    """The outcome a ``field`` evidence line reports."""
    return Outcome(arg(ev.args, "outcome"))


def report_line(report: FieldReport) -> int:
    """The 1-based line of the report's ``id`` in the file it was read from (0
    when the file is gone or the id is not found as written)."""
    return _id_lines(report.source).get(report.id, 0)


_ID_LINE = re.compile(r"""^\s*"?id"?\s*[:=]\s*["']([a-z0-9][a-z0-9._-]*)["']""")


@lru_cache(maxsize=32)
def _id_lines(source: str) -> dict[str, int]:
    try:
        if source == BUNDLED:
            text = resources.files("guardscan").joinpath(
                "data/field_reports.json").read_text("utf-8")
        else:
            text = Path(source).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        found = _ID_LINE.match(line)
        if found:
            lines.setdefault(found.group(1), number)
    return lines
