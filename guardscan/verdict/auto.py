"""verdict (auto): which choices ``auto`` becomes on an arch, read from the verdicts' default lines.

What it judges
    The choices of one option on one arch whose evidence holds a ``default``
    line (SGLang assigns the choice to the option under a condition that
    holds there): where ``auto``, or an option left to SGLang, goes.
Why it matters
    ``check`` judges ``--moe-runner-backend auto`` as what it becomes; the
    text report says it beside the option.
Known limits
    A default whose condition names the arch (``auto and modelopt_fp4 and
    is_sm120``: a resolution hook) is taken before a fallback (an ``else``
    that holds on every arch its tests do not name: a quantization method's
    ``if is_auto(): ... else: FLASHINFER_TRTLLM``), because the hook
    resolves the option before the method reads it, and a fallback only
    applies where nothing named the arch: when a default names the arch and
    surely holds there (``holds: always``), the others are dropped. Several
    such stay several (decided at run time), and a default that only may
    hold drops nothing. Which code runs first is not read otherwise.
Example
    sglang 0.5.23 under ``--quantization modelopt_fp4`` on sm120:
    ``arg_groups/overrides.py`` sets ``auto`` to ``flashinfer_cutlass``, the
    method's fallback says ``flashinfer_trtllm``: ``auto`` becomes
    ``flashinfer_cutlass``. Without ``--quantization`` the hook's condition
    only may hold, and ``auto`` can become either.
"""

from __future__ import annotations

from collections.abc import Iterable

from guardscan.evidence import arg
from guardscan.results import BackendVerdict, Evidence, Role

__all__ = ["auto_targets"]


def auto_targets(entries: Iterable[BackendVerdict], skip: str | None = None,
                 ) -> list[tuple[str, Evidence]]:
    """(choice, its default line) for each choice ``auto`` can become, in the
    entries' order; ``skip``: a choice left out (the value given itself)."""
    sure: list[tuple[str, Evidence]] = []
    others: list[tuple[str, Evidence]] = []
    for entry in entries:
        if entry.choice == skip or entry.platform:
            continue
        line = next((ev for ev in entry.evidence if ev.role == Role.DEFAULT.value), None)
        if line is None:
            continue
        named = arg(line.args, "fallback") != "true" and arg(line.args, "holds") == "always"
        (sure if named else others).append((entry.choice, line))
    return sure or others
