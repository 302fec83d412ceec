"""binaries (refusals): a capability test a compiled package's Python function raises on before it reaches a library.

What it reads: the function SGLang calls in a compiled package's Python
(``binaries.python``), its top-level statements in order, read from the
wheel's text with ``ast`` (never imported)::

    def flash_attn_varlen_func(q, k, v, ..., ver=3):
        if ver == 4:
            return flash_attn_varlen_func_v4(...)
        ...
        if not is_fa3_supported():
            raise NotImplementedError("... only supported on sm90 and above")
        out, softmax_lse, *rest = torch.ops.sgl_kernel.fwd.default(...)

or ``assert test`` (a raise where the test fails), where the test is a
boolean combination of comparisons of
``torch.cuda.get_device_capability(...)`` (the pair, or its ``[0]`` /
``[1]``), of the function's parameters, of literals, and of calls of
functions of the same module whose body is one ``return`` of such a test
(``is_fa3_supported``: ``torch.version.cuda >= "12.3" and (major == 9 or
major == 8)``). Anything else in a test is undecided.

What it answers: ``refusal(steps, ...)``, for one arch and the arguments
the caller passes, the ``raise`` that surely runs first (its test holds,
and every ``if`` before it that returns or raises surely does not), or
None. A parameter the caller does not pass holds its literal default; one
it passes is undecided; a call whose arguments are not read is refused
nothing.
Why it matters: sgl-kernel's FA3 wrappers refuse every GPU but majors 8
and 9 in Python, before their op runs: ``--mm-attention-backend fa3`` on
sm120 in sglang 0.5.4 passes SGLang's own check (which rejects only
major 10) and fails there.
Known limits: only the called function's own top-level statements are
read (not its callees'); a statement that may return or raise under
anything else (a ``try``, a loop, an ``if`` with an ``else``), or an
assignment to a name a later test reads, ends the reading undecided. Three
values throughout: an undecided part never makes a refusal.
Example
    >>> import ast
    >>> code = '''
    ... def ok():
    ...     return torch.cuda.get_device_capability()[0] in (8, 9)
    ... def run(x, ver=3):
    ...     if ver == 4:
    ...         return other(x)
    ...     if not ok():
    ...         raise NotImplementedError("no")
    ...     return torch.ops.pkg.run(x)
    ... '''
    >>> tree = ast.parse(code)
    >>> helpers = {f.name: predicate_of(f) for f in tree.body}
    >>> steps = steps_of(tree.body[1])
    >>> refusal(steps, params_of(tree.body[1]), helpers, (12, 0), frozenset())
    (7, 'not ok()', 8, 'raise')
    >>> refusal(steps, params_of(tree.body[1]), helpers, (9, 0), frozenset()) is None
    True
    >>> refusal(steps, params_of(tree.body[1]), helpers, (12, 0), frozenset({"ver"})) is None
    True
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from guardscan.predicate import Tri
from guardscan.syntax import NOT_LITERAL, literal, parse_expr

__all__ = ["Step", "params_of", "predicate_of", "refusal", "steps_of"]

#: (kind, test source, line of the ``if``, line of the raise, its text): kind
#: is ``raise`` (the body raises), ``return`` (it may return), ``stop`` (may
#: leave another way; test ""), ``assign`` (test: the names bound, space-separated)
Step = tuple[str, str, int, int, str]

#: a value not known (``syntax.literal``'s marker)
_UNKNOWN: Any = NOT_LITERAL

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_MAX_DEPTH = 4


def params_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str, str], ...]:
    """(name, default source or "") of each parameter, positional ones first."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    out = [(a.arg, ast.unparse(d) if d is not None else "") for a, d in zip(positional, defaults)]
    out += [(a.arg, ast.unparse(d) if d is not None else "")
            for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return tuple(out)


def predicate_of(node: ast.stmt) -> str:
    """The returned expression's source, where a function's body (after its
    docstring) is one ``return``; else ""."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    body = _without_docstring(node.body)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return ast.unparse(body[0].value)
    return ""


def steps_of(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str] | None = None
             ) -> tuple[Step, ...]:
    """The function's top-level statements as far as a refusal can be read
    (``lines``: the module's, for the raise's text)."""
    out: list[Step] = []
    for stmt in _without_docstring(node.body):
        if isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            if stmt.orelse and _leaves(stmt.orelse):
                out.append(("stop", "", stmt.lineno, 0, ""))
                break
            if stmt.body and isinstance(stmt.body[-1], ast.Raise) and not _leaves(stmt.body[:-1]):
                at = stmt.body[-1].lineno
                text = lines[at - 1].strip() if lines and 0 < at <= len(lines) else "raise"
                out.append(("raise", test, stmt.lineno, at, text[:200]))
            elif _leaves(stmt.body):
                out.append(("return", test, stmt.lineno, 0, ""))
            bound = _bound(stmt)
            if bound:
                out.append(("assign", " ".join(sorted(bound)), stmt.lineno, 0, ""))
            continue
        if isinstance(stmt, ast.Assert):
            text = lines[stmt.lineno - 1].strip() if lines and 0 < stmt.lineno <= len(lines) \
                else "assert"
            out.append(("raise", f"not ({ast.unparse(stmt.test)})", stmt.lineno, stmt.lineno,
                        text[:200]))
            continue
        if isinstance(stmt, (ast.Return, ast.Raise)) or _leaves([stmt]):
            out.append(("stop", "", stmt.lineno, 0, ""))
            break
        bound = _bound(stmt)
        if bound:
            out.append(("assign", " ".join(sorted(bound)), stmt.lineno, 0, ""))
    return tuple(out)


def refusal(steps: tuple[Step, ...], params: tuple[tuple[str, str], ...],
            helpers: Mapping[str, str], capability: tuple[int, int],
            passed: frozenset[str] | None) -> tuple[int, str, int, str] | None:
    """(line of the ``if``, its test, line and text of the raise) of the first raise
    that surely runs on a GPU of ``capability`` when the caller passes the
    parameters ``passed`` (None: not known), or None.

    A call whose arguments are not read at all (``f(*args, **kwargs)``) is a
    wrapper's forwarding: whether it runs is its caller's to say, and sglang
    0.5.10's vision ``flash_attn_func(*args, ver=4)`` returns into FA4 before
    it forwards to the FA3 wrapper, an early return the linker's path
    conditions do not carry. Such a call is refused nothing."""
    if passed is None:
        return None
    values: dict[str, Any] = {}
    for name, default in params:
        values[name] = literal(parse_expr(default)) if default and name not in passed \
            else _UNKNOWN
    rebound: set[str] = set()
    for kind, test, line, raise_line, raise_text in steps:
        if kind == "assign":
            rebound.update(test.split())
            continue
        if kind == "stop":
            return None
        expr = parse_expr(test)
        if expr is None or rebound & {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}:
            return None
        holds = _truth(_value(expr, values, helpers, capability, 0))
        if holds is Tri.FALSE:
            continue
        if holds is Tri.TRUE and kind == "raise":
            return line, test, raise_line, raise_text
        return None
    return None


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _leaves(body: list[ast.stmt]) -> bool:
    """Whether any statement of ``body`` may return or raise."""
    return any(isinstance(n, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom))
               for stmt in body for n in ast.walk(stmt))


def _bound(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(
        n.ctx, (ast.Store, ast.Del))}


def _truth(value: Any) -> Tri:
    if value is _UNKNOWN:
        return Tri.UNKNOWN
    if isinstance(value, Tri):
        return value
    try:
        return Tri.TRUE if value else Tri.FALSE
    except Exception:  # noqa: BLE001 - a value whose truth is not a plain bool
        return Tri.UNKNOWN


def _value(node: ast.expr, values: Mapping[str, Any], helpers: Mapping[str, str],
           capability: tuple[int, int], depth: int) -> Any:
    """The expression's value on the GPU (a Python value, a ``Tri`` for a
    test, or ``_UNKNOWN``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e, values, helpers, capability, depth) for e in node.elts]
        return _UNKNOWN if any(i is _UNKNOWN or isinstance(i, Tri) for i in items) \
            else tuple(items)
    if isinstance(node, ast.Name):
        return values.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(_value(node.operand, values, helpers, capability, depth))
        return {Tri.TRUE: Tri.FALSE, Tri.FALSE: Tri.TRUE}.get(inner, Tri.UNKNOWN)
    if isinstance(node, ast.BoolOp):
        parts = [_truth(_value(v, values, helpers, capability, depth)) for v in node.values]
        decisive, other = (Tri.FALSE, Tri.TRUE) if isinstance(node.op, ast.And) else (
            Tri.TRUE, Tri.FALSE)
        if decisive in parts:
            return decisive
        return other if all(p is other for p in parts) else Tri.UNKNOWN
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _value(node.left, values, helpers, capability, depth)
        right = _value(node.comparators[0], values, helpers, capability, depth)
        compare = _COMPARE.get(type(node.ops[0]))
        if compare is None or left is _UNKNOWN or right is _UNKNOWN or \
                isinstance(left, Tri) or isinstance(right, Tri):
            return _UNKNOWN
        try:
            return Tri.TRUE if compare(left, right) else Tri.FALSE
        except TypeError:
            return _UNKNOWN
    if isinstance(node, ast.Subscript) and _is_capability(node.value) and \
            isinstance(node.slice, ast.Constant) and node.slice.value in (0, 1):
        return capability[1 if node.slice.value == 1 else 0]
    if _is_capability(node):
        return capability
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            depth < _MAX_DEPTH and node.func.id in helpers and helpers[node.func.id]:
        body = parse_expr(helpers[node.func.id])
        if body is None:
            return _UNKNOWN
        # the helper's own parameters are not read: its test of the device alone counts
        return _value(body, {}, helpers, capability, depth + 1)
    return _UNKNOWN


def _is_capability(node: ast.expr) -> bool:
    """``torch.cuda.get_device_capability(...)``."""
    return isinstance(node, ast.Call) and ast.unparse(node.func) == \
        "torch.cuda.get_device_capability"
