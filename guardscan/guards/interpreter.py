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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from guardscan.guards.call_sites import CallSites
from guardscan.guards.calls import FunctionCalls
from guardscan.guards.choices import ChoiceValues
from guardscan.guards.forms import first_predicate, first_value
from guardscan.guards.instance_attrs import InstanceAttributes, enclosing_class
from guardscan.guards.lookup import MODULE_END, NameLookup
from guardscan.guards.operators import Operators
from guardscan.guards.option_tests import OptionModel, OptionTests
from guardscan.guards.quant_configs import ABSENT, QuantConfigs
from guardscan.guards.registries import Registries
from guardscan.guards.stack import MAX_DEPTH, EvaluationStack
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConfigV,
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
    Predicate,
    Unknown,
    conj,
    disj,
)
from guardscan.syntax import parse_expr, unparse

__all__ = ["Interpreter"]



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
        self.call_sites = CallSites(self)
        self.choice_values = ChoiceValues(self)
        self.instance_attrs = InstanceAttributes(self)
        self.registries = Registries(self)
        self.quant_configs = QuantConfigs(self)
        self.operators = Operators(self)
        #: (rel, scope, names, first): what names of that scope hold where the
        #: tree's own definitions leave them unknown, and which of them hold it
        #: whatever the definitions say (``top_value_given``)
        self._given: tuple[str, str, Mapping[str, Value], frozenset[str]] | None = None
        #: (rel, scope, path): a line of that scope read as reached along that
        #: path, with the scope's arguments bound (``reading_along``)
        self._reading: tuple[str, str, tuple[int, ...]] | None = None
        #: node type -> the method that values it (``_eval_X``, here or in ``operators``)
        self._eval: dict[type, Callable[..., Value]] = {
            getattr(ast, name[len("_eval_"):]): getattr(owner, name)
            for owner in (self, self.operators) for name in dir(type(owner))
            if name.startswith("_eval_")}

    def clear(self) -> None:
        self.calls.clear()
        self.call_sites.clear()
        self.choice_values.clear()
        self.instance_attrs.clear()
        self.registries.clear()
        self.quant_configs.clear()
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

    def top_value_env(self, node: ast.AST, rel: str, scope: str, line: int,
                      env: Mapping[str, Value]) -> Value:
        """As ``top_value``, the names in ``env`` holding those values."""
        try:
            return self.value_of(node, rel, scope, line, dict(env))
        except RecursionError:
            self.stack.too_deep()
            return UnkV("too deep")

    def top_value_given(self, node: ast.AST, rel: str, scope: str, line: int,
                        given: Mapping[str, Value], first: frozenset[str] = frozenset(),
                        ) -> Value:
        """As ``top_value``, where a name of ``scope`` (``x``, or ``self.x``)
        that the tree's definitions leave unknown holds its value in
        ``given``: what a caller knows that the scope does not say (a
        parameter's meaning from every call site, a table's keys). A name in
        ``first`` holds its given value whatever the definitions say (the
        caller followed its assignments itself)."""
        outer, self._given = self._given, (rel, scope, given, first)
        try:
            return self.top_value(node, rel, scope, line)
        finally:
            self._given = outer

    def given_name(self, rel: str, scope: str, name: str, first: bool = False,
                    ) -> Value | None:
        """The value given for ``name`` in ``scope`` of ``rel`` (``first``:
        only a name given to hold it whatever the definitions say)."""
        given = self._given
        if given is None or given[0] != rel or given[1] != scope:
            return None
        if first and name not in given[3]:
            return None
        return given[2].get(name)

    @contextmanager
    def reading_along(self, rel: str, scope: str, path: tuple[int, ...]) -> Iterator[None]:
        """Read a line of ``scope`` as reached along ``path`` (its signed branch
        tests), its parameters bound in the ``env`` of the evaluation: the
        scope's own assignments on that path (``x = ...``, ``self.x = ...``
        under the same branch tests) hold their bound values there."""
        outer, self._reading = self._reading, (rel, scope, path)
        try:
            yield
        finally:
            self._reading = outer

    def dominates(self, rel: str, scope: str, path: tuple[int, ...]) -> bool | None:
        """Whether code on ``path`` of ``scope`` runs before every line read
        now (``reading_along``); None when no line of that scope is being read."""
        reading = self._reading
        if reading is None or reading[0] != rel or reading[1] != scope:
            return None
        return reading[2][:len(path)] == path

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

    # -- expression evaluation ---------------------------------------------------------
    def value_of(self, node: ast.AST, rel: str, scope: str, line: int,
                 env: dict[str, Value]) -> Value:
        method = self._eval.get(type(node))
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
        if self._given is not None:
            held = self.given_name(rel, scope, node.id, first=True)
            if held is not None:
                return held
        bound = self.names.bound_local(rel, scope, node.id, line, env) if env else None
        value = bound if bound is not None else self.names.lookup(rel, scope, node.id, line)
        if isinstance(value, UnkV):
            given = self.given_name(rel, scope, node.id)
            if given is not None:
                return given
            if node.id in self.options.dests:
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
            if env and self.dominates(rel, scope, ()):
                bound = self.instance_attrs.bound(rel, scope, attr, line, env)
                if bound is not None:
                    return bound
            held = self.given_name(rel, scope, f"self.{attr}", first=True) or \
                self.instance_attrs.value(rel, scope, attr, line)
            if held is None or isinstance(held, UnkV):
                held = self.given_name(rel, scope, f"self.{attr}") or held
            if held is None:
                held = self._own_property(rel, scope, attr)
            if held is not None:
                return held
        return self.attribute_of(self.value_of(node.value, rel, scope, line, env), attr)

    def _own_property(self, rel: str, scope: str, attr: str) -> Value | None:
        """``self.attr`` in a method, where the class never assigns it and
        defines it as a ``@property`` in its own body: the property's value
        (``self._is_cutedsl_v1_deepep`` returning ``is_flashinfer_cutedsl_v1_path()``)."""
        facts = self.index.view(rel)
        cls = enclosing_class(facts, scope) if facts is not None else ""
        if facts is None or not cls:
            return None
        func = self.tables.class_function(facts, cls, attr)
        if func is None or not any(d.endswith("property") for d, _ in func.decorators):
            return None
        return self.names.instance_method(InstanceV(rel, cls), attr)

    def attribute_of(self, base: Value, attr: str) -> Value:
        """``base.attr``; of a value that depends on conditions, the attribute
        of each alternative."""
        if isinstance(base, AltV):
            return alternatives(base, lambda value: self.attribute_of(value, attr))
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
        if isinstance(base, ConfigV):
            method = self.names.instance_method(InstanceV(base.rel, base.qualname), attr)
            if method is not None:
                return method
            held = self.quant_configs.attribute(base, attr)
            return UnkV(f"{base.qualname}.{attr} is never set") if held == ABSENT else held
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

    def _eval_Call(self, node: ast.Call, rel: str, scope: str, line: int,
                   env: dict[str, Value]) -> Value:
        option_test = self.option_tests.call(node, rel, scope, line, env)
        if option_test is not None:
            return option_test
        checkpoint = self.quant_configs.checkpoint_field(node, scope)
        if checkpoint is not None:
            return checkpoint
        func = node.func
        if isinstance(func, ast.Attribute) and self.choice_values.may_be_method(func.attr):
            computed = self.choice_values.method_call(node, func, rel, scope, line, env)
            if computed is not None:
                return computed
        callee = self.value_of(func, rel, scope, line, env)
        if not node.args and not node.keywords and isinstance(callee, FuncV):
            getter = self.option_tests.getter(callee)
            if getter is not None:
                return getter
        args = [self.value_of(a, rel, scope, line, env) for a in node.args
                if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.value_of(k.value, rel, scope, line, env)
                  for k in node.keywords if k.arg}
        return self.call_of(callee, args, kwargs)

    def call_of(self, callee: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """``callee(*args, **kwargs)``; of a callee that depends on conditions,
        the call of each alternative."""
        if isinstance(callee, AltV):
            return alternatives(callee, lambda value: self.call_of(value, args, kwargs))
        if isinstance(callee, ExtV):
            return self._external_call(callee.path, args, kwargs)
        if isinstance(callee, FuncV):
            return self.calls.call_function(callee, args, kwargs)
        if isinstance(callee, ClassV):
            dest = self.options.enum_dests.get(callee.qualname)
            if dest is not None and len(args) == 1:
                return self.option_tests.enum_of(dest, args[0])
            return InstanceV(callee.rel, callee.qualname)
        value = first_value(lambda form: form.call_value(self, callee, args, kwargs))
        if value is not None:
            return value
        if isinstance(callee, UnkV):
            return callee
        return UnkV("call of non-function")

    def _external_call(self, path: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Calls of names outside the tree, recognised by qualified name."""
        value = first_value(lambda form: form.call(self, path, args, kwargs))
        if value is not None:
            return value
        if path == "torch" or path.startswith("torch."):
            return UnkV(f"{path}()")
        return UnkV(f"{path}() is outside the tree")


def alternatives(value: AltV, each: Callable[[Value], Value]) -> Value:
    """``each`` of every alternative of ``value``, under the same conditions;
    one value when they all agree."""
    out = tuple((cond, each(item)) for cond, item in value.alternatives)
    first = out[0][1]
    return first if all(item == first for _, item in out) else AltV(out)
