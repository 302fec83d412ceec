"""link (checkpoint picks): a class a method builds only for the checkpoints whose config picks it.

What it recognises
    A function on a method's path (``link.method_paths``) that builds one of
    several classes of the same interface, picked by a test of the checkpoint
    (a test that the options, the device and the layer's type do not
    decide)::

        def get_quant_method(self, layer, prefix):        # compressed-tensors
            if isinstance(layer, FusedMoE):
                if self._is_mxfp4_moe(layer_name=prefix):
                    return Mxfp4MoEMethod(prefix=prefix)   # picked
                return CompressedTensorsFusedMoEMethod(self)

        def get_moe_scheme(self, layer, layer_name):      # quark
            if self._is_mx_fp4(weight, inputs): return QuarkW4A4MXFp4MoE(...)
            elif self._is_mx_w4a8(weight, inputs): return QuarkW4A8MXFp4MoE(...)
            elif self._is_fp8_w8a8(weight, inputs): return QuarkW8A8FP8MoE(...)

    Where the function picks two or more classes of one interface on such
    tests taken as true (an ``if`` taken, the ``A`` of ``A if c else B``),
    each of them is one the checkpoint picks: the way to it gets ``? the
    checkpoint picks A``, so its gates are caveats under the method. The
    class built where every such test failed (the fall-through) is the
    method's common case: its gates count as before, and so do both classes
    of a plain ``if``/``else``, which says nothing of which is common.
Why it matters
    A method's path takes the checkpoint's tests as met (a checkpoint that
    does not reach the code never uses the choice), which counted one
    scheme's gates for every checkpoint of the method: ``--quantization
    compressed-tensors --moe-runner-backend marlin`` on an A100 was blocked by
    ``Mxfp4MoEMethod``'s "MXFP4 Marlin requires SM90+", which only MXFP4 MoE
    checkpoints reach; ``--quantization quark`` with Triton MoE on an H100 by
    the W4A8 MXFP4 scheme's "AMD only", though the FP8 scheme runs every
    runner on Triton.
Known limits
    Which case is common is read from the code's shape alone (the
    fall-through): a special case most checkpoints take would give caveats
    where a verdict was due. Classes of different interfaces (a linear method
    and a MoE method) are no alternatives: every kind of layer gets its own.
    ``--model-config`` does not decide these tests yet.
Example
    >>> lin, moe, mx, off = [("m.py", n) for n in ("Linear", "Moe", "Mxfp4Moe", "NoQuantMoe")]
    >>> kind = {lin: "LinearBase", moe: "MoeBase", mx: "MoeBase", off: "MoeBase"}.get
    >>> sorted(picked_alternatives([(lin, False), (moe, False), (mx, True), (off, True)], kind))
    [('m.py', 'Mxfp4Moe'), ('m.py', 'NoQuantMoe')]
    >>> picked_alternatives([(moe, False), (mx, True)], kind)  # a plain if/else
    set()
    >>> picked_alternatives([(lin, True), (mx, True)], kind)  # different interfaces
    set()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from guardscan.predicate import Predicate, Unknown, leaves

if TYPE_CHECKING:
    from guardscan.index.observe import FactsView

__all__ = ["picked_alternatives", "picked_way", "picks"]

#: (rel, qualname) of a class
Key = tuple[str, str]


def picks(test: Predicate, text: str) -> bool:
    """Whether a branch test, taken as true, is the checkpoint's pick: it
    depends on something a verdict does not fix, and is no test of the
    layer's type (``isinstance(layer, FusedMoE)``: every kind of layer gets
    its class)."""
    return "isinstance(" not in text and any(isinstance(a, Unknown) for a in leaves(test))


def picked_way(facts: FactsView, path: Iterable[int],
               cond: Callable[[int], Predicate]) -> bool:
    """Whether a branch path takes such a test as true (``cond``: a signed
    branch's condition)."""
    return any(signed > 0 and picks(cond(signed), facts.cond(signed).text) for signed in path)


def picked_alternatives(built: Iterable[tuple[Key, bool]],
                        interface_of: Callable[[Key], object]) -> set[Key]:
    """Of the classes one function builds (each with whether its way is the
    checkpoint's pick), those picked where another class of the same
    interface is picked too: a dispatch on the checkpoint, whose fall-through
    is the common case. A plain ``if``/``else`` between two classes says
    nothing of which is common (``Mxfp4MoEMethod`` for a serialized
    checkpoint, the dynamic method else): both count as before."""
    kinds: dict[object, set[Key]] = {}
    for target, picked in built:
        kind = interface_of(target)
        if picked and kind is not None:
            kinds.setdefault(kind, set()).add(target)
    return {target for targets in kinds.values() if len(targets) > 1 for target in targets}
