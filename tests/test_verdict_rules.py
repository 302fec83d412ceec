"""Each verdict rule's ``EXAMPLES`` (``guardscan.verdict.rules``), expanded into
tests: the rule on a small finding, on one arch, returns what the example says
(Fixit's VALID/INVALID snippets). A failing case prints the example and the outcome."""

from __future__ import annotations

import pytest

from guardscan.arch import parse_arch, standard_archs
from guardscan.evidence import arg
from guardscan.link import Finding, FindingKind
from guardscan.results import OptionInfo
from guardscan.verdict.model import Case, Outcome
from guardscan.verdict.rules import FINDING_RULES, RULES
from guardscan.verdict.rules.examples import DEST, Example
from guardscan.verdict.values import Shared, Values, about_sets

OPTION = OptionInfo("--moe-runner-backend", DEST, ("x", "y"), "sglang/srt/server_args.py", 1)
CASES = [pytest.param(rule, example, id=f"{rule.__name__.rsplit('.', 1)[-1]}: {example.name}")
         for rule in FINDING_RULES for example in rule.EXAMPLES]


class _Lines:
    """Stands in for the index: the rules only read line texts."""

    def line_text(self, rel: str, line: int) -> str:
        return f"{rel}:{line}"


def _outcome(rule: object, example: Example) -> Outcome:
    finding = Finding(FindingKind(example.kind), "sglang/srt/layers/moe/runner.py", 7,
                      example.condition, choice=example.choice, option=DEST,
                      text=example.text, target=example.target,
                      implements=example.implements)
    arch = parse_arch(example.arch)
    values = Values(Shared(DEST), "x", None, needs=example.needs, becomes=example.becomes)
    case = Case(_Lines(), OPTION, "x", arch, values.context(arch),  # type: ignore[arg-type]
                tuple(standard_archs()), frozenset(OPTION.choices), values, None,
                {key: "x" in about for key, about in
                 about_sets([finding], OPTION, None).items()})
    return rule.judge(finding, case)  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_rule_example(rule: object, example: Example) -> None:
    outcome = _outcome(rule, example)
    filled = [name for name in ("blocking", "excluding", "positive", "caveats", "docs")
              if getattr(outcome, name)]
    assert filled == ([] if example.expect == "nothing" else [example.expect]), (
        example, outcome)
    if example.effect:
        last = getattr(outcome, example.expect)[-1]
        assert arg(last.args, "effect") == example.effect, (example, last)


def test_every_rule_documents_itself_and_finding_rules_have_examples() -> None:
    for rule in RULES:
        doc = rule.__doc__ or ""
        for heading in ("What it judges", "Why it matters", "Known limits", "Example"):
            assert f"\n{heading}\n" in doc, (rule.__name__, heading)
    for rule in FINDING_RULES:
        assert rule.EXAMPLES, rule.__name__
        assert {e.expect for e in rule.EXAMPLES} - {"nothing"}, rule.__name__
        assert "nothing" in {e.expect for e in rule.EXAMPLES}, rule.__name__


def test_gates_cover_every_path_only_when_no_path_escapes_but_an_empty_one() -> None:
    from guardscan.predicate import Unknown, conj, neg
    from guardscan.verdict.every_path import covers

    masked, bf16, empty = Unknown("masked"), Unknown("bf16"), Unknown("all_tokens == 0")
    branches = [conj(masked, bf16), conj(masked, neg(bf16)), conj(neg(masked), bf16)]
    # the fourth branch's gate, after an empty-batch return
    assert covers([*branches, conj(neg(masked), neg(bf16), neg(empty))]) == ["all_tokens == 0"]
    assert covers([*branches, conj(neg(masked), neg(bf16))]) == []
    # a branch with no gate at all escapes
    assert covers(branches) is None
    # an escape through a test that is not a count's zero is a real path
    assert covers([*branches, conj(neg(masked), neg(bf16), neg(Unknown("x is None")))]) is None
    # rank 0 is a launch's common case, not an empty batch
    assert covers([*branches, conj(neg(masked), neg(bf16), neg(Unknown("tp_rank == 0")))]) is None
