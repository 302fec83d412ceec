"""kernels (bindings): what the names in a function hold, capability quantities and literal tables.

What it recognises
    What each local name holds, as the guards interpreter reads the assigned
    value (``CapabilityReader.quantity``): a capability getter, read from its
    definition (``major, minor = get_compute_capability(d)``, ``cap =
    torch.cuda.get_device_capability()``, ``major = cap[0]``), values derived
    from those (``sm = major * 10 + minor``, ``device_arch =
    f"{major}{minor}"``, aliases), literal tables (``table = {"100":
    gen_sm100, ...}`` -> its keys), and *parameters*: a parameter
    compared with literals in the function (``backend in ("120", "121")``)
    takes the quantity every in-tree caller passes for it
    (``get_cutlass_fused_moe_module(device_arch)``), followed through up to
    three levels of pass-through parameters.
Why it matters
    A dispatch keyed on a parameter only says which arch takes which branch
    once we know the parameter *is* the device's SM number.
Known limits
    An assignment is read only when its text names a capability
    (``capabilit``) or a name already holding a quantity: a cheap text
    pre-filter, which never decides what the value means (the interpreter
    does), so a getter spelt otherwise (``sm = get_arch()``) leaves the name
    unread here (the conditions that use it are still read by the
    interpreter). Callers are found by a byte search for ``name(`` over the package's
    sources, then resolved by qualified name; only parameters compared with
    capability-like literals (``"120"``, ints up to 130, ``(12, 0)``) are
    looked up, and a name found in more than ``MAX_CALLER_FILES`` files
    (``run``, ``build``) is not. When callers disagree, pass a value we cannot
    read, or there are none, a parameter compared with 2-3 digit strings is
    read as an SM string and marked guessed (``sm_str?``); a parameter
    compared with ints stays unread (UNKNOWN, never guessed).
Example
    ``def get_module(backend): if backend == "103": ...`` called as
    ``get_module(f"{major}{minor}")`` -> ``backend`` holds ``sm_str``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from guardscan.index.facts import FunctionFact
from guardscan.kernels.conditions import CapabilityReader
from guardscan.kernels.symbols import ModuleSymbols, Resolver, split_targets
from guardscan.syntax import NOT_LITERAL, is_sm_string, literal, parse_expr

__all__ = ["Bindings", "ScopeNames"]

_MAX_PASS_THROUGH = 3
#: A function whose name occurs in more files than this is a common name
#: (``run``, ``build``), not a per-arch helper; its callers are not read.
MAX_CALLER_FILES = 16


def _capability_like(value: object) -> bool:
    """A literal that could be a capability value: ``"120"``, ``10``, ``(12, 0)``."""
    if isinstance(value, (tuple, list, set, frozenset)) and value:
        if all(isinstance(v, tuple) for v in value):
            return all(_capability_like(v) for v in value)
        if isinstance(value, tuple) and len(value) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            return bool(0 <= value[0] <= 20 and 0 <= value[1] <= 9)
        return all(_capability_like(v) for v in value)
    if isinstance(value, str):
        return is_sm_string(value)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 130


class ScopeNames:
    """Names -> quantities and names -> literal values visible in one scope."""

    __slots__ = ("consts", "guessed", "params", "quantities")

    def __init__(self) -> None:
        self.quantities: dict[str, str] = {}
        self.consts: dict[str, object] = {}
        self.params: frozenset[str] = frozenset()
        self.guessed: set[str] = set()


def _same_domain(quantity: str | None, value: object) -> bool:
    """A capability name reassigned a literal of its own kind keeps its meaning
    (``backend = "120f"`` narrows an SM string, it does not replace it)."""
    if quantity in ("sm_str", "sm_str?"):
        return is_sm_string(value)
    if quantity in ("major", "minor", "sm"):
        return isinstance(value, int) and not isinstance(value, bool)
    return False


def _literal_table(value_text: str) -> object:
    """A literal value, or a dict's keys when its values are not literal."""
    first = value_text.lstrip()[:1]
    if not (first in ("{", "[", "(", '"', "'") or first.isdigit()):
        return NOT_LITERAL
    node = parse_expr(value_text)
    if node is None:
        return NOT_LITERAL
    if isinstance(node, ast.Dict):
        keys = []
        for key in node.keys:
            if not isinstance(key, ast.Constant):
                return NOT_LITERAL
            keys.append(key.value)
        return tuple(keys)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Constant)):
        return literal(node)
    return NOT_LITERAL


