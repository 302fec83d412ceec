"""kernels (conditions): the capability conditions kernel-library code tests, as Predicates.

What it recognises
    Each leaf of a condition (a comparison, a call, a name; ``and`` / ``or`` /
    ``not`` are taken apart here) is read first by the guard forms
    (``guards.forms``, through the guards stage's interpreter: ``forms_guard``),
    as SGLang's guards are: ``major < 10`` after ``major, minor =
    get_compute_capability(d)``, ``props.major != 12`` after ``props =
    torch.cuda.get_device_properties(d)``, ``device_arch != "90"`` after
    ``device_arch = f"{major * 10 + minor}"``, ``is_sm100a_supported(d)``.
    What the forms leave undecided is read here, from the scope's bindings
    (see ``bindings``): a parameter whose meaning comes from its callers
    (``backend in ("120", "121")`` where every caller passes the SM string,
    ``major == 9`` in a helper called with the capability), literal tables
    (``backend not in backend_modules``), and a ``backend`` parameter
    compared with non-numeric strings, which becomes ``OptionIs("backend")``
    so ``support(..., backend="cudnn")`` can follow that branch. The same
    quantity reader (``quantity_of``) tells ``bindings`` what a name holds.
Why it matters
    These conditions decide which branch of a dispatch runs on which arch, and
    which raises exclude it.
Known limits
    Without a ``guard`` (a library built without ``forms_guard``) only the
    quantity reader runs: capability getters are then recognised by name
    (``..._capability``), helpers such as ``is_sm100a_supported(device)`` are
    ``None`` (not about the device), which makes the surrounding fact UNKNOWN
    rather than wrong. Ordering comparisons on capability *strings* are not
    read (``"90" < "100"`` is a string comparison).
Example
    ``major, minor = get_compute_capability(x.device)`` then ``if major < 10:``
    reads as ``Device("major", "<", 10)``; ``def get_module(backend): if
    backend == "103": ...`` called as ``get_module(f"{major}{minor}")`` reads
    as ``Device("sm", "==", 103)``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from guardscan.guards import Vocabulary
from guardscan.guards.compare import INTEGER_QUANTITIES, scalar_device_compare
from guardscan.index import Index
from guardscan.kernels.model import GuardFn
from guardscan.predicate import (
    And,
    Const,
    CudaAtLeast,
    Device,
    Not,
    OptionIs,
    Or,
    Platform,
    Predicate,
    QuantIs,
    Unknown,
    conj,
    disj,
    flip_op,
    mentions_device,
    neg,
)
from guardscan.syntax import (
    NOT_LITERAL,
    as_ints,
    as_sm_strings,
    dotted,
    is_sm_string,
    literal,
    parse_expr,
    segment,
)

__all__ = [
    "BACKEND_OPTION",
    "CapabilityReader",
    "forms_guard",
    "is_capability_getter",
    "quantity_of_value",
]

#: The Context option that ``support(..., backend=...)`` sets.
BACKEND_OPTION = "backend"

#: Quantities a name can hold. A trailing ``?`` marks a guessed meaning (a
#: dispatch key whose callers could not be read; its digit strings are read as
#: SM numbers).
QUANTITIES = ("major", "minor", "sm", "sm_str", "cap", "sm_str?")

_GETTER = re.compile(r"(?:^|_)capability$")
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
        ast.In: "in", ast.NotIn: "not in"}


def is_capability_getter(func_text: str) -> bool:
    """``get_compute_capability``, ``torch.cuda.get_device_capability``: calls that
    return the (major, minor) tuple (not ``is_..._capability_supported``)."""
    last = func_text.rpartition(".")[2]
    return bool(_GETTER.search(last)) and not last.startswith(("is_", "has_", "supports"))


def _is_sm_expr(node: ast.AST, names: Mapping[str, str]) -> bool:
    """``major * 10 + minor`` (in either order of the addition)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return False
    for scaled, plain in ((node.left, node.right), (node.right, node.left)):
        if (isinstance(scaled, ast.BinOp) and isinstance(scaled.op, ast.Mult)
                and quantity_of(plain, names) == "minor"):
            factors = (scaled.left, scaled.right)
            if any(isinstance(f, ast.Constant) and f.value == 10 for f in factors) and any(
                    quantity_of(f, names) == "major" for f in factors):
                return True
    return False


