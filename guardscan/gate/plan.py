"""gate (plan): the fail-fast checks one scan calls for on one architecture.

For each option and choice that is ``unsupported`` on the target arch (a
kernel excludes it, SGLang accepts it), with no condition under which it could
run (its ``conditions`` only ever block it: ``blocked with --quantization
quark``), the plan holds a ``Check``: where it goes
(``placement``), the guard it calls (``guards``), and the message it raises,
which names the deciding kernel fact. The guard may be true only where the
choice is excluded: on the judged archs where the verdict is ``unsupported``
or ``blocked``, under every condition. What cannot be gated is a ``NotGated`` with
the reason. The plan decides nothing about verdicts: it reads the scan's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from guardscan.arch import Arch
from guardscan.gate.guards import GuardFunction, choose_guard, guard_functions
from guardscan.gate.placement import Placement, find_placement
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.report.answer import arch_sort_key, deciding_evidence, short_reason
from guardscan.results import BackendVerdict, Evidence, OptionInfo, ScanResult, Verdict

__all__ = ["MARK", "Check", "GatePlan", "NotGated", "plan_gates"]

#: Every message a check raises ends with this, so a reader of the fork (and
#: a later run) can tell the checks guardscan added.
MARK = "(added by guardscan gate)"

_TIER = re.compile(r" \(tier [abc][^)]*\)")


@dataclass(frozen=True, slots=True)
class Check:
    option: str  # --moe-runner-backend
    dest: str  # moe_runner_backend
    choice: str
    guard: GuardFunction
    placement: Placement
    evidence: Evidence  # the deciding kernel fact on the target arch
    message: str

    @property
    def condition(self) -> str:
        return (f'{self.placement.instance}.{self.dest} == "{self.choice}" and '
                f"{self.guard.name}()")


@dataclass(frozen=True, slots=True)
class NotGated:
    option: str
    choice: str
    reason: str


@dataclass
class GatePlan:
    arch: str
    checks: list[Check] = field(default_factory=list)
    not_gated: list[NotGated] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return sorted({c.placement.rel for c in self.checks})


def _message(check_option: str, choice: str, archs: Sequence[str], ev: Evidence) -> str:
    fact = _TIER.sub("", short_reason(ev)) or ev.text.strip()
    return (f"{check_option} {choice} does not run on {', '.join(archs)}: "
            f"{ev.path}:{ev.line} {fact} {MARK}")


_AVOID = (Verdict.UNSUPPORTED, Verdict.BLOCKED)


def _still_excluded(verdict: BackendVerdict) -> bool:
    """No condition could make the choice run: each one only blocks it
    (``blocked with --quantization quark``)."""
    return all(c.split(" ", 1)[0] in {v.value for v in _AVOID} for c in verdict.conditions)


def _excluded(verdicts: Sequence[BackendVerdict]) -> set[str]:
    return {v.arch for v in verdicts if v.verdict in _AVOID and _still_excluded(v)}


def plan_gates(result: ScanResult, arch: Arch, index: Index, vocab: Vocabulary,
               judged: Sequence[Arch]) -> GatePlan:
    """The checks for ``arch``; ``result`` must judge every arch of ``judged``
    (the standard set and ``arch``), so a guard can be proven false where the
    choice runs."""
    plan = GatePlan(arch.name)
    by_flag: dict[str, OptionInfo] = {o.flag: o for o in result.options}
    grouped: dict[tuple[str, str], list[BackendVerdict]] = {}
    for verdict in result.backends:
        grouped.setdefault((verdict.option, verdict.choice), []).append(verdict)
    placements: dict[str, Placement | str] = {}
    candidates: dict[tuple[str, str], list[GuardFunction]] = {}
    for (flag, choice), verdicts in grouped.items():
        here = next((v for v in verdicts if v.arch == arch.name), None)
        if here is None or here.verdict is not Verdict.UNSUPPORTED or here.platform:
            continue
        if not _still_excluded(here):
            plan.not_gated.append(NotGated(flag, choice, "it may run under a condition: "
                                           + "; ".join(here.conditions)))
            continue
        evidence = deciding_evidence(here)
        option = by_flag.get(flag)
        if option is None or evidence is None:
            plan.not_gated.append(NotGated(flag, choice, "no deciding kernel fact in the chain"))
            continue
        if flag not in placements:
            placements[flag] = find_placement(index, option)
        placement = placements[flag]
        if isinstance(placement, str):
            plan.not_gated.append(NotGated(flag, choice, placement))
            continue
        key = (placement.rel, placement.scope)
        if key not in candidates:
            candidates[key] = guard_functions(index, vocab, placement.rel, placement.scope,
                                              placement.line, judged)
        guard, near = choose_guard(candidates[key], arch.name, _excluded(verdicts))
        if guard is None:
            if near:
                reason = (f"no guard function the tree defines is true on {arch.name} and "
                          f"false wherever {choice} runs: " + "; ".join(near[:3]))
            else:
                reason = (f"no guard function {placement.rel} can call is true on "
                          f"{arch.name}")
            plan.not_gated.append(NotGated(flag, choice, reason))
            continue
        archs = sorted(guard.true_on(), key=arch_sort_key)
        plan.checks.append(Check(flag, option.dest, choice, guard, placement, evidence,
                                 _message(flag, choice, archs, evidence)))
    return plan
