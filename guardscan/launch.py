"""launch (after the verdicts): are the backend flags of this launch command safe to try on this GPU?

``preflight(argv, arch)`` reads an SGLang launch command (``python -m
sglang.launch_server ...``, ``sglang serve ...``, or the flags alone), picks out
the backend options and ``--quantization`` by the scanned version's own catalog,
scans the tree once for that architecture and quantization (the same whole-tree
scan as ``guardscan TARGET --arch A --quantization Q``, so the on-disk result
cache answers across processes; repeated calls in one process are memoized),
and judges each flag the command sets::

    pf = guardscan.preflight(["--moe-runner-backend", "flashinfer_trtllm",
                              "--quantization", "modelopt_fp4"],
                             arch="sm120", target="sglang==0.5.9")
    pf.ok          # False
    pf.problems    # (Problem(code='not-safe', option='--moe-runner-backend', ...),)

The judging itself, :func:`judge_launch`, is a pure function of a ScanResult
and a parsed :class:`Launch` (:func:`parse_launch`), so it is tested on fixture
trees. It decides no verdict: it reads the scan's verdicts, and words the
deciding line of each (``guardscan.report.answer``).

- A given choice is judged by its verdict; ``auto`` (and an option left to
  SGLang, default ``None``) is judged as what it becomes on the architecture
  when the tree's ``default`` lines name exactly one choice (``auto ->
  X``), and as ``auto`` itself, its candidates listed, otherwise.
- An option the command does not set keeps its default; when that default (or
  what ``auto`` decidedly becomes) is not safe to try, it is a warning: the
  launch is not refused for a flag it never wrote, but it is worth a line.
- A choice the option does not offer, a misspelt backend-looking flag
  (``--moe-runer-backend``), an abbreviation (``--moe-runner``, which argparse
  might expand, and guardscan does not guess) and a flag without its value are
  problems, with close matches. Other flags (``--tp 8``, ``--model-path m``)
  are ignored and listed in ``ignored``.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from guardscan.arch import NO_ARCH, Arch, ArchError, NoArchError
from guardscan.checkpoint_config import MODEL_FLAGS, model_path, read_checkpoint
from guardscan.launch_command import Launch, LaunchFlag, parse_launch
from guardscan.memo.process import scan_once, tree_defines
from guardscan.report.answer import caveats, deciding_evidence, describe_fact, short_reason
from guardscan.results import BackendVerdict, OptionInfo, ScanResult, Verdict
from guardscan.verdict.auto import auto_targets

__all__ = [
    "PROBLEMS",
    "Check",
    "Launch",
    "LaunchFlag",
    "LocalGPUError",
    "Preflight",
    "Problem",
    "judge_launch",
    "parse_launch",
    "preflight",
]

QUANTIZATION_FLAG = "--quantization"
AUTO = "auto"

#: Problem codes and their message templates; arguments travel as fields.
PROBLEMS: dict[str, str] = {
    "not-safe": "{option} {shown} is {verdict} on {arch}: {reason}",
    "default-not-safe": "{option} is not given; its default {shown} is {verdict} on "
                        "{arch}: {reason}",
    "unknown-choice": "{option} {choice} is not a choice of {target}{hint}",
    "unknown-option": "{option} is not an option of {target}{hint}",
    "abbreviated-option": "{option} is an abbreviation{hint}; guardscan judges flags "
                          "spelt out",
    "missing-value": "{option} has no value{hint}",
    "other-platform": "{option} {choice} is documented for {platform} only, not for "
                      "NVIDIA GPUs",
    # beside the verdict (guardscan.field.flag): a report that flags, one shown only
    "field-report": "{option} {choice}: {line}",
    "field-note": "{option} {choice}: {line}",
}


class LocalGPUError(ArchError):
    """``arch="auto"`` on a machine where neither NVML nor nvidia-smi shows a
    GPU guardscan knows."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason the launch is not safe to try, or a default worth a look.

    ``code`` is a key of ``PROBLEMS``; ``option`` the flag (as the tree spells
    it, or as typed when the tree has no such option); ``choice`` the value
    given (None when there is none); ``judged`` what was judged (``auto``'s
    resolution, else ``choice``); ``verdict`` and ``where`` (the deciding
    ``path:line``) for a judged choice; ``reason`` one line; ``suggestions``
    close matches, best first.
    """

    code: str
    option: str
    choice: str | None = None
    arch: str | None = None
    verdict: Verdict | None = None
    reason: str = ""
    where: str | None = None
    suggestions: tuple[str, ...] = ()
    judged: str | None = None
    message: str = ""

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "option": self.option, "choice": self.choice,
                "judged": self.judged, "arch": self.arch,
                "verdict": self.verdict.value if self.verdict else None,
                "reason": self.reason, "where": self.where,
                "suggestions": list(self.suggestions), "message": self.message}


@dataclass(frozen=True, slots=True)
class Check:
    """One backend option of the launch, on one architecture.

    ``value`` is what the command gives (``given``) or the default that applies;
    ``judged`` the choice whose verdict counts (``auto``'s single resolution, or
    ``value``); ``auto`` the choices ``auto`` can become there (from the tree's
    ``default`` lines); ``entry`` the scan's full verdict for ``judged`` (with
    its evidence chain), None when the tree has none.
    """

    option: str
    value: str
    arch: str
    given: bool
    judged: str
    verdict: Verdict
    reason: str
    where: str | None
    auto: tuple[str, ...] = ()
    entry: BackendVerdict | None = None

    @property
    def safe_to_try(self) -> bool:
        return self.verdict.safe_to_try

    @property
    def shown(self) -> str:
        """``flashinfer_trtllm``, or ``auto -> triton`` when auto was resolved."""
        return self.value if self.judged == self.value else f"{self.value} -> {self.judged}"

    def to_json(self) -> dict[str, object]:
        return {"option": self.option, "value": self.value, "arch": self.arch,
                "given": self.given, "judged": self.judged, "verdict": self.verdict.value,
                "safe_to_try": self.safe_to_try, "reason": self.reason, "where": self.where,
                "auto": list(self.auto)}


@dataclass(frozen=True, slots=True)
class Preflight:
    """The answer: ``ok`` when every flag the command gives is safe to try.

    ``problems`` make it not ok; ``warnings`` (defaults the command leaves in
    place that resolve to a choice to avoid) do not. ``checks`` hold every
    backend option per architecture (given ones and defaults), ``result`` the
    whole scan (every choice of every option), ``ignored`` the flags that are
    not backend options, ``notes`` what the check could not read, ``launch``
    the command as parsed. ``quantization`` is the method the command gives;
    ``result.quantization`` the one judged under (None when the given one is
    not a method of the tree: that is a problem). ``field`` holds the field
    reports about the judged choices (``guardscan.field.flag``), those that
    flag the launch also in ``problems`` or ``warnings``.
    """

    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    checks: tuple[Check, ...]
    result: ScanResult
    quantization: str | None
    ignored: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    launch: Launch | None = None
    field: tuple[Problem, ...] = ()
    checkpoint: str | None = None  # a method read from the checkpoint (checkpoint_config)
    model: str | None = None  # the model judged for, from its config.json (model_facts)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __repr__(self) -> str:
        """A summary (the checks and the whole scan stay reachable as fields)."""
        problems = ", ".join(f"{p.code} {p.option}" + (f" {p.choice}" if p.choice else "")
                             for p in self.problems[:3])
        if len(self.problems) > 3:
            problems += f", ... {len(self.problems) - 3} more"
        return (f"Preflight(ok={self.ok}, archs={self.archs!r}, problems=[{problems}], "
                f"{len(self.warnings)} warnings, {len(self.checks)} checks, "
                f"result={self.result!r})")

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(self.result.archs)

    def given(self) -> tuple[Check, ...]:
        """The checks of the options the command sets."""
        return tuple(c for c in self.checks if c.given)

    def verdict(self, option: str, choice: str, arch: str | None = None) -> BackendVerdict:
        """The scan's verdict of any choice of any option (``arch``: needed only
        when several were judged); KeyError when there is none."""
        for entry in self.result.backends:
            if entry.option == option and entry.choice == choice and (
                    arch is None or entry.arch == arch):
                return entry
        raise KeyError(f"no verdict for {option} {choice}" + (f" on {arch}" if arch else ""))

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "archs": list(self.archs), "quantization": self.quantization,
                "target": self.result.target.to_json(),
                "problems": [p.to_json() for p in self.problems],
                "warnings": [p.to_json() for p in self.warnings],
                "checks": [c.to_json() for c in self.checks],
                "ignored": list(self.ignored), "notes": list(self.notes),
                "field": [p.to_json() for p in self.field], "checkpoint": self.checkpoint,
                "model": self.model}


# -- judging -------------------------------------------------------------------------------
_TIER = re.compile(r"^(?P<kind>[a-z][a-z-]*) \((?P<tier>tier [abc])[^)]*\): ")


def _reason_and_where(entry: BackendVerdict | None) -> tuple[str, str | None]:
    """One line on why the verdict is what it is, and its deciding ``path:line``."""
    if entry is None:
        return "the scan has no verdict for it", None
    ev = deciding_evidence(entry)
    if ev is None:
        return "no architecture evidence either way", None
    reason = short_reason(ev) or describe_fact(ev, entry.verdict)[0]
    reason = _TIER.sub(lambda m: f"{m.group('kind')} ({m.group('tier')}): ", reason)
    if entry.verdict.safe_to_try:
        places = [f"{c.path}:{c.line}" for c in caveats(entry)]
        if places:
            reason += f"; may still raise at {', '.join(places)}"
    return reason, f"{ev.path}:{ev.line}"


def _default_value(option: OptionInfo) -> tuple[bool, str | None]:
    """(known, value): the option's default as typed; value None = SGLang picks."""
    if option.default is None:
        return True, None
    try:
        value = ast.literal_eval(option.default)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return False, None
    if value is None or isinstance(value, str):
        return True, value
    return False, None


