"""compare (after verdicts): what changed between two scan results, cell by cell.

A pure function of two ``ScanResult``s (``compare(old, new)``), so it is
tested on hand-built results and never scans. A *cell* is one (option,
choice, architecture). Between the two sides:

- a cell on both sides whose verdict differs is a **change**, with the
  deciding line of each side (``report.answer.deciding_evidence``); it is
  *worse* when the choice was safe to try (supported, unknown) and is now to
  avoid (blocked, unsupported), *better* the other way round, *other* for the
  rest (supported <-> unknown, blocked <-> unsupported);
- a cell whose verdict is the same is **not** a change, however far its
  evidence moved: line numbers change from release to release. When its
  deciding fact itself changed (another file, another source line, another
  note, with line numbers left out of the comparison as a baseline
  fingerprint leaves them out), it is a **new reason**, reported apart;
- choices only one side offers are **added** / **removed**, with their
  verdicts on the side that has them; so are whole options.

Evidence paths are relative to the directory holding each package
(``sglang/srt/server_args.py``) on both sides, so a checkout and a wheel
compare cleanly. Only architectures judged on both sides are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from guardscan.report.answer import arch_sort_key, deciding_evidence
from guardscan.results import BackendVerdict, Evidence, OptionInfo, ScanResult, Verdict

__all__ = [
    "CellChange",
    "ChoiceDiff",
    "OptionDiff",
    "ResultDiff",
    "compare",
    "direction",
    "fact_key",
]

WORSE, BETTER, OTHER = "worse", "better", "other"


def direction(old: Verdict, new: Verdict) -> str:
    """``worse``: safe to try before, to avoid now; ``better``: the reverse;
    ``other``: any other change (supported <-> unknown, blocked <-> unsupported)."""
    if old.safe_to_try and not new.safe_to_try:
        return WORSE
    if new.safe_to_try and not old.safe_to_try:
        return BETTER
    return OTHER


def fact_key(ev: Evidence | None) -> tuple[object, ...] | None:
    """What identifies a deciding fact across releases (``Evidence.identity``:
    file, role, source text, kind, tier and the arguments that state it, no
    line number), so a fact that only moved is the same fact."""
    if ev is None:
        return None
    return ev.identity


@dataclass(frozen=True, slots=True)
class CellChange:
    """One (option, choice, arch) judged on both sides, with both verdicts."""

    option: str
    choice: str
    arch: str
    old: BackendVerdict
    new: BackendVerdict

    @property
    def direction(self) -> str:
        return direction(self.old.verdict, self.new.verdict)

    @property
    def old_deciding(self) -> Evidence | None:
        return deciding_evidence(self.old)

    @property
    def new_deciding(self) -> Evidence | None:
        return deciding_evidence(self.new)


@dataclass(frozen=True, slots=True)
class ChoiceDiff:
    """A choice only one side offers, with its verdicts there (one per arch)."""

    option: str
    choice: str
    verdicts: tuple[BackendVerdict, ...]


@dataclass(slots=True)
class OptionDiff:
    """One option: ``status`` is ``both``, ``added`` (NEW only) or ``removed``
    (OLD only); for an added or removed option every choice is added/removed."""

    option: str
    status: str
    old_info: OptionInfo | None = None
    new_info: OptionInfo | None = None
    changed: list[CellChange] = field(default_factory=list)
    new_reasons: list[CellChange] = field(default_factory=list)
    added: list[ChoiceDiff] = field(default_factory=list)
    removed: list[ChoiceDiff] = field(default_factory=list)
    unchanged: int = 0

    @property
    def empty(self) -> bool:
        return not (self.changed or self.new_reasons or self.added or self.removed)


@dataclass(slots=True)
class ResultDiff:
    old: ScanResult
    new: ScanResult
    archs: list[str]
    options: list[OptionDiff]

    def cells(self, what: str) -> list[CellChange]:
        """Every change (``what="changed"``) or new reason (``"new_reasons"``)."""
        return [c for o in self.options for c in getattr(o, what)]

    def choices(self, what: str, status: str | None = None) -> list[ChoiceDiff]:
        """Every added (``what="added"``) or removed choice, of options with
        ``status`` (None: any)."""
        return [c for o in self.options if status is None or o.status == status
                for c in getattr(o, what)]

    def summary(self) -> dict[str, int]:
        changed = self.cells("changed")
        return {
            "changed": len(changed),
            "worse": sum(c.direction == WORSE for c in changed),
            "better": sum(c.direction == BETTER for c in changed),
            "other": sum(c.direction == OTHER for c in changed),
            "new_reasons": len(self.cells("new_reasons")),
            "choices_added": len(self.choices("added", "both")),
            "choices_removed": len(self.choices("removed", "both")),
            "options_added": sum(o.status == "added" for o in self.options),
            "options_removed": sum(o.status == "removed" for o in self.options),
            "unchanged": sum(o.unchanged for o in self.options),
        }


def _by_option(result: ScanResult, archs: set[str]) -> dict[str, dict[str, list[BackendVerdict]]]:
    """option -> choice -> verdicts on ``archs``, in the result's order."""
    out: dict[str, dict[str, list[BackendVerdict]]] = {}
    for info in result.options:
        out.setdefault(info.flag, {})
    for verdict in result.backends:
        if verdict.arch in archs:
            out.setdefault(verdict.option, {}).setdefault(verdict.choice, []).append(verdict)
    return out


