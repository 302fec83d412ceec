"""report (text): the answer first, per option, what to try and what to avoid on each architecture.

The default report is a summary a person can act on (``guardscan.report.answer``
decides its content): per option, the choices safe to try, best evidence first,
the choices to avoid with their deciding line, the default and what ``auto``
resolves to, the condition behind every ``*``, and the field reports beside
the verdicts (``field  CHOICE: crash reported on sm120 (...): symptom, URL``,
at most ``FIELD_SHOWN`` per option, the rest folded into one line). Options with
nothing decided fold into one line, unless a field report concerns them. ``verbose`` (``--verbose``) gives the full table,
every choice on every architecture. Lines fit 100 columns; colour only when
``color`` is set (the command line sets it for a terminal without ``NO_COLOR``).
"""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from typing import IO, Any

from guardscan.report import register
from guardscan.report.answer import (
    ArchGroup,
    FieldNote,
    OptionAnswer,
    answers,
    arch_names,
    field_notes,
    marked,
    method_notes,
    platform_source,
    short_reason,
    sorted_archs,
)
from guardscan.results import CHECKPOINT_ONLY, BackendVerdict, Evidence, ScanResult, Verdict

__all__ = ["FIELD_SHOWN", "WIDTH", "field_line", "render_text", "wrap"]

WIDTH = 100

#: field reports shown per option in the summary; the rest fold into one line
FIELD_SHOWN = 3

_COLOURS = {"supported": "32", "unknown": "0", "blocked": "31", "unsupported": "33",
            "option": "1", "dim": "2"}


class _Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, what: str) -> str:
        if not self.colour or not text:
            return text
        return f"\033[{_COLOURS[what]}m{text}\033[0m"


