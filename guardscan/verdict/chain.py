"""verdicts (chain): evidence lines from findings and hops, and each line's status in the verdict, set here once the verdict is decided.
"""

from __future__ import annotations

from collections.abc import Iterable

from guardscan.evidence import Args, FactKind, Status, arg, args_of
from guardscan.index import Index
from guardscan.link import (
    Finding,
    Hop,
    HopRole,
    evidence_role,
)
from guardscan.results import Evidence, Role, Verdict

__all__ = ['FALLBACK', 'dedupe_keep_last', 'finding_evidence', 'hops_evidence', 'mark_statuses', 'noted']


#: the kind of fact each hop's line is
_HOP_KINDS = {
    HopRole.LINK: FactKind.LINK,
    HopRole.CALL: FactKind.CALL,
    HopRole.GUARD: FactKind.GUARD,
    HopRole.DEFINITION: FactKind.DEFINITION,
    HopRole.IMPORT: FactKind.MODULE,
    HopRole.QUANT: FactKind.QUANT,
}

#: the qualifier of a default that holds on every arch its code does not test
FALLBACK = "a fallback for every arch it does not test: not a support claim"

#: the roles whose line can decide each verdict; the chain's last such line does
_DECIDING_ROLES: dict[Verdict, tuple[str, ...]] = {
    Verdict.BLOCKED: (Role.GATE.value, Role.IMPORT.value),
    Verdict.UNSUPPORTED: (Role.KERNEL.value,),
    Verdict.SUPPORTED: (Role.KERNEL.value, Role.GATE.value, Role.DEFAULT.value),
}


def hops_evidence(index: Index, hops: Iterable[Hop]) -> list[Evidence]:
    out = []
    for hop in hops:
        if hop.line <= 0:
            continue
        out.append(Evidence.of(hop.rel, hop.line, evidence_role(hop.role),
                               index.line_text(hop.rel, hop.line),
                               _HOP_KINDS[HopRole(hop.role)], args_of(text=hop.note)))
    return out


def finding_evidence(index: Index, finding: Finding, role: Role, kind: FactKind, args: Args,
                      guards: bool = True) -> list[Evidence]:
    hops = finding.hops if guards else [h for h in finding.hops if h.role != HopRole.DEFINITION]
    chain = hops_evidence(index, hops)
    chain.append(Evidence.of(finding.rel, finding.line, role.value,
                             index.line_text(finding.rel, finding.line), kind, args))
    seen = set()
    out = []
    for ev in chain:
        key = (ev.path, ev.line, ev.role)
        if key not in seen:
            seen.add(key)
            out.append(ev)
    return out


def noted(chain: list[Evidence], note: str, status: Status = Status.CONTEXT,
           ) -> list[Evidence]:
    """``chain`` with ``note`` added to its last (deciding) hop, and that hop's
    ``status`` in the verdict."""
    if not chain:
        return chain
    return [*chain[:-1], chain[-1].qualified(note).with_status(status)]


def mark_statuses(chain: list[Evidence], verdict: Verdict) -> list[Evidence]:
    """The chain with each line's part in ``verdict``: the gates that could
    still raise are caveats; the last line of a role that can decide the
    verdict and is not a caveat decides it (for a decided verdict with no
    such line, its last line); an ``unknown`` has no deciding line."""
    out = [ev.with_status(Status.CAVEAT) if ev.kind == FactKind.GATE
           and arg(ev.args, "effect") == "could-raise" else ev for ev in chain]
    if verdict is Verdict.UNKNOWN or not out:
        return out
    roles = _DECIDING_ROLES[verdict]
    position = next((i for i in range(len(out) - 1, -1, -1)
                     if out[i].role in roles and not out[i].caveat), len(out) - 1)
    out[position] = out[position].with_status(Status.DECIDES)
    return out


def dedupe_keep_last(chain: list[Evidence]) -> list[Evidence]:
    """Drop repeated lines, keeping each where it last appears; the first entry
    (the option's definition) stays first."""
    if not chain:
        return chain
    seen = set()
    out = []
    for ev in reversed(chain[1:]):
        key = (ev.path, ev.line, ev.role)
        if key in seen or key == (chain[0].path, chain[0].line, chain[0].role):
            continue
        seen.add(key)
        out.append(ev)
    return [chain[0], *reversed(out)]
