"""syntax (shared by every stage): re-reading the expression texts that index facts carry.

Facts keep expressions as source text; stages re-read the few they need with
:func:`parse_expr`. Nothing is ever evaluated: literals are read with
``ast.literal_eval``, comparisons of two known constants with :data:`COMPARE`.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Mapping

from guardscan.index.extract import dotted

__all__ = [
    "COMPARE",
    "NOT_LITERAL",
    "OPERATORS",
    "as_ints",
    "as_sm_strings",
    "call_parts",
    "dotted",
    "is_sm_string",
    "literal",
    "parse_expr",
    "segment",
    "short",
    "unparse",
]


@functools.lru_cache(maxsize=4_096)  # 8,192 held 8 MB more at linking's peak, for no time saved
def parse_expr(text: str) -> ast.expr | None:
    """An expression's tree, from its source text (``None`` if it does not parse).

    The text is wrapped in parentheses and a newline, so a multi-line
    expression and one that ends in a comment parse too. Cached: callers only
    read the tree, never change it."""
    try:
        return ast.parse("(" + text + "\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def segment(text: str, node: ast.AST) -> str:
    """The source of ``node`` inside an expression parsed by ``parse_expr(text)``."""
    return ast.get_source_segment("(" + text + "\n)", node) or ""


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"


#: What ``literal`` returns for an expression that is not a literal.
NOT_LITERAL = _NotLiteral()


def literal(node: ast.AST | None, consts: Mapping[str, object] | None = None) -> object:
    """The literal value of ``node`` (names looked up in ``consts``), or NOT_LITERAL."""
    if node is None:
        return NOT_LITERAL
    if consts and isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    try:
        return _literal_value(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


class _Malformed(ValueError):
    pass


def _number(node: ast.AST) -> object:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, complex):
        return node.value
    raise _Malformed


def _signed_number(node: ast.AST) -> object:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _number(node.operand)
        return +value if isinstance(node.op, ast.UAdd) else -value  # type: ignore[operator]
    return _number(node)


def _literal_value(node: ast.AST) -> object:
    """``ast.literal_eval(node)`` for a node: the same values and the same
    refusals, without its nested functions. Each ``literal_eval`` call makes
    four closures that refer to one another, a cycle that a scan (its
    collector paused) never frees: 11,209 calls kept 45k functions on a cold
    scan of sglang 0.5.23."""
    if isinstance(node, ast.Expression):
        node = node.body
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_literal_value(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_literal_value(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_literal_value(e) for e in node.elts}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "set" and not node.args and not node.keywords:
        return set()
    if isinstance(node, ast.Dict):
        if len(node.keys) != len(node.values) or any(k is None for k in node.keys):
            raise _Malformed
        keys = [_literal_value(k) for k in node.keys]  # type: ignore[arg-type]
        return dict(zip(keys, [_literal_value(v) for v in node.values]))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _signed_number(node.left), _number(node.right)
        if isinstance(left, (int, float)) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
    return _signed_number(node)


@functools.lru_cache(maxsize=4_096)  # nodes come from ``parse_expr``'s cache, never change
def unparse(node: ast.AST | None) -> str:
    """The source text of a node (``?`` when it has none)."""
    if node is None:
        return "?"
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes of odd code: no text, never a failed scan
        return "?"


def short(text: str, width: int = 90) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def clear_caches() -> None:
    """Forget parsed expressions (they only save time)."""
    parse_expr.cache_clear()
    unparse.cache_clear()


#: comparison operator node type -> its text
OPERATORS: dict[type, str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}

#: comparison text -> how it compares two constants already known
COMPARE: dict[str, Callable[[object, object], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,  # type: ignore[operator]
    "is": lambda a, b: a is b, "is not": lambda a, b: a is not b,
}


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
