"""verdicts: one per (option, choice, arch), decided from the linked findings.

The ladder, in order (``verdict.ladder``; docs/verdicts.md is generated from
here and from each rule's own docstring under ``verdict.rules``):

blocked
    A gate on the choice's path is TRUE for the architecture: SGLang itself
    raises. Needs every atom of the gate's condition decided (device, option,
    and, with ``--quantization``, the method). The choice's path includes what
    the value reaches: code registered for the choice under any option that
    picks from the same choices (``--prefill-attention-backend fa3`` meets the
    gates of the registered ``fa3`` factory), and the gates of another option's
    choice that code run for this one sets (an ``alias``: ``--moe-runner-backend
    megamoe`` is rewritten into ``--moe-a2a-backend megamoe``), and what the
    choice gets back from a dispatcher (a function or class returned under a
    test of the option). While a choice is judged, its twin options that fall
    back to it are taken as not given, the other options and the mode options
    (``--deepep-mode``) hold their defaults, environment variables read with
    ``os.getenv`` are unset, and a gate that another value of a mode or a
    variable would change says so in the verdict's conditions (``not blocked
    with --deepep-mode normal``, ``blocked with SGLANG_USE_X=1``). Gates that
    each raise on one branch of the choice's code, and together on every
    branch, block too (``verdict.every_path``).
unsupported
    Not blocked, but a kernel the choice's own code calls (in a module named
    for the choice, a function registered for it, or code under a test of the
    option) declares that it does not run on the architecture (kernel facts
    from FlashInfer: ``@supported_compute_capability``, the
    ``@backend_requirement`` entry of the ``backend=`` passed, judged with
    the string this choice hands over when SGLang computes it from the
    option's value (``removeprefix("flashinfer_")``), cubin lists,
    JIT specs, per-arch dispatch, explicit checks), and the call is
    *required*: its reach condition is TRUE for the choice on the arch.
    Calls on a branch not taken there (an alternative chosen by the arch or
    the value) do not count. Calls under conditions guardscan cannot decide
    (model config, env) are caveats, unless every call the choice can make
    excludes the arch: then whatever runs fails. A helper on the path (a
    layout, shuffle or quantize step) excludes like any other call.
supported
    Not blocked or unsupported, and positive evidence: the choice's own gate
    (one that raises because of an option value of this choice, not a
    method's requirement that only exempts other choices) admits this
    architecture while it rejects others; ``auto`` resolves to the
    choice under a device condition that holds here and names the arch (a
    fallback for every arch the code does not test, one that would hold on a
    far-future GPU too, is shown but is no claim); or the kernels on the
    path admit it: no call excludes it or leaves it undecided (a check that
    only rejects other archs decides nothing), and a call specific to the
    choice declares it. A helper never supports on its own: a call that code
    of other choices makes too, or whose answer is decided inside another
    public function of the kernel library (``shuffle_matrix_sf_a`` by
    ``block_scale_interleave``).
unknown
    No architecture evidence either way. Gates that could block only under
    conditions guardscan cannot decide (model config, env vars, the
    quantization method when not given) are listed with the verdict, never
    taken as blocking.
    Without ``--quantization``, a gate of some methods that blocks where
    another method picks the choice itself (``auto`` resolves to it there)
    is such a condition too: the checkpoint decides
    (``verdict.checkpoint``).

Worked chain (sglang 0.5.9 + flashinfer 0.6.3, ``--moe-runner-backend
flashinfer_trtllm`` on sm120, as ``guardscan explain`` prints it, abridged)::

    [link]   sglang/srt/server_args.py:4092  parser.add_argument(
    [select] sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py:37
             if is_flashinfer_available() and is_sm120_supported():
             (picks where fp4_quantize comes from; not a support claim)
    [link]   sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py:486
             @register_fused_func("none", "flashinfer_trtllm")
    [link]   .../flashinfer_trtllm.py:443  result = trtllm_fp4_block_scale_moe(
    [kernel] flashinfer/fused_moe/core.py:2552
             return get_trtllm_moe_sm100_module().trtllm_fp4_block_scale_moe(
    [kernel] flashinfer/fused_moe/core.py:931  module = gen_trtllm_gen_fused_moe_sm100_module()
    [kernel] flashinfer/jit/fused_moe.py:238  supported_major_versions=[10]
             (capability major in [10]: false on sm120) -> unsupported

The deciding fact is always the last line of a chain.

Known limits: a gate is attached to a choice only when it is found in code
linked to the choice (option tests, registries, up to two calls away), so a
gate reached by a longer path is missed (errs toward unknown/supported);
``select`` guards never count as support.

Layout: ``ladder`` (the four-way ladder and the memo of judged choices),
``rules/`` (one module per kind of finding or fact, each returning an
``Outcome``), ``values`` (conditions evaluated per choice and arch),
``chain`` (evidence lines and their status), ``checkpoint`` (one method's
gate against another's pick, without ``--quantization``), ``every_path``
(gates that together hold on every branch), ``dirty`` (what a change can
alter), ``notes`` (method-wide notes), ``model`` (the plain data and the
plug-in points).
"""

from __future__ import annotations

from guardscan.verdict.chain import FALLBACK, mark_statuses
from guardscan.verdict.dirty import dirty_choices
from guardscan.verdict.ladder import judge
from guardscan.verdict.model import Judged, JudgeMemo, KernelJudge, Outcome
from guardscan.verdict.notes import quantization_notes
from guardscan.verdict.values import possible

__all__ = ["FALLBACK", "JudgeMemo", "Judged", "KernelJudge", "Outcome", "dirty_choices", "judge",
           "mark_statuses", "possible", "quantization_notes"]
