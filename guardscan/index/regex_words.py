"""index (regex words): the words one of which every match of a pre-filter holds.

A whole-tree pre-filter such as ``TRTLLMMLABackend\\(`` or
``=\\s*[\\w.]*(?:linear_attn_backend|mamba_backend)`` can only match in a
file that holds one of a few words. ``required_words`` finds them from the
pattern's parsed form (Python's own regular-expression parser, the one
``re.compile`` uses): a run of literal word bytes that every match passes
through, or, for an alternation, one such set per branch, joined. The
whole-tree search (``whole_text``) then asks the files' distinct words for
those first, and searches only the files that hold one.

Nothing here is guessed: where the parser's form holds anything this reading
does not know (a flag, a back-reference, a form of a newer Python), the answer
is ``None`` and the search reads the text.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import Any

try:  # Python 3.11 and later
    _sre = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _sre = importlib.import_module("sre_parse")

__all__ = ["MIN_WORD", "WORD_BYTES", "required_words"]

#: shorter runs are too common to narrow a search
MIN_WORD = 3

#: the bytes of a word (``\\w`` in ASCII)
WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", _sre.MAX_REPEAT)}
_ATOMIC = getattr(_sre, "ATOMIC_GROUP", None)
#: items that consume nothing, or one byte of a set: they hold no word, and a
#: literal run stops at them
_NEUTRAL = {_sre.AT, _sre.IN, _sre.ANY, _sre.NOT_LITERAL, _sre.ASSERT, _sre.ASSERT_NOT,
            _sre.CATEGORY}


#: flags that change which bytes a literal matches
_CASE_FLAGS = re.IGNORECASE | re.LOCALE


class _Unknown(Exception):
    """A form this reading does not know: no answer for the whole pattern."""


def required_words(regex: re.Pattern[bytes]) -> frozenset[bytes] | None:
    """Words (word bytes only, at least ``MIN_WORD`` long) one of which every
    match of ``regex`` holds as a substring; ``None`` where no such set is
    certain. The shortest word of the set chosen is as long as can be.

    >>> sorted(required_words(re.compile(rb"sglang\\.srt\\.moe_runner(?:\\ import|\\.aiter)")))
    [b'moe_runner']
    >>> sorted(required_words(re.compile(rb"(?:ATTENTION_CHOICES\\.|SAMPLING_BACKENDS\\.)")))
    [b'ATTENTION_CHOICES', b'SAMPLING_BACKENDS']
    >>> required_words(re.compile(rb"x\\w*|abc")) is None
    True
    """
    if regex.flags & _CASE_FLAGS:
        return None
    try:
        return _sequence(_sre.parse(regex.pattern, regex.flags))
    except (_Unknown, re.error, RecursionError, TypeError, ValueError, AttributeError):
        return None


def _sequence(items: Iterable[tuple[Any, Any]]) -> frozenset[bytes] | None:
    best: frozenset[bytes] | None = None
    run = bytearray()
    for op, av in items:
        if op is _sre.LITERAL:
            run.append(av)
            continue
        best = _better(best, _words_of_run(run))
        run.clear()
        if op is _sre.SUBPATTERN:
            _group, add_flags, _del_flags, inner = av
            if add_flags & _CASE_FLAGS:
                raise _Unknown  # a scoped flag (``(?i:...)``) changes what a literal matches
            best = _better(best, _sequence(inner))
        elif op is _sre.BRANCH:
            branches = [_sequence(branch) for branch in av[1]]
            if all(b is not None for b in branches):
                best = _better(best, frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in _REPEATS:
            low, _high, inner = av
            if low >= 1:
                best = _better(best, _sequence(inner))
        elif _ATOMIC is not None and op is _ATOMIC:
            best = _better(best, _sequence(av))
        elif op not in _NEUTRAL:
            raise _Unknown  # a back-reference, a conditional group, a newer form
    return _better(best, _words_of_run(run))


def _words_of_run(run: bytearray) -> frozenset[bytes] | None:
    """The longest word in a run of literal bytes every match passes through."""
    words = bytes(c if c in WORD_BYTES else 0x20 for c in run).split()
    longest = max(words, key=len, default=b"")
    return frozenset({longest}) if len(longest) >= MIN_WORD else None


def _better(a: frozenset[bytes] | None, b: frozenset[bytes] | None) -> frozenset[bytes] | None:
    """Of two sets each required, the one whose shortest word is longer
    (then the smaller set)."""
    if a is None or not a:
        return b if b else None
    if b is None or not b:
        return a
    return max(a, b, key=lambda s: (min(map(len, s)), -len(s), sorted(s)))
