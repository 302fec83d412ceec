"""The whole tree's buffer answers a pre-filter as a search of each file on
its own does (``index.whole_text``): matches that run from one file into the
next, anchors and lookarounds at a file's edges, empty files."""

from __future__ import annotations

import re
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.index import whole_text
from guardscan.index.whole_text import CHUNK, WholeText, edge_sensitive, plain_literal

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