def quantity_of(node: ast.AST, names: Mapping[str, str]) -> str | None:
    """Which capability quantity an expression holds, if any."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        text = dotted(node)
        return names.get(text) if text is not None and text.startswith("self.") else None
    if isinstance(node, ast.Call):
        func = dotted(node.func)
        if func is not None and is_capability_getter(func):
            return "cap"
        if func in ("int",) and node.args and quantity_of(node.args[0], names) in (
                "sm_str", "sm_str?"):
            return "sm"
        if func in ("str",) and node.args and quantity_of(node.args[0], names) == "sm":
            return "sm_str"
        return None
    if isinstance(node, ast.Subscript) and quantity_of(node.value, names) == "cap":
        index = node.slice
        if isinstance(index, ast.Constant) and index.value in (0, 1):
            return "major" if index.value == 0 else "minor"
        return None
    if _is_sm_expr(node, names):
        return "sm"
    if isinstance(node, ast.Tuple) and len(node.elts) == 2 and [
            quantity_of(e, names) for e in node.elts] == ["major", "minor"]:
        return "cap"
    if isinstance(node, ast.JoinedStr):
        values = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        literal = "".join(v.value for v in node.values
                          if isinstance(v, ast.Constant) and isinstance(v.value, str))
        if literal:
            return None
        kinds = [quantity_of(v, names) for v in values]
        if kinds == ["major", "minor"] or kinds == ["sm"]:
            return "sm_str"
    return None


def quantity_of_value(value_text: str, names: Mapping[str, str]) -> str | None:
    """The quantity an assigned value holds (``None`` when not capability-derived)."""
    node = parse_expr(value_text)
    return quantity_of(node, names) if node is not None else None


def compare(quantity: str, op: str, value: object) -> Predicate | None:
    """``<quantity> <op> <literal value>`` as a Device predicate, if it reads as one.

    One quantity against one literal is read by the guards' shared comparison
    (``guards.compare.scalar_device_compare``), as SGLang's guards are;
    membership and SM strings keep the kernel reader's stricter rules (sets of
    ints or SM strings only, de-duplicated), which differ from the guard
    forms' in what they leave unknown."""
    membership = op in ("in", "not in")
    if quantity in INTEGER_QUANTITIES:
        if membership:
            ints = as_ints(value)
            return Device(quantity, op, ints) if ints else None
        return scalar_device_compare(quantity, op, value)
    if quantity in ("sm_str", "sm_str?"):
        if op not in ("==", "!=", "in", "not in"):
            return None
        sms = as_sm_strings(value)
        if not sms:
            return None
        if membership:
            return Device("sm", op, sms)
        return Device("sm", op, sms[0]) if isinstance(value, str) else None
    if quantity == "cap":
        if membership and isinstance(value, (list, tuple, set, frozenset)) and all(
                isinstance(v, tuple) and len(v) == 2 for v in value):
            return Device("cap", op, tuple(sorted(set(value))))
        if not membership and isinstance(value, tuple):
            return scalar_device_compare("cap", op, value)
    return None


def forms_guard(index: Index) -> GuardFn:
    """The guard forms (``guards.forms``, through the guards stage's interpreter)
    as the reader's ``guard``: a condition of the kernel library is read as an
    SGLang guard is, over the library's own index. The interpreter is built on
    the first condition read."""
    vocabulary: list[Vocabulary] = []

    def guard(text: str, rel: str, scope: str, line: int) -> Predicate:
        if not vocabulary:
            vocabulary.append(Vocabulary(index))
        return vocabulary[0].predicate(text, rel, scope, line, report=False).predicate

    return guard


