"""Property tests: the guard interpreter agrees with Python on generated guards.

Hypothesis builds guard expressions over the device capability (the forms
SGLang writes: ``cap[0] >= 9``, ``major * 10 + minor in (100, 103)``,
``get_device_sm() // 10 == 12``, ``and`` / ``or`` / ``not``), writes them into a
tiny tree as a guard helper, and checks that the Predicate guardscan reads from
the text gives, on every standard architecture, what Python gives when the
expression is evaluated on that architecture's capability. Only the test's own
generated expressions are ever evaluated; scanned code never is.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardscan.acquire import SourceTree
from guardscan.arch import standard_archs
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.predicate import Context, Tri

_QUANTITIES = {
    # text as SGLang writes it -> how to compute it from (major, minor)
    "major": lambda major, minor: major,
    "minor": lambda major, minor: minor,
    "cap[0]": lambda major, minor: major,
    "cap[1]": lambda major, minor: minor,
    "major * 10 + minor": lambda major, minor: major * 10 + minor,
    "get_device_sm()": lambda major, minor: major * 10 + minor,
    "get_device_sm() // 10": lambda major, minor: major,
}
_OPS = ["==", "!=", "<", "<=", ">", ">="]


@st.composite
def _comparison(draw: st.DrawFn) -> str:
    quantity = draw(st.sampled_from(sorted(_QUANTITIES)))
    op = draw(st.sampled_from(_OPS))
    if "sm" in quantity and "//" not in quantity or "* 10" in quantity:
        value = draw(st.sampled_from([80, 86, 89, 90, 100, 103, 110, 120, 121]))
    elif quantity in ("minor", "cap[1]"):
        value = draw(st.integers(0, 3))
    else:
        value = draw(st.integers(7, 13))
    return f"{quantity} {op} {value}"


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, children).map(lambda p: f"({p[0]} and {p[1]})"),
        st.tuples(children, children).map(lambda p: f"({p[0]} or {p[1]})"),
        children.map(lambda c: f"(not {c})"),
    )


_GUARDS = st.recursive(_comparison(), _combine, max_leaves=5)

_HELPERS = '''import torch


def get_device_sm():
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def guard():
    cap = torch.cuda.get_device_capability()
    major, minor = torch.cuda.get_device_capability()
    return {expr}
'''


def _reference(expr: str, major: int, minor: int) -> bool:
    namespace = {"cap": (major, minor), "major": major, "minor": minor,
                 "get_device_sm": lambda: major * 10 + minor}
    return bool(eval(expr, {"__builtins__": {}}, namespace))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(expr=_GUARDS)
def test_interpreter_matches_python(tmp_path: Path, expr: str) -> None:
    root = tmp_path / "tree"
    (root / "sglang").mkdir(parents=True, exist_ok=True)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "sglang" / "guards.py").write_text(_HELPERS.format(expr=expr))
    tree = SourceTree(root=root, package="sglang", version=None,
                      files=("sglang/__init__.py", "sglang/guards.py"), origin=str(root))
    resolved = Vocabulary(Index(tree)).predicate("guard()", "sglang/guards.py", "", 10**6)
    for arch in standard_archs():
        expected = _reference(expr, arch.major, arch.minor)
        got = resolved.predicate.evaluate(Context(arch=arch))
        assert got is Tri.of(expected), (
            f"input: {expr}\narch: {arch}\nexpected: {expected}\n"
            f"actual: {got} ({resolved.predicate.describe()})")
