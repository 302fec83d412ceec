"""verdict (checkpoint decides): without ``--quantization``, one method's gate and another method's own pick of the choice leave the verdict to the checkpoint.

What it judges
    Without ``--quantization``, the method is the checkpoint's. A gate in
    the code of some methods blocks the choice on the arch (MXFP4's ``if
    backend.is_marlin() and not is_sm90(): raise``), while on the same arch
    another method, none of those, resolves ``auto`` to that very choice
    (ModelOpt FP4's ``if (8, 0) <= capability < (10, 0): moe_runner_backend =
    MARLIN``), or exempts it from a gate of its own that rejects the other
    choices there (``if not is_blackwell and not backend.is_marlin():
    raise``: its Marlin fallback): SGLang runs the choice there for that
    method's checkpoints and refuses it for the others.
Why it matters
    Such a gate was counted for every checkpoint: ``--moe-runner-backend
    marlin`` on an A100 was called blocked, though SGLang itself picks
    Marlin there for NVFP4 checkpoints. Neither side decides for a launch
    whose checkpoint is not known: the gate becomes a condition ("blocked
    with --quantization mxfp4"), the pick is shown beside it, and the verdict
    is what the rest of the evidence says (``unknown`` where nothing else
    speaks), never ``supported`` on the strength of the other method's pick.
Known limits
    Only a pick (``default``) or an exemption counts as the other method's
    word: a method
    that merely tests the option for the choice, or reaches it through code
    many methods share, may also run it gate-free, and its gate then still
    blocks without ``--quantization`` (errs toward ``blocked`` where a
    choice is mostly used with one kind of checkpoint, as the truth files
    label it). With ``--quantization`` given nothing changes here.
Example
    sglang 0.5.19, ``--moe-runner-backend marlin`` on sm80 without
    ``--quantization``: ``mxfp4.py:632`` (MXFP4 Marlin requires SM90+)
    under compressed-tensors and mxfp4, ``modelopt_quant.py:2835`` (auto ->
    marlin on capability 8.0-9.x) under modelopt_fp4: ``unknown``, blocked
    with --quantization compressed-tensors or mxfp4. ``experimental_sgl_marlin``
    (``is_marlin()`` holds for it too) on sm80 the same way, by
    ``modelopt_quant.py:2259``'s exemption.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from weakref import WeakKeyDictionary

from guardscan.evidence import FactKind, Status, args_of
from guardscan.link import GATE_KINDS, Finding, FindingKind
from guardscan.predicate import (
    Const,
    OptionIs,
    Predicate,
    QuantIs,
    Tri,
    leaves,
    substitute,
)
from guardscan.predicate_dag import value
from guardscan.results import Evidence, Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import Case, Outcome
from guardscan.verdict.values import Shared, method_condition

__all__ = ["checkpoint_decides", "methods_of"]


def methods_of(cond: Predicate) -> frozenset[str]:
    """The ``--quantization`` methods a condition names (``QuantIs`` atoms).

    >>> from guardscan.predicate import conj, disj
    >>> sorted(methods_of(conj(disj(QuantIs(frozenset(), unset=True),
    ...                             QuantIs(frozenset({"mxfp4"}))), QuantIs(frozenset({"fp8"})))))
    ['fp8', 'mxfp4']
    """
    return frozenset(m for a in leaves(cond) if isinstance(a, QuantIs) for m in a.methods)


def checkpoint_decides(judged: Sequence[tuple[Finding, Outcome]], case: Case,
                       ) -> list[tuple[Finding, Outcome]]:
    """The rules' outcomes for one choice on one arch (``case``), judged
    without ``--quantization``: a blocking gate of some methods, where
    another method picks the choice here (a positive ``default``) or exempts
    it (``exempting_methods``), is a condition; that pick is then shown, not counted
    as support."""
    memo = _memo(case)
    blocking = [memo.methods(f.condition) for f, o in judged
                if o.blocking and f.kind in GATE_KINDS]
    if not blocking or not all(blocking):
        # nothing blocks, or a gate of no method does, whatever the checkpoint
        return list(judged)
    # a gate of only the methods every blocking gate names can't set any of them aside
    common = frozenset.intersection(*blocking)
    picks = [(f, o) for f, o in judged if f.kind == FindingKind.DEFAULT and o.positive]
    spares = {id(f): methods for f, o in judged if f.kind in GATE_KINDS and not o.blocking
              and memo.methods(f.condition) - common
              and (methods := memo.exempting(f.condition, case))}
    picked = frozenset().union(*(memo.methods(f.condition) for f, _ in picks), *spares.values())
    if not picked:
        return list(judged)
    out: list[tuple[Finding, Outcome]] = []
    demoted: set[str] = set()
    for finding, outcome in judged:
        gated = memo.methods(finding.condition)
        if outcome.blocking and finding.kind in GATE_KINDS and gated and picked - gated:
            others = picked - gated
            demoted |= others
            note = (f"only for {_names(gated)} checkpoints: {_names(others)} runs the "
                    "choice here, so without --quantization the checkpoint decides")
            outcome = replace(outcome, blocking=(), caveats=(
                *outcome.caveats, *_shown(outcome.blocking, FactKind.GATE, note)),
                conditions=(*outcome.conditions,
                            *(method_condition(m, case.values.shared.checkpoint_methods)
                              for m in sorted(gated))))
        out.append((finding, outcome))
    if not demoted:
        return out
    picked_note = "a pick for those checkpoints only: other methods' gates refuse the choice here"
    spared_note = ("spares the choice here for those checkpoints: other methods' gates refuse "
                   "it")
    shown: list[tuple[Finding, Outcome]] = []
    for finding, outcome in out:
        if finding.kind == FindingKind.DEFAULT and outcome.positive \
                and memo.methods(finding.condition) & demoted:
            outcome = replace(outcome, positive=(), caveats=(
                *outcome.caveats, *_shown(outcome.positive, FactKind.DEFAULT, picked_note)))
        elif spares.get(id(finding), frozenset()) & demoted:
            outcome = replace(outcome, caveats=(*outcome.caveats, *_shown(tuple(finding_evidence(
                case.index, finding, Role.GATE, FactKind.GATE, args_of(
                    effect="admits", arch=case.arch.name,
                    condition=finding.condition.describe()))), FactKind.GATE, spared_note)))
        shown.append((finding, outcome))
    return shown


def exempting_methods(cond: Predicate, case: Case) -> frozenset[str]:
    """The methods under which a gate's condition spares the case's choice
    on its arch only by its tests of the option that name the choice: it
    does not raise for the choice there, and would, were those tests false
    (``not is_blackwell and not backend.is_marlin()`` spares ``marlin`` off
    Blackwell; ``backend == "triton" and not backend.is_marlin()`` spares
    nothing, it is Triton's).

    >>> from guardscan.arch import parse_arch
    >>> from guardscan.predicate import Device, conj, neg
    >>> from guardscan.results import OptionInfo
    >>> from guardscan.verdict.values import Shared, method_condition, Values
    >>> marlin = OptionIs("moe_runner_backend", frozenset({"marlin"}))
    >>> triton = OptionIs("moe_runner_backend", frozenset({"triton"}))
    >>> nvfp4 = QuantIs(frozenset({"nvfp4"}))
    >>> values = Values(Shared("moe_runner_backend"), "marlin", None)
    >>> option = OptionInfo("--moe-runner-backend", "moe_runner_backend",
    ...                     ("triton", "marlin"), "server_args.py", 1)
    >>> sm80 = parse_arch("sm80")
    >>> case = Case(None, option, "marlin", sm80, values.context(sm80), (sm80,),
    ...             frozenset(option.choices), values, None, {})
    >>> not_blackwell = neg(Device("major", "==", 10))
    >>> sorted(exempting_methods(conj(nvfp4, not_blackwell, neg(marlin)), case))
    ['nvfp4']
    >>> sorted(exempting_methods(conj(nvfp4, triton, not_blackwell, neg(marlin)), case))
    []
    """
    return _exempting(cond, _unnamed(cond, case.option.dest, case.choice), case)


def _unnamed(cond: Predicate, dest: str, choice: str) -> Predicate | None:
    """``cond`` with its tests of ``dest`` that name ``choice`` false, or
    None when it has none (the same on every arch: ``_Memo`` keeps it per
    choice)."""
    named = {a for a in leaves(cond)
             if isinstance(a, OptionIs) and a.option == dest and choice in a.choices}
    if not named:
        return None
    return substitute(cond, lambda atom: Const(False) if atom in named else None)


def _exempting(cond: Predicate, unnamed: Predicate | None, case: Case) -> frozenset[str]:
    if unnamed is None:
        return frozenset()
    ctx = case.ctx
    under = [(m, replace(ctx, quantization=m)) for m in sorted(methods_of(cond))]
    return frozenset(m for m, at in under if value(cond, at) is Tri.FALSE
                     and value(unnamed, at) is Tri.TRUE)


class _Memo:
    """What a condition comes to here, once per option judged (the conditions
    are the findings', alive while the option is judged)."""

    def __init__(self) -> None:
        self._methods: dict[int, frozenset[str]] = {}
        self._exempting: dict[tuple[int, str, str], frozenset[str]] = {}
        #: ``_unnamed`` of a condition, by the condition and the choice
        self._unnamed: dict[tuple[int, str], Predicate | None] = {}

    def methods(self, cond: Predicate) -> frozenset[str]:
        found = self._methods.get(id(cond))
        if found is None:
            found = self._methods[id(cond)] = methods_of(cond)
        return found

    def exempting(self, cond: Predicate, case: Case) -> frozenset[str]:
        key = (id(cond), case.choice, case.arch.name)
        found = self._exempting.get(key)
        if found is None:
            unnamed_key = (id(cond), case.choice)
            if unnamed_key in self._unnamed:
                unnamed = self._unnamed[unnamed_key]
            else:
                unnamed = self._unnamed[unnamed_key] = _unnamed(cond, case.option.dest,
                                                                case.choice)
            found = self._exempting[key] = _exempting(cond, unnamed, case)
        return found


#: one memo per option judged (its ``Shared``), gone with it
_MEMOS: WeakKeyDictionary[Shared, _Memo] = WeakKeyDictionary()


def _memo(case: Case) -> _Memo:
    memo = _MEMOS.get(case.values.shared)
    if memo is None:
        memo = _MEMOS[case.values.shared] = _Memo()
    return memo


def _names(methods: frozenset[str]) -> str:
    return ", ".join(sorted(methods))


def _shown(chain: tuple[Evidence, ...], kind: FactKind, note: str) -> tuple[Evidence, ...]:
    """A chain kept beside the verdict: its ``kind`` lines say why they do not
    decide, and are caveats."""
    return tuple(ev.qualified(note).with_status(Status.CAVEAT) if ev.kind == kind else ev
                 for ev in chain)