def _sorted(verdicts: Iterable[BackendVerdict]) -> tuple[BackendVerdict, ...]:
    return tuple(sorted(verdicts, key=lambda v: arch_sort_key(v.arch)))


def _choice_order(info: OptionInfo | None, found: Iterable[str]) -> list[str]:
    """The option's choices in the order the tree defines them, then any other
    choice a verdict names."""
    order = list(info.choices) if info is not None else []
    return list(dict.fromkeys([*order, *found]))


def compare(old: ScanResult, new: ScanResult, options: Sequence[str] | None = None,
            archs: Sequence[str] | None = None) -> ResultDiff:
    """What changed from ``old`` to ``new`` (see the module docstring); only the
    flags in ``options`` when given (``--moe-runner-backend`` or without the
    dashes), only the architectures in ``archs`` when given (names as the
    results spell them, ``sm120``). Options are in NEW's order, then those only
    OLD has."""
    common = set(old.archs) & set(new.archs)
    if archs is not None:
        common &= set(archs)
    archs = sorted(common, key=arch_sort_key)
    wanted = {o if o.startswith("--") else f"--{o}" for o in options} if options else None
    old_cells = _by_option(old, set(archs))
    new_cells = _by_option(new, set(archs))
    old_infos = {o.flag: o for o in old.options}
    new_infos = {o.flag: o for o in new.options}
    out: list[OptionDiff] = []
    for option in dict.fromkeys([*new_cells, *old_cells]):
        if wanted is not None and option not in wanted:
            continue
        status = ("both" if option in old_cells and option in new_cells
                  else "added" if option in new_cells else "removed")
        diff = OptionDiff(option, status, old_infos.get(option), new_infos.get(option))
        before = old_cells.get(option, {})
        after = new_cells.get(option, {})
        old_choices = _choice_order(diff.old_info, before) if option in old_cells else []
        new_choices = _choice_order(diff.new_info, after) if option in new_cells else []
        diff.added = [ChoiceDiff(option, choice, _sorted(after.get(choice, ())))
                      for choice in new_choices if choice not in old_choices]
        diff.removed = [ChoiceDiff(option, choice, _sorted(before.get(choice, ())))
                        for choice in old_choices if choice not in new_choices]
        for choice in new_choices:
            if choice not in old_choices:
                continue
            old_by_arch = {v.arch: v for v in before.get(choice, ())}
            for verdict in _sorted(after.get(choice, ())):
                was = old_by_arch.get(verdict.arch)
                if was is None:
                    continue
                cell = CellChange(option, choice, verdict.arch, was, verdict)
                if was.verdict is not verdict.verdict:
                    diff.changed.append(cell)
                elif fact_key(cell.old_deciding) != fact_key(cell.new_deciding):
                    diff.new_reasons.append(cell)
                    diff.unchanged += 1
                else:
                    diff.unchanged += 1
        out.append(diff)
    return ResultDiff(old, new, archs, out)
