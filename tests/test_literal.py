"""``syntax.literal``: the values and refusals of ``ast.literal_eval``, without
its closures (a cycle per call, never freed while a scan pauses the collector)."""

from __future__ import annotations

import ast
import gc
import types

from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.syntax import NOT_LITERAL, literal, parse_expr


def _stdlib(text: str) -> object:
    try:
        return ast.literal_eval(ast.parse(text, mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def _same(text: str, parses: bool = True) -> None:
    node = parse_expr(text)
    if node is None and not parses:
        return  # generated text that is not Python ("-not 1")
    assert node is not None, text
    ours, theirs = literal(node), _stdlib(text)
    assert type(ours) is type(theirs), text
    assert ours == theirs, text


EXAMPLES = [
    "1", "-1", "+1.5", "--1", "-x", "'a'", "b'a'", "None", "True", "...",
    "(1, 'a', None)", "[1, [2, (3,)]]", "{1, 2}", "set()", "set(1)", "set(x=1)",
    "frozenset()", "{'a': 1, 2: [3]}", "{**x}", "{'a': 1, **x}", "{[1]: 2}", "{[1], 2}",
    "1 + 2j", "1 - 2j", "-1 + 2j", "1j + 1", "1 + 2", "'a' + 'b'", "1.5 - 2j",
    "x", "f()", "a.b", "[x]", "(1, x)", "1 if x else 2", "-'a'", "-(1+2j)", "(-1) + 2j",
    "[*x]", "{1: x}", "()", "[]", "{}", "not 1", "1 * 2", "~1", "True + 1j",
]


def test_examples_match_literal_eval() -> None:
    for text in EXAMPLES:
        _same(text)


def test_examples_values() -> None:
    assert literal(parse_expr("{'a': (1, -2), 'b': [1 + 2j]}")) == {"a": (1, -2), "b": [1 + 2j]}
    assert literal(parse_expr("set()")) == set()
    assert literal(parse_expr("{**x}")) is NOT_LITERAL
    assert literal(parse_expr("x"), {"x": 3}) == 3
    assert literal(parse_expr("1 + 2")) is NOT_LITERAL
    assert literal(ast.parse("(1, 2)", mode="eval")) == (1, 2)
    assert literal(None) is NOT_LITERAL


_atoms = st.sampled_from(["1", "0", "2.5", "1j", "'s'", "b'b'", "None", "True", "x",
                          "f()", "set()", "a.b", "..."])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(inner, max_size=3)
    return st.one_of(
        items.map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        items.map(lambda xs: "[" + ", ".join(xs) + "]"),
        items.filter(bool).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.lists(st.tuples(inner, inner), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.tuples(st.sampled_from(["-", "+", "not ", "~"]), inner).map(lambda t: t[0] + t[1]),
        st.tuples(inner, st.sampled_from([" + ", " - ", " * "]), inner).map("".join),
    )


@settings(max_examples=300, deadline=None)
@given(st.recursive(_atoms, _compound, max_leaves=8))
def test_generated_expressions_match_literal_eval(text: str) -> None:
    _same(text, parses=False)


def test_no_function_is_left_behind() -> None:
    """With the collector off (as during a scan), reading literals leaves no
    function objects behind (``ast.literal_eval`` left four per call)."""
    node = parse_expr("{'a': [1, 2, (3, -4)], 'b': 1 + 2j}")
    gc.collect()
    gc.disable()
    try:
        before = sum(type(o) is types.FunctionType for o in gc.get_objects())
        for _ in range(200):
            literal(node)
        after = sum(type(o) is types.FunctionType for o in gc.get_objects())
    finally:
        gc.enable()
    assert after - before < 10