def _auto_candidates(entries: Sequence[BackendVerdict], value: str | None) -> list[str]:
    """Where ``auto`` (or SGLang's own pick) goes on this architecture
    (``guardscan.verdict.auto``)."""
    return [choice for choice, _ in auto_targets(entries, value)]


def _judge(option: OptionInfo, value: str | None, arch: str, given: bool,
           entries: dict[str, BackendVerdict]) -> Check:
    shown = value if value is not None else AUTO
    if value is None or value == AUTO:
        candidates = _auto_candidates(list(entries.values()), value)
        if len(candidates) == 1:
            resolved = entries[candidates[0]]
            reason, where = _reason_and_where(resolved)
            return Check(option.flag, shown, arch, given, candidates[0], resolved.verdict,
                         reason, where, tuple(candidates), resolved)
        own = entries.get(value) if value is not None else None
        verdict = own.verdict if own is not None else Verdict.UNKNOWN
        if candidates:
            words = " or ".join(f"{c} ({entries[c].verdict})" for c in candidates)
            reason = f"auto can become {words}; which is decided at run time"
        else:
            reason = f"the source does not say what SGLang picks on {arch}"
        return Check(option.flag, shown, arch, given, shown, verdict, reason, None,
                     tuple(candidates), own)
    entry = entries.get(value)
    reason, where = _reason_and_where(entry)
    verdict = entry.verdict if entry is not None else Verdict.UNKNOWN
    return Check(option.flag, value, arch, given, value, verdict, reason, where, (), entry)


