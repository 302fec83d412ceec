"""guards (operators): arithmetic, ``not``, ``and`` / ``or``, conditional
expressions and comparisons, for the interpreter (``guards.interpreter``).

Each ``_eval_X`` reads one kind of operator node with its operands already
valued by the interpreter. ``compare`` is where a comparison of two values
becomes a predicate: the registered guard forms first (device quantities,
versions), then tests of an option's value, then constants; what none of
them reads is ``Unknown`` with the comparison's text.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardscan.guards.choices import choice_text
from guardscan.guards.forms import SUBJECTS, first_predicate, first_value
from guardscan.guards.quant_configs import substring_choices
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConstV,
    EnumMemberV,
    FuncV,
    InstanceV,
    ModuleV,
    OptV,
    ParamV,
    PredV,
    TupleV,
    UnkV,
    Value,
)
from guardscan.predicate import (
    FALSE,
    TRUE,
    Const,
    Predicate,
    Unknown,
    conj,
    disj,
    flip_op,
    neg,
)
from guardscan.syntax import COMPARE, OPERATORS, unparse

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["Operators"]

_OPTION_SUBJECTS = (*SUBJECTS, OptV)


class Operators:
    """The operator nodes of one interpreter's expressions."""

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp

    def _eval_BinOp(self, node: ast.BinOp, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        left = self.interp.value_of(node.left, rel, scope, line, env)
        right = self.interp.value_of(node.right, rel, scope, line, env)
        value = first_value(lambda form: form.binop(node.op, left, right))
        if value is not None:
            return value
        if isinstance(left, ConstV) and isinstance(right, ConstV):
            try:
                return ConstV(_BINOPS[type(node.op)](left.value, right.value))
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV("arithmetic")
        return UnkV("arithmetic")

    def _eval_UnaryOp(self, node: ast.UnaryOp, rel: str, scope: str, line: int,
                      env: dict[str, Value]) -> Value:
        operand = self.interp.value_of(node.operand, rel, scope, line, env)
        if isinstance(node.op, ast.Not):
            if isinstance(operand, ConstV):
                return ConstV(not operand.value)
            return PredV(neg(self.interp.to_pred(operand, node.operand)))
        if isinstance(operand, ConstV) and isinstance(node.op, ast.USub):
            try:
                return ConstV(-operand.value)  # type: ignore[operator]
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV("negation")
        return UnkV("unary operation")

    def _eval_BoolOp(self, node: ast.BoolOp, rel: str, scope: str, line: int,
                     env: dict[str, Value]) -> Value:
        values = [self.interp.value_of(v, rel, scope, line, env) for v in node.values]
        if isinstance(node.op, ast.Or) and len(values) == 2:
            left, right = values
            either = first_value(lambda form: form.either(left, right))
            if either is not None:
                return either
        if isinstance(node.op, ast.Or) and len(values) == 2 and all(
                isinstance(v, (OptV, ChoiceV)) for v in values):
            # ``prefill_attention_backend or attention_backend``: the first when given
            given = self.interp.to_pred(values[0], node.values[0])
            return AltV(((given, values[0]), (neg(given), values[1])))
        constants = [v for v in values if isinstance(v, ConstV)]
        if len(constants) == len(values):
            result = constants[0]
            for v in constants[1:]:
                cur = bool(result.value)
                if isinstance(node.op, ast.And):
                    result = v if cur else result
                else:
                    result = result if cur else v
            return result
        preds = [self.interp.to_pred(v, n) for v, n in zip(values, node.values)]
        return PredV(conj(*preds) if isinstance(node.op, ast.And) else disj(*preds))

    def _eval_IfExp(self, node: ast.IfExp, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        test = self.interp.to_pred(self.interp.value_of(node.test, rel, scope, line, env), node.test)
        body = self.interp.value_of(node.body, rel, scope, line, env)
        orelse = self.interp.value_of(node.orelse, rel, scope, line, env)
        if test == TRUE:
            return body
        if test == FALSE:
            return orelse
        if body == orelse:
            return body
        texts = [v for v in (body, orelse) if isinstance(v, ConstV) and not isinstance(
            v.value, (bool, type(None)))]
        if not texts and isinstance(body, (PredV, ConstV)) and isinstance(
                orelse, (PredV, ConstV)):
            return PredV(disj(conj(test, self.interp.to_pred(body)),
                              conj(neg(test), self.interp.to_pred(orelse))))
        chosen = (OptV, ChoiceV, ConstV, EnumMemberV, AltV)
        if isinstance(body, chosen) and isinstance(orelse, chosen):
            # ``cfg.prefill_attention_backend if cfg.prefill_attention_backend
            # else cfg.attention_backend``: one value or the other, by the test
            return AltV(((test, body), (neg(test), orelse)))
        return UnkV("conditional value")

    def _eval_Compare(self, node: ast.Compare, rel: str, scope: str, line: int,
                      env: dict[str, Value]) -> Value:
        parts: list[Predicate] = []
        left_node = node.left
        left = self.interp.value_of(left_node, rel, scope, line, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.interp.value_of(right_node, rel, scope, line, env)
            pair = ast.copy_location(ast.Compare(left=left_node, ops=[op],
                                                 comparators=[right_node]), node)
            parts.append(self.compare(left, OPERATORS[type(op)], right, pair))
            left, left_node = right, right_node
        if all(isinstance(p, Const) for p in parts):
            return ConstV(all(p == TRUE for p in parts))
        return PredV(conj(*parts))

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate:
        if isinstance(left, ParamV) and isinstance(right, ConstV):
            left = self.interp.call_sites.bound(left) or left
        elif isinstance(right, ParamV) and isinstance(left, ConstV):
            right = self.interp.call_sites.bound(right) or right
        if isinstance(left, AltV):
            return disj(*(conj(c, self.compare(v, op, right, node))
                          for c, v in left.alternatives))
        if isinstance(right, AltV):
            return disj(*(conj(c, self.compare(left, op, v, node))
                          for c, v in right.alternatives))
        if op in ("is", "is not") and isinstance(left, _OBJECTS) != isinstance(right, _OBJECTS) \
                and ConstV(None) in (left, right):
            # an object the tree defines or builds is never None
            return FALSE if op == "is" else TRUE
        if isinstance(right, TupleV) and op in ("in", "not in"):
            member = disj(*(self.compare(left, "==", item, node) for item in right.items))
            return member if op == "in" else neg(member)
        if isinstance(right, OptV) and op in ("in", "not in") and isinstance(
                left, ConstV) and isinstance(left.value, str):
            # ``"mxfp8" in quant_method``: a part of the option's value, not
            # the option among values
            part = self.interp.option_tests.option_is(right.dest, substring_choices(
                left.value, self.interp.options.dests.get(right.dest, ())))
            return part if op == "in" else neg(part)
        if isinstance(right, _OPTION_SUBJECTS) and not isinstance(left, _OPTION_SUBJECTS):
            left, right = right, left
            op = flip_op(op)
        pred = first_predicate(lambda form: form.compare(left, op, right, node))
        if pred is not None:
            return pred
        if isinstance(left, OptV):
            option_pred = self.interp.option_tests.compare(left, op, right)
            if option_pred is not None:
                return option_pred
        if isinstance(left, ChoiceV) or isinstance(right, ChoiceV):
            choice_pred = self.interp.option_tests.compare_choices(left, op, right)
            if choice_pred is not None:
                return choice_pred
        left_text, right_text = choice_text(left), choice_text(right)
        if isinstance(left, EnumMemberV) and left_text is not None and right_text is not None \
                and op in ("==", "!=", "is", "is not"):
            same = left_text == right_text
            return TRUE if same == (op in ("==", "is")) else FALSE
        if isinstance(left, ConstV) and isinstance(right, ConstV):
            try:
                return TRUE if COMPARE[op](left.value, right.value) else FALSE
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return Unknown(unparse(node))
        return Unknown(unparse(node))


#: values that are objects, never None
_OBJECTS = (InstanceV, FuncV, ClassV, ModuleV)

_BINOPS: dict[type, Callable[[object, object], object]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,  # type: ignore[operator]
    ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,  # type: ignore[operator]
    ast.Mod: lambda a, b: a % b,  # type: ignore[operator]
}
