"""memo (session): the driver's one seam to every cache of one scan.

The stages are plain functions of their inputs and never import this package
(as in ruff, where the linter never imports the cache). The driver
(``guardscan.driver``) asks a :class:`ScanMemo` for what an earlier scan left
and hands the stages the runners that record and replay:

- the whole result, reused while nothing it read changed (``results``);
- the option catalog, reused while nothing it read changed;
- a linking-unit runner (``link_units.RecordingUnits``) that replays the
  units a change cannot touch;
- a judging store (:class:`StoredJudging`) that gives back the judged
  choices whose findings, kernel calls and lines did not change;
- the kernel library's answers (``kernel_answers.KernelAnswers``).

What it keeps of an earlier scan it lets go as soon as the stage that needed
it is done, so the scan's peak memory is not raised by the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from guardscan.acquire import SourceTree
from guardscan.index import FACTS_HELD_REPLAYING, Index
from guardscan.index.facts import FileOutcome
from guardscan.index.observe import OUTCOME, Read, numbers
from guardscan.link import Links
from guardscan.link.units import Units
from guardscan.memo.kernel_answers import KernelAnswers
from guardscan.memo.link_units import RecordingUnits
from guardscan.memo.narrow import Owners
from guardscan.memo.records import Changes, LinkRecord
from guardscan.memo.results import ResultCache
from guardscan.options import OptionCatalog
from guardscan.results import OptionInfo, ScanResult
from guardscan.verdict import Judged, dirty_choices

__all__ = ["ScanMemo", "StoredJudging"]

#: what the next scan needs to reuse a catalog: what reading it read, its
#: pre-filters with their answers, and the catalog
KeptCatalog = tuple[tuple[Read, ...],
                    tuple[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]], ...],
                    OptionCatalog]


class StoredJudging:
    """Judged choices of the earlier scan, given back while nothing they
    depend on changed (``verdict.JudgeMemo``); this scan's, kept."""

    def __init__(self, prior: Mapping[str, Mapping[str, Judged]] | None = None,
                 dirty: Mapping[str, set[str]] | None = None,
                 changes: Changes | None = None) -> None:
        self._prior = prior if prior is not None and changes is not None else {}
        self._dirty = dirty or {}
        self._changes = changes
        self.record: dict[str, dict[str, Judged]] = {}

    def reuse(self, dest: str, choice: str) -> Judged | None:
        old = self._prior.get(dest, {}).get(choice)
        if old is None or self._changes is None or choice in self._dirty.get(dest, set()) or \
                self._changes.any(old.reads):
            return None
        return old

    def keep(self, dest: str, choice: str, judged: Judged) -> None:
        self.record.setdefault(dest, {})[choice] = judged

    def forget(self, dest: str) -> None:
        self.record[dest] = {}


