"""link (rejections on every arch): a failure decided by backend options alone.

What it recognises
    A ``raise`` or failing ``assert`` whose condition tests backend options
    (and the quantization method) and nothing else: no device, no
    environment, no installed package, nothing undecided::

        def _dispatch_explicit_backend(backend):
            if backend.is_deep_gemm(): ...
            elif backend.is_cutlass(): ...
            else:
                raise ValueError(f"Unknown FP8 GEMM backend: {backend}")

    For the choices it holds for, such a failure is met on every
    architecture. In a quantization method's code (``link.gates``), where
    the methods whose paths reach it qualify it (``QuantIs``), it is kept as
    a gate like a device-tested one, and the gate rule judges it ``blocked``
    under those methods, on every arch.
Why it matters
    Gates were kept only when they tested the device, so a choice that SGLang
    rejects outright (``--fp8-gemm-backend flashinfer_cutedsl`` under
    ``--quantization fp8``, whose block-FP8 dispatcher has no branch for it)
    was ``unknown`` with "no architecture evidence" and read as safe to try.
Known limits
    Only in functions of a module and constructors (``__init__`` of a
    module class: ``ModelOptNvFp4FusedMoEMethod`` raises for every LoRA
    runner but ``lora_marlin`` in its own), not other methods: a base class's default
    (``FusedMoEMethodBase.get_moe_quant_info`` raising for every runner but
    Triton) is overridden by the methods that matter, which a method's path
    does not tell apart. Elsewhere in the tree such a failure is not kept: a file-wide reading
    cannot tell which launches reach it (an ``assert
    get_moe_runner_backend().is_auto()`` in a GPTQ kernel helper would block
    Triton MoE everywhere). A condition with any other atom (a model property, an environment
    variable, a package probe, an unread test) stays out: it may not hold,
    and a rejection on every arch from a guess would be a wrong alarm on
    every arch. Other backend options are judged at their defaults by the
    gate rule, which names them in the verdict's conditions.
Example
    >>> from guardscan.predicate import OptionIs, QuantIs, Unknown, conj, neg
    >>> backend = OptionIs("fp8_gemm_backend", frozenset({"deep_gemm", "cutlass"}))
    >>> rejects_everywhere(conj(QuantIs(frozenset({"fp8"})), neg(backend)))
    True
    >>> rejects_everywhere(conj(neg(backend), Unknown("weight_block_size[1] != 128")))
    False
    >>> rejects_everywhere(QuantIs(frozenset({"fp8"})))
    False
"""

from __future__ import annotations

from collections.abc import Mapping

from guardscan.arch import standard_archs
from guardscan.predicate import Const, Context, OptionIs, Predicate, QuantIs, Tri, leaves

__all__ = ["raises_for_some_method", "rejects_everywhere"]


def rejects_everywhere(cond: Predicate) -> bool:
    """Whether ``cond``, a failure's condition, tests backend options and
    nothing else but the quantization method (so, where it holds for a choice,
    it holds on every arch)."""
    found = leaves(cond)
    return any(isinstance(a, OptionIs) for a in found) and all(
        isinstance(a, (OptionIs, QuantIs, Const)) for a in found)


def raises_for_some_method(cond: Predicate, choices: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether ``cond``, qualified by the methods whose paths reach it, surely
    holds for some choice of its one option under some method it names, on
    some NVIDIA arch (the platform tests on the way are decided there): the
    rejection is decided there (elsewhere what it left open, a branch only
    other methods take, stays a caveat).

    >>> from guardscan.predicate import Unknown, conj, disj, neg
    >>> fp8, other = QuantIs(frozenset({"fp8"})), QuantIs(frozenset({"fp8", "w4"}))
    >>> dispatch = neg(OptionIs("fp8_gemm_backend", frozenset({"auto"})))
    >>> gemm = {"fp8_gemm_backend": ("auto", "cutedsl")}
    >>> raises_for_some_method(conj(disj(fp8, conj(neg(other), Unknown("x"))), dispatch), gemm)
    True
    >>> raises_for_some_method(conj(fp8, dispatch, Unknown("block size")), gemm)
    False
    """
    found = leaves(cond)
    dests = {a.option for a in found if isinstance(a, OptionIs)}
    if len(dests) != 1:
        return False
    dest = dests.pop()
    methods = sorted({m for a in found if isinstance(a, QuantIs) for m in a.methods})
    return any(cond.evaluate(Context(arch=arch, options={dest: choice}, quantization=method))
               is Tri.TRUE for arch in standard_archs() for method in methods
               for choice in choices.get(dest, ()))
