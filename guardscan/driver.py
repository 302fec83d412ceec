"""scan (the driver): the pipeline end to end, acquire -> index -> options -> guards -> link ->
kernels -> verdicts; each stage reads only what the one before produced.

The driver alone holds the caches (``guardscan.memo.ScanMemo``) and hands the
stages what records and replays; it also decides when memory is let go.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from guardscan import __version__
from guardscan.acquire import (
    AcquireError,
    SourceTree,
    acquire,
    acquire_kernels,
    default_cache_dir,
)
from guardscan.arch import NO_ARCH, Arch, ArchError, NoArchError, parse_arch_list, standard_archs
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.link import Links, collect_links, option_model
from guardscan.link.shared_values import share_links, shared_options
from guardscan.memo import ScanMemo, disk
from guardscan.memo.narrow import AskedBy, Owners, ask_kernel_questions, narrow
from guardscan.memo.warm import Ahead, Warmer
from guardscan.messages import diagnostic, internal_error
from guardscan.model_facts import ModelFacts, read_model
from guardscan.options import OptionCatalog, build_catalog
from guardscan.results import (
    BackendVerdict,
    Diagnostic,
    OptionInfo,
    PackageRef,
    ScanNote,
    ScanResult,
    Verdict,
)
from guardscan.verdict import JudgeMemo, KernelJudge, judge, quantization_notes
from guardscan.verdict.split import judge_options, work

if TYPE_CHECKING:
    from guardscan.binaries.pinned import CompiledSource
    from guardscan.kernels.cubins import CubinSource

__all__ = ["Analysis", "ScanOptions", "UnknownChoiceError", "analyse", "as_archs", "scan"]


@dataclass
class ScanOptions:
    target: str | None = None
    archs: list[Arch] = field(default_factory=standard_archs)
    quantization: str | None = None
    options: list[str] | None = None  # flags to judge; None = every backend option
    kernels: bool = True
    flashinfer: str | None = None
    #: which pinned compiled packages to read: "all" (None), "none", or
    #: distribution names, comma-separated (``binaries.pinned.selected_dists``)
    compiled: str | None = None
    cache_dir: Path | None = None
    use_cache: bool = True
    offline: bool = False
    progress: Callable[[str], None] | None = None
    #: compute every stage even when a cached result is valid (for --graph)
    full: bool = False
    #: False: no text pre-filter on the target (every file is parsed and read
    #: as a candidate); for tests that prove the pre-filter changes nothing
    prefilter: bool = True
    #: the model the launch serves: its ``config.json`` (``--model-config``,
    #: a local ``--model-path``); None = judged for the common model
    model_config: Path | None = None
    #: judge in forked processes, one per core (``verdict.split``): None
    #: where the work is worth it and the process can fork; False never (tests
    #: that prove the split changes nothing compare the two)
    split: bool | None = None


@dataclass
class Analysis:
    """Everything a scan computed, for reports, ``explain`` and the graph."""

    tree: SourceTree
    index: Index | None  # None when the result came from the result cache
    catalog: OptionCatalog | None
    vocab: Vocabulary | None
    links: Links | None
    result: ScanResult
    kernel_tree: SourceTree | None = None
    kernel_judge: KernelJudge | None = None
    #: how the result cache answered ("" when not asked)
    cache: str = ""
    #: linking units (replayed from an earlier scan, run)
    units: tuple[int, int] = (0, 0)


def _say(opts: ScanOptions, message: str) -> None:
    if opts.progress is not None:
        opts.progress(message)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the scan.

    A scan builds millions of small objects (parse trees, facts, predicates)
    that hold no reference cycles, so reference counting frees them; but each
    allocation burst makes the collector re-traverse everything still alive.
    Measured on sglang 0.5.23, serial: 85 s with the collector, 56 s without,
    with the same peak memory. The previous state is restored afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyse(opts: ScanOptions) -> Analysis:
    """Run the pipeline; raises AcquireError for unusable targets."""
    with _collector_paused():
        return _analyse(opts)


def _analyse(opts: ScanOptions) -> Analysis:
    if not opts.archs:
        raise NoArchError(NO_ARCH)
    cache_dir = opts.cache_dir or default_cache_dir()
    _say(opts, "acquiring target")
    tree = acquire(opts.target, cache_dir=cache_dir, offline=opts.offline)
    kernel_tree: SourceTree | None = None
    kernel_note: ScanNote | None = None
    cubins = None
    compiled = None
    if opts.kernels:
        try:
            kernel_tree = acquire_kernels(tree, opts.flashinfer, cache_dir=cache_dir,
                                          offline=opts.offline)
        except AcquireError as exc:
            kernel_note = ScanNote("kernels", f"kernel library not read: {exc}; SGLang-only "
                                   "verdicts", reason=exc.reason)
        else:
            from guardscan.kernels.cubins import cubin_source

            _say(opts, "reading the pinned cubin package")
            cubins = cubin_source(tree, kernel_tree, cache_dir, offline=opts.offline)
        from guardscan.binaries.pinned import compiled_source, selected_dists

        compiled = compiled_source(tree, cache_dir, offline=opts.offline,
                                   dists=selected_dists(opts.compiled),
                                   say=lambda message: _say(opts, message))
    model = _model_facts(opts, tree)
    memo = None
    started = time.time()
    if opts.use_cache:
        # no --option in the key: a narrowed scan judges every option and shows
        # the ones asked for (memo.narrow), so one result answers both
        # linking reads neither the archs, the method nor the model: scans that
        # differ only there link from one another's records (memo.results)
        family = (disk.tree_key(tree.root, cache_dir), tree.package, opts.kernels, opts.prefilter,
                  disk.tree_key(kernel_tree.root, cache_dir) if kernel_tree is not None else None,
                  cubins.key if cubins is not None else None,
                  compiled.key if compiled is not None else None)
        memo = ScanMemo(cache_dir, (
            disk.tree_key(tree.root, cache_dir), tree.package, tuple(a.name for a in opts.archs),
            opts.quantization, (), opts.kernels, opts.prefilter,
            disk.tree_key(kernel_tree.root, cache_dir) if kernel_tree is not None else None,
            cubins.key if cubins is not None else None,
            compiled.key if compiled is not None else None,
            *((model.key(),) if model is not None else ())),
            reuse_results=not opts.full, family_parts=("family", *family))
        cached = memo.load(tree, kernel_tree)
        if memo.reuse_results:
            _say(opts, f"stored result: {memo.outcome}")
        if cached is not None:
            _selected_flags(opts, tree, [o.flag for o in cached.options])
            return Analysis(tree, None, None, None, None, _shown(opts, cached, memo.owners),
                            kernel_tree, None, memo.outcome)
    index = Index(tree, cache_dir if opts.use_cache else None, prefilter=opts.prefilter)
    if memo is not None:
        memo.start(index)
    _say(opts, f"reading options of {tree.package} {tree.version or ''}".rstrip())
    catalog = memo.catalog(index, build_catalog) if memo is not None else build_catalog(index)
    _selected_options(opts, tree, catalog)
    options = list(catalog.options)
    warmer = _warm_kernels(opts, kernel_tree, memo, cubins, compiled, options)
    if warmer is not None:
        index.after_prefetch = warmer.go
    try:
        return _link_and_judge(opts, tree, kernel_tree, kernel_note, memo, index, catalog,
                               options, cubins, compiled, model, warmer)
    finally:
        if warmer is not None:
            warmer.stop()
        if memo is not None:
            memo.close()
            if memo.wrote:
                keep = [tree.root, *([kernel_tree.root] if kernel_tree is not None else [])]
                disk.after_write(cache_dir, started, keep)


def _model_facts(opts: ScanOptions, tree: SourceTree) -> ModelFacts | None:
    """The model ``opts`` names, with the attention the scanned release's
    ModelConfig gives it (``model_facts``); a file that cannot be read is
    the caller's to refuse (``commands.common``), and here judges for the
    common model."""
    if opts.model_config is None:
        return None
    facts = read_model(Path(opts.model_config), tree.root / tree.package)
    return facts if isinstance(facts, ModelFacts) else None


def _shown(opts: ScanOptions, result: ScanResult, owners: Owners) -> ScanResult:
    """What the scan shows of the full result: the options asked for, if any."""
    if not opts.options:
        return result
    return narrow(result, _wanted(opts.options), owners)


def _wanted(flags: Iterable[str]) -> set[str]:
    return {o if o.startswith("--") else f"--{o}" for o in flags}


def _selected_flags(opts: ScanOptions, tree: SourceTree, known: list[str]) -> None:
    """A ``--option`` the tree does not define is a usage error."""
    if not opts.options:
        return
    unknown = _wanted(opts.options) - set(known)
    if unknown:
        from guardscan.suggest import option_hint

        raise AcquireError(
            f"{', '.join(sorted(unknown))} is not a backend option of {tree.package} "
            f"{tree.version}; {option_hint(sorted(unknown), known)}")


def _selected_options(opts: ScanOptions, tree: SourceTree,
                      catalog: OptionCatalog) -> list[OptionInfo]:
    """The options to judge: every backend option, or those asked for; a flag
    or quantization method the tree does not define is a usage error."""
    options = list(catalog.options)
    _selected_flags(opts, tree, [o.flag for o in options])
    if opts.options:
        wanted = _wanted(opts.options)
        unknown = wanted - {o.flag for o in options}
        if unknown:
            from guardscan.suggest import option_hint

            raise AcquireError(
                f"{', '.join(sorted(unknown))} is not a backend option of {tree.package} "
                f"{tree.version}; {option_hint(sorted(unknown), [o.flag for o in options])}")
        options = [o for o in options if o.flag in wanted]
    if opts.quantization is not None and catalog.quantization is not None and \
            opts.quantization not in catalog.quantization.choices:
        raise UnknownChoiceError(catalog.quantization.flag, opts.quantization,
                                 catalog.quantization.choices, tree.package, tree.version)
    return options


class UnknownChoiceError(AcquireError):
    """A value the scanned tree does not offer for an option (a ``--quantization``
    method it does not define); ``choices`` are the ones it does."""

    def __init__(self, flag: str, value: str, choices: tuple[str, ...], package: str,
                 version: str | None) -> None:
        super().__init__(f"{flag} {value} is not a choice of {package} {version}; "
                         f"choices: {', '.join(choices)}")
        self.flag = flag
        self.value = value
        self.choices = choices


def _warm_kernels(opts: ScanOptions, kernel_tree: SourceTree | None, memo: ScanMemo | None,
                  cubins: CubinSource | None, compiled: CompiledSource | None,
                  options: list[OptionInfo]) -> Warmer | None:
    """Start reading the kernel library on a spare core, to answer the
    questions linking will find (``memo.warm``), unless its answers are
    stored already (then it is not read at all)."""
    if kernel_tree is None or memo is None:
        return None
    companions = cubins.key if cubins is not None else ""
    if memo.kernel_answers(kernel_tree, companions, tuple(a.name for a in opts.archs)).stored:
        return None
    ahead = Ahead(lambda: _kernel_judge(opts, kernel_tree, memo, cubins, compiled),
                  list(options), list(opts.archs))
    return Warmer(ahead)


def _kernel_judge(opts: ScanOptions, kernel_tree: SourceTree, memo: ScanMemo | None,
                  cubins: CubinSource | None, compiled: CompiledSource | None,
                  ) -> tuple[Index, KernelJudge]:
    """The kernel library's index and judge (the compiled packages' judge
    around it, when they are read): the scan's, and the background
    process's that answers ahead of it (``memo.warm``), built alike."""
    from guardscan.kernels.judge import kernel_judge_for

    cache_dir = opts.cache_dir or default_cache_dir()
    kernel_index = Index(kernel_tree, cache_dir if opts.use_cache else None)
    # FlashInfer's text is searched a few times (17 whole-tree searches
    # for 0.7.2 under sglang 0.5.23), through its buffer's temporary
    # file (``index.whole_text``): 117 MB never held beside SGLang's results
    kernel_index.release_text()
    answers = memo.kernel_answers(kernel_tree, cubins.key if cubins else "",
                                  tuple(a.name for a in opts.archs)) \
        if memo is not None else None
    judge: KernelJudge = kernel_judge_for(kernel_index, answers, cubins)
    if compiled is not None and (compiled.packages or compiled.diagnostics):
        from guardscan.binaries.judge import CompiledJudge

        judge = CompiledJudge(judge, compiled)
    return kernel_index, judge


