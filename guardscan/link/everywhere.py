"""link (rejections on every arch): a failure decided by backend options alone.

What it recognises
    A ``raise`` or failing ``assert`` whose condition tests a backend option
    and no device::

        def _dispatch_explicit_backend(backend):
            if backend.is_deep_gemm(): ...
            elif backend.is_cutlass(): ...
            else:
                raise ValueError(f"Unknown FP8 GEMM backend: {backend}")

    For the choices it surely holds for, such a failure is met on every
    architecture. In a quantization method's code that runs whenever the
    method does (``link.gates``: a function of a module, a constructor, or
    the implementation of an interface's abstract method, such as
    ``ModelOptNvFp4FusedMoEMethod.apply`` for ``FusedMoEMethodBase.apply``),
    where the methods whose paths reach it qualify it (``QuantIs``), it is
    kept as a gate like a device-tested one, and the gate rule judges it
    ``blocked`` under those methods, on every arch.
Why it matters
    Gates were kept only when they tested the device, so a choice that SGLang
    rejects outright (``--fp8-gemm-backend flashinfer_cutedsl`` under
    ``--quantization fp8``, whose block-FP8 dispatcher has no branch for it;
    ``--moe-runner-backend triton`` under ``--quantization modelopt_fp4``,
    whose MoE ``apply`` ends in ``raise NotImplementedError`` for every runner
    it has no branch for) was ``unknown`` with "no architecture evidence" and
    read as safe to try.
Known limits
    Not in other methods: an optional hook a base class gives a default for
    (``FusedMoEMethodBase.get_moe_quant_info`` raising for every runner but
    Triton, called by LoRA alone) is not run on every launch. In an abstract
    method's implementation every test on the way from the method's config
    class counts, the checkpoint's included (a scheme that one kind of
    checkpoint picks refuses nothing for another), so a rejection behind a
    checkpoint's choice of scheme stays undecided; and a choice that needs a
    companion option (``lora_marlin`` needs ``--enable-lora``, whose layer
    replaces the MoE core) gets a caveat there, not a block
    (``verdict.rules.gate``). Elsewhere in the tree such a failure is not
    kept: a file-wide reading cannot tell which launches reach it (an
    ``assert get_moe_runner_backend().is_auto()`` in a GPTQ kernel helper
    would block Triton MoE everywhere). Whatever else the condition tests (a
    model property, an environment variable, a package probe, an unread
    test) must be decided for the choice for it to block; where it is not,
    the gate is a caveat, and a rejection on every arch is never taken from
    a guess. Other backend options are judged at their defaults by the gate
    rule, which names them in the verdict's conditions.
Example
    >>> from guardscan.predicate import OptionIs, QuantIs, Unknown, conj, neg
    >>> backend = OptionIs("fp8_gemm_backend", frozenset({"deep_gemm", "cutlass"}))
    >>> rejects_everywhere(conj(QuantIs(frozenset({"fp8"})), neg(backend)))
    True
    >>> rejects_everywhere(conj(neg(backend), Unknown("weight_block_size[1] != 128")))
    True
    >>> rejects_everywhere(QuantIs(frozenset({"fp8"})))
    False
"""

from __future__ import annotations

from collections.abc import Mapping

from guardscan.arch import standard_archs
from guardscan.predicate import Context, OptionIs, Predicate, QuantIs, Tri, leaves

__all__ = ["raises_for_some_method", "rejects_everywhere"]


def rejects_everywhere(cond: Predicate) -> bool:
    """Whether ``cond``, a failure's condition that tests no device, tests a
    backend option (so, where it holds for a choice, it holds on every arch;
    what else it tests must be decided for the choice: ``raises_for_some_method``)."""
    return any(isinstance(a, OptionIs) for a in leaves(cond))


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
