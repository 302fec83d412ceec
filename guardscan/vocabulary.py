"""vocabulary: what each guard really tests, resolved from the tree's own definitions.

A guard expression (``is_sm100_supported()``, ``get_platform().is_sm100``,
``major != 9``, ``get_device_sm() >= 100``...) is read by a small abstract
interpreter over the index facts. Names resolve through the scope's local
assignments, the module's definitions and imports (star imports and re-exports
included), so ``is_sm100_supported`` imported as ``_sm100`` is still that guard.
Function bodies are interpreted with their arguments bound, which is how
``lru_cache(partial(_check_cuda_device_version, device_capability_majors=[10],
cuda_version=(12, 8)))`` becomes ``capability major in [10] and CUDA >= 12.8``.

Nothing is keyed on a guard's spelling: a name means what its definition says.
Anything the interpreter cannot reduce stays ``Unknown``; when such an
expression looks like an architecture guard, an ``unresolved-guard`` diagnostic
says where and why.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Union

from guardscan.index import Index
from guardscan.index.facts import AssignFact, FunctionFact, ReturnFact, target_names
from guardscan.index.observe import STARS, FactsView, Read, Table
from guardscan.messages import diagnostic as make_diagnostic
from guardscan.messages import internal_error
from guardscan.predicate import (
    FALSE,
    TRUE,
    Const,
    Context,
    CudaAtLeast,
    Device,
    OptionIs,
    Platform,
    Predicate,
    QuantIs,
    Tri,
    Unknown,
    atoms,
    conj,
    disj,
    fast_reduce,
    flip_op,
    neg,
    substitute,
)
from guardscan.results import Diagnostic
from guardscan.syntax import COMPARE, OPERATORS, clear_caches, parse_expr, short, unparse

__all__ = ["Vocabulary", "Resolved", "OptionModel", "looks_like_arch_guard"]

_PLATFORM_NAMES = ("npu", "xpu", "hpu", "mps", "musa", "hip")
_PLATFORM_WORDS = re.compile(r"(hip|npu|xpu|hpu|mps|musa|cpu|cuda|platform|rocm|torch\.version)",
                             re.IGNORECASE)
#: Nested evaluation steps before giving up (stays UNKNOWN, never guessed).
MAX_DEPTH = 80
_NO_CUT = 1 << 30
#: A function whose meaning needs more atoms than this is not read as a guard.
MAX_GUARD_ATOMS = 16
_ARCH_WORDS = re.compile(
    r"(sm_?\d{2,3}|capabilit|blackwell|hopper|ampere|device_sm|compute_cap|\bgfx\d|is_sm|cuda_version)",
    re.IGNORECASE,
)


def looks_like_arch_guard(text: str) -> bool:
    """Does this expression mention architecture words (so failing to resolve it matters)?"""
    return bool(_ARCH_WORDS.search(text))


# -- abstract values -------------------------------------------------------------------

@dataclass(frozen=True)
class PredV:
    pred: Predicate


@dataclass(frozen=True)
class DevQ:
    """A device quantity: cap (tuple), major, minor, sm (major*10+minor)."""

    kind: str


@dataclass(frozen=True)
class CudaV:
    """torch.version.cuda, as text or as a (major, minor) tuple."""


@dataclass(frozen=True)
class ConstV:
    """A constant. Its value is frozen on construction (lists to tuples, sets to
    frozensets, slices to ``FrozenSlice``) so that every value is hashable and
    can key a memo: the interpreter models ``[a, b]`` as ``(a, b)`` already."""

    value: object

    def __post_init__(self) -> None:
        if type(self.value) not in _ATOMIC:
            object.__setattr__(self, "value", freeze(self.value))


@dataclass(frozen=True, slots=True)
class FrozenSlice:
    """A slice as a hashable constant (``slice`` is unhashable before Python 3.12)."""

    start: object
    stop: object
    step: object

    def as_slice(self) -> slice:
        return slice(self.start, self.stop, self.step)


@dataclass(frozen=True, slots=True)
class Opaque:
    """A constant of a type the interpreter does not model, kept by its text."""

    text: str


_ATOMIC = frozenset({int, str, bool, float, type(None), bytes})


def freeze(value: object) -> object:
    """``value`` with every container made immutable and hashable."""
    if type(value) in _ATOMIC:
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    if isinstance(value, slice):
        return FrozenSlice(freeze(value.start), freeze(value.stop), freeze(value.step))
    if isinstance(value, dict):
        return Opaque(repr(value))
    try:
        hash(value)
    except TypeError:
        return Opaque(repr(value))
    return value


@dataclass(frozen=True)
class FuncV:
    rel: str
    qualname: str
    bound: tuple[tuple[str, "Value"], ...] = ()
    positional: tuple["Value", ...] = ()


@dataclass(frozen=True)
class ClassV:
    rel: str
    qualname: str


@dataclass(frozen=True)
class InstanceV:
    rel: str
    qualname: str


@dataclass(frozen=True)
class ModuleV:
    name: str


@dataclass(frozen=True)
class OptV:
    """The value of a backend option (by dest) or of an enum linked to it."""

    dest: str


@dataclass(frozen=True)
class EnumMemberV:
    values: frozenset[str]


@dataclass(frozen=True)
class ExtV:
    """A name from outside the tree (``torch.cuda...``, ``functools.partial``,
    builtins), known only by its qualified name: never imported."""

    path: str


@dataclass(frozen=True)
class UnkV:
    reason: str


Value = Union[PredV, DevQ, CudaV, ConstV, FuncV, ClassV, InstanceV, ModuleV, OptV, EnumMemberV,
              ExtV, UnkV]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A guard expression's meaning and the definitions it was read from."""

    predicate: Predicate
    trail: tuple[tuple[str, int], ...] = ()


#: ("p" predicate | "v" value, expression text, file, scope, line)
QueryKey = tuple[str, str, str, str, int]


@dataclass(frozen=True, slots=True)
class Answer:
    """A question's answer, the diagnostic it gives, and what it read."""

    value: object
    diagnostic: Diagnostic | None
    #: stored: numbers in the record's table of reads
    reads: tuple[Read, ...] | bytes


for _cls in (Resolved, Answer):
    _cls.__reduce__ = fast_reduce  # type: ignore[method-assign,assignment]


@dataclass
class OptionModel:
    """What the vocabulary needs to know about options to recognise option tests.

    ``dests``: option dest -> its choices; ``enum_predicates``: method name ->
    (dest, values) for enum predicate methods (``is_flashinfer_trtllm``);
    ``enum_members``: "Enum.MEMBER" -> value; ``enum_dests``: enum class name -> dest;
    ``quantization``: the quantization option's dest, if any.
    """

    dests: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: method -> [(enum class, dest or None when the enum models no option, values)]
    enum_predicates: dict[str, list[tuple[str, str | None, frozenset[str]]]] = field(
        default_factory=dict)
    enum_members: dict[str, str] = field(default_factory=dict)
    enum_dests: dict[str, str] = field(default_factory=dict)
    quantization: str | None = None


