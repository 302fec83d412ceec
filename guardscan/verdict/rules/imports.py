"""verdict rule (import): a name the choice uses that is bound only under a device guard excluding the arch, blocked.

What it judges
    ``import`` findings of the option: a name imported or defined only under
    a guard, used by the choice's code outside it.
Why it matters
    On an arch the guard excludes, the name does not exist: using it fails
    with a NameError or ImportError, SGLang's own refusal in effect.
Known limits
    Only a guard that is TRUE for the missing case on the arch blocks; an
    undecided one says nothing (errs toward ``unknown``).
Example
    ``if is_sm90_supported(): from .fa3 import fa3_kernel`` then
    ``fa3_kernel(...)`` in the choice's code: blocked on sm80.
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.predicate import Tri, neg
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import Example, major

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = (FindingKind.IMPORT,)


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.condition.evaluate(case.ctx) is not Tri.TRUE:
        return NOTHING
    return Outcome(blocking=tuple(finding_evidence(
        case.index, finding, Role.IMPORT, FactKind.IMPORT,
        args_of(arch=case.arch.name, condition=finding.condition.describe()))))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("the name is missing on the arch: blocked", "import", neg(major("==", 9)), "sm80",
            "blocking"),
    Example("the name exists on the arch: nothing", "import", neg(major("==", 9)), "sm90",
            "nothing"),
)
