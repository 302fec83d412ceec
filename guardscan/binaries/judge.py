"""binaries (judge): the kernel judge the verdict stage is handed, with the compiled packages beside the kernel library.

What it does: a call into the kernel library (FlashInfer) goes to the kernel
library's judge, unchanged; a call into a compiled package the release pins
(its top-level import name: ``flash_mla``, ``sgl_kernel``, ``deep_ep``) is
followed through that package's Python (``binaries.python``) and judged by
``verdict.rules.compiled`` on the libraries it reaches. Anything else
(torch, triton) is not covered, as before.

Why it matters: the verdict rule over kernel calls (``verdict.rules.kernels``)
already says how a call's reach and its answer make a verdict; the compiled
packages are one more source of answers to it, so a required call whose
libraries hold no code for the arch makes the choice ``unsupported`` like any
other excluding kernel fact, and an undecided one is a caveat.

Known limits: answers are computed from the cached facts on each scan
(milliseconds; nothing is stored beside the kernel library's answers). A
call the package's Python does not define is arch-neutral, not reported.

Example::

    >>> from guardscan.binaries.pinned import CompiledSource
    >>> judge = CompiledJudge(None, CompiledSource(reason="none pinned"))
    >>> judge.diagnostics()
    []
"""

from __future__ import annotations

from typing import Any

from guardscan.arch import Arch
from guardscan.binaries.pinned import CompiledSource
from guardscan.binaries.python import Reach
from guardscan.link import KernelCall
from guardscan.predicate import Tri
from guardscan.results import Diagnostic, Evidence
from guardscan.verdict import KernelJudge
from guardscan.verdict.rules.compiled import judge_compiled, loadable_code, refusal_evidence

__all__ = ["CompiledJudge"]


class CompiledJudge(KernelJudge):
    """``inner`` (the kernel library's judge, or None) plus the compiled packages."""

    def __init__(self, inner: KernelJudge | None, source: CompiledSource) -> None:
        self.inner = inner
        self.source = source
        self._memo: dict[tuple[str, frozenset[str] | None, Arch],
                         tuple[Tri, list[Evidence]]] = {}
        #: what each target reaches in its package (``PackagePython.reach``), once
        self._reaches: dict[str, Reach | None] = {}
        self.faults: list[Diagnostic] = getattr(inner, "faults", [])

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _compiled(self, call: KernelCall) -> bool:
        return self.source.package_for(call.target) is not None

    def covers(self, call: KernelCall) -> bool:
        if self.inner is not None and self.inner.covers(call):
            return True
        return self._compiled(call)

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        if self.inner is not None and self.inner.covers(call):
            return self.inner.support(call, arch)
        passed = None if call.args is None else frozenset(k for k, _ in call.args)
        key = (call.target, passed, arch)
        if key not in self._memo:
            self._memo[key] = self._judge(call.target, passed, arch)
        value, chain = self._memo[key]
        return value, list(chain)

    def _reach(self, target: str) -> Reach | None:
        if target not in self._reaches:
            package = self.source.package_for(target)
            self._reaches[target] = package.python.reach(target) if package is not None else None
        return self._reaches[target]

    def _judge(self, target: str, passed: frozenset[str] | None, arch: Arch
               ) -> tuple[Tri, list[Evidence]]:
        package = self.source.package_for(target)
        if package is None:
            return Tri.UNKNOWN, []
        refused = package.python.refusal(target, (arch.major, arch.minor), passed)
        if refused is not None:
            return Tri.FALSE, refusal_evidence(refused, arch, package.label)
        reach = self._reach(target)
        if reach is None:
            return Tri.UNKNOWN, []
        return judge_compiled(reach, package.libraries, arch, package.label, package.machine)

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        if self.inner is not None and self.inner.covers(call):
            return False
        package = self.source.package_for(call.target)
        reach = self._reach(call.target)
        return reach is not None and package is not None and loadable_code(
            reach, package.libraries, arch, package.machine)

    def installed(self) -> frozenset[str]:
        inner = self.inner.installed() if self.inner is not None else frozenset()
        return inner.union(*(p.roots for p in self.source.packages))

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        if self.inner is not None and self.inner.covers(call):
            return self.inner.delegate(call, arch)
        return None

    def store_answers(self) -> None:
        store = getattr(self.inner, "store_answers", None)
        if store is not None:
            store()

    def diagnostics(self) -> list[Diagnostic]:
        inner = getattr(self.inner, "diagnostics", None)
        return [*(inner() if inner is not None else ()), *self.source.diagnostics]
