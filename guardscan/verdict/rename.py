"""verdict (rename): a choice that SGLang rewrites into another choice of the same option is judged as that choice.

What it judges
    ``rename`` findings: code that sets the option to another of its choices
    where the option holds this one, whatever else holds (``if a2a_now ==
    "ascend_tp": declare_resolution(server_args, ..., moe_a2a_backend="none")``).
Why it matters
    The rewritten choice never reaches its own code: a later gate that
    rejects it (a dispatcher's ``else: raise``) never runs, and what does run
    is the target's code, with the target's gates and kernels.
Known limits
    Only a rewrite that holds for the choice on every arch and launch (no
    device, model or other option in its condition); a conditional rewrite
    leaves the choice's own verdict, and so does a rewrite in a quantization
    method's code (it holds for that method's layers only). A rewrite through
    a table read in a loop (``aliases[old]``) is read by
    ``link.alias_tables`` when the table is a literal in the hook that uses
    it; one built elsewhere is not read. A choice rewritten into one that is
    itself rewritten is judged as the first target only; one whose rewrite
    also sets other options (``resolve(server_args, moe_runner_backend="auto",
    attention_backend="fa3")``) keeps its own verdict, judged by those
    (``alias`` findings).
Example
    sglang 0.5.19 ``arg_groups/moe_hook.py:247``: ``--moe-a2a-backend
    ascend_tp`` is ``none`` by the time MoE is built: each arch's verdict is
    ``none``'s, the rewrite first in its chain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from guardscan.evidence import FactKind, args_of
from guardscan.index import Index
from guardscan.link import Finding, FindingKind
from guardscan.results import BackendVerdict, Evidence, Role

__all__ = ["renamed", "renames"]


def renames(findings: Iterable[Finding], choices: Iterable[str]) -> dict[str, Finding]:
    """choice -> the rewrite that makes it another choice of its option (none
    for a choice that also sets other options: it is judged by those)."""
    offered = set(choices)
    findings = list(findings)
    aliasing = {f.choice for f in findings if f.kind == FindingKind.ALIAS}
    out: dict[str, Finding] = {}
    for finding in findings:
        if finding.kind != FindingKind.RENAME or finding.choice in (None, *aliasing):
            continue
        if len(finding.target) == 2 and finding.target[1] in offered:
            out.setdefault(str(finding.choice), finding)
    return out


def renamed(index: Index, verdicts: list[BackendVerdict], rewrites: dict[str, Finding],
            ) -> list[BackendVerdict]:
    """``verdicts`` with each rewritten choice's entries replaced by its
    target's, per arch, the rewrite's line first in the chain."""
    if not rewrites:
        return verdicts
    by_key = {(v.choice, v.arch): v for v in verdicts}
    out = []
    for verdict in verdicts:
        rewrite = rewrites.get(verdict.choice)
        target = by_key.get((rewrite.target[1], verdict.arch)) if rewrite is not None else None
        if rewrite is None or target is None:
            out.append(verdict)
            continue
        lines = (Evidence.of(rewrite.rel, rewrite.line, Role.LINK.value,
                             index.line_text(rewrite.rel, rewrite.line), FactKind.LINK,
                             args_of(text=rewrite.hops[0].note if len(rewrite.hops) > 1
                                     else f"{verdict.choice} is rewritten to {target.choice}")),
                 # a later rewrite of the table's result (``link.alias_tables``)
                 *(Evidence.of(hop.rel, hop.line, Role.LINK.value,
                               index.line_text(hop.rel, hop.line), FactKind.LINK,
                               args_of(text=hop.note)) for hop in rewrite.hops[1:]))
        chain = (verdict.evidence[0], *lines, *target.evidence[1:]) if verdict.evidence \
            else (*lines, *target.evidence)
        out.append(replace(target, choice=verdict.choice, evidence=chain,
                           platform=verdict.platform))
    return out
