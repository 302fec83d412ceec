"""guards (interpreter): the value of a guard expression, by abstract interpretation
over the index facts; never by running the scanned code.

The expression language (names, calls, attributes, comparisons, ``and`` /
``or`` / ``not``, conditional expressions, arithmetic on constants) is
interpreted here; what names from outside the tree and device quantities mean
is asked of the registered guard forms (``guards.forms.REGISTRY``). Function
bodies are interpreted with their arguments bound, which is how
``lru_cache(partial(_check_cuda_device_version, device_capability_majors=[10],
cuda_version=(12, 8)))`` becomes ``capability major in [10] and CUDA >= 12.8``.
Anything not reduced stays ``UnkV`` (an ``Unknown`` predicate), never guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from guardscan.guards.calls import FunctionCalls
from guardscan.guards.choices import ChoiceValues, choice_text
from guardscan.guards.forms import SUBJECTS, first_predicate, first_value
from guardscan.guards.instance_attrs import InstanceAttributes
from guardscan.guards.lookup import MODULE_END, NameLookup
from guardscan.guards.option_tests import OptionModel, OptionTests
from guardscan.guards.stack import MAX_DEPTH, EvaluationStack
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConstV,
    EnumMemberV,
    ExtV,
    FrozenSlice,
    FuncV,
    InstanceV,
    ModuleV,
    OptV,
    PredV,
    TupleV,
    UnkV,
    Value,
)
from guardscan.index import Index
from guardscan.names import BindingTables
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
from guardscan.syntax import COMPARE, OPERATORS, parse_expr, unparse

__all__ = ["Interpreter"]

_OPTION_SUBJECTS = (*SUBJECTS, OptV)


class Interpreter:
    """Expressions of one tree to values; names through ``names``, outside names
    and device quantities through the registered forms."""

    def __init__(self, index: Index, options: OptionModel, stack: EvaluationStack) -> None:
        self.index = index
        self.options = options
        self.stack = stack
        self.tables = BindingTables(index, index.view)
        self.names = NameLookup(self, self.tables, index, stack)
        self.option_tests = OptionTests(self)
        self.calls = FunctionCalls(self)
        self.choice_values = ChoiceValues(self)
        self.instance_attrs = InstanceAttributes(self)

    def clear(self) -> None:
        self.calls.clear()
        self.choice_values.clear()
        self.instance_attrs.clear()
        self.tables.clear()
        self.names.clear()

    @staticmethod
    def parse(text: str) -> ast.expr | None:
        return parse_expr(text)

    def top_value(self, node: ast.AST, rel: str, scope: str, line: int) -> Value:
        try:
            return self.value_of(node, rel, scope, line, {})
        except RecursionError:
            self.stack.too_deep()
            return UnkV("too deep")

    # -- conversion ---------------------------------------------------------------
    def to_pred(self, value: Value, node: ast.AST | None = None) -> Predicate:
        if isinstance(value, PredV):
            return value.pred
        if isinstance(value, ConstV):
            try:
                return TRUE if value.value else FALSE
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return Unknown("constant")
        if isinstance(value, AltV):
            return disj(*(conj(c, self.to_pred(v, node)) for c, v in value.alternatives))
        if isinstance(value, OptV):  # ``if cfg.prefill_attention_backend``: given
            set_pred = self.option_tests.compare(value, "is not", ConstV(None))
            if set_pred is not None:
                return set_pred
        if isinstance(value, TupleV):
            return TRUE if value.items else FALSE
        pred = first_predicate(lambda form: form.truth(value))
        if pred is not None:
            return pred
        text = unparse(node) if node is not None else "?"
        if isinstance(value, UnkV):
            return Unknown(text)
        if isinstance(value, (FuncV, ClassV, ModuleV)):
            return TRUE  # a defined name is truthy
        return Unknown(text)

    def unpack(self, value: Value, index: int) -> Value:
        item = first_value(lambda form: form.unpack(value, index))
        if item is not None:
            return item
        if isinstance(value, ConstV) and isinstance(value.value, tuple):
            try:
                return ConstV(value.value[index])
            except IndexError:
                return UnkV("unpack")
        if isinstance(value, TupleV):
            return value.items[index] if -len(value.items) <= index < len(value.items) \
                else UnkV("unpack")
        return UnkV("unpacked value")

    # -- expression evaluation ---------------------------------------------------------
    def value_of(self, node: ast.AST, rel: str, scope: str, line: int,
                 env: dict[str, Value]) -> Value:
        method: Callable[..., Value] | None = getattr(self, f"_eval_{type(node).__name__}", None)
        if method is None:
            return UnkV(f"{type(node).__name__} expression")
        stack = self.stack
        if stack.depth > MAX_DEPTH:
            stack.too_deep()
            return UnkV("resolution too deep")
        stack.depth += 1
        try:
            return method(node, rel, scope, line, env)
        finally:
            stack.depth -= 1

    def _eval_Constant(self, node: ast.Constant, *_: object) -> Value:
        return ConstV(node.value)

    def _eval_Tuple(self, node: ast.Tuple | ast.List | ast.Set, rel: str, scope: str,
                    line: int, env: dict[str, Value]) -> Value:
        items = [self.value_of(e, rel, scope, line, env) for e in node.elts]
        value = first_value(lambda form: form.tuple_of(items))
        if value is not None:
            return value
        constants = [i.value for i in items if isinstance(i, ConstV)]
        if len(constants) == len(items):
            return ConstV(tuple(constants))
        if isinstance(node, ast.Tuple):
            return TupleV(tuple(items))
        return UnkV("tuple of non-constants")

    _eval_List = _eval_Tuple
    _eval_Set = _eval_Tuple

    def _eval_Name(self, node: ast.Name, rel: str, scope: str, line: int,
                   env: dict[str, Value]) -> Value:
        if node.id in env:
            return env[node.id]
        if node.id in ("True", "False", "None"):
            return ConstV({"True": True, "False": False, "None": None}[node.id])
        value = self.names.lookup(rel, scope, node.id, line)
        if isinstance(value, UnkV) and node.id in self.options.dests:
            return OptV(node.id)
        return value

    def _eval_NamedExpr(self, node: ast.NamedExpr, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        return self.value_of(node.value, rel, scope, line, env)

    def _eval_Attribute(self, node: ast.Attribute, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        attr = node.attr
        if attr in self.options.dests:
            return OptV(attr)
        if isinstance(node.value, ast.Name) and node.value.id == "self" and "self" not in env:
            held = self.instance_attrs.value(rel, scope, attr)
            if held is not None:
                return held
        base = self.value_of(node.value, rel, scope, line, env)
        if isinstance(base, ModuleV):
            step = self.tables.imported(base.name, attr)
            if step.kind == "module":
                return ModuleV(step.name)
            target = self.tables.rel_of(base.name) if step.kind == "member" else None
            if target is not None:
                return self.names.lookup(target, "", attr, MODULE_END)
            return UnkV(f"{base.name}.{attr} is outside the tree")
        if isinstance(base, ClassV):
            member = self.option_tests.enum_member(base, attr)
            return member if member is not None else self.names.class_attr(base, attr)
        if isinstance(base, InstanceV):
            method = self.names.instance_method(base, attr)
            if method is not None:
                return method
        value = first_value(lambda form: form.attribute(self, base, attr))
        if value is not None:
            return value
        if isinstance(base, InstanceV):
            return UnkV(f"{base.qualname}.{attr} not found")
        if isinstance(base, ExtV):
            return ExtV(f"{base.path}.{attr}")
        if isinstance(base, (OptV, ChoiceV)) and attr == "value":
            return base
        if isinstance(base, EnumMemberV) and attr == "value" and len(base.values) == 1:
            return ConstV(next(iter(base.values)))
        if isinstance(base, UnkV):
            return UnkV(f"attribute .{attr} of unknown ({base.reason})")
        return UnkV(f"attribute .{attr}")

    def _eval_Subscript(self, node: ast.Subscript, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        base = self.value_of(node.value, rel, scope, line, env)
        index = self.value_of(node.slice, rel, scope, line, env)
        value = first_value(lambda form: form.subscript(base, index))
        if value is not None:
            return value
        if isinstance(base, ConstV) and isinstance(index, ConstV):
            try:
                key = index.value.as_slice() if isinstance(index.value, FrozenSlice) \
                    else index.value
                return ConstV(base.value[key])  # type: ignore[index]
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV("subscript")
        return UnkV("subscript")

    def _eval_Slice(self, node: ast.Slice, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        parts = [self.value_of(p, rel, scope, line, env) if p is not None else ConstV(None)
                 for p in (node.lower, node.upper, node.step)]
        constants = [p.value for p in parts if isinstance(p, ConstV)]
        if len(constants) == len(parts):
            return ConstV(slice(*constants))
        return UnkV("slice")

    def _eval_BinOp(self, node: ast.BinOp, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        left = self.value_of(node.left, rel, scope, line, env)
        right = self.value_of(node.right, rel, scope, line, env)
        value = first_value(lambda form: form.binop(node.op, left, right))
        if value is not None:
            return value
        if isinstance(left, ConstV) and isinstance(right, ConstV):
            try:
                return ConstV(_BINOPS[type(node.op)](left.value, right.value))
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV("arithmetic")
        return UnkV("arithmetic")

    def _eval_JoinedStr(self, node: ast.JoinedStr, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        parts: list[str | Value] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(self.value_of(value.value, rel, scope, line, env))
        formatted = first_value(lambda form: form.formatted(parts)) or \
            self.choice_values.formatted(parts)
        if formatted is not None:
            return formatted
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            return ConstV("".join(texts))
        return UnkV("formatted string")

    def _eval_UnaryOp(self, node: ast.UnaryOp, rel: str, scope: str, line: int,
                      env: dict[str, Value]) -> Value:
        operand = self.value_of(node.operand, rel, scope, line, env)
        if isinstance(node.op, ast.Not):
            if isinstance(operand, ConstV):
                return ConstV(not operand.value)
            return PredV(neg(self.to_pred(operand, node.operand)))
        if isinstance(operand, ConstV) and isinstance(node.op, ast.USub):
            try:
                return ConstV(-operand.value)  # type: ignore[operator]
            except Exception:  # noqa: BLE001 - scanned constants may be of any type
                return UnkV("negation")
        return UnkV("unary operation")

    def _eval_BoolOp(self, node: ast.BoolOp, rel: str, scope: str, line: int,
                     env: dict[str, Value]) -> Value:
        values = [self.value_of(v, rel, scope, line, env) for v in node.values]
        if isinstance(node.op, ast.Or) and len(values) == 2 and all(
                isinstance(v, (OptV, ChoiceV)) for v in values):
            # ``prefill_attention_backend or attention_backend``: the first when given
            given = self.to_pred(values[0], node.values[0])
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
        preds = [self.to_pred(v, n) for v, n in zip(values, node.values)]
        return PredV(conj(*preds) if isinstance(node.op, ast.And) else disj(*preds))

    def _eval_IfExp(self, node: ast.IfExp, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        test = self.to_pred(self.value_of(node.test, rel, scope, line, env), node.test)
        body = self.value_of(node.body, rel, scope, line, env)
        orelse = self.value_of(node.orelse, rel, scope, line, env)
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
            return PredV(disj(conj(test, self.to_pred(body)),
                              conj(neg(test), self.to_pred(orelse))))
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
        left = self.value_of(left_node, rel, scope, line, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value_of(right_node, rel, scope, line, env)
            pair = ast.copy_location(ast.Compare(left=left_node, ops=[op],
                                                 comparators=[right_node]), node)
            parts.append(self.compare(left, OPERATORS[type(op)], right, pair))
            left, left_node = right, right_node
        if all(isinstance(p, Const) for p in parts):
            return ConstV(all(p == TRUE for p in parts))
        return PredV(conj(*parts))

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate:
        if isinstance(left, AltV):
            return disj(*(conj(c, self.compare(v, op, right, node))
                          for c, v in left.alternatives))
        if isinstance(right, AltV):
            return disj(*(conj(c, self.compare(left, op, v, node))
                          for c, v in right.alternatives))
        if isinstance(right, TupleV) and op in ("in", "not in"):
            member = disj(*(self.compare(left, "==", item, node) for item in right.items))
            return member if op == "in" else neg(member)
        if isinstance(right, _OPTION_SUBJECTS) and not isinstance(left, _OPTION_SUBJECTS):
            left, right = right, left
            op = flip_op(op)
        pred = first_predicate(lambda form: form.compare(left, op, right, node))
        if pred is not None:
            return pred
        if isinstance(left, OptV):
            option_pred = self.option_tests.compare(left, op, right)
            if option_pred is not None:
                return option_pred
        if isinstance(left, ChoiceV) or isinstance(right, ChoiceV):
            choice_pred = self.option_tests.compare_choices(left, op, right)
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

    def _eval_Call(self, node: ast.Call, rel: str, scope: str, line: int,
                   env: dict[str, Value]) -> Value:
        option_test = self.option_tests.call(node, rel, scope, line, env)
        if option_test is not None:
            return option_test
        func = node.func
        if isinstance(func, ast.Attribute) and self.choice_values.may_be_method(func.attr):
            computed = self._method_on_value(node, func, rel, scope, line, env)
            if computed is not None:
                return computed
        callee = self.value_of(func, rel, scope, line, env)
        args = [self.value_of(a, rel, scope, line, env) for a in node.args
                if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.value_of(k.value, rel, scope, line, env)
                  for k in node.keywords if k.arg}
        if isinstance(callee, ExtV):
            return self._external_call(callee.path, args, kwargs)
        if isinstance(callee, FuncV):
            return self.calls.call_function(callee, args, kwargs)
        if isinstance(callee, ClassV):
            dest = self.options.enum_dests.get(callee.qualname)
            if dest is not None and len(args) == 1:
                return self._enum_of(dest, args[0])
            return InstanceV(callee.rel, callee.qualname)
        value = first_value(lambda form: form.call_value(self, callee, args, kwargs))
        if value is not None:
            return value
        if isinstance(callee, UnkV):
            return callee
        return UnkV("call of non-function")

    def _method_on_value(self, node: ast.Call, func: ast.Attribute, rel: str, scope: str,
                         line: int, env: dict[str, Value]) -> Value | None:
        """``x.m(...)`` where ``x`` is an option's value, or constant text: a
        string method or the option's enum method, read per choice
        (``guards.choices``); None for any other call."""
        base = self.value_of(func.value, rel, scope, line, env)
        if not isinstance(base, (OptV, ChoiceV, ConstV, EnumMemberV)):
            return None
        args = [self.value_of(a, rel, scope, line, env) for a in node.args
                if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.value_of(k.value, rel, scope, line, env)
                  for k in node.keywords if k.arg}
        if isinstance(base, (OptV, ChoiceV)):
            value = self.choice_values.enum_method(base, func.attr, args, kwargs)
            if value is not None:
                return value
        return self.choice_values.string_method(base, func.attr, args, kwargs)

    def _enum_of(self, dest: str, arg: Value) -> Value:
        """``E(x)`` for an enum ``E`` that models option ``dest``. A member made
        from the option's value, or from a value not known here (a setter's
        argument: ``FP4_BACKEND = Fp4GemmRunnerBackend(backend)``), is read as the
        option's value, as an ``E``-typed value is everywhere else (enum
        predicate methods); a constant gives that member."""
        if isinstance(arg, (OptV, ChoiceV)):
            return arg
        text = choice_text(arg)
        if text is not None:
            return EnumMemberV(frozenset({text}))
        return OptV(dest)

    def _external_call(self, path: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Calls of names outside the tree, recognised by qualified name."""
        value = first_value(lambda form: form.call(self, path, args, kwargs))
        if value is not None:
            return value
        if path == "torch" or path.startswith("torch."):
            return UnkV(f"{path}()")
        return UnkV(f"{path}() is outside the tree")


_BINOPS: dict[type, Callable[[object, object], object]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,  # type: ignore[operator]
    ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,  # type: ignore[operator]
    ast.Mod: lambda a, b: a % b,  # type: ignore[operator]
}
