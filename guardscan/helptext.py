"""helptext (shared by options and link): an option's help text cut into per-choice segments.

SGLang's help strings say what a choice is for in a parenthesis after the
quoted choice: ``'flashinfer_deepgemm' (Hopper SM90 only; ...)``, ``'aiter'
(ROCm only)``. The options stage reads platform labels from these segments
and the link stage architecture claims (``doc`` findings); both cut the text
here, each with the quoting it has always accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

__all__ = ["help_segments"]


@cache
def _segment_pattern(quotes: str, nested: bool) -> re.Pattern[str]:
    # one level of inner parentheses when ``nested``: "(SM100 (B200) only)"
    body = r"(?:[^()]|\([^()]*\))*" if nested else r"[^()]*"
    return re.compile(rf"([{re.escape(quotes)}])([\w.\-]+)\1\s*\(({body})\)")


def help_segments(help_text: str, choices: Iterable[str], *, quotes: str = "'",
                  nested: bool = True) -> list[tuple[str, str]]:
    """(choice, text inside its parenthesis, unstripped) for every ``'choice'
    (text)`` in ``help_text`` whose word is one of ``choices``, in text order
    (a choice claimed twice comes twice).

    ``quotes``: the characters that may quote the choice (the same one on both
    sides). ``nested``: whether the parenthesis may hold one level of inner
    parentheses; without it a segment with any is skipped.

    >>> help_segments("'a' (SM90 only), 'b' (x), 'c' (y)", ["a", "c"])
    [('a', 'SM90 only'), ('c', 'y')]
    """
    wanted = set(choices)
    return [(match.group(2), match.group(3))
            for match in _segment_pattern(quotes, nested).finditer(help_text)
            if match.group(2) in wanted]
