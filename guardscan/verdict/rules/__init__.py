"""verdict rules: one module per kind of finding or fact, each returning its ``Outcome``.

A rule is a module with ``KINDS`` (the finding kinds it judges) and
``judge(finding, case) -> Outcome``, its docstring under the headings What it
judges / Why it matters / Known limits / Example (``docs/verdicts.md`` is
generated from them). The kernel library's facts are judged by
``rules.kernels`` over the choice's kernel calls; ``rules.compiled`` answers
those that go into a pinned compiled package. Adding a rule is one module
here and one line in ``RULES``; the ladder that turns outcomes into the four
verdicts stays in ``verdict.ladder``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from guardscan.link import Finding
from guardscan.verdict.model import Case, Outcome
from guardscan.verdict.rules import (
    compiled,
    default,
    doc,
    gate,
    imports,
    kernels,
    platform,
    requires,
    select,
)

__all__ = ["FINDING_RULES", "RULES", "rule_for"]

#: the rules over findings, in the order their docs are shown
FINDING_RULES: tuple[ModuleType, ...] = (gate, imports, default, doc, select, requires,
                                         platform)
#: every rule, the kernel-library ones last (``compiled`` answers kernel calls
#: into the compiled packages, which ``kernels`` then judges like any other)
RULES: tuple[ModuleType, ...] = (*FINDING_RULES, kernels, compiled)

_BY_KIND: dict[str, Callable[[Finding, Case], Outcome]] = {
    str(kind): module.judge for module in FINDING_RULES for kind in module.KINDS}


def rule_for(finding: Finding) -> Callable[[Finding, Case], Outcome] | None:
    """The rule that judges this kind of finding (None: no rule, e.g. an alias,
    which the ladder follows instead)."""
    return _BY_KIND.get(str(finding.kind))
