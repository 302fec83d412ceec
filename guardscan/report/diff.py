"""report (diff): a ``compare.ResultDiff`` as text for a person, or as JSON.

Text: a header naming both sides (package and kernel library versions), then
per option with something to say: each changed cell as ``choice  archs: old ->
new`` with the deciding line of each side (architectures with the same change
and the same deciding lines share one entry), worse changes first; the
choices added and removed, grouped by verdict; then the options only one side
has, by name (``verbose``: each with its choices), and a summary line.
``verbose`` also shows the cells whose verdict stayed but whose deciding fact
changed. JSON (``diff_json``) holds everything, every chain on both sides; its
schema is in docs/diff.md.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from typing import IO

from guardscan.compare import WORSE, CellChange, ChoiceDiff, OptionDiff, ResultDiff
from guardscan.report.answer import (
    arch_names,
    deciding_evidence,
    describe_fact,
    short_reason,
)
from guardscan.report.json_ import portable
from guardscan.report.text import WIDTH, wrap
from guardscan.results import BackendVerdict, Evidence, PackageRef, Role, ScanResult, Verdict

__all__ = ["WIDTH", "diff_json", "render_diff_text"]

#: JSON schema version of ``guardscan diff --format json`` (docs/diff.md)
SCHEMA = 1

_COLOURS = {"supported": "32", "blocked": "31", "unsupported": "33", "option": "1"}
_VERDICT_ORDER = (Verdict.SUPPORTED, Verdict.UNKNOWN, Verdict.UNSUPPORTED, Verdict.BLOCKED)
_DIRECTION_ORDER = {WORSE: 0, "better": 1, "other": 2}


def _paint(text: str, what: str, colour: bool) -> str:
    code = _COLOURS.get(what)
    return f"\033[{code}m{text}\033[0m" if colour and code else text


_TIER = re.compile(r"\((tier [abc])[^()]*\)")


def _cut(text: str, room: int) -> str:
    """``text`` in at most two lines of ``room`` columns (joined by a newline),
    the kernel fact tiers shortened to their letter."""
    text = _TIER.sub(r"(\1)", text)
    return "\n".join(textwrap.wrap(text, width=room, max_lines=2, placeholder=" ...",
                                   break_on_hyphens=False)) or text


# -- text --------------------------------------------------------------------------------------
def _side_name(result: ScanResult) -> str:
    target = result.target
    what = f"{target.package} {target.version or '(version unknown)'}"
    if result.kernels:
        return what + " with " + ", ".join(_ref(k) for k in result.kernels)
    return what + " (SGLang-only)"


def _ref(ref: PackageRef) -> str:
    return f"{ref.package} {ref.version or '(version unknown)'}"


def _header(diff: ResultDiff, arch_source: str | None) -> list[str]:
    on = arch_names(diff.archs, "no common architecture")
    line = f"guardscan {diff.new.guardscan} diff, on {on}"
    if arch_source:
        line += f" ({arch_source})"
    quantization = diff.new.quantization or diff.old.quantization
    if quantization:
        line += f", with --quantization {quantization}"
    out = wrap(line, "", "  ")
    for label, result in (("old", diff.old), ("new", diff.new)):
        out.extend(wrap(f"{label}: {_side_name(result)}", "  ", "       "))
        for note in result.notes:
            if note.topic == "kernels":
                out.extend(wrap(f"note: {note.text}", "       ", "         "))
    return out


def _reason(ev: Evidence, verdict: Verdict, room: int) -> str:
    """What the deciding line means, in ``room`` columns: the head of a kernel
    fact's note; for a gate that admits the arch, the kind of fact (its note
    is the whole condition it raises under); else the note, cut."""
    reason = short_reason(ev)
    if reason:
        return _cut(reason, room)
    if ev.role == Role.GATE.value and verdict is Verdict.SUPPORTED or not ev.note:
        return _cut(describe_fact(ev, verdict)[0], room)
    return _cut(ev.note, room)


def _side(label: str, verdict: BackendVerdict, archs: Sequence[str] = ()) -> list[str]:
    """The lines for one side of a change: where its verdict is decided, or for
    an ``unknown`` the last fact on its path (what fell short of deciding).
    ``archs``: the architectures the entry stands for (the note names one)."""
    first = f"      {label}  "
    rest = " " * len(first)
    room = WIDTH - len(rest)
    ev = deciding_evidence(verdict)
    head = f"{first}{verdict.verdict.value}: "
    out: list[str] = []
    if ev is None:
        ev = next((e for e in reversed(verdict.evidence)
                   if e.role not in (Role.LINK.value, Role.DOC.value,
                                     Role.PLATFORM.value)), None)
        if ev is None:
            return [f"{head}no architecture evidence on its path"]
        out.append(f"{head}nothing decides it; the last fact on its path:")
        head = rest
        reason = _undecided(ev, room)
    else:
        reason = _reason(ev, verdict.verdict, room)
    if len(archs) > 1:
        reason = _ON_ARCH.sub(f"on {', '.join(archs)}", reason, count=1)
    if len(head) + len(ev.path) + 8 > WIDTH:  # a cut path is no use: on a line of its own
        out.append(head.rstrip())
        head = rest
    where = f"{head}{ev.place}"
    text = ev.text.strip()
    room_for_text = WIDTH - len(where) - 2
    if text and room_for_text >= 12:
        text = text if len(text) <= room_for_text else text[:room_for_text - 3] + "..."
        out.append(f"{where}  {text}")
    else:
        out.append(where)
    out.extend(f"{rest}{part}" for part in textwrap.wrap(
        reason.replace("\n", " "), width=room, max_lines=2, placeholder=" ...",
        break_on_hyphens=False))
    return out


_ON_ARCH = re.compile(r"\bon sm\d+\b")


def _undecided(ev: Evidence, room: int) -> str:
    """A fact that fell short of deciding: for a kernel fact, its head, what it
    answered and its last clause (``...; the kernel facts do not decide this
    arch``), else its note, cut."""
    note = ev.note.strip()
    if ev.role == Role.KERNEL.value and " -> " in note:
        head, rest = note.split(" -> ", 1)
        answer = rest.split(" ", 1)[0]
        tail = rest.rsplit("; ", 1)[1] if "; " in rest else ""
        return _cut(f"{head} -> {answer}" + (f"; {tail}" if tail else ""), room)
    return _cut(note or describe_fact(ev, Verdict.UNKNOWN)[0], room)


def _cell_key(cell: CellChange) -> tuple[object, ...]:
    """What must agree for two architectures to share one entry."""
    return (cell.choice, cell.old.verdict, cell.new.verdict,
            _where(cell.old_deciding), _where(cell.new_deciding),
            _where(cell.old.evidence[-1] if cell.old.evidence else None),
            _where(cell.new.evidence[-1] if cell.new.evidence else None))


def _where(ev: Evidence | None) -> tuple[str, int] | None:
    return (ev.path, ev.line) if ev is not None else None


def _grouped(cells: Iterable[CellChange]) -> list[tuple[CellChange, list[str]]]:
    groups: dict[tuple[object, ...], tuple[CellChange, list[str]]] = {}
    for cell in cells:
        key = _cell_key(cell)
        if key in groups:
            groups[key][1].append(cell.arch)
        else:
            groups[key] = (cell, [cell.arch])
    return list(groups.values())


def _changes(cells: list[CellChange], colour: bool) -> list[str]:
    out: list[str] = []
    ordered = sorted(cells, key=lambda c: _DIRECTION_ORDER[c.direction])
    for cell, archs in _grouped(ordered):
        old = _paint(cell.old.verdict.value, cell.old.verdict.value, colour)
        new = _paint(cell.new.verdict.value, cell.new.verdict.value, colour)
        mark = {"worse": "  (worse)", "better": "  (better)"}.get(cell.direction, "")
        out.append(f"  changed  {cell.choice}  {', '.join(archs)}: {old} -> {new}{mark}")
        out.extend(_side("old", cell.old, archs))
        out.extend(_side("new", cell.new, archs))
    return out


def _new_reasons(cells: list[CellChange]) -> list[str]:
    out: list[str] = []
    for cell, archs in _grouped(cells):
        out.append(f"  reason   {cell.choice}  {', '.join(archs)}: still "
                   f"{cell.new.verdict.value}, decided by another fact")
        out.extend(_side("old", cell.old, archs))
        out.extend(_side("new", cell.new, archs))
    return out


def _choice_words(choices: Sequence[ChoiceDiff], archs: Sequence[str]) -> str:
    """``a, b (supported); c (blocked on sm100, unknown on sm120)``: choices
    grouped by their verdicts over the architectures."""
    buckets: dict[str, list[str]] = {}
    for choice in choices:
        per_verdict: dict[Verdict, list[str]] = {}
        for cell in choice.verdicts:
            per_verdict.setdefault(cell.verdict, []).append(cell.arch)
        if len(per_verdict) == 1:
            (only,) = per_verdict
            covered = per_verdict[only]
            word = only.value if len(covered) == len(archs) or len(archs) <= 1 else \
                f"{only.value} on {' '.join(covered)}"
        else:
            word = ", ".join(f"{v.value} on {' '.join(per_verdict[v])}"
                             for v in _VERDICT_ORDER if v in per_verdict)
        buckets.setdefault(word or "not judged", []).append(choice.choice)
    order = {v.value: i for i, v in enumerate(_VERDICT_ORDER)}
    ranked = sorted(buckets.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
    return "; ".join(f"{', '.join(names)} ({word})" for word, names in ranked)


def _avoid_lines(choices: Sequence[ChoiceDiff]) -> list[str]:
    """Verbose: the deciding line of each added/removed choice that is to avoid
    or supported somewhere."""
    out: list[str] = []
    for choice in choices:
        for verdict in choice.verdicts:
            ev = deciding_evidence(verdict)
            if ev is None:
                continue
            out.append(f"           {choice.choice}  {verdict.arch}: "
                       f"{verdict.verdict.value}, {ev.place}")
            out.extend(f"             {part}" for part in
                       _reason(ev, verdict.verdict, WIDTH - 13).splitlines())
    return out


def _option(diff: OptionDiff, archs: Sequence[str], colour: bool, verbose: bool) -> list[str]:
    show_reasons = verbose and diff.new_reasons
    if not (diff.changed or diff.added or diff.removed or show_reasons):
        return []
    out = ["", _paint(diff.option, "option", colour)]
    out.extend(_changes(diff.changed, colour))
    if diff.added:
        out.extend(wrap(_choice_words(diff.added, archs), "  added    ", "           "))
        if verbose:
            out.extend(_avoid_lines(diff.added))
    if diff.removed:
        out.extend(wrap(_choice_words(diff.removed, archs), "  removed  ", "           "))
        if verbose:
            out.extend(_avoid_lines(diff.removed))
    if show_reasons:
        out.extend(_new_reasons(diff.new_reasons))
    return out


def _whole_options(diffs: list[OptionDiff], label: str, archs: Sequence[str],
                   verbose: bool) -> list[str]:
    if not diffs:
        return []
    if verbose:
        out = ["", f"{label} ({len(diffs)}):"]
        for diff in diffs:
            choices = diff.added or diff.removed
            out.extend(wrap(_choice_words(choices, archs), f"  {diff.option}  ", "      "))
        return out
    names = ", ".join(f"{d.option} ({len(d.added or d.removed)})" for d in diffs)
    return [""] + wrap(f"{label} ({len(diffs)}, choices in brackets; --verbose: their "
                        f"verdicts): {names}", "", "  ")


def _summary(diff: ResultDiff) -> list[str]:
    s = diff.summary()
    changed = (f"{s['changed']} verdict(s) changed ({s['worse']} worse, {s['better']} better, "
               f"{s['other']} other)")
    parts = [changed, f"{s['choices_added']} choice(s) added, {s['choices_removed']} removed",
             f"{s['options_added']} option(s) added, {s['options_removed']} removed",
             f"{s['unchanged']} cell(s) the same"]
    line = "summary: " + "; ".join(parts)
    if s["new_reasons"]:
        line += f" ({s['new_reasons']} of them decided by another fact, --verbose)"
    return [""] + wrap(line, "", "  ")


def render_diff_text(diff: ResultDiff, stream: IO[str], *, verbose: bool = False,
                     colour: bool = False, arch_source: str | None = None) -> None:
    lines = _header(diff, arch_source)
    # the options whose verdicts changed first (worse ones before them), then
    # those with choices added or removed only; each in NEW's order
    both = sorted((o for o in diff.options if o.status == "both"),
                  key=lambda o: (not any(c.direction == WORSE for c in o.changed),
                                 not o.changed))
    for option in both:
        lines.extend(_option(option, diff.archs, colour, verbose))
    if not any(not o.empty for o in both) and not any(o.status != "both" for o in diff.options):
        lines.extend(["", "No differences."])
    lines.extend(_whole_options([o for o in diff.options if o.status == "added"],
                                "options added", diff.archs, verbose))
    lines.extend(_whole_options([o for o in diff.options if o.status == "removed"],
                                "options removed", diff.archs, verbose))
    lines.extend(_summary(diff))
    lines.append("Why: guardscan explain CHOICE --option OPTION --arch ARCH TARGET, on either "
                 "side.")
    stream.write("\n".join(lines) + "\n")


# -- JSON --------------------------------------------------------------------------------------
def _evidence(ev: Evidence | None) -> dict[str, object] | None:
    return ev.to_json() if ev is not None else None


def _verdict_json(verdict: BackendVerdict) -> dict[str, object]:
    out: dict[str, object] = {
        "verdict": verdict.verdict.value,
        "safe_to_try": verdict.safe_to_try,
        "deciding": _evidence(deciding_evidence(verdict)),
        "evidence": [e.to_json() for e in verdict.evidence],
    }
    if verdict.platform:
        out["platform"] = verdict.platform
    if verdict.conditions:
        out["conditions"] = list(verdict.conditions)
    return out


def _cell_json(cell: CellChange, with_direction: bool) -> dict[str, object]:
    out: dict[str, object] = {"choice": cell.choice, "arch": cell.arch}
    if with_direction:
        out["direction"] = cell.direction
    out["old"] = _verdict_json(cell.old)
    out["new"] = _verdict_json(cell.new)
    return out


def _choice_json(choice: ChoiceDiff) -> dict[str, object]:
    return {"choice": choice.choice,
            "verdicts": [{"arch": v.arch, **_verdict_json(v)} for v in choice.verdicts]}


def _side_json(result: ScanResult) -> dict[str, object]:
    return {"target": portable(result.target), "kernels": [portable(k) for k in result.kernels],
            "notes": [note.text for note in result.notes]}


def diff_json(diff: ResultDiff) -> dict[str, object]:
    """The whole diff as plain JSON data (schema: docs/diff.md)."""
    return {
        "guardscan": diff.new.guardscan,
        "schema": SCHEMA,
        "old": _side_json(diff.old),
        "new": _side_json(diff.new),
        "archs": list(diff.archs),
        "quantization": diff.new.quantization or diff.old.quantization,
        "summary": diff.summary(),
        "options": [{
            "option": o.option,
            "status": o.status,
            "changed": [_cell_json(c, True) for c in o.changed],
            "new_reasons": [_cell_json(c, False) for c in o.new_reasons],
            "choices_added": [_choice_json(c) for c in o.added],
            "choices_removed": [_choice_json(c) for c in o.removed],
            "unchanged": o.unchanged,
        } for o in diff.options if not o.empty],
    }
