"""index: the tree's text as one buffer, for the whole-tree pre-filters.

A scan asks a few hundred whole-tree questions while linking ("which files
name this function", "which classes derive from this config class"). Asked
of each file in turn, every question read every file again once the per-file
text was let go: on sglang 0.5.23 that was 234 passes over 4,700 files, 37 s
of a 75 s cold scan. Here the text is joined once (68 MB for that release)
and a question is one ``re`` search over the buffer that jumps to the next
file after each match.

The answer is the one a search of each file on its own gives: a match that
starts in one file and runs into the next is checked again inside its file
alone, and a pattern whose meaning depends on where the string begins or
ends (``^``, ``$``, ``\\A``, ``\\Z``, lookarounds) is asked of each file's
slice of the buffer, never of the joined text.

Held in memory, the buffer would be the largest single thing a scan keeps
(68 MB for sglang 0.5.23, 117 MB for FlashInfer 0.7.2, both alive at the
peak, and twice that while joined), so it is written file by file to an
unnamed temporary file, and a search maps a chunk of files at a time
(``CHUNK`` bytes, a file never split): the process holds one chunk's pages,
the page cache the rest. Where no temporary file can be made, it is kept in
memory. A pattern that is a plain string is found with ``bytes.find``.
"""

from __future__ import annotations

import mmap
import os
import re
import tempfile
import time
from bisect import bisect_right
from collections.abc import Iterable
from typing import IO

from guardscan.index.regex_words import WORD_BYTES as _WORD
from guardscan.index.regex_words import required_words

__all__ = ["CHUNK", "WORDS_PER_S", "WholeText", "edge_sensitive", "plain_literal", "word_only",
           "words_of"]

#: between two files: no pattern of the pre-filters matches a NUL
_SEP = b"\0"

#: bytes of files mapped at once by a search (a larger file is a chunk of its own)
CHUNK = 16 << 20

#: bytes that make a pattern more than a plain string (NUL: the separator)
_SPECIAL = frozenset(b"\\[](){}*+?|^$.#\0 \t\n\r\x0b\x0c")

# a needle made of word bytes alone (``WORD_BYTES``) is found in a file's
# distinct words as surely as in its text (``words_of``)

#: every byte that is not a word's, to a space
_TO_SPACE = bytes(c if c in _WORD else 0x20 for c in range(256))

#: bytes of text per second that building the words of (``WholeText.words``)
#: takes, about (measured: 68 MB of sglang 0.5.23 in 0.6 s). The words are
#: built once the word-only searches of the text have taken as long as
#: building them would (a scan that asks few such questions never pays it);
#: each later search then reads about a fifth of the bytes
WORDS_PER_S = 100e6

_CLASS = re.compile(rb"\[(?:\\.|[^\]\\])*\]")
_ESCAPE = re.compile(rb"\\(.)")


def plain_literal(regex: re.Pattern[bytes]) -> bytes | None:
    """The bytes ``regex`` matches exactly, when it is a plain string (no
    special character, no flag: ``NemotronHConfig``, most of the
    pre-filters): ``bytes.find`` finds it two to three times faster than
    ``re`` does."""
    pattern = regex.pattern
    if regex.flags or not pattern or any(c in _SPECIAL for c in pattern):
        return None
    return pattern


def word_only(needle: bytes) -> bool:
    """Whether ``needle`` is made of word bytes alone (ASCII letters, digits
    and ``_``)."""
    return bool(needle) and all(c in _WORD for c in needle)


def words_of(data: bytes) -> bytes:
    """The distinct words of ``data`` (its longest runs of word bytes), in the
    order first met, joined by spaces. A word-only needle occurs in ``data``
    exactly when it occurs here: each of its occurrences lies inside one run,
    and a space never matches it."""
    return b" ".join(dict.fromkeys(data.translate(_TO_SPACE).split()))


