"""memo (narrow): a narrower question answered from the wider answer.

A scan narrowed with ``--option`` (``explain --option``, ``guardscan X
--option F``) judges every backend option, as the full scan does, and shows
the ones asked for: ``narrow(result, flags, owners)``. Both run the same
computation, so the one stored result answers both, and a narrowed scan right
after a full one (or a full one after a narrowed one) is a warm scan.

Why judge every option: the kernel library's solver cuts call cycles, so an
answer can depend on the questions asked before it (``kernel_answers.KernelAnswers``);
judging only one option asks a subsequence of the questions and could come out
otherwise. Judging all of them makes an option's verdicts the same whichever
options are shown.

What is left out of a narrowed result: the verdicts and options not asked for,
and the diagnostics that belong only to them, ``owners`` says which: an
``unresolved-kernel`` diagnostic or a failed kernel question belongs to the
options that asked that question (``AskedBy`` records it while judging), and a
failed judging of one option to that option. Every other diagnostic (option
definitions, guards, linking, unreadable files) is about the tree, and stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from guardscan.arch import Arch
from guardscan.link import KernelCall
from guardscan.predicate import Tri
from guardscan.results import Diagnostic, Evidence, OptionInfo, ScanResult
from guardscan.verdict import KernelJudge

__all__ = ["AskedBy", "Owners", "ask_kernel_questions", "narrow"]

#: diagnostic -> (flag, path, line) of each option that would report it, in the
#: order options are judged, at the place it would (a diagnostic not in it
#: belongs to the tree, and is always shown)
Owners = dict[Diagnostic, tuple[tuple[str, str, int], ...]]


#: a kernel question: (target, backend, arch name, the call's arguments)
Question = tuple[str, str | None, str, tuple[tuple[str, str], ...] | None]


class AskedBy(KernelJudge):
    """The kernel judge, recording which option asks which question, and where.

    Stands in for the judge the verdict stage is given: ``support`` and
    ``delegate`` are passed on, everything else is the judge's own. ``option``
    is the flag being judged, set by the driver before each option.
    """

    def __init__(self, judge: KernelJudge) -> None:
        self._judge = judge
        self.option = ""
        #: call target -> flag -> where that option first asked about it
        self.targets: dict[str, dict[str, tuple[str, int]]] = {}
        #: question (target, backend, arch) -> flag -> where that option first asked it
        self.questions: dict[Question, dict[str, tuple[str, int]]] = {}
        #: a failed kernel question's diagnostic -> the question
        self.failed: dict[Diagnostic, Question] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    def _asked(self, call: KernelCall, arch: Arch) -> Question:
        where = (call.rel, call.line)
        self.targets.setdefault(call.target, {}).setdefault(self.option, where)
        key = (call.target, call.backend, arch.name, call.args)
        self.questions.setdefault(key, {}).setdefault(self.option, where)
        return key

    def covers(self, call: KernelCall) -> bool:
        return self._judge.covers(call)

    def installed(self) -> frozenset[str]:
        return self._judge.installed()

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        return self._judge.loadable(call, arch)

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        key = self._asked(call, arch)
        faults = getattr(self._judge, "faults", None)
        before = len(faults) if isinstance(faults, list) else 0
        answer = self._judge.support(call, arch)
        if isinstance(faults, list):
            for fault in faults[before:]:
                self.failed[fault] = key
        return answer

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        self._asked(call, arch)
        return self._judge.delegate(call, arch)

    def owners(self, faults: Iterable[tuple[str, Diagnostic]],
               diagnostics: Iterable[Diagnostic]) -> Owners:
        """Who each of ``diagnostics`` (the judge's) and ``faults`` (a failed
        judging, by flag) belongs to."""
        owners: Owners = {d: ((flag, d.path, d.line),) for flag, d in faults}
        for found in diagnostics:
            key = self.failed.get(found)
            askers: dict[str, tuple[str, int]] | None = None
            if key is not None:
                askers = self.questions.get(key, {})
            elif found.code == "unresolved-kernel":
                askers = self.targets.get(str(dict(found.args).get("target", "")), {})
            if askers is not None:
                owners[found] = tuple((flag, rel, line) for flag, (rel, line) in askers.items())
        return owners


def ask_kernel_questions(calls: Sequence[KernelCall], options: Sequence[OptionInfo],
                         archs: Sequence[Arch], asked: AskedBy) -> None:
    """Ask the kernel judge every question the judged options' calls (those
    the linker found, ``Links.kernel_calls``) can ask, once each, in one
    fixed order (option by option, each option's calls in the order the
    linker found them, every arch), before any choice is judged.

    The kernel library's answers are replayed from the cache only while a
    scan asks the questions the last one asked, in the same order
    (``memo.kernel_answers.KernelAnswers``); asked as the verdicts need them, the
    order followed which calls each verdict reached, and an edit that made
    one call reachable where it was not read the whole library again. Asked
    up front, the sequence depends only on the calls the linker found, not
    on their conditions, and the judging that follows finds every answer
    ready (the background reader, ``memo.warm``, asks the same sequence
    ahead of the scan)."""
    seen: set[tuple[str, str | None, str]] = set()
    for option in options:
        asked.option = option.flag
        for call in calls:
            if call.option != option.dest or not asked.covers(call):
                continue
            made = [replace(call, backend=string) for _, string in call.backends] \
                if call.backends else [call]
            for each in made:
                key = (each.target, each.backend, repr(each.args))
                if key in seen:
                    continue
                seen.add(key)
                for arch in archs:
                    asked.support(each, arch)


def narrow(result: ScanResult, flags: Iterable[str], owners: Owners) -> ScanResult:
    """``result`` as a scan narrowed to ``flags`` shows it: an option-specific
    diagnostic where the first of those options to meet it would report it,
    or not at all when none of them does."""
    wanted = set(flags)
    diagnostics = []
    for found in result.diagnostics:
        askers = owners.get(found)
        if askers is None:
            diagnostics.append(found)
            continue
        first = next(((rel, line) for flag, rel, line in askers if flag in wanted), None)
        if first is not None:
            diagnostics.append(replace(found, path=first[0], line=first[1]))
    return replace(
        result,
        options=[o for o in result.options if o.flag in wanted],
        backends=[b for b in result.backends if b.option in wanted],
        diagnostics=sorted(set(diagnostics)),
        kernels=list(result.kernels),
        archs=list(result.archs),
        notes=list(result.notes),
    )
