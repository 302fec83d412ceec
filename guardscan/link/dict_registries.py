"""link (dict registries): module-level tables keyed by an option's choices, whose values are the code run for each choice.

``QKV_BACKEND_IMPL = {"fa3": VisionFlash3Attention, "sdpa": VisionSdpaAttention,
...}`` is looked up by the option's value (``QKV_BACKEND_IMPL[backend](...)``):
the class or function filed under a choice is code that runs for that choice,
as a function registered with ``@register_x("fa3")`` is. Gates in it and in
what it calls count for the choice, and its kernel calls are the choice's own
(``RegisteredRegions.scan_region``).

A table counts when at least two of its keys are choices of one option and
no other option has as many; values that are not classes or functions of the
tree are left alone. Known limits: a table whose keys several options share
equally is skipped (errs toward ``unknown``); the lookup itself is not
followed, so a table never read by the option's value would still count.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards import ClassV, FuncV
from guardscan.link.model import Found, Hop, HopRole
from guardscan.link.regions import RegisteredRegions
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.context import LinkContext

__all__ = ["DictRegistries", "choice_keys"]

#: Keys of a table that must be choices of the option it is filed under.
MIN_CHOICE_KEYS = 2


def choice_keys(ctx: LinkContext) -> list[str]:
    """Texts that open a table entry filed under some choice (``"fa3":``)."""
    return sorted({f'"{c}":' for o in ctx.options for c in o.choices} |
                  {f"'{c}':" for o in ctx.options for c in o.choices})


class DictRegistries:
    def __init__(self, ctx: LinkContext, regions: RegisteredRegions) -> None:
        self.ctx = ctx
        self.regions = regions

    def scan(self, rel: str) -> Found:
        """The code filed under each choice in the tables of ``rel``."""
        ctx, out = self.ctx, Found()
        facts = ctx.index.view(rel)
        if facts is None:
            return out
        for assign in facts.assigns:
            if assign.scope or len(assign.targets) != 1:
                continue
            node = parse_expr(assign.value)
            if not isinstance(node, ast.Dict):
                continue
            keys = [k.value for k in node.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            dest = self._option_of(keys)
            if dest is None:
                continue
            for key, value in zip(node.keys, node.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    continue
                choice = key.value
                if choice not in self._choices(dest):
                    continue
                target = ctx.vocab.value_at(value, rel, "", assign.line)
                if isinstance(target, (ClassV, FuncV)) and not getattr(target, "bound", ()):
                    hop = Hop(rel, getattr(key, "lineno", 0) + assign.line - 1 or assign.line,
                              HopRole.LINK, f"{assign.targets[0]}[{choice!r}]")
                    for each in (dest, *self.regions.twins(dest)):
                        self.regions.scan_region(target.rel, target.qualname, each, choice, hop,
                                                 out)
        return out

    def _choices(self, dest: str) -> tuple[str, ...]:
        return next((o.choices for o in self.ctx.options if o.dest == dest), ())

    def _option_of(self, keys: list[str]) -> str | None:
        """The option the table's keys are choices of: the one covering the
        most keys, at least ``MIN_CHOICE_KEYS``, with no rival (twins, the
        same choices, count as one; the shortest dest stands for them)."""
        best: list[tuple[int, str, frozenset[str]]] = []
        wanted = set(keys)
        for opt in self.ctx.options:
            hits = len(wanted & set(opt.choices))
            if hits >= MIN_CHOICE_KEYS:
                best.append((hits, opt.dest, frozenset(opt.choices)))
        if not best:
            return None
        top = max(h for h, _, _ in best)
        leaders = [(d, c) for h, d, c in best if h == top]
        if len({c for _, c in leaders}) != 1:
            return None
        return min((d for d, _ in leaders), key=len)