def edge_sensitive(pattern: bytes) -> bool:
    """Whether ``pattern`` may match differently at a file's edges inside
    the joined text than at the edges of the file's own string (anchors and
    lookarounds; ``\\b`` is not: the separator is a non-word byte, as the
    string's edge is)."""
    escapes = {m.group(1) for m in _ESCAPE.finditer(pattern)}
    if escapes & {b"A", b"Z"}:
        return True
    bare = _ESCAPE.sub(b"", _CLASS.sub(b"", pattern))
    return any(t in bare for t in (b"^", b"$", b"(?<", b"(?=", b"(?!"))


class WholeText:
    """The bytes of ``files`` (those that could be read), joined: in an
    unnamed temporary file, or in memory where none can be made. ``chunk``:
    the bytes of files a search maps at once."""

    def __init__(self, files: Iterable[tuple[str, bytes]], chunk: int = CHUNK) -> None:
        self.rels: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.where: dict[str, int] = {}
        #: (first file, last file + 1) of each chunk a search maps
        self.chunks: list[tuple[int, int]] = []
        #: what ``matching`` found, by pattern and flags (a scan asks some
        #: patterns many times: the subclasses of one config class, from
        #: each unit that meets it)
        self._found: dict[tuple[bytes, int], frozenset[str]] = {}
        #: the files' words (``words``), once enough word-only searches came
        self._words: WholeText | None = None
        #: seconds the word-only searches of this text have taken so far
        self._word_seconds = 0.0
        #: this holds the words of another (its own words would be itself)
        self._is_words = False
        self._chunk = chunk
        self._file: IO[bytes] | None = None
        self._memory: bytes | None = None
        parts: list[bytes] | None = None
        try:
            self._file = tempfile.TemporaryFile(prefix="guardscan-text-")  # noqa: SIM115 - open while the object lives
        except OSError:
            parts = []
        pos = first = 0
        for rel, data in files:
            k = len(self.rels)
            self.where[rel] = k
            self.rels.append(rel)
            self.starts.append(pos)
            self.ends.append(pos + len(data))
            if parts is not None:
                parts.append(data)
            else:
                assert self._file is not None
                self._file.write(_SEP + data if k else data)  # the layout of the join
            if self.ends[k] - self.starts[first] >= chunk:
                self.chunks.append((first, k + 1))
                first = k + 1
            pos += len(data) + len(_SEP)
        if first < len(self.rels):
            self.chunks.append((first, len(self.rels)))
        #: bytes of the files, separators not counted
        self.size = pos - len(self.rels) * len(_SEP)
        if parts is not None:
            self._memory = _SEP.join(parts)
        else:
            assert self._file is not None
            self._file.flush()

    def __contains__(self, rel: str) -> bool:
        return rel in self.where

    def close(self) -> None:
        """Let the temporary file go (it goes with the object too)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._words is not None:
            self._words.close()
            self._words = None

    def words(self) -> WholeText:
        """The same files, each as its distinct words (``words_of``): built
        from this text on first use, in a temporary file of its own."""
        if self._words is None:
            self._words = WholeText(((rel, words_of(self.data(rel))) for rel in self.rels),
                                    self._chunk)
            self._words._is_words = True
        return self._words

    def _search_all(self, regex: re.Pattern[bytes], words: bool) -> set[str]:
        """``_matching`` of the text; or of the files' words, for a word-only
        pattern, and for a pattern every match of which holds one of a few
        words (``regex_words.required_words``: ``TRTLLMMLABackend\\(``),
        of the files whose words hold one, each file then searched on its
        own. The words are built at the first word-only pattern that is not
        a plain string (an alternation of words searches the text about as
        slowly as building them), else once the searches that could use them
        have cost what building them would (``WORDS_PER_S``)."""
        required = None if words else required_words(regex)
        if self._is_words or (not words and required is None):
            return self._matching(regex)
        if self._words is None and not (words and plain_literal(regex) is None) and \
                self._word_seconds < self.size / WORDS_PER_S:
            started = time.perf_counter()
            found = self._matching(regex)
            self._word_seconds += time.perf_counter() - started
            return found
        if required is None:
            return self.words()._matching(regex)
        holding = self.words().matching(re.compile(b"|".join(map(re.escape, sorted(required)))),
                                        True)
        return {rel for rel in self.rels if rel in holding and self.matches(regex, rel)}

    def data(self, rel: str) -> bytes:
        k = self.where[rel]
        start, end = self.starts[k], self.ends[k]
        if self._memory is not None:
            return self._memory[start:end]
        assert self._file is not None
        return os.pread(self._file.fileno(), end - start, start)

    def matches(self, regex: re.Pattern[bytes], rel: str, words: bool = False) -> bool:
        """Whether the file's own bytes match (its bytes, never the joined
        text). ``words``: the pattern can match word bytes only (see
        ``matching``)."""
        literal = plain_literal(regex)
        if (words or (literal is not None and word_only(literal))) and self._words is not None:
            return self._words.matches(regex, rel)
        if literal is not None:
            return literal in self.data(rel)
        return regex.search(self.data(rel)) is not None

    def matching(self, regex: re.Pattern[bytes], words: bool = False) -> frozenset[str]:
        """Every file whose own bytes match ``regex`` (searched once per
        pattern: the buffer never changes). ``words``: every string the
        pattern matches is made of word bytes (the caller knows: a trie of
        word-only needles); a plain word-only string is seen to be one. Such
        a pattern may be asked of the files' words instead (``words``)."""
        key = (regex.pattern, regex.flags)
        found = self._found.get(key)
        if found is None:
            literal = plain_literal(regex)
            words = words or (literal is not None and word_only(literal))
            found = self._found[key] = frozenset(self._search_all(regex, words))
        return found

    def _matching(self, regex: re.Pattern[bytes]) -> set[str]:
        if edge_sensitive(regex.pattern):
            return {rel for rel in self.rels if self.matches(regex, rel)}
        found: set[str] = set()
        for first, last in self.chunks:
            begin, end = self.starts[first], self.ends[last - 1]
            if end == begin:
                # empty files only (nothing to map): each on its own
                found.update(rel for rel in self.rels[first:last] if self.matches(regex, rel))
                continue
            if self._memory is not None:
                self._search(regex, self._memory, 0, first, last, found)
                continue
            assert self._file is not None
            # a mapping starts at a multiple of the allocation granularity
            offset = begin - begin % mmap.ALLOCATIONGRANULARITY
            with mmap.mmap(self._file.fileno(), end - offset, offset=offset,
                           access=mmap.ACCESS_READ) as view:
                self._search(regex, view, offset, first, last, found)
        return found

    def _search(self, regex: re.Pattern[bytes], text: bytes | mmap.mmap, offset: int,
                first: int, last: int, found: set[str]) -> None:
        """Files ``first`` to ``last`` (excluded) whose own bytes match, from
        ``text``, which holds the joined bytes from ``offset`` on; the search
        ends where the last file does (there the string ends, as at a file's
        own end)."""
        pos, stop = self.starts[first] - offset, self.ends[last - 1] - offset
        literal = plain_literal(regex)
        while True:
            if literal is not None:
                at = text.find(literal, pos, stop)
                if at < 0:
                    return
                start, end = at, at + len(literal)
            else:
                m = regex.search(text, pos, stop)
                if m is None:
                    return
                start, end = m.start(), m.end()
            k = bisect_right(self.starts, start + offset, first, last) - 1
            if start + offset >= self.ends[k] and start + offset > self.starts[k]:
                # it starts on the separator: only a pattern that can match
                # a NUL does that; ask the next file on its own
                k += 1
                if k >= last:
                    return
                if self.matches(regex, self.rels[k]):
                    found.add(self.rels[k])
            elif end + offset <= self.ends[k] or self.matches(regex, self.rels[k]):
                found.add(self.rels[k])
            if k + 1 >= last:
                return
            pos = self.starts[k + 1] - offset
