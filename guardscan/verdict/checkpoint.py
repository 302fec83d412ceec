"""verdict (checkpoint decides): without ``--quantization``, one method's gate and another method's own pick of the choice leave the verdict to the checkpoint.

What it judges
    Without ``--quantization``, the method is the checkpoint's. A gate in
    the code of some methods blocks the choice on the arch (MXFP4's ``if
    backend.is_marlin() and not is_sm90(): raise``), while on the same arch
    another method, none of those, resolves ``auto`` to that very choice
    (ModelOpt FP4's ``if (8, 0) <= capability < (10, 0): moe_runner_backend =
    MARLIN``): SGLang runs the choice there for that method's checkpoints and
    refuses it for the others.
Why it matters
    Such a gate was counted for every checkpoint: ``--moe-runner-backend
    marlin`` on an A100 was called blocked, though SGLang itself picks
    Marlin there for NVFP4 checkpoints. Neither side decides for a launch
    whose checkpoint is not known: the gate becomes a condition ("blocked
    with --quantization mxfp4"), the pick is shown beside it, and the verdict
    is what the rest of the evidence says (``unknown`` where nothing else
    speaks), never ``supported`` on the strength of the other method's pick.
Known limits
    Only a pick (``default``) counts as the other method's word: a method
    that merely tests the option for the choice, or reaches it through code
    many methods share, may also run it gate-free, and its gate then still
    blocks without ``--quantization`` (errs toward ``blocked`` where a
    choice is mostly used with one kind of checkpoint, as the truth files
    label it). A pick of another choice that the gate's test does not tell
    apart counts for that choice only: ``experimental_sgl_marlin``
    (``is_marlin()`` holds for it too) stays blocked on sm80 though ModelOpt
    picks ``marlin`` there. With ``--quantization`` given nothing changes
    here.
Example
    sglang 0.5.19, ``--moe-runner-backend marlin`` on sm80 without
    ``--quantization``: ``mxfp4.py:632`` (MXFP4 Marlin requires SM90+)
    under compressed-tensors and mxfp4, ``modelopt_quant.py:2835`` (auto ->
    marlin on capability 8.0-9.x) under modelopt_fp4: ``unknown``, blocked
    with --quantization compressed-tensors or mxfp4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from guardscan.evidence import FactKind, Status
from guardscan.link import GATE_KINDS, Finding, FindingKind
from guardscan.predicate import Predicate, QuantIs, atoms
from guardscan.results import Evidence
from guardscan.verdict.model import Outcome

__all__ = ["checkpoint_decides", "methods_of"]


def methods_of(cond: Predicate) -> frozenset[str]:
    """The ``--quantization`` methods a condition names (``QuantIs`` atoms).

    >>> from guardscan.predicate import conj, disj
    >>> sorted(methods_of(conj(disj(QuantIs(frozenset(), unset=True),
    ...                             QuantIs(frozenset({"mxfp4"}))), QuantIs(frozenset({"fp8"})))))
    ['fp8', 'mxfp4']
    """
    return frozenset(m for a in atoms(cond) if isinstance(a, QuantIs) for m in a.methods)


def checkpoint_decides(judged: Sequence[tuple[Finding, Outcome]],
                       ) -> list[tuple[Finding, Outcome]]:
    """The rules' outcomes for one choice on one arch, judged without
    ``--quantization``: a blocking gate of some methods, where another
    method picks the choice here (a positive ``default``), is a condition;
    that pick is then shown, not counted as support."""
    picks = [(f, o) for f, o in judged if f.kind == FindingKind.DEFAULT and o.positive]
    picked = frozenset().union(*(methods_of(f.condition) for f, _ in picks))
    if not picked:
        return list(judged)
    out: list[tuple[Finding, Outcome]] = []
    demoted: set[str] = set()
    for finding, outcome in judged:
        gated = methods_of(finding.condition)
        if outcome.blocking and finding.kind in GATE_KINDS and gated and picked - gated:
            others = picked - gated
            demoted |= others
            note = (f"only for {_names(gated)} checkpoints: {_names(others)} picks the "
                    "choice here, so without --quantization the checkpoint decides")
            outcome = replace(outcome, blocking=(), caveats=(
                *outcome.caveats, *_shown(outcome.blocking, FactKind.GATE, note)),
                conditions=(*outcome.conditions,
                            *(f"blocked with --quantization {m}" for m in sorted(gated))))
        out.append((finding, outcome))
    if not demoted:
        return out
    note = "a pick for those checkpoints only: other methods' gates refuse the choice here"
    return [(f, replace(o, positive=(), caveats=(
        *o.caveats, *_shown(o.positive, FactKind.DEFAULT, note))))
            if f.kind == FindingKind.DEFAULT and o.positive and methods_of(f.condition) & demoted
            else (f, o) for f, o in out]


def _names(methods: frozenset[str]) -> str:
    return ", ".join(sorted(methods))


def _shown(chain: tuple[Evidence, ...], kind: FactKind, note: str) -> tuple[Evidence, ...]:
    """A chain kept beside the verdict: its ``kind`` lines say why they do not
    decide, and are caveats."""
    return tuple(ev.qualified(note).with_status(Status.CAVEAT) if ev.kind == kind else ev
                 for ev in chain)
