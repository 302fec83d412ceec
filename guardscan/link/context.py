"""link (context): what every part of linking shares for one scan.

The tree's index, the vocabulary, the options, what has been found so far
(``links``), and the collaborators the concerns call on each other through:
``conditions`` (paths and guards), ``units`` (running and replaying units),
``quant`` (the quantization methods' code) and ``gates`` (gates found by
following calls).
"""

from __future__ import annotations

from collections.abc import Iterable

from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.link.conditions import Conditions
from guardscan.link.gates import Gates
from guardscan.link.model import Links
from guardscan.link.quantization import QuantizationMethods
from guardscan.link.units import Units
from guardscan.results import OptionInfo

__all__ = ["LinkContext"]


class LinkContext:
    def __init__(self, index: Index, vocab: Vocabulary, options: list[OptionInfo],
                 quantization: OptionInfo | None,
                 kernel_packages: Iterable[str] = ("flashinfer",),
                 units: Units | None = None) -> None:
        self.index = index
        self.vocab = vocab
        self.options = options
        self.quantization = quantization
        self.kernel_packages = set(kernel_packages)
        self.dests = {o.dest for o in options}
        self.links = Links()
        self.conditions = Conditions(index, vocab)
        self.units = units if units is not None else Units()
        self.quant = QuantizationMethods(self)
        self.gates = Gates(self)
