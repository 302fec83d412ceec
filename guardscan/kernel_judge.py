"""The bridge between SGLang's linked calls and the kernel library's facts.

A call that leaves SGLang for the kernel library (``from flashinfer import
fp4_quantize``; ``flashinfer.fused_moe.trtllm_fp4_block_scale_moe(...)``) is
resolved to the library function that defines it, through its re-exports, and
judged there. A name the library does not define is reported, never guessed.
"""

from __future__ import annotations

from guardscan.arch import Arch
from guardscan.index import Index
from guardscan.link import KernelCall
from guardscan.predicate import Tri
from guardscan.results import Diagnostic, Evidence
from guardscan.verdict import KernelJudge
from guardscan.vocabulary import Vocabulary

__all__ = ["LibraryJudge", "kernel_judge_for"]


class LibraryJudge(KernelJudge):
    def __init__(self, index: Index) -> None:
        from guardscan.kernels.library import build_kernel_library

        self.index = index
        self.package = index.tree.package
        self.vocab = Vocabulary(index)
        self.library = build_kernel_library(index, self._guard)
        self.unresolved: dict[str, tuple[str, int]] = {}
        self._memo: dict[tuple[str, str | None, Arch], tuple[Tri, list[Evidence]]] = {}

    def _guard(self, text: str, rel: str, scope: str, line: int):  # type: ignore[no-untyped-def]
        return self.vocab.predicate(text, rel, scope, line, report=False).predicate

    def covers(self, call: KernelCall) -> bool:
        return call.target == self.package or call.target.startswith(self.package + ".")

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        if not self.covers(call):
            return Tri.UNKNOWN, []
        key = (call.target, call.backend, arch)
        if key in self._memo:
            return self._memo[key]
        function = self.library.resolve(call.target)
        if function is None:
            self.unresolved.setdefault(call.target, (call.rel, call.line))
            result: tuple[Tri, list[Evidence]] = (Tri.UNKNOWN, [])
        else:
            outcome = self.library.outcome(function, arch, call.backend)
            chain = list(outcome.chain)
            if outcome.value is Tri.UNKNOWN and not chain and outcome.caveats:
                # excluded below, under a condition not decided here: a doubt,
                # not arch-neutral code
                chain = [Evidence(e.path, e.line, e.role, e.text,
                                  (e.note + "; " if e.note else "") + "only under conditions "
                                  "not decided here")
                         for e in outcome.caveats[0]]
            result = (outcome.value, chain)
        self._memo[key] = result
        return result

    def diagnostics(self) -> list[Diagnostic]:
        return [Diagnostic(rel, line, "unresolved-kernel",
                           f"`{target}` is not defined in {self.package} "
                           f"{self.index.tree.version or ''}".rstrip())
                for target, (rel, line) in sorted(self.unresolved.items())]


def kernel_judge_for(index: Index) -> LibraryJudge:
    return LibraryJudge(index)
