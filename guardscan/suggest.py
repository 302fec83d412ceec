"""suggest (the command line): "did you mean" by edit distance, for archs, options and subcommands.

One measure for every place a user can mistype a name: the optimal string
alignment distance (Levenshtein with adjacent transpositions, so ``expalin``
is one edit from ``explain``), case-insensitive. A candidate is offered only
when it is close for its length (``max_distance``): a name that is close to
nothing gets no suggestion rather than an arbitrary one.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest", "did_you_mean", "edit_distance", "max_distance", "option_hint",
           "split_flags"]


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and adjacent transpositions that
    turn ``a`` into ``b`` (optimal string alignment), case-insensitive."""
    a, b = a.lower(), b.lower()
    if a == b:
        return 0
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def max_distance(text: str) -> int:
    """How many edits still count as a typo of a name as long as ``text``: one
    for short names (up to 4 characters), two up to 8, then a quarter."""
    if len(text) <= 4:
        return 1
    if len(text) <= 8:
        return 2
    return len(text) // 4


def closest(text: str, candidates: Iterable[str], limit: int = 3) -> tuple[str, ...]:
    """The candidates within ``max_distance`` of ``text``, nearest first (ties
    in the candidates' own order), at most ``limit``."""
    allowed = max_distance(text)
    scored = []
    for position, candidate in enumerate(dict.fromkeys(candidates)):
        distance = edit_distance(text, candidate)
        if distance <= allowed:
            scored.append((distance, position, candidate))
    return tuple(candidate for _, _, candidate in sorted(scored)[:limit])


def did_you_mean(suggestions: Iterable[str]) -> str:
    """``did you mean a, b or c?`` ("" for none)."""
    names = list(suggestions)
    if not names:
        return ""
    if len(names) == 1:
        return f"did you mean {names[0]}?"
    return f"did you mean {', '.join(names[:-1])} or {names[-1]}?"


def option_hint(unknown: Iterable[str], known: Iterable[str]) -> str:
    """What to say after "not a backend option": ``did you mean X?`` for each
    flag close to a known one, else every known flag."""
    flags = sorted(set(known))
    hints = [closest(flag, flags, limit=2) for flag in unknown]
    found = [name for hint in hints for name in hint]
    if found:
        return did_you_mean(dict.fromkeys(found))
    return f"known: {', '.join(flags)}"


def split_flags(values: Iterable[str] | None) -> list[str] | None:
    """Repeatable, comma-separated ``--option`` values as flags
    (``--option moe-runner-backend,--fp4-gemm-backend``); None for none."""
    if values is None:
        return None
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                out.append(part if part.startswith("--") else f"--{part}")
    return list(dict.fromkeys(out)) or None
