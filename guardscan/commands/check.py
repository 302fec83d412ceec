"""commands (check): ``guardscan check [--arch A] [TARGET] -- <launch command>``.

Judges the backend flags of a real launch command (``python -m
sglang.launch_server ...``, ``sglang serve ...``) on one architecture, one line
per option, through ``guardscan.launch.preflight``, with the field reports
about each given choice one line each beneath it. Exit 0 when every choice the
command gives is safe to try, 1 when one is not (or a flag is misspelt, or a
crash or wrong-output report holds for it on the arch and release, unless
``--field-warn-only``), 2 on usage errors (no ``--``, a bad arch, no GPU for
``--arch auto``, an unusable target, a bad report file).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, TYPE_CHECKING

from guardscan.arch import ArchError, NoArchError
from guardscan.commands.common import (
    TARGET_HELP,
    UsageError,
    add_cache_args,
    add_flashinfer,
    add_reports_args,
    clear_progress,
    progress,
)
from guardscan.results import ExitCode

if TYPE_CHECKING:
    from guardscan.launch import Preflight, Problem

__all__ = ["build_parser", "render", "run"]

_EPILOG = """\
examples:
  guardscan check --arch sm120 sglang==0.5.9 -- python -m sglang.launch_server \\
      --model-path m --quantization modelopt_fp4 --moe-runner-backend flashinfer_trtllm
  guardscan check --arch "RTX PRO 6000" -- sglang serve --model-path m \\
      --attention-backend=flashinfer
  guardscan check --arch auto -- python3 -m sglang.launch_server --model-path m

Only the backend options (--*-backend) and --quantization are judged, by the
scanned version's own catalog; other flags (--tp 8, --model-path m) are listed
as ignored. Without --quantization, a local --model-path's config.json names
the method judged under (quantization_config.quant_method, read as JSON; the
flag is then not listed as ignored). A choice the option does not offer, or a misspelt backend flag, is a
problem with the closest matches. Options the command does not set keep their
defaults; a default that resolves to a choice to avoid gets a line (a warning:
it does not change the exit code). --verbose also lists the defaults whose auto
the source does not resolve, the options left at their defaults and the defaults
that could not be judged.

Field reports (docs/field-reports.md: guardscan's own, --reports files, a target
checkout's .guardscan-reports.toml) about a given choice on the arch show under
it as "field: ..." lines. A crash or wrong-output report that holds exactly (the
arch, a release in its range, its FlashInfer range, its --quantization) flags
the choice: exit 1, or only a warning with --field-warn-only. The verdict stays
what the source says.

exit codes: 0 every given choice is safe to try (supported or unknown), 1 one is
not (blocked, unsupported, not a choice, misspelt, flagged by a field report),
2 bad usage (no --, a bad --arch, no GPU for --arch auto, an unusable target, a
bad report file), 3 internal error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan check",
        usage="guardscan check [--arch ARCH] [options] [TARGET] -- LAUNCH COMMAND...",
        description="Judge the backend flags of an SGLang launch command on one GPU\n"
                    "architecture before launching it: one line per option, its verdict\n"
                    "and the deciding path:line.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", default=None, help=TARGET_HELP)
    parser.add_argument(
        "--arch", default="auto", metavar="ARCH",
        help="the architecture to launch on: sm120, sm_120a, 12.0, a GPU name (H100, B200, "
             "'RTX PRO 6000', GB10), or auto: this machine's GPU, read with NVML "
             "(libnvidia-ml.so.1) or nvidia-smi (default: auto)")
    add_flashinfer(parser)
    parser.add_argument("--no-kernels", action="store_true",
                        help="do not read the kernel library (FlashInfer): SGLang-only verdicts")
    add_cache_args(parser)
    add_reports_args(parser)
    parser.add_argument("--field-warn-only", action="store_true",
                        help="a crash or wrong-output field report on the arch and release "
                             "warns instead of failing (exit 0 when nothing else is wrong)")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text; json: the Preflight answer, "
                             "see docs/check.md)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="text: also the defaults whose auto the source does not resolve, "
                             "the options left at their defaults, and the defaults that could "
                             "not be judged")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser


