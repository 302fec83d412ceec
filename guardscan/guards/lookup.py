"""guards (name lookup): what a name in a guard is bound to in the scanned tree.

Names resolve through the scope's local assignments, the module's definitions
and imports (star imports and re-exports included), so ``is_sm100_supported``
imported as ``_sm100`` is still that guard. The binding tables, star imports
and the steps of an import are the shared resolver's
(:class:`guardscan.names.BindingTables`, which records every read); what is
the guards' own is what the bindings mean here: the bindings of a name made
under conditions are combined with those conditions, local bindings on a
non-NVIDIA-only path are skipped, and answers are memoised with the reads and
definition lines they went through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from guardscan.guards.branches import branch_value, latest_value, on_nvidia
from guardscan.guards.forms import BUILTIN_NAMES, first_value
from guardscan.guards.stack import MODULE_END, EvaluationStack
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConstV,
    EnumMemberV,
    ExtV,
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
from guardscan.index.facts import (
    AssignFact,
    ClassFact,
    FunctionFact,
    ImportFact,
    target_names,
)
from guardscan.index.observe import FactsView, Reads
from guardscan.names import BindingTables
from guardscan.predicate import (
    Predicate,
    Tri,
    Unknown,
    conj,
    disj,
    neg,
)

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["MODULE_END", "NameLookup", "on_nvidia"]

_PLATFORM_WORDS = re.compile(r"(hip|npu|xpu|hpu|mps|musa|cpu|cuda|platform|rocm|torch\.version)",
                             re.IGNORECASE)


_WORD = re.compile(r"[A-Za-z_]\w*")

class NameLookup:
    """Name -> value, memoised per (file, name) and per (file, scope, name, line).

    The per-scope memos are kept by file and let go of with the file's facts
    (``Index.let_go_with``): a scan of sglang 0.5.23 from stored facts made
    105,000 local entries, most of them for files it had stopped holding, and
    they were a tenth of linking's peak. What they answered is asked again
    where the file is read again (about a sixth more local lookups). A memo
    keeps pure answers only, so an answer asked again differs only where the
    evaluation running then cuts a cycle the first one did not meet; every
    release from 0.5.1 to 0.5.23 is judged the same either way."""

    def __init__(self, interpreter: Interpreter, tables: BindingTables, index: Index,
                 stack: EvaluationStack) -> None:
        self.interpreter = interpreter
        self.tables = tables
        self.index = index
        self.stack = stack
        self.name_memo: dict[tuple[str, str], tuple[
            Value, tuple[tuple[str, int], ...], Reads]] = {}
        self.local_memo: dict[str, dict[tuple[str, str, int], tuple[
            Value | None, tuple[tuple[str, int], ...], Reads]]] = {}
        self.reach_memo: dict[str, dict[int, tuple[bool, Reads]]] = {}
        self.scopes_memo: dict[str, dict[str, tuple[list[str], Reads]]] = {}
        #: a local assigned on branches is read as its alternatives (else as
        #: its latest assignment: the kernel library's reader, whose callers'
        #: bindings and backend dispatch expect that)
        self.branch_values = True
        #: a module-level function's parameter is read from its call sites
        #: (``guards.call_sites``; off for the kernel library, whose callers
        #: are SGLang's and whose parameters the kernel reader binds itself)
        self.call_site_params = True
        # the memos of a file's scopes go with its facts (its module-level
        # names' stay: they are what other files ask of it)
        index.let_go_with(self.forget)

    def clear(self) -> None:
        for memo in (self.name_memo, self.local_memo, self.reach_memo, self.scopes_memo):
            memo.clear()

    def forget(self, rel: str) -> None:
        """Let go of the memos of ``rel``'s scopes (the index let go of its facts)."""
        for memo in (self.local_memo, self.reach_memo, self.scopes_memo):
            memo.pop(rel, None)

    def lookup(self, rel: str, scope: str, name: str, line: int) -> Value:
        facts = self.index.view(rel)
        if facts is None:
            return UnkV(f"{rel} not analysed")
        stack = self.stack
        # local scopes, innermost first (class bodies do not enclose methods)
        file_scopes = self.scopes_memo.get(rel)
        if file_scopes is None:
            file_scopes = self.scopes_memo[rel] = {}
        known = file_scopes.get(scope)
        if known is None:
            saved = stack.recorder.open()
            try:
                scopes = self.tables.function_scopes(facts, scope)
            finally:
                file_scopes[scope] = (scopes, stack.recorder.close(saved))
        else:
            scopes = known[0]
            stack.recorder.add(known[1])
        tables = self.tables
        locals_memo = self.local_memo.get(rel)
        if locals_memo is None:
            locals_memo = self.local_memo[rel] = {}
        for sc in scopes:
            # a name the scope neither assigns nor imports is looked up the
            # same on every line of it: one entry for them all
            lkey = (sc, name, line if name in tables.scope_assigns(facts, sc)
                    or name in tables.scope_imports(facts, sc) else -1)
            lhit = locals_memo.get(lkey)
            if lhit is not None:
                local = lhit[0]
                stack.replay(lhit[1], lhit[2])
            else:
                akey = ("local", rel, *lkey)
                if akey in stack.active:
                    stack.cut(akey)
                    return UnkV(f"cyclic local {name}")
                state = stack.enter(akey)
                try:
                    local = self._lookup_local(facts, rel, sc, name, line)
                finally:
                    pure, reads = stack.leave(akey, state)
                if pure:
                    # the definition lines it went through, each once
                    locals_memo[lkey] = (local, stack.trail_since(state), reads)
            if local is not None:
                return local
        key = (rel, name)
        hit = self.name_memo.get(key)
        if hit is not None:
            stack.replay(hit[1], hit[2])
            return hit[0]
        if key in stack.active:
            stack.cut(key)
            return UnkV(f"cyclic definition of {name}")
        state = stack.enter(key)
        try:
            value = self._lookup_module(facts, rel, name)
        finally:
            pure, reads = stack.leave(key, state)
        if pure:
            self.name_memo[key] = (value, stack.trail_since(state), reads)
        return value

    def bound_local(self, rel: str, scope: str, name: str, line: int,
                    env: Mapping[str, Value]) -> Value | None:
        """A local of a function interpreted with its arguments bound, whose
        last assignment before ``line`` is unconditional and reads one of
        them, directly or through such a local (``value = os.getenv(name,
        default)``, then ``value = value.lower()``): its value with those
        bindings. None for any other name (looked up as usual, bindings aside)."""
        facts = self.index.view(rel) if scope else None
        if facts is None:
            return None
        best = self._bound_assign(facts, scope, name, line, env, 4)
        if best is None:
            return None
        node = self.interpreter.parse(best.value)
        if node is None:
            return None
        self.stack.trail.append((rel, best.line))
        value = self.interpreter.value_of(node, rel, best.scope, best.line, dict(env))
        for target in best.targets:
            names = target_names(target)
            if name in names and len(names) > 1:
                return unpack(value, names.index(name))
        return value

    def _bound_assign(self, facts: FactsView, scope: str, name: str, line: int,
                      env: Mapping[str, Value], depth: int) -> AssignFact | None:
        assigns = self.tables.scope_assigns(facts, scope)
        earlier = [a for a in assigns.get(name, ()) if a.line < line]
        if not earlier or depth <= 0:
            return None
        best = max(earlier, key=lambda a: a.line)
        if not best.value:
            return None
        along = self.interpreter.dominates(facts.rel, scope, best.path)
        if along is not None:
            # a line read along a path: the latest assignment is its value
            # where that path passes through it
            return best if along else None
        if best.path:
            return None
        words = set(_WORD.findall(best.value))
        if words & set(env) or any(
                self._bound_assign(facts, scope, word, best.line, env, depth - 1) is not None
                for word in words if word in assigns):
            return best
        return None

    def _lookup_local(self, facts: FactsView, rel: str, scope: str, name: str,
                      line: int) -> Value | None:
        if not scope:
            return None
        by_qualname, by_scope = self.tables.functions(facts)
        facts.note("func", scope)  # its parameters and ``global`` names
        if any(name in func.globals for func in by_qualname.get(scope, ())):
            return None  # the module's binding, which this function also sets
        candidates = sorted(
            (a for a in self.tables.scope_assigns(facts, scope).get(name, ())
             if a.line < line),
            key=lambda a: a.line, reverse=True)
        candidates = [a for a in candidates
                      if not a.path or self._reachable_on_nvidia(facts, rel, scope, a)]
        best = candidates[0] if candidates else None
        for imp in self.tables.scope_imports(facts, scope).get(name, ()):
            if imp.line < line and (best is None or imp.line > best.line):
                return self.import_value(imp.module, imp.name, rel, imp.line)
        if best is not None:
            if not best.path:
                return self.assign_value(rel, best, name)
            if self.branch_values:
                return branch_value(self, facts, rel, scope, name, candidates, by_qualname, line)
            return latest_value(self, facts, rel, scope, name, best, candidates)
        facts.note("scope", scope)  # functions defined in it
        if any(name in func.params for func in by_qualname.get(scope, ())):
            owner = _classmethod_owner(by_qualname.get(scope, ()), name)
            if owner:
                return ClassV(rel, owner)
            built = self.interpreter.quant_configs.init_param(facts, scope, name)
            if built is None and self.call_site_params:
                built = self.interpreter.call_sites.mode_param(facts, scope, name)
            return built if built is not None else UnkV(f"parameter {name}")
        func = by_scope.get((scope, name))
        if func is not None:
            return FuncV(rel, func.qualname)
        return None

    def _reachable_on_nvidia(self, facts: FactsView, rel: str, scope: str,
                             assign: AssignFact) -> bool:
        """False when the assignment's path needs a non-NVIDIA platform."""
        key = (rel, assign.line)
        stack = self.stack
        reach = self.reach_memo.get(rel)
        if reach is None:
            reach = self.reach_memo[rel] = {}
        known = reach.get(assign.line)
        if known is not None:
            stack.recorder.add(known[1])
            return known[0]
        akey = ("reach", key)
        if akey in stack.active:
            stack.cut(akey)
            return True
        state = stack.enter(akey)
        try:
            texts = " ".join(facts.cond(s).text for s in assign.path)
            result = not _PLATFORM_WORDS.search(texts) or on_nvidia(
                self.path_pred(facts, rel, scope, assign.path)) is not Tri.FALSE
        finally:
            pure, reads = stack.leave(akey, state)
        if pure:
            reach[assign.line] = (result, reads)
        return result

    def _lookup_module(self, facts: FactsView, rel: str, name: str) -> Value:
        entries = self.tables.module_bindings(rel, name)
        if not entries:
            target = self.tables.star_provider(facts, name)
            if target is not None:
                return self.lookup(target, "", name, MODULE_END)
            if name in BUILTIN_NAMES:
                return ExtV(f"builtins.{name}")
            return UnkV(f"{name} is not defined in {facts.module}")
        # prefer unconditional definitions; combine conditional boolean ones
        values: list[tuple[tuple[int, ...], Value]] = []
        for entry in entries:
            if isinstance(entry, AssignFact):
                values.append((entry.path, self.assign_value(rel, entry, name)))
            elif isinstance(entry, FunctionFact):
                self.stack.trail.append((rel, entry.line))
                values.append((entry.path, FuncV(rel, entry.qualname)))
            elif isinstance(entry, ClassFact):
                values.append((entry.path, ClassV(rel, entry.qualname)))
            elif isinstance(entry, ImportFact):
                values.append((entry.path, self.import_value(entry.module, entry.name,
                                                                  rel, entry.line)))
        unconditional = [v for p, v in values if not p]
        if len(values) == 1:
            return values[0][1]
        option_value = self._option_global([v for _, v in values])
        if option_value is not None:
            return option_value
        predicates = [(p, v.pred) for p, v in values if isinstance(v, PredV)]
        if len(predicates) == len(values):
            parts = [conj(self.path_pred(facts, rel, "", path), pred)
                     for path, pred in predicates]
            return PredV(disj(*parts))
        if unconditional:
            return unconditional[-1]
        return UnkV(f"{name} is bound under conditions")

    def _option_global(self, values: list[Value]) -> Value | None:
        """A module global that a setter fills with an option's value at start-up
        (``FP4_BACKEND = Fp4GemmRunnerBackend(server_args.fp4_gemm_runner_backend)``),
        its other bindings being placeholders (``None``) or choices of that
        option (a getter's fallback default): the option's value."""
        options = [v for v in values if isinstance(v, (OptV, ChoiceV))]
        if not options or len({v.dest for v in options}) != 1:
            return None
        dest = options[0].dest
        choices = set(self.interpreter.options.dests.get(dest, ()))
        for value in values:
            if isinstance(value, (OptV, ChoiceV)):
                continue
            if isinstance(value, ConstV) and value.value is None:
                continue
            if isinstance(value, EnumMemberV) and value.values <= choices:
                continue
            if isinstance(value, ConstV) and value.value in choices:
                continue
            return None
        return options[-1]

    def import_value(self, module: str, name: str | None, rel: str, line: int) -> Value:
        self.stack.trail.append((rel, line))
        step = self.tables.imported(module, name)
        if step.kind == "module":
            return ModuleV(step.name)
        target = self.tables.rel_of(step.module) if step.kind == "member" else None
        if target is None:
            return ExtV(step.name)
        return self.lookup(target, "", step.name, MODULE_END)

    def assign_value(self, rel: str, assign: AssignFact, name: str) -> Value:
        self.stack.trail.append((rel, assign.line))
        interpreter = self.interpreter
        node = interpreter.parse(assign.value) if assign.value else None
        if node is None:
            return UnkV(f"{name} has no readable value")
        facts = self.index.view(rel)
        if facts is None or facts.function(assign.scope) is None:
            registry = interpreter.registries.defined(rel, assign.scope, name, assign.value)
            if registry is not None:
                return registry
        value = interpreter.value_of(node, rel, assign.scope, assign.line, {})
        for target in assign.targets:
            names = target_names(target)
            if name in names and len(names) > 1:
                return unpack(value, names.index(name))
        return value

    def path_pred(self, facts: FactsView, rel: str, scope: str, path: tuple[int, ...],
                  env: Mapping[str, Value] | None = None) -> Predicate:
        """The conditions on ``path`` (signed condition ids) as one predicate."""
        interpreter = self.interpreter
        parts: list[Predicate] = []
        for signed in path:
            cond = facts.cond(signed)
            if cond.kind == "except":
                parts.append(Unknown(cond.text.strip("<>")))
                continue
            node = interpreter.parse(cond.text)
            if node is None:
                parts.append(Unknown(cond.text))
                continue
            value = interpreter.value_of(node, rel, scope, cond.line, dict(env or {}))
            pred = interpreter.to_pred(value, node)
            parts.append(pred if signed > 0 else neg(pred))
        return conj(*parts)

    # -- members of classes and instances -------------------------------------------
    def class_attr(self, cls: ClassV, attr: str) -> Value:
        facts = self.index.view(cls.rel)
        if facts is None:
            return UnkV("class file not analysed")
        func = self.tables.class_function(facts, cls.qualname, attr)
        if func is not None:
            return FuncV(cls.rel, func.qualname)
        for assign in facts.in_scope("assigns", cls.qualname):
            if attr in assign.targets:
                return self.assign_value(cls.rel, assign, attr)
        return UnkV(f"{cls.qualname}.{attr} not found")

    def instance_method(self, inst: InstanceV, attr: str) -> Value | None:
        """A method (a property's value) of an instance, or ``None`` when its
        class defines no such method."""
        facts = self.index.view(inst.rel)
        if facts is None:
            return UnkV("class file not analysed")
        func = self.tables.class_function(facts, inst.qualname, attr)
        if func is None:
            return None
        if any(d.endswith("property") for d, _ in func.decorators):
            getter = FuncV(inst.rel, func.qualname)
            return self.interpreter.calls.call_function(getter, [], {})
        return FuncV(inst.rel, func.qualname)


def unpack(value: Value, index: int) -> Value:
    """Item ``index`` of a value unpacked by an assignment (``a, b = v``); of
    a value that depends on conditions, the item of each alternative."""
    if isinstance(value, AltV):
        items = tuple((cond, unpack(v, index)) for cond, v in value.alternatives)
        first = items[0][1]
        return first if all(v == first for _, v in items) else AltV(items)
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


def _classmethod_owner(funcs: tuple[FunctionFact, ...] | list[FunctionFact], name: str) -> str:
    """The class whose classmethod binds ``name`` as its first parameter
    (``cls`` in ``@classmethod def from_layer(cls, ...)``), or "": a call
    ``cls._admit(...)`` there runs the class's own ``_admit``.

    >>> f = FunctionFact("R.make", "make", "R", 1, 2, ("cls", "x"), (), (("classmethod", 1),), "")
    >>> _classmethod_owner([f], "cls"), _classmethod_owner([f], "x")
    ('R', '')
    """
    for func in funcs:
        if func.cls and func.params[:1] == (name,) and any(
                d == "classmethod" for d, _ in func.decorators):
            return func.cls
    return ""
