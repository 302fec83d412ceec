"""link (registered regions): functions registered for a choice (``@register_x("choice")``) and the gates in and below them.

A decorator whose name holds ``register`` and whose literal arguments are
choices of an option makes the function code that runs only for that choice:
gates inside it count for the choice, and its calls are followed
(``Gates.follow_calls``).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from guardscan.link.gates import FOLLOW_DEPTH, Gates
from guardscan.link.model import Finding, FindingKind, Found, Hop, HopRole
from guardscan.model_facts import mentions_model
from guardscan.predicate import OptionIs, Predicate, conj, mentions_device, substitute
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.context import LinkContext

__all__ = ["RegisteredRegions", "dest_tokens", "renamed"]


def renamed(region: Predicate, dest: str, twin: str) -> Predicate:
    """``region`` with its tests of option ``dest`` read as tests of ``twin``."""
    return substitute(region, lambda atom: OptionIs(twin, atom.choices) if isinstance(
        atom, OptionIs) and atom.option == dest else None)


def dest_tokens(dest: str) -> set[str]:
    """The words of an option's dest that name what it selects (``moe_runner_backend``
    -> ``{"moe"}``)."""
    return {t for t in dest.split("_") if t not in ("backend", "runner")} or {dest}


class RegisteredRegions:
    def __init__(self, ctx: LinkContext, gates: Gates) -> None:
        self.ctx = ctx
        self.gates = gates

    def scan(self, rel: str) -> Found:
        """Gates in, and below, every function ``rel`` registers for a choice."""
        out = Found()
        for dest, choice, scope, line, region, owned in self.regions(rel):
            self.scan_region(rel, scope, dest, choice,
                             Hop(rel, line, HopRole.LINK, f"registered for {choice}"), out,
                             region, owned)
        return out

    def regions(self, rel: str) -> list[tuple[str, str, str, int, Predicate, bool]]:
        """(dest, choice, function qualname, line, region, owned) for functions
        registered with ``@register_x("choice")``.

        ``@register_fused_func("none", "flashinfer_trtllm")`` registers for a
        pair: the region needs both values, and it is owned by the choice that is
        not its option's default (the runner, not ``--moe-a2a-backend none``)."""
        facts = self.ctx.index.view(rel)
        if facts is None:
            return []
        found = []
        path_tokens = set(re.split(r"[/_.]", rel))
        for func in facts.functions:
            for deco, deco_line in func.decorators:
                node = parse_expr(deco)
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                name = ast.unparse(node.func).rsplit(".", 1)[-1].lower()
                if "register" not in name:
                    continue
                pairs = []
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        pairs.extend(self._registered(arg.value, name, path_tokens,
                                                      func.qualname, deco_line))
                if not pairs:
                    continue
                region = conj(*(OptionIs(d, frozenset({c})) for d, c, _, _ in pairs))
                defaults = {o.dest: (o.default or "").strip("\"'") for o in self.ctx.options}
                owners = [p for p in pairs if defaults.get(p[0]) != p[1]] or pairs
                for dest, choice, qualname, line in pairs:
                    owned = (dest, choice, qualname, line) in owners
                    found.append((dest, choice, qualname, line, region, owned))
                    for twin in self.twins(dest):
                        found.append((twin, choice, qualname, line,
                                      renamed(region, dest, twin), owned))
        return found

    def twins(self, dest: str) -> list[str]:
        """Options that pick from the same set of choices as ``dest``
        (``--prefill-attention-backend`` beside ``--attention-backend``,
        ``--speculative-moe-runner-backend`` beside ``--moe-runner-backend``):
        a registry keyed by the value serves each of them, so a function
        registered for a choice runs for the choice whichever of them names it."""
        by_dest = {o.dest: o for o in self.ctx.options}
        own = by_dest.get(dest)
        if own is None or len(own.choices) < 2:
            return []
        return [o.dest for o in self.ctx.options
                if o.dest != dest and set(o.choices) == set(own.choices)]

    def _registered(self, choice: str, name: str, path_tokens: set[str], qualname: str,
                    line: int) -> list[tuple[str, str, str, int]]:
        """The option a registered literal belongs to; several candidates are
        narrowed by the file path and the decorator's name, and an option's
        prefill/decode/speculative twins give way to the shortest dest."""
        candidates = [o for o in self.ctx.options if choice in o.choices]
        if len(candidates) > 1:
            candidates = [o for o in candidates if dest_tokens(o.dest) & (
                path_tokens | set(name.split("_")))]
            if candidates:
                shortest = min(len(o.dest) for o in candidates)
                candidates = [o for o in candidates if len(o.dest) == shortest]
        if len(candidates) > 1:
            return []  # ambiguous: say nothing rather than guess
        return [(o.dest, choice, qualname, line) for o in candidates]

    def scan_region(self, rel: str, scope: str, dest: str, choice: str, link: Hop, out: Found,
                    region: Predicate | None = None, owned: bool = True) -> None:
        """Gates inside a registered function, and what it calls, into ``out``."""
        ctx, conditions = self.ctx, self.gates.conditions
        facts = ctx.index.view(rel)
        if facts is None:
            return
        region = region if region is not None else OptionIs(dest, frozenset({choice}))
        for fscope, line, text, cond, path in conditions.failure_conditions(facts):
            if fscope != scope and not fscope.startswith(scope + "."):
                continue
            if not mentions_device(cond) and not mentions_model(cond):
                continue
            hops = (link, *conditions.guard_hops(facts, path, fscope, line))
            out.findings.append(Finding(FindingKind.GATE, rel, line, conj(region, cond),
                                        hops, option=dest, text=text))
        self.gates.follow_calls(facts, scope, dest, region, (link,), FOLLOW_DEPTH, True, out,
                                owned)