class CapabilityReader:
    """Reads a condition into a Predicate, given what the scope's names hold."""

    def __init__(self, guard: GuardFn | None = None) -> None:
        self.guard = guard
        #: (expression, rel, line, error) for guard calls that raised: reported, not fatal
        self.guard_errors: list[tuple[str, str, int, str]] = []

    def read(self, text: str, rel: str, scope: str, line: int,
             names: Mapping[str, str], consts: Mapping[str, object] | None = None,
             params: frozenset[str] = frozenset()) -> Predicate | None:
        """The condition as a Predicate, or ``None`` when it is not about the device.

        ``names``: local name -> quantity; ``consts``: local names bound to
        literal tables (``backend_modules = {"100": gen_sm100, ...}`` -> its keys);
        ``params``: the function's parameters (a ``backend`` parameter compared
        with backend names reads as the backend option).
        """
        node = parse_expr(text)
        if node is None:
            return self._guard(text, rel, scope, line)
        return self._node(node, text, rel, scope, line, names, consts or {}, params)

    def _guard(self, text: str, rel: str, scope: str, line: int) -> Predicate | None:
        if self.guard is None:
            return None
        try:
            answer = self.guard(text, rel, scope, line)
        except Exception as exc:  # noqa: BLE001 - one odd guard must not stop the stage
            self.guard_errors.append((text, rel, line, repr(exc)))
            return None
        # the vocabulary answers a Predicate, or a result carrying one (``.predicate``)
        pred = getattr(answer, "predicate", answer)
        if not isinstance(pred, _PREDICATE_TYPES):
            return None
        return pred if mentions_device(pred) else None

    def _node(self, node: ast.AST, src: str, rel: str, scope: str, line: int,
              names: Mapping[str, str], consts: Mapping[str, object],
              params: frozenset[str]) -> Predicate | None:
        if isinstance(node, ast.BoolOp):
            parts = [self._node(v, src, rel, scope, line, names, consts, params)
                     for v in node.values]
            if all(p is None for p in parts):
                return None
            filled = [p if p is not None else Unknown(segment(src, v) or "?")
                      for p, v in zip(parts, node.values)]
            return conj(*filled) if isinstance(node.op, ast.And) else disj(*filled)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._node(node.operand, src, rel, scope, line, names, consts, params)
            return neg(inner) if inner is not None else None
        # a leaf is read by the guard forms first, as SGLang's guards are; the
        # kernel reader only for what they leave undecided (a dispatch key a
        # parameter holds, the ``backend`` option, literal tables, names whose
        # meaning comes from the callers)
        read = self._guard(segment(src, node), rel, scope, line)
        if read is None and isinstance(node, ast.Compare):
            read = self._compare(node, names, consts, params)
        return read

    def _compare(self, node: ast.Compare, names: Mapping[str, str],
                 consts: Mapping[str, object], params: frozenset[str]) -> Predicate | None:
        operands = [node.left, *node.comparators]
        parts: list[Predicate] = []
        for left, op_node, right in zip(operands, node.ops, operands[1:]):
            op = _CMP.get(type(op_node))
            if op is None:
                return None
            part = self._pair(left, op, right, names, consts, params)
            if part is None:
                return None
            parts.append(part)
        return conj(*parts)

    def _pair(self, left: ast.AST, op: str, right: ast.AST, names: Mapping[str, str],
              consts: Mapping[str, object], params: frozenset[str]) -> Predicate | None:
        quantity = quantity_of(left, names)
        if quantity is not None:
            value = literal(right, consts)
            return compare(quantity, op, value) if value is not NOT_LITERAL else None
        if op not in ("in", "not in"):
            quantity = quantity_of(right, names)
            if quantity is not None:
                value = literal(left, consts)
                return compare(quantity, flip_op(op), value) if value is not NOT_LITERAL else None
        if (isinstance(left, ast.Name) and left.id == BACKEND_OPTION
                and left.id in params and left.id not in names):
            return _backend_option(op, literal(right, consts))
        return None


_PREDICATE_TYPES = (Const, Device, CudaAtLeast, Platform, OptionIs, QuantIs, Unknown, And, Or, Not)


def _backend_option(op: str, value: object) -> Predicate | None:
    if op in ("==", "!=") and isinstance(value, str) and not is_sm_string(value):
        pred: Predicate = OptionIs(BACKEND_OPTION, frozenset({value}))
        return pred if op == "==" else neg(pred)
    if op in ("in", "not in") and isinstance(value, (list, tuple, set, frozenset)) and value and all(
            isinstance(v, str) and not is_sm_string(v) for v in value):
        pred = OptionIs(BACKEND_OPTION, frozenset(str(v) for v in value))
        return pred if op == "in" else neg(pred)
    return None
