"""commands (reports): ``guardscan reports [TARGET] [--arch A] [--option O]``, the field
reports that apply, one line each.

Without TARGET every report is listed (filtered by ``--arch``, ``--option``,
``--choice``, ``--quantization``). With one, the target is acquired as any
scan acquires it, but not scanned: only its SGLang version and the FlashInfer
version it pins (``acquire.kernel_requirement``) are read, and the reports
are those whose ranges hold them. ``--reports FILE`` (repeatable) adds a
team's own files; a target checkout's ``.guardscan-reports.toml`` is read
too. Reports are evidence beside the verdict (docs/field-reports.md); this
command judges nothing.

Exit codes: 0 the list was printed (even when empty); 2 bad usage, an
unusable target or a bad report file (one line naming the file and entry).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from packaging.requirements import InvalidRequirement, Requirement

from guardscan.arch import Arch, ArchError, parse_arch_list
from guardscan.commands.common import TARGET_HELP, UsageError
from guardscan.field import (
    BUNDLED,
    FieldReport,
    FieldReportError,
    load_reports,
    matching,
)
from guardscan.field.match import sort_key
from guardscan.results import ExitCode

__all__ = ["FORMAT", "FORMAT_VERSION", "Target", "build_parser", "render_json",
           "render_text", "run"]

#: The JSON output's ``format`` and ``format_version`` (docs/field-reports.md).
FORMAT = "guardscan-field-reports"
FORMAT_VERSION = 1

_EPILOG = """\
examples:
  guardscan reports --arch sm120
  guardscan reports --arch sm120 sglang==0.5.9
  guardscan reports --arch "RTX PRO 6000" --option --moe-runner-backend sglang==0.5.9
  guardscan reports . --reports team-reports.toml --format json

