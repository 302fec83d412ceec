"""The JSON report's writer gives ``json.dumps(data, indent=2)`` byte for
byte (``report.json_text``), for any value the standard library accepts,
the ones it leaves to the standard library included."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.report import json_text, render
from guardscan.report.json_text import dumps_indented, write_indented

leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    # a key that is not a string: the standard library's own conversion
    | st.dictionaries(st.integers() | st.booleans() | st.none(), inner, max_size=2),
    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(data=values, indent=st.sampled_from([0, 1, 2, 4]))
def test_the_same_text_as_the_standard_library(data: object, indent: int) -> None:
    assert dumps_indented(data, indent) == json.dumps(data, indent=indent)


def test_a_report_shaped_value() -> None:
    data = {"guardscan": "0.1", "backends": [
        {"option": "--moe-runner-backend", "choice": "flashinfer_trtllm", "arch": "sm120",
         "verdict": "unsupported", "evidence": [{"path": "a.py", "line": 3, "text": "x ≥ 1",
                                                 "args": {}, "why": []}]}],
        "archs": ("sm90", "sm120"), "ratio": 0.5, "none": None, "empty": {}}
    assert dumps_indented(data) == json.dumps(data, indent=2)
    assert dumps_indented(float("nan")) == "NaN"
    assert dumps_indented({"inf": float("inf")}) == json.dumps({"inf": float("inf")}, indent=2)


class _Writes(io.StringIO):
    """A stream that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)


@settings(max_examples=200, deadline=None)
@given(data=values, indent=st.sampled_from([0, 2]), chunk=st.sampled_from([1, 2, 3, 50]))
def test_written_in_pieces_the_same_text(data: object, indent: int, chunk: int) -> None:
    """Joined a few tokens at a time (every container's last separator still
    replaced by its bracket), the pieces make the standard library's text."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_text, "CHUNK", chunk)
        stream = _Writes()
        write_indented(data, stream, indent)
    assert "".join(stream.writes) == json.dumps(data, indent=indent)


def test_a_value_left_to_the_standard_library_is_written_by_it_in_place(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After pieces already written, a dict with a key that is not a string
    and a float that is not finite are the standard library's text, indented
    to where they stand."""
    monkeypatch.setattr(json_text, "CHUNK", 1)
    stream = _Writes()
    data = {"a": [1, 2, 3, 4], "b": [5, 6, {7: {"x": [8]}}, float("inf")]}
    write_indented(data, stream)
    assert len(stream.writes) > 5
    assert "".join(stream.writes) == json.dumps(data, indent=2)
    # the standard library's text of the dict, in one write
    text = '{\n      "7": {\n        "x": [\n          8\n        ]\n      }\n    }'
    assert any(text in piece for piece in stream.writes)


def test_render_passes_on_pieces_of_a_least_the_piece_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """``render`` gathers a renderer's small writes: every write the stream
    sees but the last is at least ``PIECE`` characters, and the text is the
    renderer's."""
    from guardscan import report

    def many(result: object, stream: io.StringIO, options: dict[str, object]) -> None:
        for i in range(1000):
            print(f"line {i}", file=stream)  # two writes: the text, then the newline

    monkeypatch.setitem(report.RENDERERS, "many", many)
    monkeypatch.setattr(report, "PIECE", 100)
    stream = _Writes()
    render(None, stream, "many")  # type: ignore[arg-type]
    assert "".join(stream.writes) == "".join(f"line {i}\n" for i in range(1000))
    assert len(stream.writes) > 10
    assert all(len(w) >= 100 for w in stream.writes[:-1])
