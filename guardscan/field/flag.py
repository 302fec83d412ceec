"""field (flag): which field reports make ``check`` and ``preflight`` flag a launch's choice.

What it recognises: a report of a ``crash`` or ``wrong-output`` that holds
*exactly* for the launch: the arch is one of its archs, the scanned SGLang
version is a real release inside its range, the FlashInfer version read is
inside its kernel range (when it has one), and its quantization, when it
names one, is the launch's own ``--quantization``.

Why it matters: half of what breaks on a new GPU never shows as a guard. A
user about to launch a choice that someone watched print NaN on the same GPU
and release needs to hear it before the launch, with the link, whatever the
static verdict says.

Known limits (which way it errs): a report only flags what it states. A
report that needs a quantization the launch does not give, names a model
family (the launch's model is not read), or holds for a version guardscan
could not read, is shown beside the choice but does not flag it; so does a
hang, a slow run, or a run that worked. It never changes a verdict: a flagged
choice keeps its verdict, and ``check`` says both.

Example: on sm120, sglang 0.5.9 with flashinfer 0.6.3, ``--quantization
modelopt_fp4 --moe-runner-backend flashinfer_trtllm`` is flagged by the
report ``nvfp4-moe-flashinfer-trtllm-sm12x-crash`` (crash, sm120/sm121,
sglang >=0.5.5,<=0.5.20, modelopt_fp4); without ``--quantization`` it is
shown but not flagged.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from guardscan.acquire.pairing import KERNEL_DIST
from guardscan.field.load import checkout_roots, load_reports
from guardscan.field.match import in_range, known_release
from guardscan.field.model import FieldReport, Outcome

if TYPE_CHECKING:
    from guardscan.launch import Preflight

__all__ = ["FLAGGING", "FieldMode", "field_mode", "flagging", "flags_launch", "known_release",
           "launch_field", "with_field"]

#: the outcomes that flag a launch (the others are shown only)
FLAGGING = frozenset({Outcome.CRASH, Outcome.WRONG_OUTPUT})


class FieldMode(str, enum.Enum):
    """What a flagging report does to ``check`` and ``preflight``.

    FAIL (the default): a flagged choice the command gives is a problem (exit
    1); WARN: it is a warning (``--field-warn-only``); OFF: no field reports
    are read at all (``--no-reports``)."""

    FAIL = "fail"
    WARN = "warn"
    OFF = "off"

    @classmethod
    def of(cls, value: str | FieldMode) -> FieldMode:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"field={value!r}: expected one of "
                             f"{', '.join(m.value for m in cls)}") from None


def flags_launch(report: FieldReport, sglang_version: str | None,
                 kernel_version: str | None, quantization: str | None, *,
                 kernel_name: str = KERNEL_DIST) -> bool:
    """Whether ``report`` (already matched on option, choice and arch) holds
    exactly for this launch and reports a crash or wrong output."""
    if report.outcome not in FLAGGING or report.model_family is not None:
        return False
    if not known_release(sglang_version) or not in_range(str(sglang_version), report.sglang):
        return False
    library = report.kernel_library
    if library is not None:
        if library.name != canonicalize_name(kernel_name) or not known_release(kernel_version):
            return False
        if not in_range(str(kernel_version), library.specifier):
            return False
    return report.quantization is None or report.quantization == quantization


def flagging(reports: Iterable[FieldReport], sglang_version: str | None,
             kernel_version: str | None, quantization: str | None) -> list[FieldReport]:
    """The reports of ``reports`` that flag the launch."""
    return [r for r in reports if flags_launch(r, sglang_version, kernel_version, quantization)]


# -- a launch's checks ---------------------------------------------------------------------

def field_mode(mode: FieldMode | str, files: Iterable[str | Path] = ()) -> FieldMode:
    """The mode, checked, with the report ``files`` read once so that a bad one
    fails before a scan (``ValueError``, ``FieldReportError``)."""
    mode = FieldMode.of(mode)
    if mode is not FieldMode.OFF:
        load_reports([Path(f) for f in files])
    return mode


def launch_field(answer: Preflight, mode: FieldMode, files: Iterable[str | Path],
                 target: str | None, root: Path | None) -> Preflight:
    """``with_field`` on guardscan's reports, ``files`` and a target checkout's own."""
    if mode is FieldMode.OFF:
        return answer
    reports = load_reports([Path(f) for f in files], checkout_roots(target, root))
    return with_field(answer, reports, mode)


def with_field(answer: Preflight, reports: Iterable[FieldReport],
               mode: FieldMode | str = FieldMode.FAIL) -> Preflight:
    """``answer`` with the field reports about the choices it judged: every one
    in ``field`` (code ``field-report`` when it flags the launch, else
    ``field-note``), its scan's verdicts carrying them as ``field`` evidence,
    and each flagging one also a problem (a choice the command gives, in
    FAIL mode) or a warning (WARN mode, or a default the command leaves)."""
    from guardscan.field.attach import (
        attach_reports,
        field_evidence,
        for_release,
        kernel_version,
    )
    from guardscan.field.match import matching
    from guardscan.launch import PROBLEMS, Problem
    from guardscan.report.answer import FieldNote
    from guardscan.report.text import field_line
    from guardscan.results import Evidence

    mode = FieldMode.of(mode)
    reports = for_release(reports, answer.result.target.version)
    if mode is FieldMode.OFF or not reports:
        return answer
    result = attach_reports(answer.result, reports)
    version, kernel = result.target.version, kernel_version(result)
    found: list[Problem] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    seen: set[tuple[str, str, str]] = set()
    for check in answer.checks:
        for report in matching(reports, version, kernel, check.option, None, check.arch,
                               result.quantization):
            if report.choice not in (check.value, check.judged) or \
                    (report.id, check.option, check.arch) in seen:
                continue
            seen.add((report.id, check.option, check.arch))
            flagged = flags_launch(report, version, kernel, result.quantization)
            ev: Evidence = field_evidence(report)
            line = field_line(FieldNote(report.choice, (check.arch,), ev), choice=False)
            code = "field-report" if flagged else "field-note"
            problem = Problem(code, check.option, check.value, check.arch, check.verdict,
                              line, report.url, (), check.judged,
                              PROBLEMS[code].format(option=check.option, choice=report.choice,
                                                    line=line))
            found.append(problem)
            if flagged:
                (problems if check.given and mode is FieldMode.FAIL else warnings).append(
                    problem)
    if not found:
        return dataclasses.replace(answer, result=result)
    return dataclasses.replace(answer, result=result,
                               problems=answer.problems + tuple(problems),
                               warnings=answer.warnings + tuple(warnings),
                               field=tuple(found))