def _link_and_judge(opts: ScanOptions, tree: SourceTree, kernel_tree: SourceTree | None,
                    kernel_note: ScanNote | None, memo: ScanMemo | None, index: Index,
                    catalog: OptionCatalog, options: list[OptionInfo],
                    cubins: CubinSource | None = None,
                    compiled: CompiledSource | None = None,
                    served: ModelFacts | None = None, warmer: Warmer | None = None) -> Analysis:
    modes = getattr(catalog, "modes", [])
    model = option_model([*catalog.options, *modes], catalog.enums, catalog.quantization)
    shared = shared_options(index, catalog.enums)
    model.shared = {dest: tuple(other for other, _, _ in others)
                    for dest, others in shared.items()}
    vocab = Vocabulary(index, model)
    _say(opts, "linking choices to code")
    # the files to read are those naming a backend option or its enums; a
    # mode option is decided where those files test it
    dests = {o.dest for o in catalog.options}
    backend_enums = [e for e in catalog.enums if dests.intersection(e.option_dests)]
    enum_names = [e.qualname.rsplit(".", 1)[-1] for e in backend_enums]
    enum_methods = [m for e in backend_enums for m, _ in e.predicates]
    # the pinned compiled packages' import names are kernel packages too
    roots = sorted({r for p in (compiled.packages if compiled is not None else ())
                    for r in p.roots})
    links = collect_links(index, vocab, catalog.options, catalog.quantization, enum_names,
                          enum_methods, kernel_packages=("flashinfer", *roots),
                          units=memo.link_units() if memo is not None else None,
                          modes=modes)
    share_links(links, shared, {o.dest: o.choices for o in catalog.options})
    # Linking is done, and with it every whole-tree pre-filter and name lookup:
    # what it held is free for the kernel library (for sglang 0.5.23: 1,727
    # files' facts, the interpreter's memos, the temporary file of the tree's
    # text). Later readers reload.
    index.release_text()
    vocab.release_caches()
    index.drop_facts()
    units = (0, 0)
    kernel_index: Index | None = None
    if memo is not None:
        units = replayed, ran = memo.linked(index)
        if memo.reanalysis:
            _say(opts, f"linking: {replayed} units replayed, {ran} run again")
    result = ScanResult(
        guardscan=__version__,
        target=PackageRef(tree.package, tree.version, str(tree.root / tree.package)),
        archs=[a.name for a in opts.archs],
        options=options,
        quantization=opts.quantization,
    )
    kernel_judge: KernelJudge | None = None
    if opts.kernels:
        if warmer is not None:
            # the background process asks linking's questions of the library
            # it read meanwhile, and stores the answers, which the judge made
            # below replays (``memo.warm``)
            warmer.answer(links.kernel_calls)
        if kernel_tree is not None:
            _say(opts, f"reading kernel facts of {kernel_tree.package} {kernel_tree.version}")
            kernel_index, kernel_judge = _kernel_judge(opts, kernel_tree, memo, cubins, compiled)
            result.kernels.append(PackageRef(kernel_tree.package, kernel_tree.version,
                                             str(kernel_tree.root / kernel_tree.package)))
        elif compiled is not None and (compiled.packages or compiled.diagnostics):
            from guardscan.binaries.judge import CompiledJudge

            kernel_judge = CompiledJudge(None, compiled)
        if kernel_note is not None:
            result.notes.append(kernel_note)
        if compiled is not None and (compiled.packages or compiled.diagnostics):
            for package in compiled.packages:
                name, _, version = package.label.partition(" ")
                result.kernels.append(PackageRef(name, version or None, str(package.wheel)))
    else:
        result.notes.append(ScanNote("kernels", "kernel library not read (--no-kernels): "
                                     "SGLang-only verdicts", reason="--no-kernels"))
    _say(opts, "judging")
    if served is not None:
        result.notes.append(ScanNote("model", f"judged for the model of {served.describe()}"))
    if opts.quantization is None:
        result.notes.extend(quantization_notes(index, links, opts.archs))
    judging = memo.judging(options, opts.quantization, links) if memo is not None else None
    faults: list[tuple[str, Diagnostic]] = []
    asked = AskedBy(kernel_judge) if kernel_judge is not None else None
    if asked is not None:
        ask_kernel_questions(links.kernel_calls, options, opts.archs, asked)

    def named(option: OptionInfo) -> None:
        if asked is not None:
            asked.option = option.flag

    result.backends.extend(judge_options(
        options, lambda option, kernels, memo, out: _judge_option(
            index, links, option, opts, kernels, memo, out, served),
        lambda: work(links, options, opts.archs, judging), index, asked, judging, faults, named,
        opts.split))
    diagnostics: list[Diagnostic] = [*catalog.diagnostics, *vocab.diagnostics,
                                     *links.diagnostics, *(d for _, d in faults)]
    kernel_diagnostics: list[Diagnostic] = []
    if kernel_judge is not None and hasattr(kernel_judge, "diagnostics"):
        kernel_diagnostics = kernel_judge.diagnostics()
        diagnostics.extend(kernel_diagnostics)
    owners: Owners = asked.owners(faults, kernel_diagnostics) if asked is not None else \
        {d: ((flag, d.path, d.line),) for flag, d in faults}
    if kernel_judge is not None and hasattr(kernel_judge, "store_answers"):
        kernel_judge.store_answers()
    if kernel_index is not None:
        # its searches are asked: the buffer's temporary file goes now, not
        # when the analysis is let go (a later question reads it again)
        kernel_index.release_text()
    for outcome in index.outcomes.values():
        if outcome.status != "analysed":
            diagnostics.append(diagnostic(outcome.rel, outcome.line, f"file-{outcome.status}",
                                          reason=outcome.reason))
    for rel, reason in getattr(tree, "skipped", ()):
        diagnostics.append(diagnostic(rel, 0, "file-skipped", reason=reason))
    result.diagnostics = sorted(set(diagnostics))
    if memo is not None:
        memo.store(index, kernel_tree, result, owners)
    return Analysis(tree, index, catalog, vocab, links, _shown(opts, result, owners),
                    kernel_tree, kernel_judge, memo.outcome if memo is not None else "", units)


