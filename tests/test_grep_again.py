"""``Index.grep_re`` after an earlier scan (``Index.reuse``): its answers for
the unchanged files, the changed ones asked again, in tree order; and the
same question asked again within one scan answered once."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.acquire import SourceTree
from guardscan.index import Index

_WORDS = [b"alpha", b"beta", b"gamma", b"import os", b"class A(Base)", b"\n", b" "]
_PATTERNS = [rb"alpha", rb"beta|gamma", rb"class\s+\w+\s*\(Base\)", rb"import\s+os", rb"zeta"]

#: the files' texts before an edit, and the edits (file number -> new text)
_TEXTS = st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(b"".join),
                  min_size=1, max_size=12)
_EDITS = st.dictionaries(st.integers(0, 11), st.lists(st.sampled_from(_WORDS), max_size=6)
                         .map(b"".join), max_size=4)

def _index(root: Path, texts: list[bytes]) -> Index:
    files = []
    for i, text in enumerate(texts):
        rel = f"pkg/m{i:02d}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text)
        files.append(rel)
    return Index(SourceTree(root, "pkg", "0", tuple(files), str(root)))


def _expected(texts: list[bytes], pattern: bytes, within: list[int] | None) -> list[str]:
    order = within if within is not None else range(len(texts))
    return [f"pkg/m{i:02d}.py" for i in order if re.search(pattern, texts[i])]


@settings(max_examples=60, deadline=None)
@given(
    before=_TEXTS,
    edits=_EDITS,
    within=st.one_of(st.none(), st.lists(st.integers(0, 11), unique=True, max_size=8)),
)
def test_answers_after_an_edit_are_those_of_the_new_bytes(
        before: list[bytes], edits: dict[int, bytes], within: list[int] | None) -> None:
    edits = {i: text for i, text in edits.items() if i < len(before)}
    if within is not None:
        within = [i for i in within if i < len(before)]
    after = [edits.get(i, text) for i, text in enumerate(before)]
    with tempfile.TemporaryDirectory() as tmp:
        earlier = _index(Path(tmp) / "a", before)
        log = [(p, None, tuple(earlier.grep_re(p))) for p in _PATTERNS]
        index = _index(Path(tmp) / "b", after)
        unchanged = [f"pkg/m{i:02d}.py" for i in range(len(before)) if before[i] == after[i]]
        index.reuse(log, unchanged)
        names = [f"pkg/m{i:02d}.py" for i in within] if within is not None else None
        for pattern in _PATTERNS:
            want = _expected(after, pattern, within)
            assert index.grep_re(pattern, names) == want
            assert index.grep_re(pattern, names) == want  # asked again: the same
        assert len(index.grep_log) == 2 * len(_PATTERNS)


@settings(max_examples=60, deadline=None)
@given(
    before=_TEXTS,
    edits=_EDITS,
    asked=st.lists(st.one_of(st.none(), st.lists(st.integers(0, 11), unique=True,
                                                  max_size=8)), min_size=1, max_size=4),
    within=st.one_of(st.none(), st.lists(st.integers(0, 11), unique=True, max_size=8)),
)
def test_earlier_searches_of_parts_and_of_the_whole_tree_combine(
        before: list[bytes], edits: dict[int, bytes], asked: list[list[int] | None],
        within: list[int] | None) -> None:
    """The earlier scan asked each pattern of some files, of the whole tree
    (every such search shares one set of the files), or both, in any order:
    the answers are still those of the new bytes."""
    edits = {i: text for i, text in edits.items() if i < len(before)}
    after = [edits.get(i, text) for i, text in enumerate(before)]

    def names(picked: list[int] | None) -> list[str] | None:
        return None if picked is None else [f"pkg/m{i:02d}.py" for i in picked if i < len(before)]

    with tempfile.TemporaryDirectory() as tmp:
        earlier = _index(Path(tmp) / "a", before)
        log = [(p, tuple(n) if (n := names(part)) is not None else None,
                tuple(earlier.grep_re(p, n))) for part in asked for p in _PATTERNS]
        index = _index(Path(tmp) / "b", after)
        unchanged = [f"pkg/m{i:02d}.py" for i in range(len(before)) if before[i] == after[i]]
        index.reuse(log, unchanged)
        if within is not None:
            within = [i for i in within if i < len(before)]
        for pattern in _PATTERNS:
            assert index.grep_re(pattern, names(within)) == _expected(after, pattern, within)


def test_the_earlier_answer_is_used_for_unchanged_files(tmp_path: Path) -> None:
    """A file the earlier scan answered, unchanged since, is not read again:
    its answer stands (here a recorded answer that the bytes would not give
    shows it was taken, not recomputed)."""
    index = _index(tmp_path, [b"alpha", b"beta", b"alpha beta"])
    index.reuse([(rb"alpha", None, ("pkg/m01.py",))], ["pkg/m01.py", "pkg/m02.py"])
    # m00 changed: asked again (matches); m01 unchanged: the record says it
    # matched; m02 unchanged: the record says it did not
    assert index.grep_re(rb"alpha") == ["pkg/m00.py", "pkg/m01.py"]
