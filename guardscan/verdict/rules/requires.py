"""verdict rule (requires): the other options a choice cannot run without, given while it is judged and said in its conditions.

What it judges
    ``requires`` findings (``link.companions``): a check without a device
    test that rejects the choice unless another option is given or holds a
    value (``--moe-runner-backend lora_triton`` "requires --enable-lora").
Why it matters
    A launch naming the choice alone fails that check on every arch; read as
    a gate it would call every arch blocked and hide what the arch decides.
    The choice is judged with its companions given (an option companion
    holds its value in the context, ``verdict.values``) and its conditions
    say what must come with it: "needs --enable-lora".
Known limits
    It never decides a verdict. A companion that already holds (the other
    option's default is the value required) is not repeated.
Example
    ``lora_triton`` on sm90 (sglang 0.5.23): supported, "needs --enable-lora",
    "needs --lora-backend triton_v2".
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.link.companions import flag_of
from guardscan.predicate import OptionIs, Tri
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import DEST, Example, X

__all__ = ["EXAMPLES", "KINDS", "companions", "judge"]

KINDS = (FindingKind.REQUIRES,)


def companions(finding: Finding) -> list[tuple[str, str]]:
    """The finding's companions as (dest, value); value "" for a flag."""
    return [tuple(t.split("=", 1)) for t in finding.target if "=" in t]  # type: ignore[misc]


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.condition.evaluate(case.ctx) is not Tri.TRUE:
        return NOTHING
    needs = [flag_of(dest) + (f" {value}" if value else "")
             for dest, value in companions(finding)
             if not value or case.values.shared.unset.get(dest) != value]
    if not needs:
        return NOTHING
    evidence = finding_evidence(case.index, finding, Role.LINK, FactKind.REQUIRES,
                                args_of(companion=", ".join(needs)), guards=False)
    return Outcome(caveats=tuple(evidence), conditions=tuple(f"needs {n}" for n in needs))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("a flag the choice requires is a condition, never a block", "requires", X,
            "sm90", "caveats", target=("enable_lora=",)),
    Example("another choice's requirement is not shown", "requires",
            OptionIs(DEST, frozenset({"y"})), "sm90", "nothing",
            target=("enable_lora=",)),
)