class ScanMemo:
    """Every cache of one scan, behind one object the driver holds."""

    def __init__(self, cache_dir: Path, key_parts: tuple[object, ...],
                 reuse_results: bool = True,
                 family_parts: tuple[object, ...] | None = None) -> None:
        """``reuse_results``: False computes every stage afresh and stores no
        result (``--graph`` needs them all); facts and the kernel library's
        answers are still cached. ``family_parts``: the parts of the key that
        linking depends on (``memo.results``)."""
        self.cache_dir = cache_dir
        self.reuse_results = reuse_results
        self.results = ResultCache(cache_dir, key_parts, family_parts)
        self._prior: tuple[LinkRecord, Changes] | None = None
        self._changes: Changes | None = None
        self._prior_catalog: KeptCatalog | None = None
        self._kept: KeptCatalog | None = None
        #: the earlier scan's files that did not parse or were not read
        self._prior_failed: dict[str, FileOutcome] = {}
        self._units: RecordingUnits | None = None
        self._judging = StoredJudging()
        self._judging_context = ""
        #: whether an earlier scan's linking was offered (a re-analysis)
        self.reanalysis = False
        #: whether this scan stored a result (the cache's size limit is checked then)
        self.wrote = False

    @property
    def outcome(self) -> str:
        """How the result cache answered (for progress and ``Analysis.cache``)."""
        return self.results.outcome

    def load(self, tree: SourceTree, kernel_tree: SourceTree | None) -> ScanResult | None:
        """The stored result, when nothing it read changed."""
        if not self.reuse_results:
            return None
        return self.results.load(tree, kernel_tree)

    def start(self, index: Index) -> None:
        """After a miss: what the earlier scan left that this one can reuse."""
        if not self.reuse_results:
            return
        self.results.prime(index)
        prior = self.results.prior_links(index)
        # this scan numbers its reads on from the earlier record's table, whose
        # numbers its kept answers and replayed units use (before the catalog,
        # nothing is numbered yet)
        if prior is not None and index.recorder.adopt(prior[0].reads):
            self._prior, self._changes, self.reanalysis = prior, prior[1], True
            index.facts_held = FACTS_HELD_REPLAYING
            self._prior_catalog = prior[0].catalog
            self._prior_failed = prior[0].failed

    def catalog(self, index: Index, build: Callable[[Index], OptionCatalog]) -> OptionCatalog:
        """The option catalog: the earlier scan's when nothing it read changed
        (its facts, texts and pre-filter answers), else ``build(index)``,
        recorded for the next scan."""
        if self._prior_catalog is not None and self._changes is not None:
            reads, greps, catalog = self._prior_catalog
            if not self._changes.any(reads) and all(
                    tuple(index.grep_re(pattern, within)) == matched
                    for pattern, within, matched in greps):
                return catalog
        mark = len(index.grep_log)
        saved = index.recorder.open()
        try:
            catalog = build(index)
        finally:
            reads = index.recorder.decode(index.recorder.close(saved, merge=False))
        self._kept = (reads, tuple(index.grep_log[mark:]), catalog)
        return catalog

    def link_units(self) -> Units:
        """The runner for this scan's linking units. The earlier scan's record
        is handed over to it, not kept here."""
        if not self.reuse_results:
            return Units()
        prior, self._prior = self._prior, None
        self._units = RecordingUnits(prior)
        return self._units

    def linked(self, index: Index) -> tuple[int, int]:
        """After linking: store this scan's linking for the next scan (now,
        when the interpreter's memos are gone: the peak) and let go of the
        earlier one. Returns the units (replayed, run).

        The files that did not parse or were not read and that a reused part
        (the catalog, a replayed unit, a kept answer) read, and this scan
        therefore did not, get their earlier outcome in ``index.outcomes``
        (unchanged where the reused part read it): they are reported as a
        scan from scratch reports them."""
        units = self._units
        if units is None:  # nothing recorded: results are not reused
            return 0, 0
        record, units.record_out = units.record_out, None
        units.prior, units.units = None, {}
        if record is not None:
            record.catalog = self._kept if self._kept is not None else self._prior_catalog
            self._restore_failed(index, record)
            record.failed = {rel: FileOutcome(rel, o.status, reason=o.reason, line=o.line)
                             for rel, o in index.outcomes.items() if o.status != "analysed"}
            self.results.store_links(record, background=self.reanalysis)
        return units.replayed, units.ran

    def _restore_failed(self, index: Index, record: LinkRecord) -> None:
        changes = self._changes
        if changes is None:
            return
        missing = {rel: outcome for rel, outcome in self._prior_failed.items()
                   if rel not in index.outcomes and not changes.touches((rel, OUTCOME))}
        if not missing:
            return
        read: set[str] = set()
        if self._kept is None and self._prior_catalog is not None:  # the catalog was reused
            read.update(rel for rel, _ in self._prior_catalog[0] if rel in missing)
        wanted = {i for i, (rel, _) in enumerate(record.reads) if rel in missing}
        for reads in [*(u.reads for u in record.units.values()),
                      *(a.reads for a in record.answers.values())]:
            if isinstance(reads, bytes) and wanted:
                read.update(record.reads[i][0] for i in wanted.intersection(numbers(reads)))
        for rel in read:
            index.outcomes[rel] = missing[rel]

    def judging(self, options: Iterable[OptionInfo], quantization: str | None,
                links: Links) -> StoredJudging:
        """The store of judged choices for this scan: the earlier scan's that
        no changed finding or kernel call can touch (``links``: this scan's
        findings, for the choices that set other options) are given back,
        when they were judged with the same defaults and modes
        (``Links.judging_context``)."""
        changed = self._units.changed if self._units is not None else None
        self._judging_context = links.judging_context()
        prior = self.results.prior_judged(self._judging_context) \
            if self._changes is not None and changed is not None else None
        dirty = dirty_choices(changed, options, quantization, links) \
            if prior is not None and changed is not None else {}
        self._judging = StoredJudging(prior, dirty, self._changes if prior is not None else None)
        if self._units is not None:
            self._units.changed = None
        return self._judging

    def kernel_answers(self, kernel_tree: SourceTree, companions: str = "",
                       archs: tuple[str, ...] = ()) -> KernelAnswers:
        """The kernel library's answers of the last scan of that library for
        ``archs`` (and of the packages read beside it, ``companions``: the
        cubin package's key)."""
        return KernelAnswers(self.cache_dir, kernel_tree, companions, archs,
                             self.results.library_stats(kernel_tree) if self.reuse_results
                             else None)

    @property
    def owners(self) -> Owners:
        """After a hit: whom the stored result's diagnostics belong to (``narrow``)."""
        return self.results.owners

    def store(self, index: Index, kernel_tree: SourceTree | None, result: ScanResult,
              owners: Owners | None = None) -> None:
        """Keep ``result`` with what the scan read, and its judged choices."""
        if not self.reuse_results:
            return
        units = self._units
        replayed = units.replayed if units is not None else 0
        self.wrote = True
        self.results.store(index, kernel_tree, result,
                           replayed=replayed > 0 or self._kept is None,
                           judged=self._judging.record, judged_context=self._judging_context,
                           owners=owners)

    def close(self) -> None:
        """Wait for a background writer, if any."""
        self.results.wait_for_writer()
