"""kernels (arguments): tests of a kernel-library function's parameters, decided by what its caller passes.

What it recognises
    In a kernel-library function, a test of one of its parameters against a
    literal, where the function never reassigns that parameter:
    ``multi_ctas_kv_counter_buffer is not None``, ``seq_lens is None``,
    ``sparse_mla_top_k > 0``, ``enable_dcp`` (its truth). Each reads as a
    Predicate over the parameter's *argument state*, an option named
    ``<param> (argument)`` that holds ``given`` (the caller passes a value
    other than ``None``), ``None`` (it passes ``None``) or ``default`` (it
    passes nothing: the parameter's literal default holds, so
    ``sparse_mla_top_k > 0`` with default ``0`` is false there). What the
    state leaves open (``given`` for ``> 0``: which value?) stays ``Unknown``.
Why it matters
    Which argument a caller passes decides FlashInfer's branches as much as
    the device does: the MLA decode API's ``backend="auto"`` picks ``xqa``
    off major 10 unless ``sparse_mla_top_k > 0``, and ``xqa`` raises when a
    ``multi_ctas_kv_counter_buffer`` is given, which SGLang always gives.
Known limits
    Only the top-level function a caller reaches is given its argument
    states (``argument_options``); a call whose arguments are not all read
    (``**kwargs`` the linker could not resolve) gives none, and every such
    test stays undecided. A parameter the function reassigns, or one
    compared with a non-literal, is not read. ``is`` with anything but
    ``None`` is not read.
Example
    ``def f(x, buf=None, top_k=0)`` called as ``f(q, buf=b)``: ``buf is not
    None`` is true, ``top_k > 0`` false, ``buf is None`` false.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

from guardscan.index.facts import FunctionFact
from guardscan.predicate import OptionIs, Predicate, Unknown, conj, disj, neg
from guardscan.syntax import NOT_LITERAL, literal, parse_expr

__all__ = [
    "DEFAULT",
    "GIVEN",
    "NONE",
    "argument_option",
    "argument_options",
    "read_argument_test",
    "unassigned_params",
]

#: the argument states a caller's call gives a parameter
GIVEN, NONE, DEFAULT = "given", "None", "default"

_COMPARE: dict[type[ast.cmpop], Callable[[object, object], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.Lt: operator.lt, ast.LtE: operator.le,  # type: ignore[dict-item]
    ast.Gt: operator.gt, ast.GtE: operator.ge,  # type: ignore[dict-item]
    ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b,  # type: ignore[operator]
}


def argument_option(param: str) -> str:
    """The Context option that holds ``param``'s argument state."""
    return f"{param} (argument)"


def unassigned_params(fn: FunctionFact, assigned: set[str]) -> dict[str, str]:
    """Parameter -> its default's text ("" when it has none), for the
    parameters of ``fn`` that its body never reassigns (``assigned``)."""
    defaults = dict(fn.defaults)
    return {p: defaults.get(p, "") for p in fn.params
            if p not in assigned and p not in ("self", "cls")}


def _default(text: str) -> object:
    node = parse_expr(text) if text else None
    return literal(node) if node is not None else NOT_LITERAL


def _state(param: str, *states: str) -> Predicate:
    return OptionIs(argument_option(param), frozenset(states))


def _is_none(param: str, default: object) -> Predicate:
    """``param is None``: passed as None, or not passed with a None default."""
    return _state(param, NONE, DEFAULT) if default is None else _state(param, NONE)


def _with_default(param: str, holds: bool, text: str) -> Predicate:
    """A test that the default decides (``holds``) and a given value leaves open."""
    default = _state(param, DEFAULT)
    return disj(default, Unknown(text)) if holds else conj(neg(default), Unknown(text))


def read_argument_test(text: str, arguments: Mapping[str, str]) -> Predicate | None:
    """``text`` as a test of one parameter in ``arguments`` (param -> default
    text), or None when it is not one."""
    node = parse_expr(text)
    if isinstance(node, ast.Name) and node.id in arguments:
        # its truth: ``None`` is falsy, a given value's truth is not known
        default = _default(arguments[node.id])
        given = conj(_state(node.id, GIVEN), Unknown(text))
        if default is NOT_LITERAL:
            return conj(_state(node.id, GIVEN, DEFAULT), Unknown(text))
        return disj(_state(node.id, DEFAULT), given) if default else given
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if not isinstance(left, ast.Name) and isinstance(right, ast.Name):
        left, right = right, left
        op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(),
              ast.GtE: ast.LtE()}.get(type(op), op)
    if not isinstance(left, ast.Name) or left.id not in arguments:
        return None
    param, default = left.id, _default(arguments[left.id])
    value = literal(right)
    if isinstance(op, (ast.Is, ast.IsNot)):
        if value is not None:
            return None
        test = _is_none(param, default)
        return test if isinstance(op, ast.Is) else neg(test)
    compare = _COMPARE.get(type(op))
    if compare is None or value is NOT_LITERAL:
        return None
    if default is NOT_LITERAL:
        return None
    try:
        holds = bool(compare(default, value))
    except TypeError:
        return None
    return _with_default(param, holds, text)


def argument_options(fn: FunctionFact, passed: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The argument state of every parameter of ``fn``, for a call that
    passes exactly ``passed``: (keyword, or the position as digits, state;
    a state other than these three, ``passed``, is a value that may be
    ``None``: not known). A parameter the call does not pass holds its
    default."""
    positional = [p for p in fn.params if p not in ("self", "cls")]
    if fn.positional >= 0:
        positional = positional[:fn.positional]
    states = {argument_option(p): DEFAULT for p in fn.params}
    for key, state in passed:
        name = positional[int(key)] if key.isdigit() and int(key) < len(positional) else key
        if state in (GIVEN, NONE, DEFAULT):
            states[argument_option(name)] = state
        else:  # passed, maybe None: not known
            states.pop(argument_option(name), None)
    return states
