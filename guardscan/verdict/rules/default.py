"""verdict rule (default): ``auto`` resolves to the choice under a device condition, positive evidence or a fallback.

What it judges
    ``default`` findings for the choice: an assignment of the choice to the
    option under a condition that tests the device.
Why it matters
    SGLang picking the choice itself on an arch is evidence that it runs
    there.
Known limits
    Only a condition that names the arch counts: one that would also hold on
    a far-future GPU (an ``else`` after tests of older archs) is a fallback
    for every arch the code does not test, shown as a caveat and never a
    claim, as a check that only rejects some archs decides nothing. Errs
    toward ``unknown``. Each default line says whether its condition surely
    holds on the arch (``holds``: ``always``, or ``maybe`` where it also
    tests what the launch may not say, such as a quantization not given),
    which ``verdict.auto`` reads to say what ``auto`` becomes.
Example
    ``if is_sm100_supported(): self.moe_runner_backend = "flashinfer_trtllm"``:
    positive on sm100; ``else: ... = "triton"`` is a fallback, no claim.
"""

from __future__ import annotations

from guardscan.arch import FAR_FUTURE
from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.predicate import Context, mentions_capability, neg
from guardscan.results import Role
from guardscan.verdict.chain import FALLBACK, finding_evidence
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import Example, major
from guardscan.verdict.values import possible

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = (FindingKind.DEFAULT,)

#: the value an option holds while SGLang resolves it
AUTO = "auto"


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.choice != case.choice:
        return NOTHING
    quantization = case.quantization
    cond = finding.condition
    if not (possible(cond, Context(arch=case.arch, quantization=quantization))
            and mentions_capability(cond)
            and any(not possible(cond, Context(arch=other, quantization=quantization))
                    for other in case.all_archs)):
        return NOTHING
    # whether it surely holds here, the option at ``auto`` (what resolves it
    # is asked), or only may (a quantization not given, a model flag)
    holds = "always" if not possible(neg(cond), Context(
        arch=case.arch, quantization=quantization,
        options={case.option.dest: AUTO})) else "maybe"
    where = args_of(flag=case.option.flag, choice=case.choice, condition=cond.describe(),
                    holds=holds)
    if possible(cond, Context(arch=FAR_FUTURE, quantization=quantization)):
        return Outcome(caveats=tuple(finding_evidence(
            case.index, finding, Role.DEFAULT, FactKind.DEFAULT,
            (*where, ("fallback", "true"), ("qualifier", FALLBACK)))))
    return Outcome(positive=tuple(finding_evidence(case.index, finding, Role.DEFAULT,
                                                   FactKind.DEFAULT, where)))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("auto becomes the choice on the arch it names: positive", "default",
            major("==", 10), "sm100", "positive", choice="x"),
    Example("an else after tests of older archs is a fallback, no claim", "default",
            major(">=", 10), "sm120", "caveats", choice="x"),
    Example("a default for another arch says nothing here", "default",
            major("==", 10), "sm120", "nothing", choice="x"),
    Example("a default of another choice says nothing of this one", "default",
            major("==", 10), "sm100", "nothing", choice="y"),
)
