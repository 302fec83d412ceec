"""verdict rule (kernels): what the kernel library says of the calls a choice makes, unsupported or supported.

What it judges
    The calls into the kernel library (FlashInfer) that the choice's code
    makes, each with its reach condition, asked of the kernels stage
    (``KernelJudge``) on the arch.
Why it matters
    SGLang accepts many choices whose kernels do not run on an arch: the
    verdict is ``unsupported`` when a required call excludes it (or every
    call the choice can make does), ``supported`` when the calls specific to
    the choice admit it and none leaves it undecided. A required call made
    only at the default of an environment variable or a mode option says what
    the other value changes (``not unsupported with
    SGLANG_FLASHINFER_CUTEDSL_NVFP4_W4A16=1``: that variable picks another
    branch of ``fp4_gemm``).
Known limits
    A helper (a layout, shuffle or quantize step other choices call too, or
    a call decided inside another public function) can exclude but never
    support; a call under an undecided condition is a caveat unless every
    call excludes. Calls outside the kernel library and the compiled
    packages (SGLang's own Triton or PyTorch code, a vendored kernel) are
    not seen, so "every call excludes" can miss another way out that only
    they take. Errs toward ``unknown``.
Example
    ``--moe-runner-backend flashinfer_trtllm`` on sm120 (sglang 0.5.9): the
    required ``trtllm_fp4_block_scale_moe`` ends at a JIT spec with
    ``supported_major_versions=[10]``: ``unsupported``.
"""

from __future__ import annotations

from dataclasses import replace

from guardscan.arch import Arch
from guardscan.evidence import Status
from guardscan.index import Index
from guardscan.link import KernelCall
from guardscan.predicate import (
    Const,
    Context,
    OptionIs,
    Predicate,
    QuantIs,
    Tri,
    leaves,
    substitute,
)
from guardscan.results import Evidence
from guardscan.verdict.chain import hops_evidence, noted
from guardscan.verdict.model import KernelJudge, Outcome
from guardscan.verdict.values import Shared, Values, possible, specific

__all__ = ['call_key', 'carried_scope', 'for_choice', 'judge_kernels', 'kernel_helpers']


def carried_scope(call: KernelCall) -> KernelCall:
    """A call that carries the option's value, judged without ``--quantization``:
    the choice matters only under a method that makes the call, so the methods
    that reach it are taken as chosen (``QuantIs`` -> true)."""
    cond = substitute(call.condition,
                      lambda atom: Const(True) if isinstance(atom, QuantIs) else None)
    return replace(call, condition=cond)


def for_choice(call: KernelCall, choice: str) -> KernelCall:
    """The call as ``choice`` makes it: with the ``backend=`` string it hands over."""
    if not call.backends:
        return call
    return replace(call, backend=dict(call.backends)[choice])


def kernel_helpers(mine: list[KernelCall], dest: str, choice: str, every: frozenset[str],
                    quantization: str | None, shared: Shared | None = None,
                    ) -> frozenset[tuple[str, str | None, str, int]]:
    """The choice's kernel calls (``mine``, by ``call_key``) made by code that
    other choices of the option run too (the call's condition can hold for
    another choice: ``if backend in ("flashinfer_trtllm", "marlin"):
    shuffle_matrix_a(...)``). Code several choices run (a layout, shuffle or
    quantize step) says nothing about one, as ``specific`` says of shared
    conditions; a TRUE from such a call is not support for the choice
    (``judge_kernels``). Two call sites each specific to its own choice may
    call the same kernel: each is that choice's own. ``shared``: the option's
    memos (``values.Shared``), kept across its choices."""
    if shared is None or shared.dest != dest:
        shared = Shared(dest)
    others = sorted(every - {choice})
    # a call handed the choice's own string (``backend=``) is the choice's own
    return frozenset(call_key(c) for c in mine if not c.backends and _other_runs(
        c.condition, others, quantization, shared))


def _other_runs(cond: Predicate, others: list[str], quantization: str | None,
                shared: Shared) -> bool:
    """Can ``cond`` hold for one of ``others``? Choices its tests of the option
    cannot tell apart are asked once per option judged under ``quantization``."""
    for each in others:
        key = (id(cond), shared.signature(cond, each))
        runs = shared.helpers.get(key)
        if runs is None:
            runs = shared.helpers[key] = possible(cond, Context(
                options={shared.dest: each}, quantization=quantization))
        if runs:
            return True
    return False


def call_key(call: KernelCall) -> tuple[str, str | None, str, int]:
    return call.target, call.backend, call.rel, call.line


