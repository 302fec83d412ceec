"""Re-reading expression texts carried by Index facts.

Facts keep expressions as source text; the recognisers re-read the few they
need with ``ast.parse("(" + text + ")", mode="eval")``. Nothing is evaluated:
literals are read with ``ast.literal_eval``.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping

from guardscan.index.extract import dotted

__all__ = [
    "NOT_LITERAL",
    "as_ints",
    "as_sm_strings",
    "call_parts",
    "dotted",
    "is_sm_string",
    "literal",
    "parse_expr",
    "segment",
]


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"


#: What ``literal`` returns for an expression that is not a literal.
NOT_LITERAL = _NotLiteral()


@functools.lru_cache(maxsize=1 << 16)
def parse_expr(text: str) -> ast.expr | None:
    """An expression's tree, from its source text (``None`` if it does not parse).

    Cached: callers only read the tree, never change it."""
    try:
        return ast.parse("(" + text + ")", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def segment(text: str, node: ast.AST) -> str:
    """The source of ``node`` inside an expression parsed by ``parse_expr(text)``."""
    return ast.get_source_segment("(" + text + ")", node) or ""




def literal(node: ast.AST, consts: Mapping[str, object] | None = None) -> object:
    """The literal value of ``node`` (names looked up in ``consts``), or NOT_LITERAL."""
    if consts and isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def as_ints(values: object) -> tuple[int, ...] | None:
    """A collection of ints, sorted and de-duplicated; ``None`` otherwise."""
    if not isinstance(values, (list, tuple, set, frozenset)):
        return None
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        out.append(value)
    return tuple(sorted(set(out)))


_SM_STRING = re.compile(r"^(\d{2,3})[af]?$")


def is_sm_string(value: object) -> bool:
    """``"120"``, ``"90"``, ``"120f"``, ``"100a"``: an SM number written as a string."""
    return isinstance(value, str) and _SM_STRING.match(value) is not None


def as_sm_strings(values: object) -> tuple[int, ...] | None:
    """``"120"`` (also ``"120f"`` / ``"90a"``, read as their SM) or a collection of
    them, as SM numbers."""
    if isinstance(values, str):
        values = (values,)
    if not isinstance(values, (list, tuple, set, frozenset)):
        return None
    out = []
    for value in values:
        match = _SM_STRING.match(value) if isinstance(value, str) else None
        if match is None:
            return None
        out.append(int(match.group(1)))
    return tuple(sorted(set(out)))


def call_parts(text: str) -> tuple[str, list[str], dict[str, str]] | None:
    """``name(arg, kw=v)`` -> (callee text, arg texts, kwarg texts); ``None`` if not a call."""
    node = parse_expr(text)
    if not isinstance(node, ast.Call):
        return None
    func = segment(text, node.func)
    args = [segment(text, a) for a in node.args]
    kwargs = {k.arg: segment(text, k.value) for k in node.keywords if k.arg}
    return func, args, kwargs
