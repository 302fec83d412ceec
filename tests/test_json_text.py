"""The JSON report's writer gives ``json.dumps(data, indent=2)`` byte for
byte (``report.json_text``), for any value the standard library accepts,
the ones it leaves to the standard library included."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.report.json_text import dumps_indented

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