def _judge_option(index: Index, links: Links, option: OptionInfo, opts: ScanOptions,
                  kernel_judge: KernelJudge | None, judging: JudgeMemo | None,
                  faults: list[tuple[str, Diagnostic]],
                  model: ModelFacts | None = None) -> list[BackendVerdict]:
    """The verdicts of one option. Should judging it raise, its choices are
    ``unknown`` with an ``internal-error`` diagnostic at the option's
    definition, and the other options' verdicts stand."""
    try:
        return judge(index, links, option, opts.archs, opts.quantization, kernel_judge,
                     judging, model)
    except Exception as exc:  # noqa: BLE001 - one option never stops the scan
        if judging is not None:
            judging.forget(option.dest)
        faults.append((option.flag, internal_error(option.path, option.line,
                                                   f"judging {option.flag}", exc)))
        return [BackendVerdict(option.flag, choice, arch.name, opts.quantization,
                               Verdict.UNKNOWN)
                for choice in option.choices for arch in opts.archs]


def scan(target: str | None = None, **kwargs: object) -> ScanResult:
    """Library entry point: ``scan("sglang==0.5.9", archs=["sm120", "H100"])``.

    ``archs`` takes ``Arch`` objects or any string ``--arch`` takes (``"RTX PRO
    6000"``, ``"12.0"``, ``"all"``); the other keywords are ``ScanOptions``
    fields. Raises ``ArchError`` for an arch it does not know and
    ``AcquireError`` for an unusable target.
    """
    if "archs" in kwargs:
        kwargs["archs"] = as_archs(kwargs["archs"])
    opts = ScanOptions(target=target, **kwargs)  # type: ignore[arg-type]
    return analyse(opts).result


def as_archs(archs: object) -> list[Arch]:
    """``Arch`` objects from ``Arch`` objects, arch strings, or a mix (one
    string or ``Arch`` alone is taken as a list of one). Nothing at all (None,
    ``[]``, ``""``, blanks) raises ``NoArchError``."""
    if archs is None:
        raise NoArchError(NO_ARCH)
    if isinstance(archs, (str, Arch)):
        archs = [archs]
    if not isinstance(archs, Iterable):
        raise ArchError(f"not an architecture: {archs!r}")
    out: list[Arch] = []
    for item in archs:
        if isinstance(item, Arch):
            out.append(item)
        elif item is None:
            continue
        else:
            out.extend(parse_arch_list([str(item)]) if str(item).strip(" ,") else [])
    if not out:
        raise NoArchError(NO_ARCH)
    return out


def _stderr_progress(message: str) -> None:
    print(f"guardscan: {message}...", file=sys.stderr, flush=True)