def run(argv: list[str]) -> int:
    from guardscan.field import FieldReportError
    from guardscan.launch import preflight

    if "--" not in argv:
        if any(a in ("-h", "--help") for a in argv):
            build_parser().parse_args(["--help"])
        raise UsageError("check: no launch command: put it after --, e.g. guardscan check "
                         "--arch sm120 -- python -m sglang.launch_server --model-path m ...")
    split = argv.index("--")
    args = build_parser().parse_args(argv[:split])
    launch = argv[split + 1:]
    if not launch:
        raise UsageError("check: nothing after --: give the launch command, e.g. "
                         "-- sglang serve --model-path m --moe-runner-backend triton")
    say = progress(args.quiet, sys.stderr)
    mode = "off" if args.no_reports else "warn" if args.field_warn_only else "fail"
    try:
        answer = preflight(launch, args.arch, args.target, args.flashinfer,
                           cache_dir=args.cache_dir, kernels=not args.no_kernels,
                           compiled=args.compiled,
                           use_cache=not args.no_cache, offline=args.offline, progress=say,
                           reports=args.reports, field=mode)
    except FieldReportError as exc:
        raise UsageError(f"field reports: {exc}") from None
    except NoArchError as exc:
        raise UsageError(str(exc)) from None
    except ArchError as exc:
        raise UsageError(f"--arch {args.arch}: {exc}") from None
    finally:
        clear_progress(say)
    if not answer.result.options:
        raise UsageError(f"no backend options (--*-backend) found in {answer.result.target.path}"
                         ": not an SGLang source tree?")
    if args.format == "json":
        json.dump(answer.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render(answer, sys.stdout, args.target, args.arch, args.verbose)
    return ExitCode.OK if answer.ok else ExitCode.FOUND


def render(answer: Preflight, stream: IO[str], target: str | None = None,
           arch_asked: str | None = None, verbose: bool = False) -> None:
    """The text answer: a head line, one line per option the command sets (with
    its field reports), one per default that becomes a choice to avoid, the
    ignored flags, and the outcome. ``verbose`` adds what is internal: defaults
    whose ``auto`` the source does not resolve, the options left at their
    defaults, and the defaults that could not be judged."""
    from guardscan.report.answer import arch_label

    result = answer.result
    archs = list(result.archs)
    what = " ".join(p for p in (result.target.package, result.target.version) if p)
    kernels = ", ".join(" ".join(p for p in (k.package, k.version) if p) for k in result.kernels)
    on = [arch_label(name) for name in archs]
    local = " (the local GPU)" if arch_asked and arch_asked.strip().lower() == "auto" else ""
    head = f"guardscan check: {what}" + (f" with {kernels}" if kernels else "") + \
        f", on {' '.join(on)}{local}"
    if answer.quantization and result.quantization == answer.quantization:
        head += f", --quantization {answer.quantization}"
    elif answer.quantization:
        head += ", judged without --quantization"
    elif answer.checkpoint and result.quantization:
        head += f", --quantization {result.quantization} (the checkpoint's)"
    lines = [head]
    if answer.checkpoint:
        lines.append(f"  note: {answer.checkpoint}")
    if answer.model:
        lines.append(f"  note: {answer.model}")
    several = len(archs) > 1
    rows: list[tuple[int, int, str, str, str]] = []  # (position, sub, subject, status, rest)
    launch = answer.launch

    def position(flag: str) -> int:
        found = launch.last(flag) if launch is not None else None
        return found.position if found is not None else 1 << 30

    elsewhere = {(p.option, p.arch) for p in answer.problems if p.code == "other-platform"}
    given = {(c.option, c.arch) for c in answer.checks if c.given}
    for check in answer.checks:
        if check.given and (check.option, check.arch) not in elsewhere:
            where = f", at {check.where}" if check.where else ""
            arch = f" on {check.arch}" if several else ""
            rows.append((position(check.option), 0, f"{check.option} {check.shown}",
                         check.verdict.value + arch, check.reason + where))
    for number, report in enumerate(answer.field, start=1):
        if (report.option, report.arch) in given:
            rows.append((position(report.option), number, "", "", report.reason))
    for problem in answer.problems:
        if problem.code != "not-safe" and problem.code not in _BESIDE:
            rows.append((position(problem.option), 0,
                         f"{problem.option} {problem.choice or ''}".rstrip(),
                         _WORDS.get(problem.code, problem.code), _short(problem)))
    rows.sort(key=lambda row: row[:2])
    subject = max((len(row[2]) for row in rows if not row[1]), default=0)
    status = max((len(row[3]) for row in rows if not row[1]), default=0)
    for _, sub, left, word, rest in rows:
        if sub:  # one line, like every line of check: for grep
            lines.append(f"    field: {rest}")
        else:
            lines.append(f"  {left.ljust(subject)}  {word.ljust(status)}  {rest}".rstrip())
    shown: list[Problem] = []  # the warnings said without --verbose
    for warning in answer.warnings:
        if warning.code in _BESIDE:  # under its choice's row when the command gives it
            shown.append(warning)
            if (warning.option, warning.arch) not in given:
                lines.append(f"  {warning.option} {warning.choice} (default, not given)  "
                             f"field: {warning.reason}")
            continue
        check = next(c for c in answer.checks if c.option == warning.option
                     and c.arch == warning.arch)
        if check.judged == _AUTO and not verbose:
            continue  # what auto becomes is not decided: not a choice to avoid, yet
        shown.append(warning)
        where = f", at {check.where}" if check.where else ""
        arch = f" on {check.arch}" if several else ""
        lines.append(f"  {check.option} {check.shown} (default, not given)  "
                     f"{check.verdict.value}{arch}  {check.reason}{where}")
    others = {c.option for c in answer.checks if not c.given} - {w.option for w in shown}
    if others and verbose:
        some = (f"the other {len(others)} backend options keep their defaults"
                if len(others) != 1 else f"{next(iter(others))} keeps its default")
        lines.append(f"  not given: {some}; none resolves to a choice to avoid")
    if answer.ignored:
        lines.append(f"  ignored (not backend options): {' '.join(answer.ignored)}")
    # judge_launch writes a note per --config flag first, then the defaults it
    # could not judge (internal: --verbose)
    configs = sum(f.flag == "--config" for f in launch.flags) if launch is not None else 0
    for note in answer.notes if verbose else answer.notes[:configs]:
        lines.append(f"  note: {note}")
    where = " ".join(archs)
    if answer.ok:
        defaults = sum(w.code not in _BESIDE for w in shown)
        reports = len(shown) - defaults
        look = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in
                ((defaults, "default"), (reports, "field report")) if n]
        lines.append(f"ok: every backend choice given is safe to try on {where}" + (
            f" ({' and '.join(look)} to look at above)" if look else ""))
    else:
        bad = [p for p in answer.problems if p.code == "not-safe"]
        lines.append(f"not ok: {len(answer.problems)} problem"
                     f"{'s' if len(answer.problems) != 1 else ''} on {where}")
        if any(p.code == "field-report" for p in answer.problems):
            lines.append("field: a crash or wrong-output report holds for this arch and "
                         "release (--field-warn-only: warn only)")
        if bad:
            first = bad[0]
            spec = f" {target}" if target else ""
            # the method judged under: explain without it may give another verdict
            method = f" --quantization {result.quantization}" if result.quantization else ""
            lines.append(f"why: guardscan explain {first.choice} --option {first.option} "
                         f"--arch {first.arch}{method}{spec}")
    stream.write("\n".join(lines) + "\n")


_AUTO = "auto"

#: problem codes shown beside a check, not as rows of their own
_BESIDE = frozenset({"field-report", "field-note"})

_WORDS = {
    "unknown-choice": "not a choice",
    "unknown-option": "no such option",
    "abbreviated-option": "abbreviated",
    "missing-value": "no value",
    "other-platform": "not CUDA",
}


def _short(problem: Problem) -> str:
    """What to do about a problem, after its subject and status word."""
    if problem.code == "abbreviated-option":
        return f"argparse may expand it; spell it out: {' or '.join(problem.suggestions)}"
    if problem.suggestions:
        return f"did you mean {' or '.join(problem.suggestions)}?"
    if problem.code == "other-platform":
        words = problem.message.split(" is ", 1)[1].removesuffix(f" ({problem.where})")
        return words + (f", at {problem.where}" if problem.where else "")
    message = problem.message
    if "; " in message:
        return message.split("; ", 1)[1]
    for lead in ([f"{problem.option} {problem.choice} "] if problem.choice else []) + \
            [f"{problem.option} "]:
        if message.startswith(lead):
            return message[len(lead):]
    return message
