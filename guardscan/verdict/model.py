"""verdicts (model): what judging hands on and plugs into: a rule's outcome, the case it judges, the kernel judge, the memo protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from guardscan.arch import Arch
from guardscan.index import Index
from guardscan.index.observe import Read
from guardscan.link import (
    KernelCall,
)
from guardscan.predicate import (
    Context,
    Tri,
)
from guardscan.results import BackendVerdict, Evidence, OptionInfo

if TYPE_CHECKING:
    from guardscan.verdict.values import Values

__all__ = ['NOTHING', 'Asking', 'Case', 'JudgeMemo', 'Judged', 'KernelJudge', 'Outcome']


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one rule found on one arch: lines that block (SGLang raises),
    lines that exclude (a kernel that does not run there), positive evidence,
    caveats, help-text claims, and the conditions under which the verdict
    would change. Rules return it; the ladder (``verdict.ladder``) combines
    them, never a rule."""

    blocking: tuple[Evidence, ...] = ()
    excluding: tuple[Evidence, ...] = ()
    positive: tuple[Evidence, ...] = ()
    caveats: tuple[Evidence, ...] = ()
    docs: tuple[Evidence, ...] = ()
    conditions: tuple[str, ...] = ()
    #: the non-CUDA platforms the choice's own code is for (``rules.platform``)
    platforms: tuple[str, ...] = ()


NOTHING = Outcome()


@dataclass(frozen=True, slots=True)
class Case:
    """One choice on one arch, as a rule reads it: the index (for line texts),
    the option and choice, the arch and its context, every standard arch,
    the option's choices, the condition evaluator for this choice
    (``values.Values``), the quantization method, and which gates are about
    the choice (by the finding's id)."""

    index: Index
    option: OptionInfo
    choice: str
    arch: Arch
    ctx: Context
    all_archs: tuple[Arch, ...]
    every: frozenset[str]
    values: Values
    quantization: str | None
    about: dict[int, bool]


class KernelJudge:
    """Plug-in point for kernel facts: support of a kernel-library call on an arch."""

    def covers(self, call: KernelCall) -> bool:
        return False

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        return Tri.UNKNOWN, []

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        """The library's own public function, below the one called, whose facts
        decide a TRUE ``support``: the answer belongs to that building block,
        which other APIs share (a helper on the path). None: not known."""
        return None

    def installed(self) -> frozenset[str]:
        """Import names of the packages read beside the target (installed with it)."""
        return frozenset()

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        """Whether ``call`` reaches compiled code that holds code ``arch`` can
        load (a call the facts leave undecided, yet one that can run there)."""
        return False


@dataclass
class Judged:
    """One choice's verdicts as judged, with what judging them read (lines
    shown) and asked of the kernel library, for the next scan."""

    reads: tuple[Read, ...]
    kernel_asks: tuple[tuple[KernelCall, Arch], ...]
    verdicts: list[BackendVerdict]


class JudgeMemo(Protocol):
    """Where the driver keeps judged choices between scans (``guardscan.memo``):
    the verdict stage never imports the cache, it may be handed one."""

    def reuse(self, dest: str, choice: str) -> Judged | None:
        """An earlier scan's judgement of ``choice`` that nothing changed for."""

    def keep(self, dest: str, choice: str, judged: Judged) -> None:
        """This scan's judgement of ``choice``, for the next scan."""

    def forget(self, dest: str) -> None:
        """Judging ``dest`` failed: keep none of its choices."""


class Asking(KernelJudge):
    """A kernel judge that notes the questions asked of it."""

    def __init__(self, inner: KernelJudge) -> None:
        self.inner = inner
        self.asked: list[tuple[KernelCall, Arch]] = []

    def covers(self, call: KernelCall) -> bool:
        return self.inner.covers(call)

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        self.asked.append((call, arch))
        return self.inner.support(call, arch)

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        return self.inner.delegate(call, arch)

    def installed(self) -> frozenset[str]:
        return self.inner.installed()

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        return self.inner.loadable(call, arch)