@register("text")
def render_text(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    style = _Style(bool(options.get("color")))
    lines = _header(result, options)
    if options.get("verbose"):
        lines += _table(result, style)
    else:
        lines += _summary(result, style)
    lines += _footer(result, bool(options.get("verbose")))
    stream.write("\n".join(lines) + "\n")


# -- header and footer ------------------------------------------------------------------------
def _header(result: ScanResult, options: dict[str, Any]) -> list[str]:
    target = result.target
    what = f"{target.package} {target.version or '(version unknown)'}"
    if result.kernels:
        named = [f"{k.package} {k.version or '(version unknown)'}" for k in result.kernels]
        # the kernel library by name; the compiled packages too while one line holds them
        # (--format json lists every package read)
        if len(named) > 2 and not options.get("verbose"):
            named = [named[0], f"{len(named) - 1} compiled packages"]
        what += " with " + ", ".join(named)
    archs = sorted_archs(result)
    line = f"guardscan {result.guardscan}: {what}, on {arch_names(archs)}"
    source = options.get("arch_source")
    if source:
        line += f" ({source})"
    if result.quantization:
        line += f", with --quantization {result.quantization}"
    out = wrap(line, "", "  ")
    methods, others = method_notes(result)
    verbose = bool(options.get("verbose"))
    for note in others:
        out.extend(wrap(f"note: {note}", "", "      "))
    if methods and verbose:
        for method_note in methods:
            out.extend(wrap(f"note: {method_note.text}", "", "      "))
    elif methods:
        where = "here" if len(archs) == 1 else "on some of these archs"
        flags = [str(n.method) for n in methods if n.reason != CHECKPOINT_ONLY]
        # a method only a checkpoint names has no flag to pass
        checkpoints = [f"{n.method} checkpoints" for n in methods
                       if n.reason == CHECKPOINT_ONLY]
        rejected = ", ".join([*([f"--quantization {', '.join(flags)}"] if flags else []),
                              *checkpoints])
        out.extend(wrap(f"note: {rejected} rejected {where} whatever the backend "
                         "(--verbose: where)", "", "      "))
    return out


def _footer(result: ScanResult, verbose: bool) -> list[str]:
    out = [""]
    if verbose:
        out.append("* = the verdict changes under a condition, or a gate could still raise "
                   "under one guardscan")
        out.append("    cannot decide (model, env, quantization); --format json lists them.")
    else:
        out.append("supported = evidence it runs; unknown = no evidence either way (safe to "
                   "try, no promise);")
        out.append("blocked = SGLang raises; unsupported = a kernel on its path does not run "
                   "there.")
    out.append("Why: guardscan explain CHOICE --option OPTION --arch ARCH TARGET; every chain: "
               "--format json.")
    if result.diagnostics:
        counts: dict[str, int] = defaultdict(int)
        for diag in set(result.diagnostics):
            counts[diag.code] += 1
        summary = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
        out.extend(wrap(f"diagnostics: {summary} (--format json lists them)", "", "  "))
    return out


# -- the summary ------------------------------------------------------------------------------
def _summary(result: ScanResult, style: _Style) -> list[str]:
    decided, nothing = answers(result)
    archs = sorted_archs(result)
    field = field_notes(result)
    out: list[str] = []
    if not decided and not nothing:
        return ["", "No backend options judged."]
    # one arch, kernels read: an option no choice of which reaches the kernel
    # library (a model's or a feature's own switch) folds into one line
    fold = len(archs) == 1 and bool(result.kernels)
    folded = [a for a in decided if fold and not a.kernels and a.option not in field]
    # the options not shown in a block of their own share one section, no blank
    # line between its parts: each part's lead says what it is
    rest: list[str] = []
    shown: list[OptionAnswer] = []
    # (option, the one above it is like, where it is decided elsewhere)
    alike: list[tuple[OptionAnswer, OptionAnswer, list[str]]] = []
    for answer in decided:
        if answer in folded:
            continue
        found = next(((a, d) for a in shown if (d := _within(answer, a)) is not None), None) \
            if fold and answer.option not in field else None
        if found is not None:
            alike.append((answer, *found))
            continue
        shown.append(answer)
        out.append("")
        out.extend(_option(answer, style, several=len(archs) > 1))
        out.extend(_field_block(field.get(answer.option, []), "  "))
    if alike:
        # what such an option supports and avoids is said in the one it is like
        same: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for answer, above, elsewhere in alike:
            same.setdefault((above.option, tuple(elsewhere)), []).append(
                style(answer.option, "option"))
        rest.extend(wrap("answered within an option above: " + "; ".join(
            f"{', '.join(names)} (like {like_option}"
            + "".join(f"; {e}" for e in decided_at) + ")"
            for (like_option, decided_at), names in same.items()), "", "  "))
    calm: list[str] = []
    if folded:
        lines, calm = _folded(folded, style)
        rest.extend(lines)
    infos = {o.flag: o for o in result.options}
    for option in [o for o in nothing if o in field]:
        # nothing decided, but someone saw it fail (or work): worth its own block
        info = infos.get(option)
        out.append("")
        out.extend(wrap(style(option, "option") + "  " + _default_words(
            info.default if info is not None else None) + "; every choice unknown (safe "
            "to try, no promise)", "", "    "))
        out.extend(_field_block(field[option], "  "))
    nothing = [o for o in nothing if o not in field]
    if (nothing or calm) and fold:
        # options with nothing known, and SGLang-only ones with nothing to avoid
        rest.extend(wrap(f"nothing to avoid on {archs[0]} for {len(nothing) + len(calm)} more "
                        "options (safe to try, no promise; --verbose lists them)", "", "  "))
    elif nothing:
        out.append("")
        where = "any of these archs" if len(archs) > 1 else archs[0] if archs else "any arch"
        out.extend(wrap(f"nothing known on {where}, every choice unknown (safe to try, no "
                         f"promise): {', '.join(nothing)}", "", "  "))
    if rest:
        out.append("")
        out.extend(rest)
    return out


def _option(answer: OptionAnswer, style: _Style, several: bool) -> list[str]:
    head = style(answer.option, "option") + "  " + _default_words(answer.default)
    out: list[str] = []
    if len(answer.groups) == 1 and not several:
        auto = _auto_words(answer.groups[0])
        out.extend(wrap(head + (f"; auto can become {auto}" if auto else ""), "", "    "))
        out.extend(_group(answer.groups[0], "  ", style))
        return out
    out.append(head)
    for group in answer.groups:
        auto = _auto_words(group)
        out.extend(wrap(f"{' '.join(group.archs)}:" + (f" auto can become {auto}" if auto
                                                         else ""), "  ", "    "))
        out.extend(_group(group, "    ", style))
    return out


#: the most choices an option said to be like one above may avoid at other lines
MAX_ELSEWHERE = 2


def _within(answer: OptionAnswer, above: OptionAnswer) -> list[str] | None:
    """None unless one arch's answer of ``answer`` says nothing ``above``
    does not, but why a choice is avoided: its supported choices and its
    choices to avoid are among those of ``above``, and it avoids something.
    Else each choice to avoid that is decided otherwise than above (another
    deciding line: the draft model's ``megamoe`` refused by the quantization
    method, the main option's by the hook that rewrites it; or another
    verdict), with its verdict and line: said beside the option's name, up to
    ``MAX_ELSEWHERE`` of them (more: the option's own block says it better)."""
    if len(answer.groups) != 1 or len(above.groups) != 1:
        return None
    mine, theirs = answer.groups[0], above.groups[0]
    if not mine.avoid or not set(mine.supported) <= set(theirs.supported):
        return None
    where = {a.choice: (a.verdict.value, _line_of(a.deciding)) for a in theirs.avoid}
    elsewhere = []
    for avoid in mine.avoid:
        if avoid.choice not in where:
            return None
        if where[avoid.choice] != (avoid.verdict.value, _line_of(avoid.deciding)):
            mine_at = avoid.deciding
            at = f" at {mine_at.path}:{mine_at.line}" if mine_at else ""
            elsewhere.append(f"{avoid.choice} {avoid.verdict.value}{at}")
    return elsewhere if len(elsewhere) <= MAX_ELSEWHERE else None


def _line_of(evidence: Evidence | None) -> tuple[str, int] | None:
    return (evidence.path, evidence.line) if evidence is not None else None


def _avoid_words(group: ArchGroup, style: _Style) -> str:
    """``a, b (blocked); c (unsupported)``: a group's choices to avoid, by verdict."""
    by_verdict: dict[str, list[str]] = {}
    for avoid in group.avoid:
        by_verdict.setdefault(avoid.verdict.value, []).append(avoid.choice)
    return "; ".join(f"{', '.join(choices)} ({style(verdict, verdict)})"
                     for verdict, choices in by_verdict.items())


def _folded(answers: list[OptionAnswer], style: _Style) -> tuple[list[str], list[str]]:
    """SGLang-only options, one line each: what to avoid, by verdict; and the
    options with nothing to avoid (counted with those nothing is known of)."""
    out: list[str] = []
    calm: list[str] = []
    for answer in answers:
        group = answer.groups[0]
        if not group.avoid:
            calm.append(answer.option)
            continue
        out.extend(wrap(f"{style(answer.option, 'option')}  avoid "
                        f"{_avoid_words(group, style)}", "  ", "      "))
    if out:
        out.insert(0, "SGLang-only options (no kernel on their paths), what to avoid; why: "
                   "guardscan explain:")
    return out, calm


def _default_words(default: str | None) -> str:
    """The option's default as the user would type it (its source is Python)."""
    if default is None:
        return "(no default)"
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return f"(default: {default})"
    if value is None:
        return "(no default: SGLang picks)"
    return f"(default: {value})"


def _auto_words(group: ArchGroup) -> str:
    return " or ".join(dict.fromkeys(choice for choice, _ in group.auto))


def _group(group: ArchGroup, indent: str, style: _Style) -> list[str]:
    out: list[str] = []
    label = indent + "try    "
    rest = " " * len(label)
    star = group.marked_choices

    def names(choices: tuple[str, ...]) -> str:
        return ", ".join(c + ("*" if c in star else "") for c in choices)

    parts = []
    if group.supported:
        parts.append(f"{names(group.supported)} ({style('supported', 'supported')})")
    if group.unknown:
        parts.append(f"{names(group.unknown)} (unknown)")
    out.extend(wrap("; ".join(parts) or "nothing: every choice is to avoid here", label, rest))
    # choices decided by the same fact (verdict, line, reason) share one line
    alike: dict[tuple[object, ...], list[str]] = {}
    firsts = []
    for avoid in group.avoid:
        key = (avoid.verdict.value, avoid.deciding.place if avoid.deciding else id(avoid),
               short_reason(avoid.deciding) if avoid.deciding else "")
        if key not in alike:
            alike[key] = []
            firsts.append(avoid)
        alike[key].append(avoid.choice + ("*" if avoid.choice in star else ""))
    for avoid, shared in zip(firsts, alike.values()):
        word = style(avoid.verdict.value, avoid.verdict.value)
        where = (avoid.deciding.place if avoid.deciding
                 else "no deciding line recorded")
        reason = short_reason(avoid.deciding) if avoid.deciding else ""
        head = f"{indent}avoid  {', '.join(shared)} ({word}): "
        kind = avoid.deciding.kind if avoid.deciding and reason else ""
        for words in (reason, kind, ""):  # the whole reason, the kind, the place
            line = head + (f"{words}, " if words else "") + where
            if _visible_len(line) <= WIDTH:
                out.append(line)
                break
        else:  # the place on a line of its own: a cut path is no use
            out.append(_fit(head + reason if reason else head.rstrip(": "), style))
            out.append(_fit(f"{rest}at {where}", style))
    out.extend(_condition_lines(group, f"{indent}*      ", rest))
    if group.shared or any(not m.conditions and m.caveats for m in group.markers):
        raising = wrap(_raising_words(group), f"{indent}*      ", rest)
        if len(raising) > 1:  # a place that does not fit on the line: explain shows it
            raising = min(raising, wrap(_raising_words(group, place=False),
                                        f"{indent}*      ", rest), key=len)
        if len(raising) > 1:  # names that do not fit: the marks above say which
            raising = min(raising, wrap(_raising_words(group, place=False, names=False),
                                        f"{indent}*      ", rest), key=len)
        out.extend(raising)
    return out


def _condition_lines(group: ArchGroup, first: str, rest: str) -> list[str]:
    """The marked choices' conditions: each condition said once with every
    choice it marks (conditions that mark the same choices share a line), or,
    where that takes more lines, each choice's conditions together (choices
    with the same ones share a line)."""
    marked: dict[str, list[str]] = {}
    together: dict[str, list[str]] = {}
    for marker in group.markers:
        for condition in marker.conditions:
            marked.setdefault(condition, []).append(marker.choice)
        if marker.conditions:
            together.setdefault("; ".join(marker.conditions), []).append(marker.choice)
    shared: dict[tuple[str, ...], list[str]] = {}
    for condition, choices in marked.items():
        shared.setdefault(tuple(choices), []).append(condition)
    each = [line for choices, why in shared.items()
            for line in wrap(f"{', '.join(choices)}: {'; '.join(why)}", first, rest)]
    joint = [line for why, choices in together.items()
             for line in wrap(f"{', '.join(choices)}: {why}", first, rest)]
    return joint if len(joint) < len(each) else each


def _raising_words(group: ArchGroup, place: bool = True, names: bool = True) -> str:
    """One entry for every choice of the group that may still raise: who, and
    where (``place``; else ``guardscan explain`` shows each place). Without
    ``names``, choices that are every marked choice no line above names read
    "the other choices marked *"."""
    who: list[str] = []
    own: list[str] = []
    places: dict[tuple[str, int], None] = {}
    covered: set[str] = set()
    for caveats, but in group.shared:
        who.append(f"every choice but {', '.join(but)}" if but else "every choice")
        covered |= {c for c in group.marked_choices if c not in but}
        places.update(((c.path, c.line), None) for c in caveats)
    for marker in group.markers:
        if marker.conditions or not marker.caveats:
            continue
        places.update(((c.path, c.line), None) for c in marker.caveats)
        if marker.choice not in covered:
            own.append(marker.choice)
    unnamed = [m.choice for m in group.markers if not m.conditions]
    if not names and not who and len(own) > 1 and own == unnamed:
        own = ["the other choices marked *"]
    # "every choice but a; a": a group and a choice it leaves out stay apart
    said = "; ".join([*who, *([", ".join(own)] if own else [])])
    if not said:
        return ""
    if place:
        return f"{said}: may still raise: " + ", ".join(f"{path}:{line}" for path, line in places)
    return f"{said}: may still raise (where: guardscan explain)"


def field_line(note: FieldNote, *, choice: bool = True) -> str:
    """One field report as the text report and ``check`` say it, unwrapped:
    ``CHOICE: crash reported on sm120 (sglang >=0.5.5, with modelopt_fp4): symptom, URL``
    (``choice=False``: without ``CHOICE: ``, for a line under the choice's own)."""
    args = dict(note.evidence.args)
    versions = note.holds_for()
    source = args.get("source", "")
    team = f" (from {note.evidence.path})" if source and source != "bundled" else ""
    return (f"{note.choice + ': ' if choice else ''}{note.outcome} reported on "
            f"{', '.join(note.archs)} "
            f"({', '.join(versions)}): {args.get('symptom', '')}, {args.get('url', '')}{team}")


def _field_block(notes: list[FieldNote], indent: str, shown: int | None = FIELD_SHOWN
                 ) -> list[str]:
    """The field lines of one option, the ones past ``shown`` folded into one."""
    label = f"{indent}field  "
    rest = " " * (len(label) + 2)
    listed = notes if shown is None else notes[:shown]
    out: list[str] = []
    for note in listed:
        out.extend(wrap(field_line(note), label, rest))
    more = len(notes) - len(listed)
    if more > 0:
        out.append(f"{label}{more} more report{'s' if more != 1 else ''} (--verbose)")
    return out


def wrap(text: str, first: str, rest: str) -> list[str]:
    """``text`` wrapped to WIDTH columns, first and later lines indented."""
    return textwrap.wrap(text, width=WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False, break_long_words=True) or [first.rstrip()]


def _fit(line: str, style: _Style, keep: str = "") -> str:
    """One line cut to WIDTH visible columns (colour codes do not count); ``keep``,
    the line's tail, survives the cut: the text before it is shortened."""
    if _visible_len(line) <= WIDTH:
        return line
    head = line[:len(line) - len(keep)] if keep and line.endswith(keep) else line
    tail = line[len(head):]
    room = WIDTH - _visible_len(tail) - 4
    out, count, i = [], 0, 0
    while i < len(head) and count < room:
        if head[i] == "\033":
            end = head.index("m", i) + 1
            out.append(head[i:end])
            i = end
            continue
        out.append(head[i])
        count += 1
        i += 1
    reset = "\033[0m" if style.colour else ""
    return "".join(out).rstrip(" ,") + reset + "..., " + tail if tail else \
        "".join(out) + reset + "..."


def _visible_len(line: str) -> int:
    length, i = 0, 0
    while i < len(line):
        if line[i] == "\033":
            i = line.index("m", i) + 1
            continue
        length += 1
        i += 1
    return length


# -- the full table (--verbose) ---------------------------------------------------------------
def _table(result: ScanResult, style: _Style) -> list[str]:
    rows: dict[tuple[str, str], dict[str, BackendVerdict]] = defaultdict(dict)
    order: list[tuple[str, str]] = []
    for backend in result.backends:
        key = (backend.option, backend.choice)
        if key not in rows:
            order.append(key)
        rows[key][backend.arch] = backend
    archs = sorted_archs(result)
    width = max([len(Verdict.UNSUPPORTED.value) + 2, *(len(a) + 1 for a in archs)])
    field = field_notes(result)
    out: list[str] = []
    current_option = None
    for option, choice in order:
        if option != current_option:
            if current_option is not None:
                out.extend(_field_block(field.get(current_option, []), "  ", None))
            current_option = option
            choices = [c for o, c in order if o == option]
            first = max(24, *(len(c) + 3 for c in choices))
            out.append("")
            out.append(style(option, "option"))
            out.append(("  choice".ljust(first) + "".join(a.ljust(width) for a in archs)).rstrip())
        cells = []
        marks = ""
        for arch in archs:
            verdict = rows[(option, choice)].get(arch)
            if verdict is None:
                cells.append("-".ljust(width))
                continue
            word = verdict.verdict.value + ("*" if marked(verdict) else "")
            cells.append(style(word, verdict.verdict.value) + " " * (width - len(word)))
            if verdict.platform:
                marks = f"  ({verdict.platform} only, per its {platform_source(verdict)})"
        out.append((f"  {choice}".ljust(first) + "".join(cells)).rstrip() + marks)
    if current_option is not None:
        out.extend(_field_block(field.get(current_option, []), "  ", None))
    return out