def _close(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> tuple[str, ...]:
    """Up to three close matches, best first, only those nearly as close as the
    best (``flashinfer_cutlas``: flashinfer_cutlass, not flashinfer_cutedsl)."""
    found = difflib.get_close_matches(word, list(candidates), n=3, cutoff=cutoff)

    def ratio(candidate: str) -> float:
        return difflib.SequenceMatcher(None, word, candidate).ratio()

    best = ratio(found[0]) if found else 0.0
    return tuple(c for c in found if ratio(c) >= best - 0.1)


def _hint(suggestions: Sequence[str], choices: Sequence[str] | None = None) -> str:
    if suggestions:
        return f"; did you mean {' or '.join(suggestions)}?"
    if choices:
        return f"; choices: {', '.join(choices)}"
    return ""


def _problem(code: str, option: str, *, choice: str | None = None, judged: str | None = None,
             arch: str | None = None, verdict: Verdict | None = None, reason: str = "",
             where: str | None = None, suggestions: tuple[str, ...] = (),
             **words: str) -> Problem:
    """A Problem, its message made from ``PROBLEMS[code]``."""
    fill = {"option": option, "choice": choice or "", "shown": choice or "", "arch": arch or "",
            "verdict": str(verdict or ""), "reason": reason, "hint": "", "target": "",
            "platform": "", **words}
    message = PROBLEMS[code].format(**fill)
    if where:
        message += f" ({where})"
    return Problem(code, option, choice, arch, verdict, reason or message, where,
                   suggestions, judged, message)


def judge_launch(result: ScanResult, launch: Launch, *,
                 defined: Callable[[str], bool] | None = None,
                 quantization_choices: Sequence[str] | None = None) -> Preflight:
    """Judge the flags of ``launch`` by the verdicts of ``result``.

    ``defined(flag)`` says whether the scanned tree defines a flag that is not
    in its backend catalog (a free-form ``--speculative-draft-attention-backend``
    is not a typo); without it every such backend-looking flag is unknown.
    ``quantization_choices``: the tree's ``--quantization`` methods, when the
    value given is to be checked against them.
    """
    options = {o.flag: o for o in result.options}
    target = " ".join(p for p in (result.target.package, result.target.version or "") if p)
    known_flags = [*options, QUANTIZATION_FLAG]
    problems: list[Problem] = []
    warnings: list[Problem] = []
    checks: list[Check] = []
    ignored: list[str] = []
    notes: list[str] = []

    for flag in launch.flags:
        if flag.flag in options or flag.flag == QUANTIZATION_FLAG:
            continue
        if flag.flag == "--config":
            notes.append(f"the flags inside --config {flag.value or '(no file)'} are not read")
            ignored.append(flag.flag)
            continue
        is_defined = defined is not None and defined(flag.flag)
        longer = [k for k in known_flags if k.startswith(flag.flag) and k != flag.flag]
        if longer and not is_defined:
            problems.append(_problem("abbreviated-option", flag.flag, choice=flag.value,
                                     suggestions=tuple(longer),
                                     hint=f" of {' or '.join(longer)}"))
            continue
        close = _close(flag.flag, known_flags, cutoff=0.8)
        looks_backend = flag.flag.endswith("-backend") or bool(close)
        if looks_backend and not is_defined:
            suggestions = _close(flag.flag, known_flags)
            problems.append(_problem("unknown-option", flag.flag, choice=flag.value,
                                     suggestions=suggestions, target=target,
                                     hint=_hint(suggestions)))
            continue
        if flag.flag not in ignored:
            ignored.append(flag.flag)

    quantization = launch.last(QUANTIZATION_FLAG)
    if quantization is not None:
        if quantization.value is None:
            problems.append(_problem("missing-value", QUANTIZATION_FLAG,
                                     hint=_hint((), quantization_choices)))
        elif quantization_choices is not None and quantization.value not in \
                quantization_choices:
            suggestions = _close(quantization.value, quantization_choices)
            problems.append(_problem("unknown-choice", QUANTIZATION_FLAG,
                                     choice=quantization.value, suggestions=suggestions,
                                     target=target, hint=_hint(suggestions)))

    per_cell: dict[tuple[str, str], dict[str, BackendVerdict]] = {}
    for entry in result.backends:
        per_cell.setdefault((entry.option, entry.arch), {})[entry.choice] = entry
    for option in result.options:
        given = launch.last(option.flag)
        if given is not None and given.value is None:
            problems.append(_problem("missing-value", option.flag,
                                     hint=_hint((), option.choices)))
            continue
        if given is not None and given.value not in option.choices:
            suggestions = _close(str(given.value), option.choices)
            problems.append(_problem("unknown-choice", option.flag, choice=given.value,
                                     suggestions=suggestions, target=target,
                                     hint=_hint(suggestions, option.choices)))
            continue
        if given is None:
            known, value = _default_value(option)
            if not known or (value is not None and value not in option.choices
                             and value != AUTO):
                notes.append(f"{option.flag}: its default `{option.default}` is not one of "
                             "its choices as written; not judged")
                continue
        else:
            value = given.value
        for arch in result.archs:
            entries = per_cell.get((option.flag, arch), {})
            check = _judge(option, value, arch, given is not None, entries)
            checks.append(check)
            platform = entries[check.judged].platform if check.judged in entries else None
            if given is not None and platform:
                words = "non-CUDA platforms" if platform == "non-cuda" else platform
                problems.append(_problem("other-platform", option.flag, choice=check.value,
                                         judged=check.judged, arch=arch, platform=words,
                                         where=f"{option.path}:{option.line}"))
            elif not check.safe_to_try:
                (problems if given is not None else warnings).append(_problem(
                    "not-safe" if given is not None else "default-not-safe", option.flag,
                    choice=check.value, judged=check.judged, shown=check.shown, arch=arch,
                    verdict=check.verdict, reason=check.reason, where=check.where))
    # in the command's order, as the user wrote it; defaults after, in the tree's order
    order = {f.flag: f.position for f in launch.flags}
    last = len(launch.flags) + 1 + max(order.values(), default=0)
    checks.sort(key=lambda c: order.get(c.option, last) if c.given else last)
    problems.sort(key=lambda p: order.get(p.option, last))
    return Preflight(tuple(problems), tuple(warnings), tuple(checks), result,
                     quantization.value if quantization is not None else None,
                     tuple(ignored), tuple(notes), launch)


# -- the entry point -----------------------------------------------------------------------
def _archs_of(arch: str | Arch | Sequence[str | Arch]) -> list[Arch]:
    from guardscan.driver import as_archs

    if arch is None:
        raise NoArchError(NO_ARCH)
    items: Sequence[str | Arch] = [arch] if isinstance(arch, (str, Arch)) else list(arch)
    out: list[Arch] = []
    for item in items:
        if isinstance(item, str) and item.strip().lower() == "auto":
            from guardscan.gpu import detect_archs

            found, how = detect_archs()
            if not found:
                raise LocalGPUError(f"no local GPU found ({how}); pass --arch sm120 or a "
                                    "GPU name")
            out.extend(found)
        else:
            out.extend(as_archs([item]) if str(item).strip(" ,") else [])
    if not out:
        raise NoArchError(NO_ARCH)
    return sorted(set(out))


def preflight(argv: Sequence[str], arch: str | Arch | Sequence[str | Arch],
              target: str | None = None, flashinfer: str | None = None, *,
              cache_dir: Path | None = None, kernels: bool = True, use_cache: bool = True,
              offline: bool = False, compiled: str | None = None,
              progress: Callable[[str], None] | None = None,
              reports: Sequence[str | Path] = (), field: str = "fail") -> Preflight:
    """Are the backend flags of this launch command safe to try on ``arch``?

    ``argv``: the launch command or its flags alone (see :func:`parse_launch`).
    ``arch``: any ``--arch`` spelling (``"sm120"``, ``"RTX PRO 6000"``,
    ``"12.0"``), an ``Arch``, a list of them, or ``"auto"`` for this machine's
    GPU (NVML, else nvidia-smi). ``target``: what ``guardscan TARGET`` takes;
    None = the installed sglang. ``flashinfer``: the kernel library to pair
    with (default: the one the target pins). ``compiled``: which pinned compiled
    packages to read (``"all"``/None, ``"none"``, or names). The other keywords are those of
    ``guardscan.scan`` (``progress`` is called with a few words per stage).
    ``reports``: field-report files to read besides guardscan's own and a
    target checkout's ``.guardscan-reports.toml``; ``field``: ``"fail"`` (a
    crash or wrong-output report on the arch and release flags a given
    choice as a problem), ``"warn"`` (it is a warning) or ``"off"`` (no
    reports read).

    Raises ``ArchError`` (``NoArchError`` for no architecture at all: None,
    ``""``, blanks, an empty list; ``LocalGPUError`` for ``"auto"`` without a GPU) and
    ``AcquireError`` for an unusable target, ``FieldReportError`` for a bad
    report file, ``ValueError`` for a ``field`` mode it does not know; every
    problem with the flags themselves is in the answer's ``problems``.
    """
    from guardscan.driver import UnknownChoiceError
    from guardscan.field.flag import field_mode, launch_field

    mode = field_mode(field, reports)  # a bad mode or file fails before the scan

    archs = _archs_of(arch)
    launch = parse_launch(argv)
    given_q = launch.last(QUANTIZATION_FLAG)
    served = model_path([(f.flag, f.value) for f in launch.flags])
    checkpoint = read_checkpoint(served)
    # the model's config.json decides the gates that test the model
    model_config = Path(checkpoint.config) if checkpoint is not None and \
        checkpoint.problem is None else None
    if given_q is not None:
        checkpoint = None
    quantization = given_q.value if given_q is not None else \
        checkpoint.method if checkpoint is not None else None
    choices: tuple[str, ...] | None = None
    try:
        result, root, choices = scan_once(target, archs, quantization, flashinfer, cache_dir,
                                      kernels, use_cache, offline, progress, compiled,
                                      model_config)
    except UnknownChoiceError as exc:
        if exc.flag != QUANTIZATION_FLAG:
            raise
        choices = exc.choices  # judged without it; the problem is reported
        result, root, _ = scan_once(target, archs, None, flashinfer, cache_dir, kernels,
                                use_cache, offline, progress, compiled, model_config)
    package = result.target.package
    answer = judge_launch(
        result, launch,
        defined=(lambda flag: tree_defines(root, package, flag)) if root is not None else None,
        quantization_choices=choices)
    if checkpoint is not None:
        answer = replace(answer, checkpoint=checkpoint.note(result.quantization, choices))
    if model_config is not None:  # its config.json was read: the model flag is not ignored
        judged_for = [n.text for n in result.notes if n.topic == "model"]
        answer = replace(answer, ignored=tuple(f for f in answer.ignored if f not in MODEL_FLAGS),
                         model=judged_for[0] if judged_for else None)
    return launch_field(answer, mode, reports, target, root)
