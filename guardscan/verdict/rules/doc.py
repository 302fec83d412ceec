"""verdict rule (doc): a help-text claim about architectures, shown and never deciding.

What it judges
    ``doc`` findings for the choice: the option's help text naming
    architectures for it ("Hopper SM90 only").
Why it matters
    The help text is what users read; shown beside the verdict it lets them
    see where the documentation and the code agree or drift.
Known limits
    Weak evidence: it never decides a verdict. An ``only:`` claim that does
    not name the arch is shown as excluding it.
Example
    ``"fa3": "FlashAttention 3 (Hopper SM90 only)"``: names sm90; on sm120 it
    excludes it (weak evidence).
"""

from __future__ import annotations

from guardscan.evidence import FactKind, args_of
from guardscan.link import Finding, FindingKind
from guardscan.predicate import Context, Tri
from guardscan.results import Evidence, Role
from guardscan.verdict.model import NOTHING, Case, Outcome
from guardscan.verdict.rules.examples import Example, major

__all__ = ["EXAMPLES", "KINDS", "judge"]

KINDS = (FindingKind.DOC,)


def judge(finding: Finding, case: Case) -> Outcome:
    if finding.choice != case.choice:
        return NOTHING
    if finding.condition.evaluate(Context(arch=case.arch)) is Tri.TRUE:
        claim = "names"
    elif finding.text.startswith("only: "):
        claim = "excludes"
    else:
        return NOTHING
    return Outcome(docs=(Evidence.of(finding.rel, finding.line, Role.DOC.value, finding.text,
                                     FactKind.DOC, args_of(claim=claim, arch=case.arch.name)),))


#: What the rule returns on small cases (expanded into tests by tests/test_verdict_rules.py).
EXAMPLES = (
    Example("help text naming the arch", "doc", major("==", 9), "sm90", "docs", choice="x",
            text="Hopper SM90 only"),
    Example("an only: claim on another arch excludes it", "doc", major("==", 9), "sm120",
            "docs", choice="x", text="only: Hopper SM90"),
    Example("a claim about another arch, not an only: nothing", "doc", major("==", 9), "sm120",
            "nothing", choice="x", text="fast on Hopper SM90"),
)
