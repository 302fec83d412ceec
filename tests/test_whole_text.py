"""The whole tree's buffer answers a pre-filter as a search of each file on
its own does (``index.whole_text``): matches that run from one file into the
next, anchors and lookarounds at a file's edges, empty files."""

from __future__ import annotations

import re
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.index import trie_pattern, whole_text
from guardscan.index.regex_words import required_words
from guardscan.index.whole_text import (
    CHUNK,
    WholeText,
    edge_sensitive,
    plain_literal,
    word_only,
    words_of,
)

PATTERNS = [
    rb"class\s+\w+\s*\([^)]*\bBase\b",  # [^)]* runs over the separator
    rb"Base",  # a plain string: found with bytes.find
    rb"eBa",  # a plain string that may run from one file's end into the next
    rb"(?:Ba|se)\b",
    rb"^class",
    rb"Base$",
    rb"\ABase",
    rb"se\Z",
    rb"(?<=x)Base",
    rb"Base(?!\))",
    rb"x*",  # matches the empty string everywhere
    rb"[^a]+",  # matches the separator
    rb"\bx\b",
]

texts = st.lists(st.sampled_from([b"", b"class A(", b"Base", b")", b"x", b"\n", b" ",
                                  b"se", b"Ba", b"class B(Base):\n"]), max_size=6).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(files=st.lists(texts, max_size=6), pattern=st.sampled_from(PATTERNS),
       chunk=st.sampled_from([1, 5, 12, CHUNK]))
def test_the_buffer_answers_as_each_file_alone(files: list[bytes], pattern: bytes,
                                               chunk: int) -> None:
    """Mapped a chunk of files at a time (a chunk of 1 byte: each file its
    own chunk), the answers are each file's own."""
    named = [(f"f{i}.py", data) for i, data in enumerate(files)]
    regex = re.compile(pattern)
    whole = WholeText(named, chunk=chunk)
    assert whole.matching(regex) == {rel for rel, data in named if regex.search(data)}
    for rel, data in named:
        assert whole.data(rel) == data
        assert whole.matches(regex, rel) == bool(regex.search(data))


def test_a_match_across_two_files_is_not_either_files() -> None:
    named = [("a.py", b"class A(Foo,\n"), ("b.py", b"Base):\n")]
    regex = re.compile(rb"class\s+\w+\s*\([^)]*\bBase\b")
    assert WholeText(named).matching(regex) == set()
    named.append(("c.py", b"class C(Base): pass\n"))
    assert WholeText(named).matching(regex) == {"c.py"}


def test_chunks_never_split_a_file_and_cover_every_file() -> None:
    named = [(f"f{i}.py", b"x" * size) for i, size in enumerate([3, 0, 9, 2, 2, 20, 0])]
    whole = WholeText(named, chunk=5)
    assert whole.chunks == [(0, 3), (3, 5), (5, 6), (6, 7)]  # separators count
    assert [whole.data(rel) for rel, _ in named] == [data for _, data in named]


