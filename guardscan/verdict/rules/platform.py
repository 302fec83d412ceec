"""verdict rule (platform): the choice's own code is another platform's, shown and never deciding.

What it judges
    ``platform`` findings for the choice (``link.platform_code``): a call,
    from code that runs for the choice and not for every choice, into a
    package the tree keeps for a non-CUDA platform
    (``sglang/srt/hardware_backend/npu/``).
Why it matters
    Such a choice is that platform's: on an NVIDIA GPU it is listed "for
    another platform" with this chain, not offered as "unknown, try it".
Known limits
    It labels the choice and never changes its verdict: a platform package's
    code may still run on CUDA, and a label from the option's own help text
    or list comments (``options.platforms``) comes first. A call on a path
    that every choice shares, or that is false here, labels nothing.
Example
    ``if self._use_ascend_fuseep: return forward_fuseep(...)``, with
    ``forward_fuseep`` in ``hardware_backend/npu/moe/fuseep.py``:
    ``ascend_fuseep`` is ``npu``'s choice.
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.predicate import Tri
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import Example, X, major

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = (FindingKind.PLATFORM,)


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.option != case.option.dest or not finding.target:
        return NOTHING
    if finding.condition.evaluate(case.ctx) is Tri.FALSE or \
            not case.values.specific(finding.condition, case.every):
        return NOTHING
    platform = finding.target[0]
    return Outcome(docs=tuple(finding_evidence(
        case.index, finding, Role.PLATFORM, FactKind.PLATFORM,
        args_of(platform=platform))), platforms=(platform,))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("the choice's own code calls into an npu package", "platform", X, "sm120",
            "docs", target=("npu",)),
    Example("a call every choice makes labels nothing", "platform", major(">=", 0), "sm120",
            "nothing", target=("npu",)),
)
