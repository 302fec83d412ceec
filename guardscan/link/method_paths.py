"""link (method paths): the code each ``--quantization`` method runs, and on which way it gets there.

A method's path starts at its config class (from the method table) and goes
on through what runs once a class is built:

- the methods the framework invokes on a built class: a method declared on
  one of its in-tree base classes that is an interface (declares an
  ``@abstractmethod``, as ``QuantizeMethodBase``, ``LinearMethodBase``,
  ``FusedMoEMethodBase`` and ``QuantizationConfig`` do), and the constructor;
- the classes it builds, ``C(...)``, or hands over to be built
  (``_get_quant_method(..., Linear=C, Moe=D)``, ``A if c else B``);
- the functions it calls (``helper(...)``, ``self.method(...)``,
  ``super().method(...)``) or hands on as values (``return helper``,
  ``partial(helper, ...)``), in the quantization directories only (the shared
  helpers, ``fp8_utils.py``, ``fp4_utils.py``...), up to ``METHOD_PATH_DEPTH``
  calls from the config class. What lies past that budget is not guessed.

Each step's branch tests are kept twice (``Reach``): ``full`` holds every
test, ``choice`` only those that test an option or the device (the
checkpoint, the model and the environment left out). Per-layer dispatch
(``isinstance(layer, FusedMoE)``) only says which layers get a class, and is
taken as met where a class is built.

Known limits: a method called only through an attribute of something else
(``layer.scheme.apply_weights``) is reached only when an interface declares
it; property reads do not count as calls.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards import ClassV, ExtV, FuncV
from guardscan.index.facts import CallFact, ClassFact, FunctionFact
from guardscan.index.observe import FactsView
from guardscan.link.checkpoint_picks import picked_alternatives, picked_way, picks
from guardscan.link.conditions import option_atoms
from guardscan.link.recorded import MemoFactory, RecordedMemo
from guardscan.pickling import fields_reduce
from guardscan.predicate import (
    TRUE,
    Predicate,
    QuantIs,
    Unknown,
    atoms,
    conj,
    disj,
    mentions_device,
    neg,
)
from guardscan.syntax import parse_expr, unparse

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext

__all__ = ["METHOD_PATH_DEPTH", "MethodPath", "MethodPaths", "Reach", "decidable"]

#: How many calls (or classes built) from a method's config class its path is
#: followed. What is further has an undecided condition.
METHOD_PATH_DEPTH = 4

#: Per-layer dispatch (``isinstance(layer, FusedMoE)``,
#: ``self.is_layer_excluded(prefix)``) says which layers get a class, not whether
#: the method uses it: such branch tests are taken as met, either way.
PER_LAYER = re.compile(r"\b(isinstance\(|layer|prefix)")

_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_SUPER = re.compile(r"super\(\s*\)\.(\w+)")
#: calls that test or read a class rather than build or run it
_NOT_RUN = frozenset({"isinstance", "issubclass", "type", "getattr", "hasattr", "setattr"})

#: (rel, qualname) of a function or a class
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Reach:
    """How a method gets to a function: ``full`` with every branch test on the
    way, ``choice`` with only the tests of options and of the device."""

    full: Predicate
    choice: Predicate

    def then(self, other: Reach) -> Reach:
        return Reach(conj(self.full, other.full), conj(self.choice, other.choice))

    def either(self, other: Reach) -> Reach:
        return Reach(disj(self.full, other.full), disj(self.choice, other.choice))


ALWAYS = Reach(TRUE, TRUE)


@dataclass(frozen=True, slots=True)
class _Edge:
    """From a function: a function run (``target`` with the class ``self`` is,
    or None) or a class built, under ``reach``."""

    target: Key
    built: bool
    cls: Key | None
    reach: Reach
    #: its way takes a test of the checkpoint as true (``link.checkpoint_picks``)
    picked: bool = False


for _cls in (Reach, _Edge):  # (kept in the record of linking, as memos' entries)
    _cls.__reduce__ = fields_reduce  # type: ignore[method-assign]


@dataclass
class _ClassInfo:
    fact: ClassFact
    bases: list[Key]
    methods: dict[str, FunctionFact]
    #: the methods it declares ``@abstractmethod`` (an interface declares some)
    abstract: frozenset[str]

    @property
    def interface(self) -> bool:
        return bool(self.abstract)


@dataclass
class MethodPath:
    """What one method runs: each function with how it is reached, the classes
    it builds, and the functions just past the budget."""

    functions: dict[Key, Reach]
    classes: dict[Key, Reach]
    past_budget: set[Key]


class MethodPaths:
    """The paths of a scan's methods, sharing what one function calls."""

    def __init__(self, ctx: LinkContext, conditions: Conditions, dirs: tuple[str, ...],
                 memo: MemoFactory | None = None) -> None:
        self.ctx = ctx
        self.conditions = conditions
        self.dirs = dirs
        # shared by the methods' units: a hit counts as read by the unit asking
        # (what a function runs depends on the packages walked: in the name)
        memo = memo or (lambda name, index, vocab: RecordedMemo(index, vocab))
        self._edges: RecordedMemo[list[_Edge]] = memo(f"edges {dirs!r}", ctx.index, ctx.vocab)
        self._classes: RecordedMemo[_ClassInfo | None] = memo(
            f"classes {dirs!r}", ctx.index, ctx.vocab)
        self._calls: dict[str, dict[str, list[CallFact]]] = {}
        # built from a file's facts: let go with them
        ctx.index.let_go_with(self.forget)

    def forget(self, rel: str) -> None:
        """Let go of ``rel``'s table of calls (the index let go of its facts)."""
        self._calls.pop(rel, None)

    def inside(self, rel: str) -> bool:
        return any(rel.startswith(d) for d in self.dirs)

    # -- one method ---------------------------------------------------------------------
    def walk(self, config: Key) -> MethodPath:
        """The path of the method whose config class is ``config``."""
        path = MethodPath({}, {}, set())
        level: dict[tuple[Key, Key | None], Reach] = {}
        self._build(config, ALWAYS, level, path)
        expanded: dict[tuple[Key, Key | None], Reach] = {}
        for depth in range(METHOD_PATH_DEPTH + 1):
            following: dict[tuple[Key, Key | None], Reach] = {}
            for (func, cls), reach in level.items():
                known = path.functions.get(func)
                path.functions[func] = known.either(reach) if known is not None else reach
                old = expanded.get((func, cls))
                if old is not None:
                    merged = old.either(reach)
                    if merged == old:
                        continue
                    reach = merged
                expanded[(func, cls)] = reach
                for edge in self.edges(func, cls):
                    step = reach.then(edge.reach)
                    if depth == METHOD_PATH_DEPTH:
                        if edge.target not in path.functions:
                            path.past_budget.add(edge.target)
                        continue
                    if edge.built:
                        self._build(edge.target, step, following, path)
                    else:
                        key = (edge.target, edge.cls)
                        known_step = following.get(key)
                        following[key] = known_step.either(step) if known_step else step
            level = following
            if not level:
                break
        path.past_budget -= set(path.functions)
        return path

    def _build(self, cls: Key, reach: Reach, level: dict[tuple[Key, Key | None], Reach],
               path: MethodPath) -> None:
        """``cls`` is built under ``reach``: its constructor and the methods the
        framework invokes on it run."""
        known = path.classes.get(cls)
        path.classes[cls] = known.either(reach) if known is not None else reach
        for func in self.run_on_build(cls):
            key = (func, cls)
            known_step = level.get(key)
            level[key] = known_step.either(reach) if known_step else reach

    # -- classes ------------------------------------------------------------------------
    def info(self, cls: Key) -> _ClassInfo | None:
        return self._classes.get(cls, lambda: self._info(cls))

    def _info(self, cls: Key) -> _ClassInfo | None:
        facts = self.ctx.index.view(cls[0])
        found = None
        if facts is not None:
            fact = next((c for c in facts.classes if c.qualname == cls[1]), None)
            if fact is not None:
                bases = []
                for text in fact.bases:
                    if not _DOTTED.fullmatch(text):
                        continue
                    value = self.ctx.vocab.value(text, cls[0], fact.scope, fact.line)
                    if isinstance(value, ClassV):
                        bases.append((value.rel, value.qualname))
                methods = {f.name: f for f in facts.functions if f.cls == cls[1]
                           and f.qualname == f"{cls[1]}.{f.name}"}
                abstract = frozenset(name for name, f in methods.items()
                                     if self._abstract(facts, f))
                found = _ClassInfo(fact, bases, methods, abstract)
        return found

    def _abstract(self, facts: FactsView, func: FunctionFact) -> bool:
        for text, line in func.decorators:
            if not _DOTTED.fullmatch(text):
                continue
            value = self.ctx.vocab.value(text, facts.rel, func.scope, line)
            if isinstance(value, ExtV) and value.path == "abc.abstractmethod":
                return True
        return False

    def mro(self, cls: Key) -> list[Key]:
        """``cls`` and its in-tree bases, nearest first (depth first, each once,
        a shared base after every class that derives from it)."""
        order: list[Key] = []
        self._visit_bases(cls, 0, order)
        return order

    def _visit_bases(self, key: Key, depth: int, order: list[Key]) -> None:
        # a method, not a recursive closure: that would be a reference cycle,
        # never freed while the scan pauses the collector
        info = self.info(key)
        if info is None or depth > 20:
            return
        if key in order:
            order.remove(key)
        order.append(key)
        for base in info.bases:
            self._visit_bases(base, depth + 1, order)

    def lookup(self, cls: Key, name: str, after: Key | None = None) -> Key | None:
        """The function ``name`` resolves to on an instance of ``cls`` (past
        the class ``after`` in its bases, for ``super()``)."""
        order = self.mro(cls)
        if after is not None:
            order = order[order.index(after) + 1:] if after in order else []
        for key in order:
            info = self.info(key)
            if info is not None and name in info.methods:
                return key[0], info.methods[name].qualname
        return None

    def run_on_build(self, cls: Key) -> list[Key]:
        """What runs on a built instance of ``cls``: its constructor and each
        method an interface among its bases declares (its own implementation)."""
        order = self.mro(cls)
        names = {"__init__"}
        for key in order[1:]:
            info = self.info(key)
            if info is not None and info.interface:
                names.update(info.methods)
        out = []
        for name in sorted(names):
            found = self.lookup(cls, name)
            if found is not None and self.inside(found[0]):
                out.append(found)
        return out

    def implements_abstract(self, func: Key) -> str | None:
        """The interface method ``func`` implements, when it is a method of a
        class whose in-tree base declares it ``@abstractmethod``
        (``ModelOptNvFp4FusedMoEMethod.apply`` implements
        ``FusedMoEMethodBase.apply``): what the framework calls on every object
        of the class, unlike an optional hook a base class gives a default
        for (``FusedMoEMethodBase.get_moe_quant_info``, called by LoRA alone)."""
        rel, qualname = func
        cls_name, _, name = qualname.rpartition(".")
        if not cls_name or "." in cls_name:
            return None
        for base in self.mro((rel, cls_name))[1:]:
            info = self.info(base)
            if info is not None and name in info.abstract:
                return f"{base[1]}.{name}"
        return None

    # -- what one function runs ---------------------------------------------------------
    def edges(self, func: Key, cls: Key | None) -> list[_Edge]:
        return self._edges.get((func, cls), lambda: self._edges_of(func, cls))

    def _calls_in(self, facts: FactsView, qualname: str) -> list[CallFact]:
        """The calls in ``qualname`` and the functions nested in it."""
        facts.note("tree", qualname)
        table = self._calls.get(facts.rel)
        if table is None:
            table = self._calls[facts.rel] = {}
            for call in facts.unobserved.calls:
                table.setdefault(call.scope, []).append(call)
        prefix = qualname + "."
        return [c for scope, calls in table.items() if scope == qualname or
                scope.startswith(prefix) for c in calls]

    def _edges_of(self, func: Key, cls: Key | None) -> list[_Edge]:
        """What ``func`` runs and builds; a class it builds only for the
        checkpoints that pick it, among others of its interface, is built
        where ``? the checkpoint picks`` it (``link.checkpoint_picks``)."""
        found = list(self._edges_found(func, cls))
        marked = picked_alternatives(((e.target, e.picked) for e in found if e.built),
                                     self._interface)
        if not marked:
            return found
        out = []
        for edge in found:
            if edge.picked and edge.target in marked:
                pick = Unknown(f"the checkpoint picks {edge.target[1]}")
                edge = _Edge(edge.target, edge.built, edge.cls,
                             edge.reach.then(Reach(pick, pick)), True)
            out.append(edge)
        return out

    def _interface(self, cls: Key) -> Key | None:
        """The nearest interface among ``cls``'s in-tree bases
        (``FusedMoEMethodBase``, ``QuarkMoEScheme``)."""
        return next((key for key in self.mro(cls)[1:]
                     if (info := self.info(key)) is not None and info.interface), None)

    def _edges_found(self, func: Key, cls: Key | None) -> Iterator[_Edge]:
        rel, qualname = func
        facts = self.ctx.index.view(rel)
        if facts is None:
            return
        own = facts.function(qualname)
        owner = (rel, own.cls) if own is not None and own.cls else None
        for call in self._calls_in(facts, qualname):
            if call.func in _NOT_RUN:
                continue
            target = self._callee(facts, call, cls, owner)
            if target is not None:
                yield _Edge(target.target, target.built, target.cls,
                            self._reach(facts, call.path, call.scope, built=target.built),
                            self._picked(facts, call.path, call.scope, target))
            # classes and functions handed over: built or called by the callee
            for text in (*call.args, *(v for _, v in call.kwargs)):
                for value_edge in self._values(facts, text, call.scope, call.line, cls):
                    yield _Edge(value_edge.target, value_edge.built, value_edge.cls,
                                self._reach(facts, call.path, call.scope,
                                            built=value_edge.built).then(value_edge.reach),
                                self._picked(facts, call.path, call.scope, value_edge))
        for ret in facts.in_tree("returns", qualname):
            for value_edge in self._values(facts, ret.value, ret.scope, ret.line, cls):
                yield _Edge(value_edge.target, value_edge.built, value_edge.cls,
                            self._reach(facts, ret.path, ret.scope).then(value_edge.reach),
                            self._picked(facts, ret.path, ret.scope, value_edge))

    def _picked(self, facts: FactsView, path: tuple[int, ...], scope: str,
                edge: _Edge) -> bool:
        """Whether a class built (``edge``) is the checkpoint's pick: by the
        way to the call, or by the branch of the value that names it (only
        a built class's way is asked)."""
        return edge.built and (edge.picked or picked_way(
            facts, path, lambda signed: self.conditions.cond(facts, signed, scope)))

    def _callee(self, facts: FactsView, call: CallFact, cls: Key | None,
                owner: Key | None) -> _Edge | None:
        text = call.func
        parts = text.split(".")
        if parts[0] in ("self", "cls") and len(parts) == 2:
            if cls is None:
                return None
            found = self.lookup(cls, parts[1])
            return _Edge(found, False, cls, ALWAYS) if found is not None and \
                self.inside(found[0]) else None
        match = _SUPER.fullmatch(text)
        if match:
            if cls is None or owner is None:
                return None
            found = self.lookup(cls, match.group(1), after=owner)
            return _Edge(found, False, cls, ALWAYS) if found is not None and \
                self.inside(found[0]) else None
        if not _DOTTED.fullmatch(text) or parts[0] in ("self", "cls"):
            return None
        value = self.ctx.vocab.value(text, facts.rel, call.scope, call.line)
        return self._edge_to(value, cls)

    def _edge_to(self, value: object, cls: Key | None) -> _Edge | None:
        if isinstance(value, ClassV) and self.inside(value.rel):
            return _Edge((value.rel, value.qualname), True, None, ALWAYS)
        if isinstance(value, FuncV) and self.inside(value.rel):
            facts = self.ctx.index.view(value.rel)
            fdef = facts.function(value.qualname) if facts is not None else None
            owner = (value.rel, fdef.cls) if fdef is not None and fdef.cls else None
            return _Edge((value.rel, value.qualname), False, owner or cls, ALWAYS)
        return None

    def _values(self, facts: FactsView, text: str, scope: str, line: int,
                cls: Key | None) -> Iterator[_Edge]:
        """Classes and functions an argument or a returned value names, each
        under the branch it is picked in (``A if c else B``)."""
        if not text or len(text) > 400:
            return
        node = parse_expr(text)
        if node is None:
            return
        yield from self._value_nodes(facts, node, scope, line, cls, ALWAYS)

    def _value_nodes(self, facts: FactsView, node: ast.expr, scope: str, line: int,
                     cls: Key | None, reach: Reach) -> Iterator[_Edge]:
        if isinstance(node, ast.IfExp):
            test = self.ctx.vocab.predicate(unparse(node.test), facts.rel, scope, line).predicate
            kept = decidable(test)
            picked = picks(test, unparse(node.test))
            for body in self._value_nodes(facts, node.body, scope, line, cls,
                                          reach.then(Reach(test, test if kept else TRUE))):
                yield _Edge(body.target, body.built, body.cls, body.reach,
                            body.picked or picked)
            yield from self._value_nodes(facts, node.orelse, scope, line, cls,
                                         reach.then(Reach(neg(test), neg(test) if kept
                                                          else TRUE)))
            return
        if isinstance(node, (ast.Name, ast.Attribute)):
            text = unparse(node)
            if text.split(".")[0] in ("self", "cls"):
                return
            edge = self._edge_to(self.ctx.vocab.value(text, facts.rel, scope, line), cls)
            if edge is not None:
                yield _Edge(edge.target, edge.built, edge.cls, reach)

    def _reach(self, facts: FactsView, path: tuple[int, ...], scope: str,
               built: bool = False) -> Reach:
        """A branch path as a step of a method's path; where a class is built,
        per-layer dispatch is taken as met."""
        if built:
            path = tuple(p for p in path if not PER_LAYER.search(facts.cond(p).text))
        full = self.conditions.path(facts, path, scope)
        kept = []
        for signed in path:
            pred = self.conditions.cond(facts, signed, scope)
            if decidable(pred):
                kept.append(pred)
        return Reach(full, conj(*kept))




def decidable(pred: Predicate) -> bool:
    """Does a branch test say something about the options, the quantization
    method or the device (what a verdict fixes)?"""
    return mentions_device(pred) or bool(option_atoms(pred)) or any(
        isinstance(a, QuantIs) for a in atoms(pred))
