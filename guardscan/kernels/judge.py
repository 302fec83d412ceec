"""kernels (judge): the bridge between SGLang's linked calls and the kernel library's facts.

A call that leaves SGLang for the kernel library (``from flashinfer import
fp4_quantize``; ``flashinfer.fused_moe.trtllm_fp4_block_scale_moe(...)``) is
resolved to the library function that defines it, through its re-exports, and
judged there. A name the library does not define is reported, never guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from guardscan.arch import Arch
from guardscan.index import Index
from guardscan.link import KernelCall
from guardscan.messages import diagnostic, internal_error
from guardscan.predicate import Tri
from guardscan.results import Diagnostic, Evidence
from guardscan.verdict import KernelJudge

#: the arguments a call passes (``link.kernel_args``), as the library takes them
Args = tuple[tuple[str, str], ...] | None

if TYPE_CHECKING:
    from guardscan.kernels.cubins import CubinSource
    from guardscan.kernels.library import KernelLibrary

__all__ = ["LibraryJudge", "kernel_judge_for"]


#: (support, evidence chain, whether the library defines the called name, the
#: public library function below the called one that decides a TRUE, or "")
KernelAnswer = tuple[Tri, list[Evidence], bool, str]
#: (file, reason) of each C++ file the library could not read
Notes = tuple[tuple[str, str], ...]


class AnswerStore(Protocol):
    """Where the driver keeps the kernel library's answers between scans
    (``guardscan.memo.kernel_answers.KernelAnswers``): the kernel stage never imports
    the cache, it is handed one."""

    asked: list[tuple[tuple[object, ...], KernelAnswer, Notes]]
    depends: dict[str, bool]

    def next(self, key: tuple[object, ...]) -> KernelAnswer | None: ...
    def record(self, key: tuple[object, ...], answer: KernelAnswer, notes: Notes = ()) -> None: ...
    def notes(self) -> Notes: ...
    def store(self) -> None: ...


class LibraryJudge(KernelJudge):
    def __init__(self, index: Index, answers: AnswerStore | None = None,
                 cubins: CubinSource | None = None) -> None:
        self.index = index
        self.cubins = cubins
        self.package = index.tree.package
        self.unresolved: dict[str, tuple[str, int]] = {}
        self._memo: dict[tuple[str, str | None, Arch, Args], tuple[Tri, list[Evidence]]] = {}
        self._delegates: dict[tuple[str, str | None, Arch, Args], str] = {}
        self._depends: dict[str, bool] = {}
        self._answers = answers
        self._library: KernelLibrary | None = None
        self._replayed = False
        #: the unreadable C++ files reading the library itself asked for, and
        #: each called name's own reading (``_target``): every answer that
        #: needs them depends on them
        self._build_touched: frozenset[str] = frozenset()
        self._targets: dict[str, tuple[bool, frozenset[str]]] = {}
        #: (file, reason) of the unreadable C++ files this scan's answers
        #: depended on, replayed ones included
        self._notes: dict[str, str] = {}
        #: ``internal-error`` diagnostics of questions that raised
        self.faults: list[Diagnostic] = []

    @property
    def library(self) -> KernelLibrary:
        """The library's facts, read on the first question the answer cache
        cannot answer (never, when an earlier scan asked them all)."""
        if self._library is None:
            from guardscan.kernels.library import build_kernel_library

            self._library = build_kernel_library(self.index, self.cubins)
            cpp = self._library.cpp_checks.cpp
            self._build_touched, cpp.touched = frozenset(cpp.touched), set()
        return self._library

    def _target(self, target: str) -> tuple[bool, frozenset[str]]:
        """Whether what ``target`` supports depends on its caller's arguments
        (``KernelLibrary.reads_arguments``), and the unreadable C++ files
        resolving and reading it asked for; once per name."""
        found = self._targets.get(target)
        if found is None:
            library = self.library
            with library.cpp_checks.cpp.touching() as touched:
                try:
                    library.resolve(target)
                    depends = library.reads_arguments(target)
                except Exception:  # noqa: BLE001 - asked without them; the question reports it
                    depends = False
            found = self._targets[target] = (depends, frozenset(touched))
        return found

    def _notes_of(self, touched: frozenset[str] | set[str]) -> Notes:
        failures = self.library.cpp_checks.cpp.failures
        return tuple(sorted((rel, failures[rel]) for rel in touched if rel in failures))

    def covers(self, call: KernelCall) -> bool:
        return call.target == self.package or call.target.startswith(self.package + ".")

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        if not self.covers(call):
            return Tri.UNKNOWN, []
        key = self._key(call, arch)
        if key in self._memo:
            return self._memo[key]
        answers = self._answers
        stored = answers.next(key) if answers is not None else None
        if stored is not None:
            value, chain, resolved, delegate = stored
        else:
            if answers is not None and not self._replayed:
                # a question the last scan did not ask here: bring the library
                # to the state a scan without the cache would be in by now
                self._replayed = True
                for (target, backend, old_arch, args), *_ in answers.asked:
                    self._compute(str(target), backend if isinstance(backend, str) else None,
                                  cast(Arch, old_arch), cast(Args, args))
            # what the answer depends on among the unreadable C++ files: the
            # library's own reading, the called name's, the question's; the
            # same whatever was asked before (``memo.kernel_answers``)
            _, for_target = self._target(call.target)
            cpp = self.library.cpp_checks.cpp
            try:
                with cpp.touching() as touched:
                    value, chain, resolved, delegate = self._compute(
                        call.target, call.backend, arch, key[3])
            except Exception as exc:  # noqa: BLE001 - one kernel question never stops the scan
                # undecided, reported, and not stored: a later scan asks again
                self.faults.append(internal_error(
                    call.rel, call.line, f"the kernel question `{call.target}` on {arch.name}",
                    exc))
                self._notes.update(self._notes_of(self._build_touched | for_target | touched))
                self._memo[key] = (Tri.UNKNOWN, [])
                return self._memo[key]
            notes = self._notes_of(self._build_touched | for_target | touched)
            self._notes.update(notes)
            if answers is not None:
                answers.record(key, (value, list(chain), resolved, delegate), notes)
        if not resolved:
            self.unresolved.setdefault(call.target, (call.rel, call.line))
        self._memo[key] = (value, list(chain))
        if delegate:
            self._delegates[key] = delegate
        return self._memo[key]

    def installed(self) -> frozenset[str]:
        return frozenset({self.package})

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        """The public library function, below the one called, whose facts decide
        a TRUE ``support`` (``KernelLibrary.public_delegate``): the call is then
        a helper on the path, its answer that building block's."""
        if not self.covers(call):
            return None
        key = self._key(call, arch)
        if key not in self._memo:
            self.support(call, arch)
        return self._delegates.get(key)

    def _key(self, call: KernelCall, arch: Arch) -> tuple[str, str | None, Arch, Args]:
        """The question a call asks: its arguments only where the function
        called reads them (``KernelLibrary.reads_arguments``), so call sites
        that differ in nothing it reads ask one question (and a scan after an
        edit asks the questions the last one did, answered from the cache)."""
        if call.args is None:
            return call.target, call.backend, arch, None
        depends = self._depends.get(call.target)
        if depends is None:
            stored = self._answers.depends if self._answers is not None else {}
            depends = stored.get(call.target)
            if depends is None:
                depends = self._target(call.target)[0]
                if self._answers is not None:
                    self._answers.depends[call.target] = depends
            self._depends[call.target] = depends
        return call.target, call.backend, arch, call.args if depends else None

    def _compute(self, target: str, backend: str | None, arch: Arch,
                 args: Args = None) -> KernelAnswer:
        """(support, evidence chain, whether the library defines ``target``, the
        public function that decides a TRUE below it or ""); ``args``: what
        the caller passes, when known."""
        function = self.library.resolve(target)
        if function is None:
            return Tri.UNKNOWN, [], False, ""
        outcome = self.library.outcome(function, arch, backend, args)
        chain = list(outcome.chain)
        if outcome.value is Tri.UNKNOWN and not chain and outcome.caveats:
            # excluded below, under a condition not decided here: a doubt,
            # not arch-neutral code
            chain = [e.qualified("only under conditions not decided here")
                     for e in outcome.caveats[0]]
        delegate = self.library.public_delegate(function, outcome) \
            if outcome.value is Tri.TRUE else None
        return outcome.value, chain, True, delegate or ""

    def store_answers(self) -> None:
        if self._answers is not None:
            self._answers.store()

    def diagnostics(self) -> list[Diagnostic]:
        library = f"{self.package} {self.index.tree.version or ''}".rstrip()
        cubins = self.cubins.diagnostics if self.cubins is not None else ()
        # the files the answers depended on, each answer's record (replayed
        # from the cache, or worked out now): the same either way
        unread = sorted({**self._notes, **dict(self._answers.notes()
                                               if self._answers is not None else ())}.items())
        cubins = (*cubins, *(diagnostic(rel, 0, "cpp-parse-failed", reason=reason)
                             for rel, reason in unread))
        return [*self.faults, *cubins, *(
            diagnostic(rel, line, "unresolved-kernel", target=target, library=library)
            for target, (rel, line) in sorted(self.unresolved.items()))]


def kernel_judge_for(index: Index, answers: AnswerStore | None = None,
                     cubins: CubinSource | None = None) -> LibraryJudge:
    return LibraryJudge(index, answers, cubins)
