"""report (explain): one choice's evidence chain per architecture, one hop per line."""

from __future__ import annotations

from typing import IO

from guardscan.results import ExitCode
from guardscan.scan import Analysis

__all__ = ["explain"]


def explain(analysis: Analysis, choice: str, option: str | None, stream: IO[str]) -> int:
    result = analysis.result
    flag = None
    if option:
        flag = option if option.startswith("--") else f"--{option}"
    matches = [b for b in result.backends if b.choice == choice and (flag is None or
                                                                     b.option == flag)]
    if not matches:
        offered = sorted({b.option for b in result.backends if b.choice == choice})
        hint = f" (offered by {', '.join(offered)})" if offered else ""
        stream.write(f"no choice {choice!r}{' of ' + flag if flag else ''} in "
                     f"{result.target.package} {result.target.version}{hint}\n")
        return ExitCode.USAGE
    options = sorted({b.option for b in matches})
    if len(options) > 1:
        stream.write(f"{choice!r} is a choice of {', '.join(options)}; showing all "
                     "(use --option to pick one)\n")
    for verdict in matches:
        stream.write(f"\n{verdict.option} {verdict.choice} on {verdict.arch}"
                     f"{' with --quantization ' + verdict.quantization if verdict.quantization else ''}"
                     f": {verdict.verdict.value} (safe to try: "
                     f"{'yes' if verdict.safe_to_try else 'no'})\n")
        if verdict.platform:
            stream.write(f"  documented as {verdict.platform}-only\n")
        for number, ev in enumerate(verdict.evidence, start=1):
            stream.write(f"  {number:>2}. [{ev.role}] {ev.path}:{ev.line}  {ev.text}\n")
            if ev.note:
                stream.write(f"      {ev.note}\n")
        if len(verdict.evidence) <= 1:
            stream.write("      no architecture evidence on this choice's path\n")
        for condition in verdict.conditions:
            stream.write(f"  note: {condition}\n")
    return ExitCode.OK