Each line: outcome, option and choice, archs, the releases it holds for, the
symptom, the first thread. Without TARGET nothing is filtered on versions;
without --arch nothing on archs. A target checkout's own .guardscan-reports.toml
(at the path given, or at the package's root) is read as --reports would read it.

exit codes: 0 printed (also when nothing applies), 2 bad usage, an unusable
target or a bad report file, 3 internal error.
"""


@dataclass(frozen=True, slots=True)
class Target:
    """What a target says about versions: SGLang's, and the kernel library's
    (``kernel_requirement`` the pin as the tree declares it, ``kernel_version``
    the version when the pin names exactly one)."""

    package: str
    version: str | None
    origin: str
    kernel_name: str
    kernel_requirement: str | None
    kernel_version: str | None

    def to_json(self) -> dict[str, object]:
        return {"package": self.package, "version": self.version, "origin": self.origin,
                "kernel": {"name": self.kernel_name, "requirement": self.kernel_requirement,
                           "version": self.kernel_version}}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan reports",
        description="List the field reports that apply: what people saw (crash, wrong\n"
                    "output, hang, slow, works) when they ran a backend choice on a GPU,\n"
                    "with the thread that says so. Beside the verdict, never deciding it.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", default=None,
                        help=TARGET_HELP.split(". Default:")[0] + ". Read for its SGLang "
                             "version and FlashInfer pin only, never scanned. Default: no "
                             "target, every release's reports.")
    parser.add_argument(
        "--arch", action="append", metavar="ARCH",
        help="only reports seen on this architecture: sm120, 12.0, a GPU name (B200, "
             "'RTX PRO 6000', GB10), or 'all'; repeatable and comma-separated "
             "(default: every arch)")
    parser.add_argument("--option", action="append", metavar="FLAG",
                        help="only reports about this option (e.g. --moe-runner-backend); "
                             "repeatable")
    parser.add_argument("--choice", action="append", metavar="CHOICE",
                        help="only reports about this choice (e.g. flashinfer_trtllm); "
                             "repeatable")
    parser.add_argument("--quantization", metavar="METHOD",
                        help="leave out reports that need another --quantization method")
    parser.add_argument("--reports", action="append", type=Path, default=[], metavar="FILE",
                        help="also read this report file (.json, or .toml in the same "
                             "schema); repeatable")
    parser.add_argument("--no-bundled", action="store_true",
                        help="leave out guardscan's own reports: only --reports files and "
                             "the tree's .guardscan-reports.toml")
    parser.add_argument("--flashinfer", metavar="PATH|WHEEL|SPEC",
                        help="the kernel library to match reports against (default: the "
                             "version TARGET pins)")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text; json: the reports as data, see "
                             "docs/field-reports.md)")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="cache for downloads (default: $GUARDSCAN_CACHE_DIR, "
                             "$XDG_CACHE_HOME/guardscan or ~/.cache/guardscan)")
    parser.add_argument("--offline", action="store_true",
                        help="never call pip; use cached wheels only")
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_intermixed_args(argv)
    try:
        archs = parse_arch_list(args.arch) if args.arch else []
    except ArchError as exc:
        raise UsageError(str(exc)) from None
    target, roots = _target(args) if args.target is not None else (None, [])
    try:
        reports = load_reports(args.reports, roots, bundled=not args.no_bundled)
    except FieldReportError as exc:
        raise UsageError(f"field reports: {exc}") from None
    found = select(reports, target, archs, args.option, args.choice, args.quantization)
    filters = {"archs": [a.name for a in archs], "options": args.option or [],
               "choices": args.choice or [], "quantization": args.quantization}
    if args.format == "json":
        json.dump(render_json(found, target, filters, len(reports)), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_text(found, target, archs, len(reports), sys.stdout)
    return ExitCode.OK


def select(reports: tuple[FieldReport, ...], target: Target | None, archs: list[Arch],
           options: list[str] | None, choices: list[str] | None,
           quantization: str | None) -> list[FieldReport]:
    """The reports that apply to any of the archs, options and choices asked for
    (each list empty or None: any), at the target's versions."""
    version = target.version if target is not None else None
    kernel = target.kernel_version if target is not None else None
    found: dict[str, FieldReport] = {}
    any_arch: list[Arch | None] = [None]
    anything: list[str | None] = [None]
    for arch in archs or any_arch:
        for option in options or anything:
            for choice in choices or anything:
                for report in matching(reports, version, kernel, option, choice, arch,
                                       quantization):
                    found.setdefault(report.id, report)
    return sorted(found.values(), key=sort_key)


# -- the target: versions only ---------------------------------------------------------------

def _target(args: argparse.Namespace) -> tuple[Target, list[Path]]:
    """The target's versions, and where a checkout keeps its own reports: the
    directory named, and the directory that holds the package."""
    from guardscan.acquire import (
        KERNEL_DIST,
        KERNEL_PACKAGE,
        AcquireError,
        acquire,
        kernel_requirement,
    )

    try:
        tree = acquire(args.target, "sglang", cache_dir=args.cache_dir, offline=args.offline)
    except AcquireError as exc:
        raise UsageError(str(exc)) from None
    requirement = args.flashinfer or kernel_requirement(tree)
    version = _pinned_version(requirement) if requirement else None
    if args.flashinfer and version is None:
        # A path or wheel: its metadata says which version it is.
        try:
            version = acquire(args.flashinfer, KERNEL_PACKAGE, cache_dir=args.cache_dir,
                              offline=args.offline).version
        except AcquireError as exc:
            raise UsageError(f"--flashinfer: {exc}") from None
    roots = []
    if tree.origin.startswith("checkout "):
        roots = [Path(args.target).expanduser(), tree.root]
    return (Target(tree.package, tree.version, tree.origin, KERNEL_DIST, requirement, version),
            roots)


def _pinned_version(text: str) -> str | None:
    """The one version a requirement pins (``flashinfer-python==0.7.2``), else None."""
    if os.path.exists(text):
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


# -- output ----------------------------------------------------------------------------------

def render_text(reports: list[FieldReport], target: Target | None, archs: list[Arch],
                total: int, stream: IO[str]) -> None:
    """One header line, then one line per report."""
    where = ", ".join(a.name for a in archs) if archs else "every arch"
    if target is None:
        what = "every release"
    else:
        kernel = (f"{target.kernel_name} {target.kernel_version}" if target.kernel_version
                  else f"{target.kernel_name} unknown"
                  + (f" (pin {target.kernel_requirement})" if target.kernel_requirement else ""))
        what = f"{target.package} {target.version or '(unknown version)'} with {kernel}"
    count = f"{len(reports)} of {total} report{'s' if total != 1 else ''}"
    stream.write(f"field reports for {what}, {where}: {count}\n")
    if not reports:
        stream.write("  none apply\n")
        return
    width = max(len(r.outcome.value) for r in reports)
    for report in reports:
        versions = f"sglang {report.sglang or 'any'}"
        if report.kernel_library is not None:
            versions += (f", {report.kernel_library.name} "
                         f"{report.kernel_library.specifier or 'any'}")
        source = "" if report.source == BUNDLED else f"  (from {report.source})"
        stream.write(f"  {report.outcome.value:<{width}}  {report.option} {report.choice}  "
                     f"{','.join(report.archs)}  {versions}  {report.symptom}  "
                     f"{report.url}{source}\n")


def render_json(reports: list[FieldReport], target: Target | None,
                filters: dict[str, object], total: int) -> dict[str, object]:
    """The listing as data: the target's versions, the filters, the reports."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "target": target.to_json() if target is not None else None,
        "filters": filters,
        "total": total,
        "reports": [report.to_json() for report in reports],
    }