def test_kept_in_memory_where_no_temporary_file_can_be_made(monkeypatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    named = [("a.py", b"class A(Foo,\n"), ("b.py", b"Base):\n"), ("c.py", b"class C(Base): 1\n")]
    whole = WholeText(named, chunk=1)
    assert whole._file is None and whole._memory is not None
    regex = re.compile(rb"class\s+\w+\s*\([^)]*\bBase\b")
    assert whole.matching(regex) == {"c.py"}
    assert whole.data("b.py") == b"Base):\n"
    assert whole_text.CHUNK == CHUNK


def test_edge_sensitive_patterns() -> None:
    assert edge_sensitive(rb"^class")
    assert edge_sensitive(rb"foo$")
    assert edge_sensitive(rb"\Afoo")
    assert edge_sensitive(rb"(?<=a)b")
    assert not edge_sensitive(rb"class\s+\w+\s*\([^)]*\bBase\b")  # ^ inside a class
    assert not edge_sensitive(rb"a\$b")  # an escaped dollar
    assert not edge_sensitive(rb"(?:foo|bar)")


def test_plain_literals() -> None:
    assert plain_literal(re.compile(rb"NemotronHConfig")) == b"NemotronHConfig"
    assert plain_literal(re.compile(rb"_REGISTRY")) == b"_REGISTRY"
    for pattern in (rb"a.b", rb"x*", rb"\bx", rb"", rb"(?:a|b)", rb"a b", rb"sglang\.srt"):
        assert plain_literal(re.compile(pattern)) is None, pattern
    assert plain_literal(re.compile(rb"abc", re.IGNORECASE)) is None


#: patterns a search may answer from the files' words: word-only strings and
#: tries of them (asked with ``words``), and patterns that begin with a word
WORD_PATTERNS = [
    (rb"Base", False),
    (rb"ase_x", False),
    (trie_pattern([b"Base", b"se", b"x_1", b"class"]), True),
    (rb"Base\(", False),
    (rb"class\s+B\(Base\)", False),
    (rb"Base(?:\ import|\.x_1)", False),
    (rb"Bas?e", False),  # the word is "Ba": too short, searched in the text
    (rb"x_1\b", False),
]

word_texts = st.lists(st.sampled_from([b"", b"class B(Base):\n", b"Base", b"se", b"x_1", b"\xc3\xa9",
                                       b"Ba", b".", b" import", b"(", b")", b"_", b"\n"]),
                      max_size=6).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(files=st.lists(word_texts, max_size=6), case=st.sampled_from(WORD_PATTERNS),
       chunk=st.sampled_from([1, 7, CHUNK]), built=st.booleans())
def test_the_words_answer_as_each_file_alone(files: list[bytes], case: tuple[bytes, bool],
                                             chunk: int, built: bool) -> None:
    """Whether the files' words are searched (built at once) or the text
    (never built), the answers are each file's own."""
    pattern, words = case
    named = [(f"f{i}.py", data) for i, data in enumerate(files)]
    regex = re.compile(pattern)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(whole_text, "WORDS_PER_S", float("inf") if built else 1e-30)
        whole = WholeText(named, chunk=chunk)
        assert whole.matching(regex, words) == {rel for rel, data in named if regex.search(data)}
    usable = words or plain_literal(regex) is not None or required_words(regex) is not None
    # an alternation of words builds them at once; with no text at all, the
    # words cost nothing, and are built at once too
    eager = words and plain_literal(regex) is None
    assert (whole._words is not None) == (usable and (built or eager or not any(files))), pattern
    for rel, data in named:
        assert whole.matches(regex, rel, words) == bool(regex.search(data))


def test_words_are_built_once_the_text_searches_cost_as_much(monkeypatch) -> None:
    """The first word-only search of the text is timed; the words are built
    once the time spent reaches what building them costs, not before."""
    named = [("a.py", b"class A(Base): pass\n"), ("b.py", b"import os\n")]
    clock = iter([0.0, 1.0, 1.0, 3.0])
    monkeypatch.setattr(whole_text.time, "perf_counter", lambda: next(clock))
    # 30 bytes of text: building the words takes 1.5 s at 20 bytes a second
    monkeypatch.setattr(whole_text, "WORDS_PER_S", 20.0)
    whole = WholeText(named)
    assert whole.matching(re.compile(rb"Base")) == {"a.py"}  # 1 s
    assert whole._words is None
    assert whole.matching(re.compile(rb"import")) == {"b.py"}  # 2 s more: 3 s, past 1.5 s
    assert whole._words is None
    assert whole.matching(re.compile(rb"pass")) == {"a.py"}  # from the words
    assert whole._words is not None
    assert whole.matching(re.compile(rb"a.b")) == set()  # not word-only: the text
    assert whole._words._words is None  # the words never get words of their own


def test_an_alternation_of_words_builds_the_words_at_once(monkeypatch) -> None:
    """A trie of word-only needles (``Index.grep``) is a slow search of the
    text: the words are built for it before any text search is timed."""
    monkeypatch.setattr(whole_text, "WORDS_PER_S", 1e-30)  # the words never pay off
    whole = WholeText([("a.py", b"class A(Base): pass\n"), ("b.py", b"import os\n")])
    assert whole.matching(re.compile(rb"Base"), True) == {"a.py"}  # a plain string: the text
    assert whole._words is None
    trie = re.compile(trie_pattern([b"import", b"Base"]))
    assert whole.matching(trie, True) == {"a.py", "b.py"}
    assert whole._words is not None
    # a pattern that holds one of a few words asks the words first
    assert whole.matching(re.compile(rb"(?:class|import)\s+os")) == {"b.py"}


def test_a_pattern_is_searched_once(monkeypatch) -> None:
    whole = WholeText([("a.py", b"Base"), ("b.py", b"x")])
    calls = []
    real = whole._matching
    monkeypatch.setattr(whole, "_matching", lambda regex: calls.append(regex) or real(regex))
    assert whole.matching(re.compile(rb"Ba(se)")) == {"a.py"}
    assert whole.matching(re.compile(rb"Ba(se)")) == {"a.py"}
    assert len(calls) == 1


def test_words_of_a_file() -> None:
    assert words_of(b"class A(Base): A.x = Base\n") == b"class A Base x"
    assert words_of(b"caf\xc3\xa9_1 = 2") == b"caf _1 2"  # a non-ASCII byte ends a word
    assert words_of(b"") == b""
    assert word_only(b"_SM100_x") and not word_only(b"a.b") and not word_only(b"")


def test_required_words() -> None:
    cases = {
        rb"sglang\.srt\.layers\.moe\.moe_runner(?:\ import|\.aiter)": {b"moe_runner"},
        rb"TRTLLMMLABackend\(": {b"TRTLLMMLABackend"},
        rb"abcd?": {b"abc"},  # the optional byte dropped
        rb"abcd*e": {b"abc"},
        rb"abcd+": {b"abc"},
        rb"abcd{2}": {b"abc"},
        rb"abcd(e|f)": {b"abcd"},  # an alternation inside a group
        rb"abcd\n": {b"abcd"},
        rb"@[\w.]*register\w*\(": {b"register"},  # after what no word begins
        rb"abc|defgh": {b"abc", b"defgh"},  # either side may match alone: one of them
        rb"abc[|]d|efgh": {b"abc", b"efgh"},
        rb"(?:a|b)xyz": {b"xyz"},
        rb"x\wyyyy": {b"yyyy"},
        rb"^abcd": {b"abcd"},
        rb"(?:ATTENTION_CHOICES\.|SAMPLING\.)": {b"ATTENTION_CHOICES", b"SAMPLING"},
        rb"=\s*[\w.]*(?:linear_attn_backend|mamba_backend)\b": {b"linear_attn_backend",
                                                               b"mamba_backend"},
        rb"(?:ab){2}cde": {b"cde"},
        rb"x*(?:abcd)+": {b"abcd"},
        rb"(?>abcd)e": {b"abcd"},
        rb"abc(?=def)": {b"abc"},  # a lookahead holds no word of the match
        # longer words win over shorter ones, a single word over a set
        rb"abc_defg|hij_klmn": {b"abc_defg", b"hij_klmn"},
        rb"abc\.defghi": {b"defghi"},
    }
    for pattern, words in cases.items():
        assert required_words(re.compile(pattern)) == words, pattern
    for pattern in (rb"ab", rb"abc|x", rb"x\w*|abc", rb"(abc)?d", rb"(a)bcd\1",
                    rb"(?i:abcd)e", rb"(?:abc){0,3}"):
        assert required_words(re.compile(pattern)) is None, pattern
    assert required_words(re.compile(rb"abcd", re.IGNORECASE)) is None
    assert required_words(re.compile(rb"abc[|]def")) == {b"abc"}


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from([b"ab", b"c", b"d", b"|", b".", b"(", b"e", b"abcd", b"xyz_"]),
                     max_size=8).map(b"".join),
       pattern=st.sampled_from([rb"abcd?e", rb"ab\.c(?:d|e)", rb"abc[|]d", rb"abcd*",
                                rb"abc(?:d|\.)", rb"ab(c|d)", rb"abc|xyz_", rb"(?:abcd|xyz_)+e",
                                rb"[.(]*(?:ab(?:cd|c\.)|xyz)"]))
def test_a_match_holds_one_of_its_required_words(text: bytes, pattern: bytes) -> None:
    regex = re.compile(pattern)
    words = required_words(regex)
    if regex.search(text) and words is not None:
        assert any(word in text for word in words)
