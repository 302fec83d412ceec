"""guards (registries): what a lookup in a registry filled by decorators finds.

SGLang registers implementations in dictionaries at import time and looks
them up by a backend's name later::

    class FusedOpPool:
        _fused_funcs: dict[str, Callable] = {}

        @classmethod
        def register_fused_func(cls, a2a_backend_name, runner_backend_name, fused_func):
            key = (a2a_backend_name, runner_backend_name)
            cls._fused_funcs[key] = fused_func

        @classmethod
        def get_fused_func(cls, dispatch_name, runner_name):
            return cls._fused_funcs.get((dispatch_name, runner_name))

    def register_fused_func(a2a_backend_name, runner_backend_name):
        def decorator(fused_func):
            FusedOpPool.register_fused_func(a2a_backend_name, runner_backend_name, fused_func)
            return fused_func
        return decorator

    @register_fused_func("none", "flashinfer_trtllm")      # in flashinfer_trtllm.py
    def fused_experts_none_to_flashinfer_trtllm(...): ...

A registry is a dictionary a module or a class body defines empty (``{}``,
``dict()``). Its entries are found from the writes ``REG[key] = ...`` in its
own file: the key, read with the writing function's parameters left as
placeholders, is carried back through the calls of that function (and of
the functions that call it with their own parameters, a decorator factory's
closure included, up to ``MAX_LEVELS``) to calls whose arguments are
constants: a decorator ``@register_fused_func("none", "flashinfer_trtllm")``
is such a call. Each entry holds where its module is imported: the
conditions of those imports (``if _SGLANG_EXPERIMENTAL_LORA_OPTI: from ...
import sgl_backend``), or an undecided condition for an import inside a
function.

``REG.get(key)`` is then ``None`` exactly where no entry with an equal key is
present, and the registered function where one is (an ``AltV``). A registry
whose name another file uses, that is changed any other way (``update``,
``setdefault``), or whose registering calls are not all understood is open:
its lookups stay unknown. The tree is read as closed: a public registering
function that nothing in the tree calls (a plug-in's hook) adds no entry.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards.values import AltV, ConstV, FormValue, FuncV, TupleV, UnkV, Value
from guardscan.index.facts import CallFact, FunctionFact
from guardscan.index.observe import FactsView, Reads
from guardscan.predicate import FALSE, TRUE, Predicate, Unknown, conj, disj, neg
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["MAX_LEVELS", "Entry", "Registries", "RegistryGetV", "RegistryV"]

#: Calls carried back from a write to the constants of a key (the write's
#: function, the decorator's inner function, the decorator factory).
MAX_LEVELS = 3
#: More entries than this and the registry is open.
MAX_ENTRIES = 64
#: More files naming a registering function than this and the registry is open.
MAX_FILES = 60

#: a parameter left as a placeholder while a key is read
_MARK = "\x00param:"


@dataclass(frozen=True, slots=True)
class RegistryV(FormValue):
    """A dictionary defined empty in ``owner`` (a class, or ``""``: the module) of ``rel``."""

    rel: str = ""
    owner: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class RegistryGetV(FormValue):
    """``registry.get``, not yet called."""

    registry: RegistryV = RegistryV()


@dataclass(frozen=True, slots=True)
class Entry:
    """One registration: its key, what it registers, where, and when its module is loaded."""

    key: tuple[str, ...]
    value: Value
    rel: str
    line: int
    present: Predicate


def _marks(params: tuple[str, ...]) -> dict[str, Value]:
    return {p: ConstV(_MARK + p) for p in params if p not in ("self", "cls")}


def _template(value: Value) -> tuple[object, ...] | None:
    """A key read with placeholders, as a tuple of constants and placeholders."""
    if isinstance(value, ConstV):
        items = value.value if isinstance(value.value, tuple) else (value.value,)
        return tuple(items)
    if isinstance(value, TupleV):
        out = []
        for item in value.items:
            if not isinstance(item, ConstV):
                return None
            out.append(item.value)
        return tuple(out)
    return None


def _params_of(template: tuple[object, ...]) -> set[str]:
    return {t[len(_MARK):] for t in template if isinstance(t, str) and t.startswith(_MARK)}


class Registries:
    """Entries of the tree's registries, memoised per registry."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.memo: dict[RegistryV, tuple[tuple[Entry, ...] | None, tuple[tuple[str, int], ...],
                                         Reads]] = {}
        self._modules: dict[str, str] | None = None

    def clear(self) -> None:
        self.memo.clear()

    @staticmethod
    def defined(rel: str, scope: str, name: str, text: str) -> RegistryV | None:
        """The registry an assignment at module or class level defines, if it is one."""
        if text.replace(" ", "") not in ("{}", "dict()"):
            return None
        return RegistryV(rel, scope, name)

    # -- lookups -------------------------------------------------------------------
    def get(self, registry: RegistryV, key: Value) -> Value:
        """``registry.get(key)``: the registered value where an entry with that
        key is present, ``None`` elsewhere."""
        entries = self.entries(registry)
        if entries is None:
            return UnkV(f"{registry.name} is filled in ways not read here")
        found: list[tuple[Predicate, Value]] = []
        for entry in entries:
            match = self._matches(key, entry.key)
            hit = conj(match, entry.present)
            if hit != FALSE:
                self.interpreter.stack.trail.append((entry.rel, entry.line))
                found.append((hit, entry.value))
        if not found:
            return ConstV(None)
        absent = neg(disj(*(c for c, _ in found)))
        return AltV((*found, (absent, ConstV(None))))

    def _matches(self, key: Value, entry: tuple[str, ...]) -> Predicate:
        """Whether the looked-up ``key`` equals an entry's key."""
        items: tuple[Value, ...]
        if isinstance(key, TupleV):
            items = key.items
        elif isinstance(key, ConstV) and isinstance(key.value, tuple):
            items = tuple(ConstV(v) for v in key.value)
        else:
            items = (key,)
        if len(items) != len(entry):
            return FALSE
        compare = self.interpreter.operators.compare
        return conj(*(compare(item, "==", ConstV(wanted), ast.Constant(wanted))
                      for item, wanted in zip(items, entry)))

    # -- entries -------------------------------------------------------------------
    def entries(self, registry: RegistryV) -> tuple[Entry, ...] | None:
        stack = self.interpreter.stack
        hit = self.memo.get(registry)
        if hit is not None:
            stack.replay(hit[1], hit[2])
            return hit[0]
        key = ("registry", registry)
        if key in stack.active:
            stack.cut(key)
            return None
        state = stack.enter(key)
        try:
            found = self._entries(registry)
        finally:
            pure, reads = stack.leave(key, state)
        if pure:
            self.memo[registry] = (found, stack.trail_since(state), reads)
        return found

    def _entries(self, registry: RegistryV) -> tuple[Entry, ...] | None:
        interp = self.interpreter
        index = interp.index
        facts = index.view(registry.rel)
        if facts is None:
            return None
        name = registry.name
        if any(rel != registry.rel for rel in index.grep([name])):
            return None
        if index.search(registry.rel, re.compile(
                rf"\b{re.escape(name)}\s*(?:\.\s*(?:update|setdefault|__setitem__)\b|\|=)"
                .encode())):
            return None
        write = re.compile(rf"^(?:(\w+)\.)?{re.escape(name)}\[(.+)\]$")
        entries: list[Entry] = []
        for assign in facts.assigns:
            for target in assign.targets:
                matched = write.match(target)
                if matched is None or not self._ours(registry, matched.group(1), assign.scope):
                    continue
                enclosing = self._enclosing(facts, assign.scope)
                node = parse_expr(matched.group(2))
                if not enclosing or node is None:
                    return None
                marks: dict[str, Value] = {}
                for outer in reversed(enclosing):
                    marks.update(_marks(outer.params))
                template = _template(interp.value_of(node, registry.rel, assign.scope,
                                                     assign.line, marks))
                holder = next((f for f in enclosing if _params_of(template or ()) <= set(
                    f.params)), None)
                if template is None or holder is None:
                    return None
                registered = self._registrations(registry, facts, holder, template, MAX_LEVELS)
                if registered is None:
                    return None
                entries.extend(registered)
                if len(entries) > MAX_ENTRIES:
                    return None
        return tuple(entries)

    @staticmethod
    def _ours(registry: RegistryV, base: str | None, scope: str) -> bool:
        """Whether ``base.NAME[...]`` written in ``scope`` is the registry."""
        if not registry.owner:
            return base is None
        last = registry.owner.rsplit(".", 1)[-1]
        in_class = scope.startswith(registry.owner + ".")
        return base == last or (in_class and base in ("cls", "self"))

    def _registrations(self, registry: RegistryV, facts: FactsView, func: FunctionFact, template: tuple[object, ...],
                       levels: int) -> list[Entry] | None:
        """The entries a key ``template`` of ``func``'s parameters comes to,
        through every call of ``func`` in the tree."""
        params = _params_of(template)
        if not params:
            return [Entry(tuple(str(t) for t in template), FuncV(facts.rel, func.qualname), facts.rel, func.line,
                          self.loaded(facts.rel, registry))]
        if levels <= 0:
            return None
        sites = self._calls_of(facts, func)
        if sites is None:
            return None
        out: list[Entry] = []
        for view, call in sites:
            bound = self._bind(func, call)
            if bound is None:
                return None
            enclosing = self._enclosing(view, call.scope)
            marks: dict[str, Value] = {}
            for outer in reversed(enclosing):  # an inner parameter hides an outer one
                marks.update(_marks(outer.params))
            args: dict[str, object] = {}
            for param in params:
                text = bound.get(param)
                node = parse_expr(text) if text is not None else None
                if node is None:
                    return None
                value = self.interpreter.value_of(node, view.rel, call.scope, call.line, marks)
                if not isinstance(value, ConstV):
                    return None
                args[param] = value.value
            key: tuple[object, ...] = tuple(
                args[t[len(_MARK):]] if isinstance(t, str) and t.startswith(_MARK) else t
                for t in template)
            if not _params_of(key):
                where = self.interpreter.names.path_pred(view, view.rel, call.scope, call.path) \
                    if call.path else TRUE
                if enclosing:  # registered when that function runs
                    where = conj(where, Unknown(f"{call.scope}() runs"))
                out.append(Entry(tuple(str(k) for k in key), self._decorated(view, call),
                                 view.rel, call.line,
                                 conj(where, self.loaded(view.rel, registry))))
                continue
            holder = next((f for f in enclosing if _params_of(key) <= set(f.params)), None)
            if holder is None:
                return None
            more = self._registrations(registry, view, holder, key, levels - 1)
            if more is None:
                return None
            out.extend(more)
        return out

    @staticmethod
    def _enclosing(view: FactsView, scope: str) -> list[FunctionFact]:
        """The functions ``scope`` is in, innermost first."""
        out: list[FunctionFact] = []
        current = scope
        while current:
            func = view.function(current)
            if func is not None:
                out.append(func)
            current = current.rpartition(".")[0]
        return out

    @staticmethod
    def _decorated(view: FactsView, call: CallFact) -> Value:
        """What a registering call at ``call`` registers: the function it
        decorates, or the call itself."""
        for func in view.functions:
            if func.scope == call.scope and any(line == call.line for _, line in func.decorators):
                return FuncV(view.rel, func.qualname)
        return UnkV(f"registered at {view.rel}:{call.line}")

    @staticmethod
    def _bind(func: FunctionFact, call: CallFact) -> dict[str, str] | None:
        """Parameter -> argument text of one call (None: starred arguments)."""
        params = list(func.params)
        if func.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        if any(a.startswith("*") for a in call.args) or any(k.startswith("**") or k == "**"
                                                               for k, _ in call.kwargs):
            return None
        bound = dict(zip(params, call.args))
        bound.update({k: v for k, v in call.kwargs if k in params})
        for name, default in func.defaults:
            bound.setdefault(name, default)
        return bound

    def _calls_of(self, facts: FactsView, func: FunctionFact,
                  ) -> list[tuple[FactsView, CallFact]] | None:
        """Every call of ``func`` in the tree (None: a call named like it
        that this reader cannot place)."""
        interp = self.interpreter
        ours = FuncV(facts.rel, func.qualname)
        sites: list[tuple[FactsView, CallFact]] = []
        files = interp.index.grep([func.name])
        if len(files) > MAX_FILES:
            return None  # a name too common to read every use of
        for rel in files:
            view = interp.index.view(rel)
            if view is None:
                return None
            for call in view.calls_of(func.name):
                node = parse_expr(call.func)
                callee = interp.value_of(node, rel, call.scope, call.line, {}) \
                    if node is not None else UnkV("unreadable")
                if callee == ours:
                    sites.append((view, call))
                elif not isinstance(callee, FuncV):
                    return None
        return sites

    # -- modules -------------------------------------------------------------------
    def loaded(self, rel: str, registry: RegistryV) -> Predicate:
        """When the module of ``rel`` is imported: always, where the registry is
        defined; elsewhere, any of its imports' conditions (an import in a
        function: undecided). Whether the importing module is itself imported
        is not asked (this errs toward an entry being present)."""
        if rel == registry.rel:
            return TRUE
        interp = self.interpreter
        if self._modules is None:
            self._modules = {r: m for m, r in interp.index.by_module.items()}
        module = self._modules.get(rel)
        if module is None:
            return Unknown(f"{rel} is imported")
        parent, _, last = module.rpartition(".")
        # absolute imports name the module or its package; relative ones are
        # made near it (under its package's parent)
        near = rel.rsplit("/", 2)[0] + "/"
        files = set(interp.index.grep([module, f"{parent} import"])) | set(interp.index.grep(
            [last], within=[f for f in interp.index.tree.files if f.startswith(near)]))
        parts: list[Predicate] = []
        for other in sorted(files):
            view = interp.index.view(other)
            if view is None or other == rel:
                continue
            for imp in view.imports:
                full = f"{imp.module}.{imp.name}" if imp.name else imp.module
                if module not in (imp.module, full) and not full.startswith(module + "."):
                    continue
                where = interp.names.path_pred(view, other, imp.scope, imp.path) \
                    if imp.path else TRUE
                if imp.scope:
                    where = conj(where, Unknown(f"{imp.scope}() runs"))
                parts.append(where)
        return disj(*parts) if parts else Unknown(f"{module} is imported")
