"""report (explain): one choice's evidence chain per architecture, from the option to the deciding fact.

Hops are shown in reading order: the option's definition first, a module
before the lines inside it (a ``module named for X`` hop, which stands for the
whole file, comes before the calls in that file; a registration before the
lines below it), the deciding line last among
the hops that lead to it, caveats after. The deciding hop says what kind of
fact it is and how strong (``guardscan.report.answer.describe_fact``).

Text (one hop per line) or JSON (the scan's verdict entries, see docs/json.md,
each with a ``deciding`` object). For ``auto``, the choices it becomes on the
arch (the scan's default lines, ``verdict.auto``), each with its own verdict. A choice the scan does not know raises
``ExplainError`` naming the closest choices.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import IO

from guardscan.evidence import Status
from guardscan.report.answer import (
    arch_sort_key,
    caveats,
    deciding_evidence,
    describe_fact,
    platform_source,
)
from guardscan.report.json_text import write_indented
from guardscan.results import BackendVerdict, Evidence, Role, ScanResult
from guardscan.verdict.auto import auto_targets
from guardscan.verdict.rules.default import AUTO

__all__ = ["ExplainError", "becomes", "explain", "ordered_hops", "select"]


class ExplainError(ValueError):
    """No verdict for the choice asked about; the message names close matches."""


def select(result: ScanResult, choice: str, option: str | None) -> list[BackendVerdict]:
    """The verdicts ``explain`` shows, archs in numeric order; ExplainError when none."""
    flag = None
    if option:
        flag = option if option.startswith("--") else f"--{option}"
    matches = [b for b in result.backends
               if b.choice == choice and (flag is None or b.option == flag)]
    if not matches:
        raise ExplainError(_no_such_choice(result, choice, flag))
    return sorted(matches, key=lambda b: (b.option, arch_sort_key(b.arch)))


def _no_such_choice(result: ScanResult, choice: str, flag: str | None) -> str:
    what = " ".join(p for p in (result.target.package, result.target.version) if p)
    offered = sorted({b.option for b in result.backends if b.choice == choice})
    if flag and offered:
        return (f"{choice!r} is not a choice of {flag} in {what}; it is a choice of "
                f"{', '.join(offered)}")
    pool = sorted({b.choice for b in result.backends
                   if flag is None or b.option == flag})
    close = difflib.get_close_matches(choice, pool, n=3, cutoff=0.6)
    prefix = [c for c in pool if c.startswith(choice) and c not in close]
    suggestions = (close + prefix)[:3]
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
    of = f" of {flag}" if flag else ""
    return f"no choice {choice!r}{of} in {what}{hint}"


def ordered_hops(verdict: BackendVerdict) -> list[Evidence]:
    """The chain in reading order: a hop standing for a whole module (a link at
    line 1) moves before the first hop inside that module, a registration (a
    decorator line) before the lines below it in its file; the definition stays
    first; the deciding line goes after every hop that is not a caveat."""
    hops = list(verdict.evidence)
    module_hops = [ev for ev in hops[1:] if ev.role == Role.LINK.value and ev.line == 1]
    for module in module_hops:
        hops.remove(module)
        first = next((i for i, ev in enumerate(hops) if i > 0 and ev.path == module.path),
                     None)
        hops.insert(first if first is not None else len(hops), module)
    # a registration (a decorator line) stands for the function it decorates:
    # it comes before the lines further down that file
    for reg in [ev for ev in hops[1:] if ev.role == Role.LINK.value
                and ev.text.lstrip().startswith("@")]:
        at = hops.index(reg)
        first = next((i for i, ev in enumerate(hops) if 0 < i < at and ev.path == reg.path
                      and ev.line > reg.line), None)
        if first is not None:
            hops.remove(reg)
            hops.insert(first, reg)
    deciding = deciding_evidence(verdict)
    if deciding is not None and deciding in hops:
        after = caveats(verdict)
        hops.remove(deciding)
        tail = [ev for ev in hops if ev in after and hops.index(ev) > 0]
        body = [ev for ev in hops if ev not in tail]
        hops = [*body, deciding, *tail]
    return hops


def explain(result: ScanResult, choice: str, option: str | None, stream: IO[str],
            fmt: str = "text") -> list[BackendVerdict]:
    """Write the chains of ``choice`` (of ``option``) on every judged arch; return them."""
    matches = select(result, choice, option)
    if fmt == "json":
        _json(result, matches, stream)
    else:
        _text(matches, stream, result)
    return matches


def becomes(result: ScanResult, verdict: BackendVerdict) -> list[tuple[BackendVerdict, Evidence]]:
    """For ``auto``: each choice it becomes on the verdict's arch (the scan's
    default lines, ``verdict.auto``), with its own verdict there and the line
    that sets it; several when which one is decided at run time."""
    if verdict.choice != AUTO:
        return []
    entries = {b.choice: b for b in result.backends
               if b.option == verdict.option and b.arch == verdict.arch}
    return [(entries[choice], line)
            for choice, line in auto_targets(entries.values(), skip=AUTO)]


def _becomes_line(targets: list[tuple[BackendVerdict, Evidence]]) -> str:
    parts = [f"{target.choice} ({line.place}): {target.verdict.value}"
             for target, line in targets]
    if len(parts) == 1:
        return f"auto becomes {parts[0]}"
    return f"auto may become, decided at run time: {'; '.join(parts)}"


def _text(matches: list[BackendVerdict], stream: IO[str], result: ScanResult) -> None:
    options = sorted({b.option for b in matches})
    if len(options) > 1:
        stream.write(f"{matches[0].choice!r} is a choice of {', '.join(options)}; showing all "
                     "(use --option to pick one)\n")
    for verdict in matches:
        quant = (f" with --quantization {verdict.quantization}" if verdict.quantization
                 else "")
        stream.write(f"\n{verdict.option} {verdict.choice} on {verdict.arch}{quant}: "
                     f"{verdict.verdict.value} (safe to try: "
                     f"{'yes' if verdict.safe_to_try else 'no'})\n")
        if verdict.platform:
            stream.write(f"  documented as {verdict.platform}-only\n"
                         if platform_source(verdict) == "docs" else
                         f"  {verdict.platform}-only: its code calls into {verdict.platform}'s "
                         "package (below)\n")
        deciding = deciding_evidence(verdict)
        for number, ev in enumerate(ordered_hops(verdict), start=1):
            stream.write(f"  {number:>2}. [{ev.role}] {ev.place}  {ev.text}\n")
            if ev.note:
                stream.write(_wrapped(ev.note, "      "))
            if ev is deciding:
                kind, strength = describe_fact(ev, verdict.verdict)
                stream.write(_wrapped(f"=> deciding fact: {kind}; {strength}", "      "))
        if deciding is None:
            stream.write("      " + _undecided(verdict) + "\n")
        for condition in verdict.conditions:
            stream.write(f"  note: {condition}\n")
        targets = becomes(result, verdict)
        if targets:
            stream.write(_wrapped(f"=> {_becomes_line(targets)}", "  "))


def _undecided(verdict: BackendVerdict) -> str:
    """The last line of a chain that nothing decides: with caveats, they are
    what it waits on (a gate that may raise, a kernel the facts leave open)."""
    if any(ev.status == Status.CAVEAT.value for ev in verdict.evidence):
        return "nothing decides this arch; the caveats above depend on the launch: unknown"
    return "no architecture evidence on this choice's path: unknown"


def _wrapped(text: str, indent: str) -> str:
    lines = textwrap.wrap(text, width=100, initial_indent=indent,
                          subsequent_indent=indent + "  ", break_on_hyphens=False)
    return "".join(line + "\n" for line in lines)


def _json(result: ScanResult, matches: list[BackendVerdict], stream: IO[str]) -> None:
    entries = []
    for verdict in matches:
        hops = ordered_hops(verdict)
        entry = verdict.to_json()
        entry["evidence"] = [ev.to_json() for ev in hops]
        deciding = deciding_evidence(verdict)
        if deciding is not None:
            kind, strength = describe_fact(deciding, verdict.verdict)
            entry["deciding"] = {"index": hops.index(deciding), "kind": kind,
                                 "strength": strength}
        targets = becomes(result, verdict)
        if targets:
            entry["becomes"] = [{"choice": target.choice, "verdict": target.verdict.value,
                                 "path": line.path, "line": line.line}
                                for target, line in targets]
        entries.append(entry)
    from guardscan.report.json_ import portable

    data: dict[str, object] = {
        "guardscan": result.guardscan,
        "target": portable(result.target),
        "kernels": [portable(k) for k in result.kernels],
        "archs": sorted({b.arch for b in matches}, key=arch_sort_key),
        "quantization": result.quantization,
        "backends": entries,
    }
    write_indented(data, stream)
    stream.write("\n")
