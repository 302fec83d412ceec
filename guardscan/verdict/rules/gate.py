"""verdict rule (gate): a raise or failing assert on the choice's path, blocked, a caveat, or positive evidence.

What it judges
    ``gate`` and ``quant-gate`` findings about the choice (their condition can
    hold for it): the condition under which SGLang raises, evaluated for the
    choice on the arch with the other options at their defaults.
Why it matters
    A gate that raises on the arch is SGLang's own refusal: ``blocked``. One
    that depends on something guardscan cannot decide (model config, env, the
    quantization method when not given) is a caveat that says what it depends
    on. One that lets the arch through while it raises on others, because of
    this choice's value, is positive evidence.
Known limits
    A gate that another value of a mode option would change says so in the
    verdict's conditions; a method's requirement that only exempts other
    choices is no support, and neither is a call through a name only a
    conditional import binds (``link.unbound_imports``) on an arch where the
    import's test holds: the test picks an import (``mm_mxfp8`` is bound
    only under ``if is_blackwell():``), not a kernel that runs there; where
    it fails the call raises ``NameError``, which blocks. Undecided atoms are
    taken as independent, which errs toward a caveat, never toward
    ``blocked``. A gate in the
    implementation of an interface method (``FusedMoEMethodBase.apply``) is a
    caveat, not a block, for a choice that requires another option
    (``lora_marlin`` needs ``--enable-lora``): the code that option turns on
    may run in place of the method (LoRA's MoE layer replaces the method's
    core), which guardscan does not follow. Such a gate runs once the model
    is built, so for a choice a hook rewrites it holds only where it holds
    for the value the choice became. So does a gate read with the arguments
    of the call that reaches it (``link.bound_gates``), a call made while the
    model is built; such a gate also names the values of other backend
    options with which it may not raise: ``not blocked with --moe-a2a-backend
    flashinfer_megamoe``.
Example
    ``if not is_sm100_supported(): raise ValueError(...)`` under
    ``moe_runner_backend == "x"``: blocked on sm120, positive on sm100.
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import GATE_KINDS, Finding
from guardscan.link.companions import flag_of
from guardscan.link.unbound_imports import is_unbound_use
from guardscan.predicate import (
    Const,
    Context,
    OptionIs,
    Predicate,
    QuantIs,
    Tri,
    conj,
    neg,
    substitute,
)
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.escapes import escape_conditions
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import DEST, Example, X, major, unknown
from guardscan.verdict.values import raises_for

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = GATE_KINDS


def judge(finding: Finding, case: Case) -> Outcome:
    """One gate on one arch, when it is about the choice."""
    if not case.about.get(id(finding), False):
        return NOTHING
    index, arch, values = case.index, case.arch, case.values
    cond = finding.condition
    # run once the model is built, it sees what a hook rewrote the choice
    # into (``megamoe`` is ``auto`` with ``--moe-a2a-backend megamoe`` by then)
    if (finding.implements or finding.built) and values.becomes is not None and \
            values.as_built(cond, arch) is not Tri.TRUE:
        return NOTHING
    value = values(cond, arch)
    conditions: tuple[str, ...] = ()
    if value is not Tri.UNKNOWN:
        conditions = tuple(values.mode_conditions(cond, arch, value))
    if value is Tri.TRUE and finding.implements and values.needs:
        # the choice turns on other code (``--enable-lora``), which may run in
        # place of the method that raises (LoRA's MoE layer replaces its core)
        flags = ", ".join(flag_of(dest) for dest in values.needs)
        return Outcome(caveats=tuple(finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="could-raise", arch=arch.name,
                    undecided=f"whether the code {flags} turns on runs in place of "
                              f"{finding.implements}()"))), conditions=conditions)
    if value is Tri.TRUE and finding.escape is not None and \
            values(finding.escape, arch) is not Tri.TRUE:
        conditions = (*conditions, *escape_conditions(finding.escape, values.context(arch)))
    if value is Tri.TRUE and finding.target:
        # another option's value the gate may let through (``link.bound_gates``)
        conditions = (*conditions, *(
            f"not blocked with {flag_of(dest)} {choice}"
            for dest, _, choice in (t.partition("=") for t in finding.target)
            if values.context(arch).options.get(dest) != choice))
    if value is Tri.TRUE:
        return Outcome(blocking=tuple(finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="raises", arch=arch.name,
                    condition=launch_view(cond, values.context(arch)).describe()))),
            conditions=conditions)
    if value is Tri.UNKNOWN:
        could, methods, undecided = values.undecided_gate(cond, arch, case.every,
                                                          list(case.all_archs))
        if finding.implements and values.needs:
            methods = ()  # under those methods it is a caveat for this choice (above)
        if not could:
            return NOTHING
        if undecided is None:
            # another choice's gate, or undecided on every arch alike
            return Outcome(conditions=methods)
        return Outcome(caveats=tuple(finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="could-raise", arch=arch.name,
                    undecided="; ".join(undecided)[:300]), guards=False)),
            conditions=methods)
    # the gate lets this arch through: positive evidence when it stops others,
    # and raises because of this choice (a method's requirement that exempts
    # some choices, ``if not is_blackwell() and not marlin: raise``, says
    # nothing of the others' kernels; a name an import binds on the arch says
    # nothing of the kernel behind it)
    if values.mentions(cond) and not is_unbound_use(finding.text) and any(
            values(cond, other) is Tri.TRUE for other in case.all_archs if other != arch) \
            and raises_for(cond, values.context(arch)):
        return Outcome(positive=tuple(finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="admits", arch=arch.name, condition=cond.describe()))),
            conditions=conditions)
    return Outcome(conditions=conditions)


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("raises on the arch it excludes: blocked", "gate",
            conj(X, neg(major("==", 10))), "sm120", "blocking", "raises"),
    Example("admits the arch it needs while raising on others: positive", "gate",
            conj(X, neg(major("==", 10))), "sm100", "positive", "admits"),
    Example("undecided (a model property): a caveat, never blocked", "gate",
            conj(X, neg(major("==", 10)), unknown("config.use_mla")), "sm120", "caveats",
            "could-raise"),
    Example("an interface method's gate, for a choice that needs another option: a caveat",
            "gate", X, "sm120", "caveats", "could-raise",
            implements="FusedMoEMethodBase.apply", needs=("enable_lora",)),
    Example("an interface method's gate, for a choice alone: blocked", "gate", X, "sm120",
            "blocking", "raises", implements="FusedMoEMethodBase.apply"),
    Example("an interface method's gate, for a choice a hook rewrites into one it admits",
            "gate", X, "sm120", "nothing", implements="FusedMoEMethodBase.apply",
            becomes="y"),
    Example("raises at the other options' defaults, not with another all-to-all: blocked, "
            "that value a condition", "gate", conj(X, neg(major("==", 10))), "sm120",
            "blocking", "raises", target=("moe_a2a_backend=deepep",)),
    Example("a call through a name an import binds where it admits the arch: no support",
            "gate", conj(X, neg(major("==", 10))), "sm100", "nothing",
            text="mm_mxfp8.run(): mm_mxfp8 is bound only by the import at line 3"),
    Example("...and a block where the import's test fails", "gate",
            conj(X, neg(major("==", 10))), "sm120", "blocking", "raises",
            text="mm_mxfp8.run(): mm_mxfp8 is bound only by the import at line 3"),
    Example("another choice's gate says nothing of this one", "gate",
            conj(OptionIs(DEST, frozenset({"y"})), neg(major("==", 10))), "sm120", "nothing"),
)


def launch_view(cond: Predicate, ctx: Context) -> Predicate:
    """``cond`` as the launch judged sees it: the quantization method, when
    given, put in (a gate in code several methods share otherwise names every
    other method's branch); the rest is left for the reader."""
    if ctx.quantization is None:
        return cond
    shown = substitute(cond, lambda atom: Const(atom.evaluate(ctx) is Tri.TRUE)
                       if isinstance(atom, QuantIs) else None)
    return cond if isinstance(shown, Const) else shown
