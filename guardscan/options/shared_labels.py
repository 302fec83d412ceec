"""options (platform labels across options): a backend name the release marks as for another platform in one choice list keeps that mark in the options that give it none.

See :func:`share_platform_labels`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from guardscan.results import OptionInfo

__all__ = ["share_platform_labels"]


def share_platform_labels(options: Sequence[OptionInfo]) -> list[OptionInfo]:
    """``options`` with the release-wide labels given to the options that label nothing.

    What it recognises:
        After every option's own labels are read (``platforms``: the list
        comments and help text), each choice name labelled the same way wherever
        it is labelled (``aiter`` -> ``rocm`` under "# AMD specific" in the
        attention lists) labels that name in every option whose own definition
        labels nothing at all (an enum such as ``MoeRunnerBackend``, which carries
        no comments).
    Why it matters:
        SGLang names a backend after its library (``aiter`` is AMD's, ``intel_xpu``
        Intel's) in every option that offers it, but documents the platform in
        one list only: without this, ``--moe-runner-backend aiter`` is offered on
        NVIDIA GPUs as "unknown, try it".
    Known limits:
        Documentary evidence, as the labels it spreads. An option that labels
        any of its own choices is taken to have said what it means and gets
        nothing; a name labelled differently in two lists labels nothing.
    Example:
        ``--attention-backend`` labels ``aiter`` ``rocm`` and ``intel_xpu``
        ``non-cuda``; ``--moe-runner-backend`` (an enum, no labels) offers
        ``triton``, ``aiter``, ``intel_xpu`` -> ``aiter`` ``rocm``, ``intel_xpu``
        ``non-cuda``, ``triton`` unlabelled.

    >>> from guardscan.results import OptionInfo
    >>> attention = OptionInfo("--attention-backend", "attention_backend",
    ...                        ("triton", "aiter", "intel_xpu"), "choices.py", 80,
    ...                        platforms=(("aiter", "rocm"), ("intel_xpu", "non-cuda")))
    >>> moe = OptionInfo("--moe-runner-backend", "moe_runner_backend",
    ...                  ("triton", "aiter", "intel_xpu"), "moe/utils.py", 200)
    >>> [o.platforms for o in share_platform_labels([attention, moe])]
    [(('aiter', 'rocm'), ('intel_xpu', 'non-cuda')), (('aiter', 'rocm'), ('intel_xpu', 'non-cuda'))]
    >>> other = OptionInfo("--x-backend", "x_backend", ("aiter",), "x.py", 1,
    ...                    platforms=(("aiter", "non-cuda"),))
    >>> [o.platforms for o in share_platform_labels([attention, other, moe])][2]
    (('intel_xpu', 'non-cuda'),)
    """
    seen: dict[str, set[str]] = {}
    for option in options:
        for choice, platform in option.platforms:
            seen.setdefault(choice, set()).add(platform)
    named = {choice: next(iter(found)) for choice, found in seen.items() if len(found) == 1}
    out: list[OptionInfo] = []
    for option in options:
        if not option.platforms:
            labels = tuple((c, named[c]) for c in option.choices if c in named)
            if labels:
                option = replace(option, platforms=labels)
        out.append(option)
    return out
