"""link (context): the inputs every part of linking reads for one scan.

The tree's index, the vocabulary, the options, the ``--quantization`` option
and the kernel-library packages: inputs only. What the parts find, each unit
returns (``link.model.Found``); the parts that call on each other are handed
exactly the collaborators they use when ``link.collect`` builds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.results import OptionInfo

__all__ = ["LinkContext"]


@dataclass(frozen=True, eq=False)
class LinkContext:
    index: Index
    vocab: Vocabulary
    options: tuple[OptionInfo, ...]
    quantization: OptionInfo | None
    kernel_packages: frozenset[str]
    dests: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dests", frozenset(o.dest for o in self.options))

    @classmethod
    def of(cls, index: Index, vocab: Vocabulary, options: Iterable[OptionInfo],
           quantization: OptionInfo | None,
           kernel_packages: Iterable[str] = ("flashinfer",)) -> LinkContext:
        return cls(index, vocab, tuple(options), quantization, frozenset(kernel_packages))
