"""matrix (model): scan results side by side, cell by cell, and the history of each cell.

A matrix holds one *release* per scanned target (its label, its result), the
architectures judged in all of them, and the *rows*: every (option, choice)
any release offers, in the newest release's order, then those only older ones
have. A *cell* is a row on one architecture in one release. The *history* of a
row is its cells across the releases in the order given; where a verdict
changed from one release to the next, the change carries both sides'
verdicts and deciding lines, exactly as ``guardscan diff`` compares two
results (``compare.compare``). Nothing here scans or decides a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from guardscan.compare import CellChange, compare
from guardscan.report.answer import arch_sort_key
from guardscan.results import BackendVerdict, ScanResult

__all__ = ["Change", "Matrix", "Release", "Row", "build_matrix", "release_label"]


@dataclass(frozen=True, slots=True)
class Release:
    """One scanned target: ``label`` names it in the page (``sglang 0.5.23``)."""

    label: str
    target: str
    result: ScanResult


@dataclass(frozen=True, slots=True)
class Row:
    option: str
    choice: str
    #: the platform the newest release that offers it documents it for, when
    #: that is not CUDA (``rocm``, ``npu``, ...)
    platform: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A verdict that changed between two consecutive releases (indices into
    ``Matrix.releases``)."""

    before: int
    after: int
    cell: CellChange

    @property
    def direction(self) -> str:
        return self.cell.direction


@dataclass(slots=True)
class Matrix:
    releases: list[Release]
    archs: list[str]
    rows: list[Row]
    changes: list[Change] = field(default_factory=list)
    #: targets that could not be scanned: (target, one-line reason)
    failed: list[tuple[str, str]] = field(default_factory=list)
    _cells: dict[tuple[int, str, str, str], BackendVerdict] = field(default_factory=dict)

    def cell(self, release: int, option: str, choice: str, arch: str) -> BackendVerdict | None:
        """The verdict of ``choice`` on ``arch`` in release number ``release``;
        None where that release does not offer the choice."""
        return self._cells.get((release, option, choice, arch))

    def offers(self, release: int, row: Row) -> bool:
        return any((release, row.option, row.choice, arch) in self._cells for arch in self.archs)

    def changes_of(self, row: Row) -> list[Change]:
        return [c for c in self.changes
                if (c.cell.option, c.cell.choice) == (row.option, row.choice)]

    @property
    def quantization(self) -> str | None:
        return next((r.result.quantization for r in self.releases), None)


def release_label(result: ScanResult, target: str) -> str:
    """``sglang 0.5.23``; the target as given when the tree has no version."""
    if result.target.version:
        return f"{result.target.package} {result.target.version}"
    return target


def build_matrix(scanned: Sequence[tuple[str, ScanResult]],
                 failed: Sequence[tuple[str, str]] = ()) -> Matrix:
    """The matrix of ``(target, result)`` pairs, in the order given (the
    history reads them in that order)."""
    releases: list[Release] = []
    seen: dict[str, int] = {}
    for target, result in scanned:
        label = release_label(result, target)
        if label in seen:  # the same version twice (another FlashInfer, a checkout)
            seen[label] += 1
            label = f"{label} ({target})" if target != label else f"{label} #{seen[label]}"
        seen.setdefault(label, 1)
        releases.append(Release(label, target, result))
    common: set[str] | None = None
    for release in releases:
        common = set(release.result.archs) if common is None else common & set(
            release.result.archs)
    archs = sorted(common or (), key=arch_sort_key)
    matrix = Matrix(releases, archs, _rows(releases), failed=list(failed))
    judged = set(archs)
    for number, release in enumerate(releases):
        for verdict in release.result.backends:
            if verdict.arch in judged:
                matrix._cells[(number, verdict.option, verdict.choice, verdict.arch)] = verdict
    for number in range(1, len(releases)):
        diff = compare(releases[number - 1].result, releases[number].result, archs=archs)
        matrix.changes.extend(Change(number - 1, number, cell) for cell in diff.cells("changed"))
    return matrix


def _rows(releases: list[Release]) -> list[Row]:
    """Every (option, choice) of any release: the newest release's order
    first, then what only older releases offer, each in its own order."""
    rows: dict[tuple[str, str], Row] = {}
    for release in reversed(releases):
        result = release.result
        platforms = {b.option + "\0" + b.choice: b.platform for b in result.backends}
        for option in result.options:
            for choice in option.choices:
                key = (option.flag, choice)
                if key not in rows:
                    rows[key] = Row(option.flag, choice, platforms.get(f"{option.flag}\0{choice}"))
        for verdict in result.backends:  # a choice a verdict names beyond the option's list
            key = (verdict.option, verdict.choice)
            if key not in rows:
                rows[key] = Row(verdict.option, verdict.choice, verdict.platform)
    # keep each option's rows together, options in first-seen order
    order = list(dict.fromkeys(option for option, _ in rows))
    return [row for option in order for (o, _), row in rows.items() if o == option]
