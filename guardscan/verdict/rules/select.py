"""verdict rule (select): a device test that picks an implementation, shown and never a support claim.

What it judges
    ``select`` findings for the choice: ``if pred: A else: B`` in the choice's
    code, where both branches lead somewhere.
Why it matters
    This is the trap the project started from: ``if is_flashinfer_available()
    and is_sm120_supported(): from flashinfer import fp4_quantize`` in the
    ``flashinfer_trtllm`` runner only picks where a helper comes from; grep
    reads it as "supports sm120". The rule shows it, with its value on the
    arch, and claims nothing.
Known limits
    None in the direction of a wrong verdict: it never decides one.
Example
    The line above, on sm120: "picks an implementation (true on sm120); not a
    support claim".
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.predicate import Context
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import Example, major

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = (FindingKind.SELECT,)


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.choice != case.choice:
        return NOTHING
    value = finding.condition.evaluate(Context(arch=case.arch))
    return Outcome(caveats=tuple(finding_evidence(
        case.index, finding, Role.SELECT, FactKind.SELECT,
        args_of(value=value.value, arch=case.arch.name))))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("a device test picking an implementation is shown, never support", "select",
            major("==", 12), "sm120", "caveats", choice="x"),
    Example("another choice's select is not shown", "select", major("==", 12), "sm120",
            "nothing", choice="y"),
)