class Vocabulary:
    """Resolve guard expressions of one tree to Predicates."""

    def __init__(self, index: Index, options: OptionModel | None = None) -> None:
        self.index = index
        self.options = options or OptionModel()
        self.diagnostics: list[Diagnostic] = []
        # Memos keep each answer with the definition lines it went through (its
        # trail) and what it read (see ``observe.Recorder``), both given again
        # on a hit. An answer cut short by a cycle or by the depth limit
        # depends on where the evaluation started, so it is never kept: every
        # answer is the same whatever was asked before it.
        self._func_memo: dict[tuple[str, str, tuple[tuple[str, Value], ...]], tuple[
            Value, tuple[tuple[str, int], ...], tuple[Read, ...]]] = {}
        self._name_memo: dict[tuple[str, str], tuple[
            Value, tuple[tuple[str, int], ...], tuple[Read, ...]]] = {}
        #: evaluations in progress, by their position in the stack
        self._active: dict[object, int] = {}
        self._trail: list[tuple[str, int]] = []
        self._reported: set[tuple[str, int, str]] = set()
        #: this scan's answers to outside questions; answers of an earlier scan
        #: still valid; the questions asked since ``asked`` was set (or None)
        self.answers: dict[QueryKey, Answer] = {}
        self.stored: Mapping[QueryKey, Answer] = {}
        #: answers of an earlier scan that a change may have touched
        self.former: Mapping[QueryKey, Answer] = {}
        self.asked: list[QueryKey] | None = None
        #: when set, answers keep their reads as numbers in this table
        self.reads_table: Table | None = None
        self._module_cache: dict[str, dict[str, list[object]]] = {}
        self._reach_memo: dict[tuple[str, int], tuple[bool, tuple[Read, ...]]] = {}
        self._local_memo: dict[tuple[str, str, str, int], tuple[
            Value | None, tuple[tuple[str, int], ...], tuple[Read, ...]]] = {}
        self._rec = index.recorder
        #: the lowest stack position a cycle was cut at in the evaluation running
        #: now (``_NO_CUT``: none; -1: the depth limit was met)
        self._low = _NO_CUT
        self._depth = 0
        self._assign_index: dict[str, dict[str, dict[str, list[AssignFact]]]] = {}
        self._import_index: dict[str, dict[str, dict[str, list[object]]]] = {}
        self._functions_of: dict[str, tuple[dict[str, list[FunctionFact]],
                                            dict[tuple[str, str], FunctionFact]]] = {}
        self._scopes_memo: dict[tuple[str, str], tuple[list[str], tuple[Read, ...]]] = {}
        self._returns_of: dict[str, dict[str, list[ReturnFact]]] = {}
        self._packages = {m.rpartition(".")[0] for m in index.by_module}
        self._packages |= {p.rpartition(".")[0] for p in list(self._packages) if p}

    # -- public -----------------------------------------------------------------------
    def release_caches(self) -> None:
        """Forget every memo. They only save time, and they hold on to most of the
        facts; a scan calls this once linking is done (later questions, such as
        ``explain``'s, are answered afresh). Diagnostics stay."""
        for memo in (self._func_memo, self._name_memo, self._module_cache, self._reach_memo,
                     self._local_memo, self._assign_index, self._import_index,
                     self._functions_of, self._scopes_memo, self._returns_of):
            memo.clear()
        self.answers, self.stored, self.former = {}, {}, {}
        self._rec.reads.clear()
        clear_caches()

    # -- questions from outside ---------------------------------------------------------
    # Each is answered once per scan and kept as an ``Answer`` with what it read,
    # so a later scan can keep the answers whose reads a change cannot touch
    # (``stored``) and ask the rest again (see ``guardscan.incremental``).

    def ask(self, key: QueryKey, compute: Callable[[], tuple[object, Diagnostic | None]],
            report: bool = True) -> object:
        answer = self.answers.get(key)
        if answer is None:
            answer = self.stored.get(key)
            if answer is None:
                saved = self._rec.open()
                self._trail = []
                try:
                    value, diagnostic = compute()
                except Exception as exc:  # noqa: BLE001 - one guard never stops the scan
                    value, diagnostic = self._failed(key, exc)
                finally:
                    reads = self._rec.close(saved, merge=False)
                answer = Answer(value, diagnostic, self.reads_table.encode(reads)
                                if self.reads_table is not None else reads)
            self.answers[key] = answer
        if self.asked is not None:
            self.asked.append(key)
        if report and answer.diagnostic is not None:
            self.report(answer.diagnostic)
        return answer.value

    @staticmethod
    def _failed(key: QueryKey, exc: Exception) -> tuple[object, Diagnostic]:
        """The answer to a question whose evaluation raised: undecided, with an
        ``internal-error`` diagnostic at the question's file and line. The
        evaluation's own state was restored on the way out (each step undoes
        its bookkeeping in ``finally``), so later questions are unaffected."""
        kind, text, rel, _, line = key
        what = "guard" if kind == "p" else "expression"
        reason = f"internal error: {type(exc).__name__}"
        value: object = Resolved(Unknown(reason)) if kind == "p" else UnkV(reason)
        return value, internal_error(rel, line, f"the {what} `{short(text)}`", exc)

    def same_answer(self, key: QueryKey) -> bool:
        """Asked again now, does ``key`` get its ``former`` answer?"""
        old = self.former.get(key)
        kind, text, rel, scope, line = key
        if old is None:
            return False
        asked, self.asked = self.asked, None
        try:
            if kind == "p":
                self.predicate(text, rel, scope, line, report=False)
            else:
                self.value(text, rel, scope, line)
        finally:
            self.asked = asked
        new = self.answers[key]
        return new.value == old.value and new.diagnostic == old.diagnostic

    def report(self, diagnostic: Diagnostic) -> None:
        key = (diagnostic.path, diagnostic.line, diagnostic.message)
        if key not in self._reported:
            self._reported.add(key)
            self.diagnostics.append(diagnostic)

    def predicate(self, text: str, rel: str, scope: str, line: int,
                  report: bool = True) -> Resolved:
        """The meaning of the expression ``text`` found in ``rel`` inside ``scope``."""
        return self.ask(("p", text, rel, scope, line),  # type: ignore[return-value]
                        lambda: self._predicate(text, rel, scope, line), report)

    def value(self, text: str, rel: str, scope: str, line: int) -> Value:
        """The value of the expression ``text`` found in ``rel`` inside ``scope``."""
        def compute() -> tuple[Value, None]:
            node = parse_expr(text)
            return (self._top_value(node, rel, scope, line) if node is not None
                    else UnkV(f"unparseable: {text[:60]}")), None
        return self.ask(("v", text, rel, scope, line), compute)  # type: ignore[return-value]

    def value_at(self, node: ast.expr, rel: str, scope: str, line: int) -> Value:
        """The value of a sub-expression (of a parsed expression) in ``rel``,
        asked as its text (so a later scan can ask it again)."""
        return self.value(unparse(node), rel, scope, line)

    def _top_value(self, node: ast.AST, rel: str, scope: str, line: int) -> Value:
        try:
            return self.value_of(node, rel, scope, line, {})
        except RecursionError:
            self._low = -1
            return UnkV("too deep")

    def _predicate(self, text: str, rel: str, scope: str, line: int,
                   ) -> tuple[Resolved, Diagnostic | None]:
        if text.startswith("<"):  # except / match clauses
            return Resolved(Unknown(text.strip("<>"))), None
        node = parse_expr(text)
        if node is None:
            return Resolved(Unknown(f"unparseable: {text[:60]}")), None
        value = self._top_value(node, rel, scope, line)
        pred = self.to_pred(value, node)
        trail = tuple(dict.fromkeys(self._trail))
        diagnostic = None
        if looks_like_arch_guard(text) and _only_unknown(pred):
            if isinstance(value, UnkV):
                reason = value.reason
            else:
                parts = sorted({a.reason for a in atoms(pred) if isinstance(a, Unknown)})
                reason = "cannot read " + ", ".join(f"`{short(p)}`" for p in parts[:3]) \
                    if parts else "no device test in it"
            diagnostic = make_diagnostic(rel, line, "unresolved-guard", text=short(text),
                                         reason=reason)
        return Resolved(pred, trail), diagnostic

    def module_symbol(self, module: str, name: str) -> Value:
        rel = self.index.by_module.get(module)
        if rel is None:
            return UnkV(f"{module} not in tree")
        return self.lookup(rel, "", name, 10**9)

    # -- conversion ---------------------------------------------------------------
    def to_pred(self, value: Value, node: ast.AST | None = None) -> Predicate:
        if isinstance(value, PredV):
            return value.pred
        if isinstance(value, ConstV):
            try:
                return TRUE if value.value else FALSE
            except Exception:
                return Unknown("constant")
        if isinstance(value, CudaV):
            return Platform("cuda")  # torch.version.cuda is set only on CUDA builds
        if isinstance(value, _PlatformValue):
            return Platform(value.name)
        text = unparse(node) if node is not None else "?"
        if isinstance(value, UnkV):
            return Unknown(text)
        if isinstance(value, (FuncV, ClassV, ModuleV)):
            return TRUE  # a defined name is truthy
        return Unknown(text)

    # -- memo discipline -----------------------------------------------------------
    def _enter(self, key: object) -> tuple[int, int, int, set[Read] | None]:
        """Start evaluating ``key`` (a memo key): (stack position, the enclosing
        evaluation's lowest cut, trail mark, the interrupted read frame)."""
        position = len(self._active)
        self._active[key] = position
        state = (position, self._low, len(self._trail), self._rec.open())
        self._low = _NO_CUT
        return state

    def _leave(self, key: object, state: tuple[int, int, int, set[Read] | None],
               ) -> tuple[bool, tuple[Read, ...]]:
        """End evaluating ``key``: whether its answer may be kept (no cycle was
        cut at an evaluation that encloses it, so the answer is what it would be
        if asked first), and what it read."""
        position, outer_low, _, saved = state
        del self._active[key]
        low = self._low
        self._low = min(outer_low, low)
        return low >= position, self._rec.close(saved)

    def _cut(self, key: object) -> None:
        """A cycle: ``key`` is being evaluated already."""
        self._low = min(self._low, self._active[key])

    # -- name resolution ---------------------------------------------------------
    def _module_entries(self, rel: str, name: str) -> list[object]:
        """The module-level bindings of ``name`` in ``rel`` (assignments, then
        functions, classes and imports, each in file order)."""
        view = self.index.view(rel)
        if view is None:
            return []
        view.note("name", name)
        return self._module_table(rel, view).get(name, [])

    def _module_table(self, rel: str, view: FactsView) -> dict[str, list[object]]:
        cached = self._module_cache.get(rel)
        if cached is not None:
            return cached
        facts = view.unobserved
        table: dict[str, list[object]] = {}
        for assign in facts.assigns:
            if assign.scope:
                continue
            for target in assign.targets:
                for name in target_names(target):
                    table.setdefault(name, []).append(assign)
        for func in facts.functions:
            if not func.scope:
                table.setdefault(func.name, []).append(func)
        for cls in facts.classes:
            if not cls.scope:
                table.setdefault(cls.qualname, []).append(cls)
        for imp in facts.imports:
            if not imp.scope:
                table.setdefault(imp.local, []).append(imp)
        self._module_cache[rel] = table
        return table

    def lookup(self, rel: str, scope: str, name: str, line: int) -> Value:
        facts = self.index.view(rel)
        if facts is None:
            return UnkV(f"{rel} not analysed")
        # local scopes, innermost first (class bodies do not enclose methods)
        known = self._scopes_memo.get((rel, scope))
        if known is None:
            saved = self._rec.open()
            try:
                scopes = _enclosing_scopes(scope, facts)
            finally:
                self._scopes_memo[(rel, scope)] = (scopes, self._rec.close(saved))
        else:
            scopes = known[0]
            self._rec.add(known[1])
        for sc in scopes:
            lkey = (rel, sc, name, line)
            lhit = self._local_memo.get(lkey)
            if lhit is not None:
                local = lhit[0]
                self._trail.extend(lhit[1])
                self._rec.add(lhit[2])
            else:
                akey = ("local", lkey)
                if akey in self._active:
                    self._cut(akey)
                    return UnkV(f"cyclic local {name}")
                state = self._enter(akey)
                try:
                    local = self._lookup_local(facts, rel, sc, name, line)
                finally:
                    pure, reads = self._leave(akey, state)
                if pure:
                    mark = state[2]
                    # the definition lines it went through, each once
                    self._local_memo[lkey] = (local, tuple(dict.fromkeys(self._trail[mark:])),
                                              reads)
            if local is not None:
                return local
        key = (rel, name)
        hit = self._name_memo.get(key)
        if hit is not None:
            self._trail.extend(hit[1])
            self._rec.add(hit[2])
            return hit[0]
        if key in self._active:
            self._cut(key)
            return UnkV(f"cyclic definition of {name}")
        state = self._enter(key)
        try:
            value = self._lookup_module(facts, rel, name)
        finally:
            pure, reads = self._leave(key, state)
        if pure:
            self._name_memo[key] = (value, tuple(self._trail[state[2]:]), reads)
        return value

    def _scope_assigns(self, rel: str, facts: FactsView, scope: str,
                       ) -> dict[str, list[AssignFact]]:
        facts.note("scope", scope)
        per_file = self._assign_index.get(rel)
        if per_file is None:
            per_file = {}
            for assign in facts.unobserved.assigns:
                if not assign.scope:
                    continue
                table = per_file.setdefault(assign.scope, {})
                for target in assign.targets:
                    for target_name in target_names(target):
                        table.setdefault(target_name, []).append(assign)
            self._assign_index[rel] = per_file
        return per_file.get(scope, {})

    def _scope_imports(self, rel: str, facts: FactsView, scope: str) -> dict[str, list[object]]:
        facts.note("scope", scope)
        per_file = self._import_index.get(rel)
        if per_file is None:
            per_file = {}
            for imp in facts.unobserved.imports:
                if imp.scope:
                    per_file.setdefault(imp.scope, {}).setdefault(imp.local, []).append(imp)
            self._import_index[rel] = per_file
        return per_file.get(scope, {})

    def _lookup_local(self, facts: FactsView, rel: str, scope: str, name: str,
                      line: int) -> Value | None:
        if not scope:
            return None
        candidates = sorted(
            (a for a in self._scope_assigns(rel, facts, scope).get(name, ())
             if a.line < line),
            key=lambda a: a.line, reverse=True)
        candidates = [a for a in candidates
                      if not a.path or self._reachable_on_nvidia(facts, rel, scope, a)]
        best = candidates[0] if candidates else None
        for imp in self._scope_imports(rel, facts, scope).get(name, ()):
            if imp.line < line:
                if best is None or imp.line > best.line:
                    return self._import_value(imp.module, imp.name, rel, imp.line)
        if best is not None:
            # if/else branches that each assign the name: combine them
            group = [best]
            for other in candidates[1:]:
                if all(_exclusive(other.path, g.path) for g in group):
                    group.append(other)
                else:
                    break
            if len(group) > 1:
                values = [self._assign_value(facts, rel, g, name) for g in group]
                if all(isinstance(v, (PredV, ConstV)) for v in values):
                    parts = [conj(self._path_pred(facts, rel, scope, g.path, g.line),
                                  self.to_pred(v)) for g, v in zip(group, values)]
                    return PredV(disj(*parts))
            return self._assign_value(facts, rel, best, name)
        by_qualname, by_scope = self._function_index(rel, facts)
        facts.note("func", scope)  # its parameters
        facts.note("scope", scope)  # functions defined in it
        if any(name in func.params for func in by_qualname.get(scope, ())):
            return UnkV(f"parameter {name}")
        func = by_scope.get((scope, name))
        if func is not None:
            return FuncV(rel, func.qualname)
        return None

    def _returns_by_scope(self, rel: str, facts: FactsView) -> dict[str, list[ReturnFact]]:
        """A file's return statements by function, in file order."""
        table = self._returns_of.get(rel)
        if table is None:
            table = self._returns_of[rel] = {}
            for ret in facts.unobserved.returns:
                table.setdefault(ret.scope, []).append(ret)
        return table

    def _function_index(self, rel: str, facts: FactsView) -> tuple[
            dict[str, list[FunctionFact]], dict[tuple[str, str], FunctionFact]]:
        """A file's functions by qualified name (all of them, in order) and by
        (enclosing scope, name) (the first), so lookups do not scan them all.
        Callers note what they look up."""
        index = self._functions_of.get(rel)
        if index is None:
            by_qualname: dict[str, list[FunctionFact]] = {}
            by_scope: dict[tuple[str, str], FunctionFact] = {}
            for func in facts.unobserved.functions:
                by_qualname.setdefault(func.qualname, []).append(func)
                by_scope.setdefault((func.scope, func.name), func)
            index = self._functions_of[rel] = (by_qualname, by_scope)
        return index

    def _reachable_on_nvidia(self, facts: FactsView, rel: str, scope: str,
                             assign: AssignFact) -> bool:
        """False when the assignment's path needs a non-NVIDIA platform."""
        key = (rel, assign.line)
        known = self._reach_memo.get(key)
        if known is not None:
            self._rec.add(known[1])
            return known[0]
        akey = ("reach", key)
        if akey in self._active:
            self._cut(akey)
            return True
        state = self._enter(akey)
        try:
            texts = " ".join(facts.cond(s).text for s in assign.path)
            result = not _PLATFORM_WORDS.search(texts) or on_nvidia(
                self._path_pred(facts, rel, scope, assign.path, assign.line)) is not Tri.FALSE
        finally:
            pure, reads = self._leave(akey, state)
        if pure:
            self._reach_memo[key] = (result, reads)
        return result

    def _lookup_module(self, facts: FactsView, rel: str, name: str) -> Value:
        entries = self._module_entries(rel, name)
        if not entries:
            facts.note(*STARS)
            star = [i for i in facts.unobserved.imports if i.local == "*" and not i.scope]
            for imp in star:
                target = self.index.by_module.get(imp.module)
                if target is not None and target != rel:
                    if self._module_entries(target, name) or self._star_has(target, name, 3):
                        return self.lookup(target, "", name, 10**9)
            if name in _BUILTINS:
                return ExtV(f"builtins.{name}")
            return UnkV(f"{name} is not defined in {facts.module}")
        # prefer unconditional definitions; combine conditional boolean ones
        values: list[tuple[tuple[int, ...], Value]] = []
        for entry in entries:
            path = getattr(entry, "path", ())
            if isinstance(entry, AssignFact):
                values.append((path, self._assign_value(facts, rel, entry, name)))
            elif isinstance(entry, FunctionFact):
                self._trail.append((rel, entry.line))
                values.append((path, FuncV(rel, entry.qualname)))
            elif hasattr(entry, "bases"):
                values.append((path, ClassV(rel, entry.qualname)))  # type: ignore[attr-defined]
            else:  # ImportFact
                values.append((path, self._import_value(entry.module, entry.name,  # type: ignore[attr-defined]
                                                        rel, entry.line)))  # type: ignore[attr-defined]
        unconditional = [v for p, v in values if not p]
        if len(values) == 1:
            return values[0][1]
        if all(isinstance(v, PredV) for _, v in values):
            parts = []
            for path, v in values:
                cond = self._path_pred(facts, rel, "", path, 10**9)
                parts.append(conj(cond, v.pred))  # type: ignore[union-attr]
            return PredV(disj(*parts))
        if unconditional:
            return unconditional[-1]
        return UnkV(f"{name} is bound under conditions")

    def _star_has(self, rel: str, name: str, depth: int) -> bool:
        if depth <= 0:
            return False
        facts = self.index.view(rel)
        if facts is None:
            return False
        facts.note(*STARS)
        for imp in facts.unobserved.imports:
            if imp.local == "*" and not imp.scope:
                target = self.index.by_module.get(imp.module)
                if target and (self._module_entries(target, name)
                               or self._star_has(target, name, depth - 1)):
                    return True
        return False

    def _is_package(self, module: str) -> bool:
        return any(m == module or m.startswith(module + ".") for m in self._packages)

    def _import_value(self, module: str, name: str | None, rel: str, line: int) -> Value:
        self._trail.append((rel, line))
        if name is None:
            if module in self.index.by_module or self._is_package(module):
                return ModuleV(module)
            return ExtV(module)
        submodule = f"{module}.{name}"
        if submodule in self.index.by_module:
            return ModuleV(submodule)
        target = self.index.by_module.get(module)
        if target is None:
            return ExtV(submodule)
        return self.lookup(target, "", name, 10**9)

    def _assign_value(self, facts: FactsView, rel: str, assign: AssignFact, name: str) -> Value:
        self._trail.append((rel, assign.line))
        node = parse_expr(assign.value) if assign.value else None
        if node is None:
            return UnkV(f"{name} has no readable value")
        value = self.value_of(node, rel, assign.scope, assign.line, {})
        for target in assign.targets:
            names = target_names(target)
            if name in names and len(names) > 1:
                return _unpack(value, names.index(name))
        return value

    def _path_pred(self, facts: FactsView, rel: str, scope: str, path: tuple[int, ...],
                   line: int, env: Mapping[str, Value] | None = None) -> Predicate:
        parts: list[Predicate] = []
        for signed in path:
            cond = facts.cond(signed)
            if cond.kind == "except":
                parts.append(Unknown(cond.text.strip("<>")))
                continue
            node = parse_expr(cond.text)
            if node is None:
                parts.append(Unknown(cond.text))
                continue
            value = self.value_of(node, rel, scope, cond.line, dict(env or {}))
            pred = self.to_pred(value, node)
            parts.append(pred if signed > 0 else neg(pred))
        return conj(*parts)

    # -- function interpretation -------------------------------------------------------
    def call_value(self, callee: Value) -> Value:
        """Call a function value with no arguments (a probe, a partial, a cached helper)."""
        if isinstance(callee, FuncV):
            return self.call_function(callee, [], {})
        if isinstance(callee, _Wrapper):
            applied = callee.apply([], {})
            if isinstance(applied, FuncV):
                return self.call_function(applied, [], {})
            return applied
        return UnkV("not callable")

    def call_function(self, func: FuncV, args: list[Value], kwargs: dict[str, Value]) -> Value:
        facts = self.index.view(func.rel)
        if facts is None:
            return UnkV("function's file not analysed")
        facts.note("func", func.qualname)
        defs = self._function_index(func.rel, facts)[0].get(func.qualname)
        if not defs:
            return UnkV(f"no definition of {func.qualname}")
        fdef = defs[0]
        bindings: dict[str, Value] = {}
        params = list(fdef.params)
        if fdef.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        for pname, default in fdef.defaults:
            node = parse_expr(default)
            if node is not None:
                bindings[pname] = self.value_of(node, func.rel, fdef.scope, fdef.line, {})
        for pname, value in func.bound:
            bindings[pname] = value
        all_args = [*func.positional, *args]
        for pname, value in zip(params, all_args):
            bindings[pname] = value
        bindings.update({k: v for k, v in kwargs.items() if k in fdef.params})
        key_bindings = tuple(sorted((k, v) for k, v in bindings.items()
                                    if not isinstance(v, UnkV)))
        key = (func.rel, func.qualname, key_bindings)
        hit = self._func_memo.get(key)
        if hit is not None:
            self._trail.extend(hit[1])
            self._rec.add(hit[2])
            return hit[0]
        if key in self._active:
            self._cut(key)
            return UnkV(f"recursive call to {func.qualname}")
        state = self._enter(key)
        self._trail.append((func.rel, fdef.line))
        try:
            value = self._interpret(facts, func.rel, fdef, bindings)
        finally:
            pure, reads = self._leave(key, state)
        if pure:
            self._func_memo[key] = (value, tuple(self._trail[state[2]:]), reads)
        return value

    def _interpret(self, facts: FactsView, rel: str, fdef: FunctionFact,
                   bindings: dict[str, Value]) -> Value:
        facts.note("scope", fdef.qualname)
        returns = self._returns_by_scope(rel, facts).get(fdef.qualname, ())
        if not returns:
            return UnkV(f"{fdef.name}() returns nothing readable")
        results: list[tuple[Predicate, Value]] = []
        for ret in returns:
            node = parse_expr(ret.value) if ret.value else None
            value: Value = self.value_of(node, rel, fdef.qualname, ret.line, bindings) if node is not None \
                else ConstV(None)
            cond = self._path_pred(facts, rel, fdef.qualname, ret.path, ret.line, bindings)
            results.append((cond, value))
        # a raise leaves without a value; the remaining returns decide
        if all(isinstance(v, (PredV, ConstV)) for _, v in results):
            parts = [conj(c, self.to_pred(v)) for c, v in results]
            pred = disj(*parts)
            if len(atoms(pred)) > MAX_GUARD_ATOMS:
                return UnkV(f"{fdef.name}() is too large to read as a guard")
            return PredV(pred)
        device = [v for _, v in results if isinstance(v, (DevQ, CudaV))]
        if device and all(v == device[0] for v in device):
            # the other returns are fallbacks (non-CUDA platforms, probing errors):
            # on the NVIDIA devices we judge the function yields this quantity.
            return device[0]
        live = [(c, v) for c, v in results if c != FALSE]
        if len(live) == 1:
            return live[0][1]
        kinds = {type(v).__name__ for _, v in results}
        return UnkV(f"{fdef.name}() returns {'/'.join(sorted(kinds))}")

    # -- expression evaluation ---------------------------------------------------------
    def value_of(self, node: ast.AST, rel: str, scope: str, line: int,
             env: dict[str, Value]) -> Value:
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        if method is None:
            return UnkV(f"{type(node).__name__} expression")
        if self._depth > MAX_DEPTH:
            self._low = -1
            return UnkV("resolution too deep")
        self._depth += 1
        try:
            result: Value = method(node, rel, scope, line, env)
        finally:
            self._depth -= 1
        return result

    def _eval_Constant(self, node: ast.Constant, *_: object) -> Value:
        return ConstV(node.value)

    def _eval_Tuple(self, node: ast.Tuple, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        items = [self.value_of(e, rel, scope, line, env) for e in node.elts]
        if items == [DevQ("major"), DevQ("minor")]:
            return DevQ("cap")
        if all(isinstance(i, ConstV) for i in items):
            return ConstV(tuple(i.value for i in items))  # type: ignore[union-attr]
        return UnkV("tuple of non-constants")

    _eval_List = _eval_Tuple  # type: ignore[assignment]
    _eval_Set = _eval_Tuple  # type: ignore[assignment]

    def _eval_Name(self, node: ast.Name, rel: str, scope: str, line: int,
                   env: dict[str, Value]) -> Value:
        if node.id in env:
            return env[node.id]
        if node.id in ("True", "False", "None"):
            return ConstV({"True": True, "False": False, "None": None}[node.id])
        value = self.lookup(rel, scope, node.id, line)
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
        base = self.value_of(node.value, rel, scope, line, env)
        if isinstance(base, ExtV):
            path = f"{base.path}.{attr}"
            if path == "torch.version.cuda":
                return CudaV()
            if path == "torch.version.hip":
                return _PlatformValue("hip")
            for platform in _PLATFORM_NAMES:
                if path == f"torch.version.{platform}":
                    return _PlatformValue(platform)
            return ExtV(path)
        if isinstance(base, ModuleV):
            target = self.index.by_module.get(base.name)
            sub = f"{base.name}.{attr}"
            if sub in self.index.by_module:
                return ModuleV(sub)
            if target is not None:
                return self.lookup(target, "", attr, 10**9)
            return UnkV(f"{sub} is outside the tree")
        if isinstance(base, ClassV):
            member = f"{base.qualname}.{attr}"
            if member in self.options.enum_members:
                return EnumMemberV(frozenset({self.options.enum_members[member]}))
            short = f"{base.qualname.rsplit('.', 1)[-1]}.{attr}"
            if short in self.options.enum_members:
                return EnumMemberV(frozenset({self.options.enum_members[short]}))
            return self._class_attr(base, attr)
        if isinstance(base, InstanceV):
            return self._instance_attr(base, attr, rel, line)
        if isinstance(base, DevQ) and base.kind == "cap" and attr in ("major", "minor"):
            return DevQ(attr)
        if isinstance(base, OptV) and attr == "value":
            return base
        if isinstance(base, CudaV):
            return base  # torch.version.cuda.split / .strip / ...
        if isinstance(base, UnkV):
            return UnkV(f"attribute .{attr} of unknown ({base.reason})")
        return UnkV(f"attribute .{attr}")

    def _class_attr(self, cls: ClassV, attr: str) -> Value:
        facts = self.index.view(cls.rel)
        if facts is None:
            return UnkV("class file not analysed")
        facts.note("cls", cls.qualname)
        for func in facts.unobserved.functions:
            if func.cls == cls.qualname and func.name == attr:
                return FuncV(cls.rel, func.qualname)
        for assign in facts.in_scope("assigns", cls.qualname):
            if attr in assign.targets:
                return self._assign_value(facts, cls.rel, assign, attr)
        return UnkV(f"{cls.qualname}.{attr} not found")

    def _instance_attr(self, inst: InstanceV, attr: str, rel: str, line: int) -> Value:
        """Attributes of an instance: methods/properties, or a ``__getattr__``
        that reads a probe map ``{"is_sm100": "is_sm100_supported"}``."""
        facts = self.index.view(inst.rel)
        if facts is None:
            return UnkV("class file not analysed")
        facts.note("cls", inst.qualname)
        for func in facts.unobserved.functions:
            if func.cls == inst.qualname and func.name == attr:
                if any(d.endswith("property") for d, _ in func.decorators):
                    return self.call_function(FuncV(inst.rel, func.qualname), [], {})
                return FuncV(inst.rel, func.qualname)
        getattr_def = next((f for f in facts.unobserved.functions
                            if f.cls == inst.qualname and f.name == "__getattr__"), None)
        if getattr_def is None:
            return UnkV(f"{inst.qualname}.{attr} not found")
        return self._probe_map_attr(facts, inst.rel, getattr_def, attr)

    def _probe_map_attr(self, facts: FactsView, rel: str, getattr_def: FunctionFact,
                        attr: str) -> Value:
        # dicts of str -> str named in __getattr__, and the module the probe is read from
        scope = getattr_def.qualname
        names_used = set()
        module_of_probe: Value | None = None
        for call in facts.in_scope("calls", scope):
            if call.func.endswith(".get") and "." in call.func:
                names_used.add(call.func.rsplit(".", 1)[0])
            if call.func == "getattr" and len(call.args) >= 2:
                module_of_probe = self.lookup(rel, scope, call.args[0], call.line + 1)
        for name in sorted(names_used):
            table = self._module_entries(rel, name)
            for entry in table:
                if not isinstance(entry, AssignFact):
                    continue
                node = parse_expr(entry.value)
                if not isinstance(node, ast.Dict):
                    continue
                for key, val in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == attr and isinstance(
                            val, ast.Constant) and isinstance(val.value, str):
                        self._trail.append((rel, _node_line(entry, key)))
                        probe_name = val.value
                        if isinstance(module_of_probe, ModuleV):
                            target = self.index.by_module.get(module_of_probe.name)
                            probe = self.lookup(target, "", probe_name, 10**9) if target else \
                                UnkV("probe module outside tree")
                        else:
                            probe = self.lookup(rel, "", probe_name, 10**9)
                        return self.call_value(probe)
        return UnkV(f"platform fact .{attr} not in a probe map")

    def _eval_Subscript(self, node: ast.Subscript, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        base = self.value_of(node.value, rel, scope, line, env)
        index = self.value_of(node.slice, rel, scope, line, env)
        if isinstance(base, DevQ) and base.kind == "cap" and isinstance(index, ConstV):
            if index.value == 0:
                return DevQ("major")
            if index.value == 1:
                return DevQ("minor")
            if index.value == FrozenSlice(None, 2, None):
                return base
        if isinstance(base, CudaV):
            return base
        if isinstance(base, ConstV) and isinstance(index, ConstV):
            try:
                key = index.value.as_slice() if isinstance(index.value, FrozenSlice) \
                    else index.value
                return ConstV(base.value[key])  # type: ignore[index]
            except Exception:
                return UnkV("subscript")
        return UnkV("subscript")

    def _eval_Slice(self, node: ast.Slice, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        parts = [self.value_of(p, rel, scope, line, env) if p is not None else ConstV(None)
                 for p in (node.lower, node.upper, node.step)]
        if all(isinstance(p, ConstV) for p in parts):
            return ConstV(slice(*(p.value for p in parts)))  # type: ignore[union-attr]
        return UnkV("slice")

    def _eval_BinOp(self, node: ast.BinOp, rel: str, scope: str, line: int,
                    env: dict[str, Value]) -> Value:
        left = self.value_of(node.left, rel, scope, line, env)
        right = self.value_of(node.right, rel, scope, line, env)
        if isinstance(left, DevQ) and left.kind == "sm" and isinstance(node.op, ast.FloorDiv) \
                and right == ConstV(10):
            return DevQ("major")
        if isinstance(left, DevQ) and left.kind == "sm" and isinstance(node.op, ast.Mod) \
                and right == ConstV(10):
            return DevQ("minor")
        if isinstance(node.op, ast.Mult) and left == DevQ("major") and right == ConstV(10):
            return _MajorTimesTen()
        if isinstance(left, _MajorTimesTen) and isinstance(node.op, ast.Add) and \
                right == DevQ("minor"):
            return DevQ("sm")
        if isinstance(left, ConstV) and isinstance(right, ConstV):
            try:
                return ConstV(_BINOPS[type(node.op)](left.value, right.value))
            except Exception:
                return UnkV("arithmetic")
        return UnkV("arithmetic")

    def _eval_JoinedStr(self, node: ast.JoinedStr, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> Value:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = self.value_of(value.value, rel, scope, line, env)
                parts.append(inner)
        # f"{major}{minor}" is the SM number as text
        devs = [p for p in parts if isinstance(p, DevQ)]
        if [p for p in parts if not isinstance(p, str)] == [DevQ("major"), DevQ("minor")] and \
                all(p == "" for p in parts if isinstance(p, str)):
            return DevQ("sm_text")
        if devs:
            return UnkV("formatted device value")
        if all(isinstance(p, str) for p in parts):
            return ConstV("".join(p for p in parts if isinstance(p, str)))
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
            except Exception:
                return UnkV("negation")
        return UnkV("unary operation")

    def _eval_BoolOp(self, node: ast.BoolOp, rel: str, scope: str, line: int,
                     env: dict[str, Value]) -> Value:
        values = [self.value_of(v, rel, scope, line, env) for v in node.values]
        if all(isinstance(v, ConstV) for v in values):
            result = values[0]
            for v in values[1:]:
                cur = bool(result.value)  # type: ignore[union-attr]
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
        if isinstance(body, (PredV, ConstV)) and isinstance(orelse, (PredV, ConstV)):
            return PredV(disj(conj(test, self.to_pred(body)), conj(neg(test), self.to_pred(orelse))))
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
            parts.append(self._compare(left, OPERATORS[type(op)], right, pair))
            left, left_node = right, right_node
        if all(isinstance(p, Const) for p in parts):
            return ConstV(all(p == TRUE for p in parts))
        return PredV(conj(*parts))

    def _compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate:
        if isinstance(right, (DevQ, CudaV, OptV, _PlatformValue)) and not isinstance(
                left, (DevQ, CudaV, OptV, _PlatformValue)):
            left, right = right, left
            op = flip_op(op)
        if isinstance(left, CudaV) and isinstance(right, ConstV) and right.value is None:
            pred = Platform("cuda")
            return pred if op in ("is not", "!=") else neg(pred)
        if isinstance(left, DevQ) and isinstance(right, ConstV) and right.value is None:
            # get_device_capability() gives (None, None) off CUDA/ROCm/MUSA
            pred = Platform("cuda_alike")
            return pred if op in ("is not", "!=") else neg(pred)
        if isinstance(left, OptV) and isinstance(right, ConstV) and right.value is None:
            choices = frozenset(self.options.dests.get(left.dest, ()))
            if choices:
                pred = self._option_is(left.dest, choices)
                return pred if op in ("is not", "!=") else neg(pred)
        if isinstance(left, DevQ) and isinstance(right, ConstV):
            return _device_compare(left.kind, op, right.value, node)
        if isinstance(left, CudaV) and isinstance(right, ConstV):
            return _cuda_compare(op, right.value, node)
        if isinstance(left, _PlatformValue) and isinstance(right, ConstV) and right.value is None:
            pred: Predicate = Platform(left.name)
            return pred if op in ("is not", "!=") else neg(pred)
        if isinstance(left, OptV):
            values = _string_set(right)
            if values is not None and op in ("==", "!=", "is", "is not", "in", "not in"):
                pred = self._option_is(left.dest, values)
                return neg(pred) if op in ("!=", "is not", "not in") else pred
        if isinstance(left, ConstV) and isinstance(right, ConstV):
            try:
                return TRUE if COMPARE[op](left.value, right.value) else FALSE
            except Exception:
                return Unknown(unparse(node))
        return Unknown(unparse(node))

    def _dest_enum(self, dest: str) -> str:
        for enum, enum_dest in self.options.enum_dests.items():
            if enum_dest == dest and "." not in enum:
                return enum
        return ""

    def _enum_predicate(self, func_node: ast.Attribute, rel: str, scope: str, line: int,
                        env: dict[str, Value]) -> tuple[str, frozenset[str]] | None:
        """(dest, values) for ``x.is_choice()``: by x's enum type when it can be read
        from annotations and assignments, else only when the method is unambiguous."""
        entries = self.options.enum_predicates[func_node.attr]
        enum = self._enum_type(func_node.value, rel, scope, line, 3)
        if enum is not None:
            for short, dest, values in entries:
                if short == enum:
                    return (dest, values) if dest is not None else None
            return None
        linked = [(d, v) for _, d, v in entries if d is not None]
        if len(entries) == 1 and linked:
            return linked[0]
        holder = unparse(func_node.value)
        named = [(d, v) for d, v in linked if d in holder]
        if len(named) == 1:
            return named[0]
        return None

    def _enum_type(self, node: ast.AST, rel: str, scope: str, line: int,
                   depth: int) -> str | None:
        """The enum class (short name) of an expression, from annotations."""
        if depth <= 0:
            return None
        enums = {e for m in self.options.enum_predicates.values() for e, _, _ in m}
        facts = self.index.view(rel)
        if facts is None:
            return None
        if isinstance(node, ast.Call):
            callee = self.value_of(node.func, rel, scope, line, {})
            if isinstance(callee, FuncV):
                cfacts = self.index.view(callee.rel)
                fdef = cfacts.function(callee.qualname) if cfacts else None
                if fdef is not None:
                    return self._annotation_enum(fdef.returns, callee.rel, enums, 3)
            if isinstance(callee, ClassV):
                name = callee.qualname.rsplit(".", 1)[-1]
                return name if name in enums else None
            return None
        if isinstance(node, ast.Name):
            for sc in _enclosing_scopes(scope, facts):
                fdef = facts.function(sc)
                if fdef is not None:
                    for pname, annotation in fdef.annotations:
                        if pname == node.id:
                            return self._annotation_enum(annotation, rel, enums, 3)
                assigns = [a for a in facts.in_scope("assigns", sc) if a.line < line
                           and node.id in a.targets]
                if assigns:
                    last = max(assigns, key=lambda a: a.line)
                    value = parse_expr(last.value)
                    return self._enum_type(value, rel, sc, last.line, depth - 1) \
                        if value is not None else None
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "self":
            fdef = facts.function(scope)
            cls = fdef.cls if fdef is not None else ""
            for assign in facts.in_tree("assigns", cls) if cls else ():
                if assign.scope.startswith(cls + ".") and f"self.{node.attr}" in assign.targets:
                    value = parse_expr(assign.value)
                    if value is not None:
                        found = self._enum_type(value, rel, assign.scope, assign.line, depth - 1)
                        if found:
                            return found
        return None

    def _annotation_enum(self, annotation: str, rel: str, enums: set[str],
                         depth: int) -> str | None:
        """The one enum an annotation names, through aliases such as
        ``BackendLike = Backend | RegisteredBackend`` and string annotations."""
        node = parse_expr(annotation.strip().strip("\"'"))
        if node is None or depth <= 0:
            return None
        found = []
        for sub in ast.walk(node):
            name = sub.attr if isinstance(sub, ast.Attribute) else (
                sub.id if isinstance(sub, ast.Name) else None)
            if name is None:
                continue
            if name in enums:
                found.append(name)
                continue
            for entry in self._module_entries(rel, name):
                if isinstance(entry, AssignFact):
                    inner = self._annotation_enum(entry.value, rel, enums, depth - 1)
                    if inner:
                        found.append(inner)
                elif hasattr(entry, "module") and getattr(entry, "name", None):
                    target = self.index.by_module.get(entry.module)  # type: ignore[attr-defined]
                    if target is not None:
                        for tentry in self._module_entries(
                                target, entry.name):  # type: ignore[attr-defined]
                            if isinstance(tentry, AssignFact):
                                inner = self._annotation_enum(tentry.value, target, enums,
                                                              depth - 1)
                                if inner:
                                    found.append(inner)
        distinct = set(found)
        return found[0] if len(distinct) == 1 else None

    def _option_is(self, dest: str, values: frozenset[str]) -> Predicate:
        if self.options.quantization and dest == self.options.quantization:
            return QuantIs(values)
        return OptionIs(dest, values)

    def _eval_Call(self, node: ast.Call, rel: str, scope: str, line: int,
                   env: dict[str, Value]) -> Value:
        func_node = node.func
        # enum predicate methods: x.is_flashinfer_trtllm()
        if isinstance(func_node, ast.Attribute) and not node.args and \
                func_node.attr in self.options.enum_predicates:
            entry = self._enum_predicate(func_node, rel, scope, line, env)
            if entry is not None:
                dest, values = entry
                holder = unparse(func_node.value)
                # get_speculative_moe_runner_backend() vs get_moe_runner_backend()
                for candidate in sorted(self.options.dests, key=len, reverse=True):
                    if candidate in holder and self.options.enum_dests.get(
                            self._dest_enum(dest)) == self.options.enum_dests.get(
                            self._dest_enum(candidate)) and candidate in self.options.dests:
                        dest = candidate
                        break
                return PredV(self._option_is(dest, values))
            return UnkV(f"{unparse(node)}: receiver type unknown")
        if isinstance(func_node, ast.Attribute) and func_node.attr in ("startswith", "endswith"):
            base = self.value_of(func_node.value, rel, scope, line, env)
            if isinstance(base, OptV) and node.args:
                arg = self.value_of(node.args[0], rel, scope, line, env)
                choices = self.options.dests.get(base.dest, ())
                if isinstance(arg, ConstV) and isinstance(arg.value, (str, tuple)) and choices:
                    prefixes = arg.value if isinstance(arg.value, tuple) else (arg.value,)
                    test: Callable[[str], bool] = (
                        (lambda c: c.startswith(prefixes)) if func_node.attr == "startswith"
                        else (lambda c: c.endswith(prefixes)))
                    return PredV(self._option_is(base.dest, frozenset(c for c in choices if test(c))))
        callee = self.value_of(func_node, rel, scope, line, env)
        args = [self.value_of(a, rel, scope, line, env) for a in node.args
                if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.value_of(k.value, rel, scope, line, env) for k in node.keywords if k.arg}
        if isinstance(callee, ExtV):
            return _external_call(callee.path, args, kwargs)
        if isinstance(callee, FuncV):
            return self.call_function(callee, args, kwargs)
        if isinstance(callee, ClassV):
            if callee.qualname in self.options.enum_dests and args and isinstance(args[0], OptV):
                return args[0]
            return InstanceV(callee.rel, callee.qualname)
        if isinstance(callee, CudaV):
            return callee
        if isinstance(callee, _Wrapper):
            applied = callee.apply(args, kwargs)
            if isinstance(applied, FuncV) and callee.kind == "partial":
                return self.call_function(applied, [], {})
            return applied
        if isinstance(callee, UnkV):
            return callee
        return UnkV("call of non-function")


# -- helpers -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _PlatformValue:
    """``torch.version.hip``-like: not None exactly on that platform."""

    name: str


@dataclass(frozen=True)
class _MajorTimesTen:
    pass


@dataclass(frozen=True)
class _Wrapper:
    """functools.partial / lru_cache / cache, applied lazily."""

    kind: str
    inner: Value | None = None
    bound: tuple[tuple[str, Value], ...] = ()
    positional: tuple[Value, ...] = ()

    def apply(self, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if self.kind == "decorator-factory":  # lru_cache(maxsize=1)(f)
            return args[0] if args else UnkV("lru_cache() without function")
        if self.kind == "partial":
            inner = self.inner
            if isinstance(inner, FuncV):
                return FuncV(inner.rel, inner.qualname,
                             tuple(sorted({**dict(inner.bound), **dict(self.bound),
                                           **kwargs}.items())),
                             (*inner.positional, *self.positional, *args))
            return UnkV("partial of unknown function")
        return UnkV("wrapper")




_BUILTINS = frozenset({"hasattr", "tuple", "int", "list", "map", "bool", "getattr", "str",
                       "float", "len", "isinstance", "any", "all", "min", "max", "set"})


def _external_call(path: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """Calls of names outside the tree, recognised by qualified name."""
    if path == "torch" or path.startswith("torch."):
        return _torch_call(path, args)
    module, _, name = path.rpartition(".")
    if module in ("functools", "builtins", "packaging.version", "cachetools"):
        result = _builtin_call(name, args, kwargs)
        if result is not None:
            return result
    return UnkV(f"{path}() is outside the tree")


def _builtin_call(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    if name in ("lru_cache", "cache", "cached"):
        if args and isinstance(args[0], (FuncV, _Wrapper)):
            return args[0]
        return _Wrapper("decorator-factory")
    if name == "partial":
        if args:
            return _Wrapper("partial", args[0], tuple(sorted(kwargs.items())), tuple(args[1:]))
        return UnkV("partial()")
    if name in ("tuple", "int", "list") and args:
        if isinstance(args[0], (DevQ, CudaV)):
            return args[0]
        if isinstance(args[0], ConstV):
            try:
                return ConstV({"tuple": tuple, "int": int, "list": list}[name](args[0].value))
            except Exception:
                return UnkV(f"{name}()")
    if name == "map" and len(args) == 2 and isinstance(args[1], CudaV):
        return args[1]
    if name == "getattr" and len(args) >= 2 and isinstance(args[0], ExtV) and isinstance(
            args[1], ConstV):
        return ExtV(f"{args[0].path}.{args[1].value}")
    if name == "hasattr" and len(args) == 2 and isinstance(args[0], ExtV) and isinstance(
            args[1], ConstV) and args[0].path == "torch":
        if args[1].value in _PLATFORM_NAMES:
            return PredV(Platform(str(args[1].value)))
        if args[1].value == "cuda":
            return ConstV(True)
    if name in ("Version", "parse", "version_parse") and args and isinstance(args[0], CudaV):
        return args[0]
    if name in ("Version", "parse") and args and isinstance(args[0], ConstV):
        return args[0]
    if name == "bool" and args:
        return args[0]
    return None


def _torch_call(path: str, args: list[Value]) -> Value:
    if path.endswith("get_device_capability"):
        return DevQ("cap")
    if path == "torch.cuda.is_available":
        return PredV(Platform("cuda_alike"))
    for platform in _PLATFORM_NAMES:
        if path == f"torch.{platform}.is_available":
            return PredV(Platform(platform))
    if path.startswith("torch.version.cuda"):
        return CudaV()
    return UnkV(f"{path}()")


def _device_compare(kind: str, op: str, value: object, node: ast.AST) -> Predicate:
    if op in ("is", "is not"):
        return Unknown(unparse(node))
    if kind == "sm_text":
        values = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
        try:
            ints = tuple(int(str(v)) for v in values)
        except ValueError:
            return Unknown(unparse(node))
        if op in ("in", "not in"):
            return Device("sm", op, ints)
        if op in ("==", "!="):
            return Device("sm", op, ints[0])
        return Unknown(unparse(node))
    if op in ("in", "not in"):
        if isinstance(value, (tuple, list, set, frozenset)):
            items = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            return Device(kind, op, tuple(sorted(items)))  # type: ignore[arg-type, type-var]
        return Unknown(unparse(node))
    if kind == "cap":
        if isinstance(value, (tuple, list)) and len(value) == 2 and all(
                isinstance(v, int) for v in value):
            return Device("cap", op, (int(value[0]), int(value[1])))
        if isinstance(value, (tuple, list)) and len(value) == 1:
            return Device("major", op, int(value[0]))
        return Unknown(unparse(node))
    if isinstance(value, bool) or not isinstance(value, int):
        return Unknown(unparse(node))
    return Device(kind, op, value)


def _cuda_compare(op: str, value: object, node: ast.AST) -> Predicate:
    version: tuple[int, int] | None = None
    if isinstance(value, str):
        match = re.match(r"^(\d+)\.(\d+)", value)
        if match:
            version = (int(match.group(1)), int(match.group(2)))
    elif isinstance(value, (tuple, list)) and len(value) >= 2 and all(
            isinstance(v, int) for v in value[:2]):
        version = (int(value[0]), int(value[1]))
    if version is None:
        return Unknown(unparse(node))
    if op == ">=":
        return CudaAtLeast(version)
    if op == ">":
        return CudaAtLeast((version[0], version[1] + 1))
    if op == "<":
        return neg(CudaAtLeast(version))
    if op == "<=":
        return neg(CudaAtLeast((version[0], version[1] + 1)))
    return Unknown(unparse(node))


def _string_set(value: Value) -> frozenset[str] | None:
    if isinstance(value, EnumMemberV):
        return value.values
    if isinstance(value, ConstV):
        if isinstance(value.value, str):
            return frozenset({value.value})
        if isinstance(value.value, (tuple, list, set, frozenset)) and all(
                isinstance(v, str) for v in value.value):
            return frozenset(value.value)
    return None


def _unpack(value: Value, index: int) -> Value:
    if isinstance(value, DevQ) and value.kind == "cap":
        return DevQ("major") if index == 0 else DevQ("minor") if index == 1 else UnkV("unpack")
    if isinstance(value, ConstV) and isinstance(value.value, (tuple, list)):
        try:
            return ConstV(value.value[index])
        except IndexError:
            return UnkV("unpack")
    return UnkV("unpacked value")


def _exclusive(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Two paths that cannot both hold (one took a branch the other did not)."""
    return any(-i in b for i in a)


def _enclosing_scopes(scope: str, facts: FactsView) -> list[str]:
    scopes = []
    current = scope
    while current:
        if not facts.has_class(current):
            scopes.append(current)
        current = current.rpartition(".")[0]
    return scopes


def _node_line(entry: AssignFact, key: ast.AST) -> int:
    return entry.line + getattr(key, "lineno", 1) - 1


def on_nvidia(pred: Predicate) -> Tri:
    """Evaluate only the platform part of ``pred`` for an NVIDIA CUDA device."""
    def platform_only(atom: Predicate) -> Predicate | None:
        if isinstance(atom, Platform):
            return TRUE if atom.name in ("cuda", "cuda_alike") else FALSE
        return None
    return substitute(pred, platform_only).evaluate(Context())


def _only_unknown(pred: Predicate) -> bool:
    """Nothing about the device could be read (a constant is a reading)."""
    if isinstance(pred, Const):
        return False
    return all(isinstance(a, (Unknown, OptionIs, QuantIs, Const)) for a in atoms(pred))


_BINOPS: dict[type, Callable[[object, object], object]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,  # type: ignore[operator]
    ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,  # type: ignore[operator]
    ast.Mod: lambda a, b: a % b,  # type: ignore[operator]
}