def judge_kernels(index: Index, calls: list[KernelCall], kernels: KernelJudge, ctx: Context,
                   arch: Arch, every: frozenset[str], values: Values | None = None,
                   helpers: frozenset[tuple[str, str | None, str, int]] = frozenset(),
                   ) -> Outcome:
    """Kernel-library calls the choice can make: the ``excluding`` evidence,
    the ``positive`` (supporting) evidence and the caveats.

    Which calls count, by their reach condition on (choice, arch):

    * TRUE: the call is *required*. Every required call must admit the arch
      for ``supported``; one that excludes it makes the choice
      ``unsupported``, whatever the others say.
    * FALSE: an alternative chosen by the arch or the option's value that is
      not taken here; it does not count at all.
    * Undecided (model config, env, the quantization method): the call may or
      may not be made. Its exclusion is a caveat, and a mix decides nothing;
      but when every call the choice can make (required and undecided alike)
      excludes the arch, whatever runs fails: ``unsupported``. A call into a
      compiled package whose library holds code the arch can load is one
      that may run there (``KernelJudge.loadable``: it never supports, but
      then not every call excludes).

    Only code that exists for the choice (``owned``: its module, a function
    registered for it, what those call) counts under an undecided condition;
    shared code under an option test counts only where its reach is TRUE, since
    its other conditions are about other things (the method, the model) that
    may never hold for this choice.

    A *helper* on the path can make the choice ``unsupported`` but never
    ``supported``: that needs a TRUE answer from a call specific to the choice.
    A call is a helper when code other choices run makes it too
    (``kernel_helpers``), or when its TRUE is decided
    inside another public function of the kernel library (``KernelJudge.
    delegate``: ``shuffle_matrix_sf_a`` is supported where
    ``block_scale_interleave``, which many APIs call, is).
    A call the library cannot judge (arch-restricted code whose facts do not
    say, e.g. a check that only rejects other archs) is a doubt: no
    ``supported``, no all-exclude ``unsupported``. A call with no fact anywhere
    below it (a pure layout helper) is arch-neutral and does not count.
    """
    required_false: list[list[Evidence]] = []
    required_calls: list[KernelCall] = []
    falses: list[list[Evidence]] = []
    trues: list[list[Evidence]] = []
    helper_trues: list[list[Evidence]] = []
    doubts: list[list[Evidence]] = []
    #: excluding calls made only for some value of another option (which
    #: that option's flag avoids): caveats, never "whatever runs fails"
    avoidable: list[list[Evidence]] = []
    #: a call the choice can make reaches compiled code the arch can load
    #: (``flash_mla``'s sm_90a library beside FlashInfer calls that exclude
    #: sm90): then not every call excludes the arch
    runnable = False
    for call in calls:
        reach = values(call.condition, arch) if values is not None else call.condition.evaluate(ctx)
        if reach is Tri.FALSE or values is None and not specific(call.condition, ctx, every):
            continue  # (with ``values``, the caller kept the calls specific to the choice)
        if not call.owned and reach is not Tri.TRUE:
            continue  # shared code that may or may not make this call for the choice
        if not kernels.covers(call):
            continue  # torch, sgl_kernel...: not the kernel library
        support, chain = kernels.support(call, arch)
        if support is Tri.UNKNOWN and not chain:
            # no fact anywhere below it (a layout helper): arch-neutral, not a
            # doubt; but compiled code that the arch can load may run there
            runnable = runnable or kernels.loadable(call, arch)
            continue
        full = [*hops_evidence(index, call.hops), *chain]
        if support is Tri.FALSE:
            if reach is Tri.TRUE:
                required_false.append(full)
                required_calls.append(call)
            elif _chosen_elsewhere(call.condition, ctx):
                avoidable.append(full)
            else:
                falses.append(full)
        elif support is Tri.UNKNOWN:
            doubts.append(noted(full, "the kernel facts do not decide this arch", Status.CAVEAT))
        elif call_key(call) in helpers:
            helper_trues.append(noted(full, "a helper on the path (code other choices run "
                                             "makes this call too): can exclude, never "
                                             "support"))
        elif (delegate := kernels.delegate(call, arch)) is not None:
            helper_trues.append(noted(full, f"a helper on the path (decided in {delegate}, a "
                                             "public function other APIs share): can exclude, "
                                             "never support"))
        else:
            trues.append(full)
    if required_false:
        # a call made whatever the model excludes the arch; show the first one last.
        # Made only at the default of a mode option or an environment variable:
        # the other value is said (``not unsupported with SGLANG_X=1``)
        escapes = sorted({text for call in required_calls if values is not None
                          for text in values.mode_conditions(call.condition, arch, Tri.TRUE,
                                                             "unsupported")})
        return Outcome(excluding=tuple(
            e for chain in [*required_false[1:], required_false[0]] for e in chain),
            conditions=tuple(escapes))
    if falses and not trues and not doubts and not runnable:
        # every call the choice can make excludes the arch (a helper that runs
        # there does not make the choice's kernels run)
        return Outcome(excluding=tuple(e for chain in [*falses[1:], falses[0]] for e in chain))
    if trues and not falses and not doubts:
        return Outcome(positive=tuple(e for chain in [*helper_trues, *trues] for e in chain))
    mixed = [e for chain in falses for e in noted(
        chain, "other kernel calls of the choice are not excluded: decides nothing",
        Status.CAVEAT)]
    mixed += [e for chain in avoidable for e in noted(
        chain, "made only for some value of another option: decides nothing", Status.CAVEAT)]
    return Outcome(caveats=(*mixed, *(e for chain in [*doubts, *helper_trues] for e in chain)))


def _chosen_elsewhere(cond: Predicate, ctx: Context) -> bool:
    """Does reaching the call depend on an option ``ctx`` leaves open
    (``--nsa-decode-backend trtllm``)?"""
    return any(isinstance(a, OptionIs) and a.evaluate(ctx) is Tri.UNKNOWN for a in leaves(cond))