class Bindings:
    """Computes ScopeNames per function, deriving parameter meanings from callers."""

    def __init__(self, resolver: Resolver, find_callers: Callable[[str], list[str]],
                 reader: CapabilityReader) -> None:
        self.resolver = resolver
        self.reader = reader  # what an expression holds, read by the guards interpreter
        self.find_callers = find_callers  # short name -> rel paths that may call it
        self._memo: dict[str, ScopeNames] = {}
        self._param_memo: dict[tuple[str, str], str | None] = {}
        self._module_consts: dict[str, dict[str, object]] = {}
        self._scope_consts_memo: dict[str, dict[str, object]] = {}
        self._compared_memo: dict[str, dict[str, list[object]]] = {}

    # -- module level -------------------------------------------------------------------
    def module_consts(self, table: ModuleSymbols) -> dict[str, object]:
        if table.module not in self._module_consts:
            consts: dict[str, object] = {}
            for name, assigns in table.assigns.get("", {}).items():
                if len(assigns) == 1 and len(assigns[0].targets) == 1:
                    value = _literal_table(assigns[0].value)
                    if value is not NOT_LITERAL:
                        consts[name] = value
            self._module_consts[table.module] = consts
        return self._module_consts[table.module]

    # -- scopes ------------------------------------------------------------------------------
    def scope_names(self, table: ModuleSymbols, scope: str, depth: int = 0) -> ScopeNames:
        key = f"{table.module}:{scope}"
        if key in self._memo:
            return self._memo[key]
        names = ScopeNames()
        self._memo[key] = names  # a recursion guard while callers are read
        names.consts.update(self.module_consts(table))
        chain = [s for s in reversed(table.scope_chain(scope)) if s]
        for current in chain:  # outer scopes first, so inner assignments win
            fn = table.functions.get(current)
            if fn is None:
                continue
            names.params = frozenset(fn.params) if current == scope else names.params
            for param in fn.params:
                quantity = self.param_quantity(table, fn, param, depth)
                if quantity is not None:
                    names.quantities[param] = quantity
                    if quantity.endswith("?"):
                        names.guessed.add(param)
            self._read_assigns(table, current, names)
        klass = table.enclosing_class(scope)
        if klass:
            for name, quantity in self._class_attributes(table, klass).items():
                names.quantities.setdefault(name, quantity)
        return names

    def _read_assigns(self, table: ModuleSymbols, scope: str, names: ScopeNames) -> None:
        for assign in table.scope_assigns.get(scope, []):
            self._read_assign(assign.targets, assign.value, names, table.rel, scope, assign.line)

    def _read_assign(self, targets: tuple[str, ...], value_text: str, names: ScopeNames,
                     rel: str, scope: str, line: int) -> None:
        value = _literal_table(value_text)
        relevant = "capabilit" in value_text or any(n in value_text for n in names.quantities)
        node = parse_expr(value_text) if relevant or value is not NOT_LITERAL else None
        for target in targets:
            parts = split_targets(target)
            if node is None:
                for name in parts:
                    names.quantities.pop(name, None)
                continue
            if len(parts) == 2 and all(p.isidentifier() for p in parts) and isinstance(
                    node, ast.Call) and self.reader.quantity(
                    value_text, rel, scope, line, names.quantities) == "cap":
                names.quantities[parts[0]] = "major"
                names.quantities[parts[1]] = "minor"
                continue
            if len(parts) != 1:
                continue
            name = parts[0]
            quantity = self.reader.quantity(value_text, rel, scope, line, names.quantities)
            if quantity is not None:
                names.quantities[name] = quantity
            elif not _same_domain(names.quantities.get(name), value):
                names.quantities.pop(name, None)
            if value is not NOT_LITERAL and name.isidentifier():
                names.consts[name] = value

    def _class_attributes(self, table: ModuleSymbols, class_qualname: str) -> dict[str, str]:
        """``self.x`` -> quantity, when every assignment to it in the class agrees
        (``self._device_arch = major * 10 + minor`` in ``__init__``)."""
        key = f"{table.module}:{class_qualname}:self"
        if key in self._memo:
            return self._memo[key].quantities
        found: dict[str, set[str | None]] = {}
        holder = ScopeNames()
        self._memo[key] = holder
        for method in table.functions.values():
            if method.scope != class_qualname:
                continue
            local = ScopeNames()
            for assign in table.scope_assigns.get(method.qualname, []):
                self_targets = [t for t in assign.targets if t.startswith("self.")]
                if self_targets:
                    quantity = self.reader.quantity(assign.value, table.rel, method.qualname,
                                                    assign.line, local.quantities)
                    for target in self_targets:
                        found.setdefault(target, set()).add(quantity)
                self._read_assign(tuple(t for t in assign.targets if not t.startswith("self.")),
                                  assign.value, local, table.rel, method.qualname, assign.line)
        for name, kinds in found.items():
            only = next(iter(kinds)) if len(kinds) == 1 else None
            if only is not None:
                holder.quantities[name] = only
        return holder.quantities

    # -- parameters ---------------------------------------------------------------------------
    def param_quantity(self, table: ModuleSymbols, fn: FunctionFact, param: str,
                       depth: int) -> str | None:
        """The quantity every caller passes for ``param``; only asked for parameters
        the function compares with literals."""
        if not self._compared_with_literal(table, fn, param):
            return None
        key = (f"{table.module}.{fn.qualname}", param)
        if key in self._param_memo:
            return self._param_memo[key]
        self._param_memo[key] = None  # recursion guard
        result = self._from_callers(table, fn, param, depth)
        if result is None and self._compared_with_digit_strings(table, fn, param):
            result = "sm_str?"
        self._param_memo[key] = result
        return result

    def _param_conds(self, table: ModuleSymbols, fn: FunctionFact) -> list[str]:
        return table.conds.get(fn.qualname, [])

    def _scope_consts(self, table: ModuleSymbols, scope: str) -> dict[str, object]:
        """Literal tables visible in ``scope`` (module constants, then the scope's own)."""
        key = f"{table.module}:{scope}"
        if key in self._scope_consts_memo:
            return self._scope_consts_memo[key]
        consts = dict(self.module_consts(table))
        self._scope_consts_memo[key] = consts
        for name, assigns in table.assigns.get(scope, {}).items():
            if len(assigns) == 1:
                value = _literal_table(assigns[0].value)
                if value is not NOT_LITERAL:
                    consts[name] = value
        return consts

    def _compared_literals(self, table: ModuleSymbols, fn: FunctionFact,
                           ) -> dict[str, list[object]]:
        """Name -> literals it is compared with (``==``, ``in``, ...) in the function's
        conditions; read once per function."""
        key = f"{table.module}:{fn.qualname}"
        if key not in self._compared_memo:
            consts = self._scope_consts(table, fn.qualname)
            found: dict[str, list[object]] = {}
            for text in self._param_conds(table, fn):
                node = parse_expr(text)
                if node is None:
                    continue
                for sub in ast.walk(node):
                    if not isinstance(sub, ast.Compare) or len(sub.ops) != 1:
                        continue
                    left, right = sub.left, sub.comparators[0]
                    for name_side, value_side in ((left, right), (right, left)):
                        if isinstance(name_side, ast.Name):
                            value = literal(value_side, consts)
                            if value is not NOT_LITERAL:
                                found.setdefault(name_side.id, []).append(value)
            self._compared_memo[key] = found
        return self._compared_memo[key]

    def _compared_with_literal(self, table: ModuleSymbols, fn: FunctionFact, param: str) -> bool:
        return any(_capability_like(value)
                   for value in self._compared_literals(table, fn).get(param, []))

    def _compared_with_digit_strings(self, table: ModuleSymbols, fn: FunctionFact,
                                     param: str) -> bool:
        for value in self._compared_literals(table, fn).get(param, []):
            values = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
            if values and all(is_sm_string(v) for v in values):
                return True
        return False

    def _from_callers(self, table: ModuleSymbols, fn: FunctionFact, param: str,
                      depth: int) -> str | None:
        if depth >= _MAX_PASS_THROUGH or fn.name.startswith("__"):
            return None
        function_id = f"{table.module}.{fn.qualname}"
        positional = [p for p in fn.params]
        if fn.cls and positional and positional[0] in ("self", "cls"):
            positional = positional[1:]
        index = positional.index(param) if param in positional else -1
        seen: set[str] = set()
        callers = self.find_callers(fn.name)
        if len(callers) > MAX_CALLER_FILES:
            return None
        for rel in callers:
            facts = self.resolver.index.facts(rel)
            if facts is None:
                continue
            caller_table = self.resolver.symbols(facts.module)
            if caller_table is None:
                continue
            for call in facts.calls:
                if not call.func.endswith(fn.name) or call.func.rpartition(".")[2] != fn.name:
                    continue
                target = self.resolver.resolve_call(facts.module, call.scope, call.func)
                if target.name != function_id:
                    continue
                arg = dict(call.kwargs).get(param)
                if arg is None and 0 <= index < len(call.args):
                    arg = call.args[index]
                if arg is None:
                    continue  # the default is used
                if parse_expr(arg) is None:
                    return None
                caller_names = self.scope_names(caller_table, call.scope, depth + 1)
                quantity = self.reader.quantity(arg, facts.rel, call.scope, call.line,
                                                caller_names.quantities)
                if quantity is None or quantity.endswith("?"):
                    return None
                seen.add(quantity)
        return seen.pop() if len(seen) == 1 else None
