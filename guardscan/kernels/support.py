"""kernels (support): whether a kernel-library function runs on an arch, from its facts and callees combined.

The rule, for function ``f`` on arch ``A`` (Kleene logic, UNKNOWN never turns
into TRUE or FALSE by itself):

* ``f``'s own facts must all hold (a conjunction): one that is FALSE on ``A``
  makes ``f`` FALSE.
* Each call edge carries the condition of its call site. A call whose
  condition is FALSE on ``A`` is not made there (the other branch of a
  capability ``select`` is taken); one whose condition is TRUE is *required*: a
  FALSE callee makes ``f`` FALSE. A call under an undecided condition (a
  config flag, a backend not chosen, a closure called later) cannot make ``f``
  FALSE; a FALSE there is kept as a caveat.
* TRUE needs positive evidence: a fact (own, or on a required callee) that is
  TRUE on ``A`` with every part of it decided, and nothing FALSE on the
  required path. Otherwise UNKNOWN.
* A raising check (or a dispatch's fall-through) that ``A`` passes is positive
  evidence only when it is an *allow-list*: it raises unless the arch is in a
  set. A *deny-list* (``if major == 11 and minor == 0: raise``; ``if major <
  10: raise``) rejects the archs it names and says nothing about the others.
  The test is analysis, not a list: a check that also lets a hypothetical
  far-future arch through (``FAR_FUTURE``, capability 42.0) is a deny-list.
  A passing deny-list is a *doubt*: with nothing else deciding, ``f`` is
  UNKNOWN with that check as its chain (the function is arch-restricted and
  guardscan cannot tell whether ``A`` is among what it allows), not
  arch-neutral UNKNOWN (no chain).
* A caller's arguments (``solve(..., args=)``, what SGLang's call passes,
  ``kernels.arguments``) decide the function it calls, not its callees: its
  tests of those parameters, its ``backend="auto"`` resolution
  (``kernels.auto_backend``: the backend becomes the one picked on the arch)
  and its raising checks on them (``argument-check``), which can exclude
  but are never support.
* One exception, where facts disagree: when every exclusion comes from a JIT
  spec (what *compiles*) and a declaration on the path (``@supported_compute_
  capability``, ``@backend_requirement``) includes ``A``, the declaration, the
  more specific fact, decides; the chain's last hop names the JIT spec it
  overrides. An explicit raising check, a dispatch's fall-through or a cubin
  list (what was built) is never overridden.

Which fact decides, by strength (``model.SPECIFICITY``; the deciding hop's
note names the tier, ``model.STRENGTH``): (a) an explicit check, a
decorator or backend requirement, then a raising check; (b) precompiled
artifacts (the cubin architectures a module loads), which bound what its JIT
spec may claim; (c) a JIT spec's ``supported_major_versions`` or nvcc flags;
then a dispatch. The evidence chain has one ``kernel`` Evidence per call hop
and ends at the deciding fact's line; when facts disagree the deciding hop's
note names the other one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guardscan.arch import FAR_FUTURE, Arch
from guardscan.evidence import FactKind, args_of
from guardscan.kernels.callgraph import Edge
from guardscan.kernels.conditions import BACKEND_OPTION
from guardscan.kernels.jit_spec import FETCHED
from guardscan.kernels.model import SPECIFICITY, STRENGTH, KernelFact
from guardscan.predicate import Context, Predicate, Tri, atoms
from guardscan.results import Evidence, Role

if TYPE_CHECKING:
    from guardscan.kernels.auto_backend import AutoBackend

__all__ = ["FAR_FUTURE", "MAX_DEPTH", "Args", "CallerView", "Outcome", "SupportSolver", "deny_list"]

#: The arguments a caller passes: (keyword, or position as digits, state), or
#: None when they are not known
Args = tuple[tuple[str, str], ...] | None


@dataclass(frozen=True, slots=True)
class CallerView:
    """What a caller's arguments decide in one function: the argument states
    a call gives (``options``), its raising checks on them and its ``auto``
    resolution."""

    options: Callable[[tuple[tuple[str, str], ...]], dict[str, str]]
    checks: tuple[KernelFact, ...] = ()
    auto: AutoBackend | None = None
    #: the function's call edges, their conditions read as ``checks`` are
    #: (by the backend the call runs)
    edges: Callable[[str | None], Iterable[Edge]] | None = None

    def usable(self, states: dict[str, str]) -> bool:
        """Whether ``backend`` keeps, up to the ``auto`` resolution, the
        value the caller passes: every earlier assignment hands it back."""
        return self.auto is None or all(k.hands_back(states) for k in self.auto.kept)


#: Longer call chains are cut (UNKNOWN); real ones are under a dozen hops.
MAX_DEPTH = 64
#: Caveats kept per function (the first ones, in call-line order).
MAX_CAVEATS = 16
#: A capability no GPU has (``guardscan.arch.FAR_FUTURE``): a raising check
#: that lets it through rejects a list of archs rather than admitting one (a
#: deny-list).
#: The kinds whose TRUE can come from a check that passes (a raise not reached).
_RAISING_KINDS = frozenset({"check", "dispatch", "cpp-check"})
#: The kinds that declare capabilities (and may override a JIT spec's exclusion).
_DECLARATIONS = frozenset({"decorator", "backend-requirement"})


@dataclass(frozen=True, slots=True)
class _Candidate:
    rank: int
    chain: tuple[Evidence, ...]
    kind: str  # the deciding fact's kind
    through: tuple[str, ...] = ()  # the callees the chain passes, in order


@dataclass(frozen=True, slots=True)
class Outcome:
    value: Tri
    chain: tuple[Evidence, ...] = ()
    rank: int = 0
    kind: str = ""  # the deciding fact's kind
    caveats: tuple[tuple[Evidence, ...], ...] = field(default=())
    #: the functions the chain passes through below the one asked, in order
    through: tuple[str, ...] = ()


_NOTHING = Outcome(Tri.UNKNOWN)


def decided(pred: Predicate, ctx: Context) -> bool:
    """Every part of ``pred`` is decided in ``ctx`` (no UNKNOWN leaf)."""
    return all(a.evaluate(ctx) is not Tri.UNKNOWN for a in atoms(pred))


def deny_list(fact: KernelFact, ctx: Context) -> bool:
    """A raising fact that also admits ``FAR_FUTURE``: it rejects the archs it
    lists and says nothing about the others (see the module docstring)."""
    if fact.kind not in _RAISING_KINDS:
        return False
    future = Context(arch=FAR_FUTURE, options=ctx.options, quantization=ctx.quantization)
    return fact.predicate.evaluate(future) is not Tri.FALSE


def _fact_evidence(fact: KernelFact, value: Tri, extra: str = "") -> Evidence:
    return Evidence.of(fact.rel, fact.line, Role.KERNEL.value, fact.text, fact.kind, args_of(
        fact=fact.kind, strength=STRENGTH.get(fact.kind), predicate=fact.predicate.describe(),
        value=value.value, detail=fact.note, qualifier=extra))


def _compile_only(falses: list[_Candidate], trues: list[_Candidate]) -> bool:
    """Every exclusion is a JIT spec's, and a declaration (decorator or backend
    requirement) includes the arch: the declaration, more specific, decides."""
    return all(f.kind == "jit-spec" for f in falses) and any(
        t.kind in _DECLARATIONS for t in trues)


def _pick(candidates: list[_Candidate]) -> _Candidate:
    return max(candidates, key=lambda c: (c.rank, -len(c.chain)))


class SupportSolver:
    """Memoised per (function, arch, backend); cycles and deep chains give UNKNOWN."""

    def __init__(self, facts_of: Callable[[str, str | None], list[KernelFact]],
                 edges_of: Callable[[str, str | None], Iterable[Edge]],
                 line_text: Callable[[str, int], str],
                 caller_view: Callable[[str], CallerView | None] | None = None) -> None:
        self.facts_of = facts_of
        self.edges_of = edges_of
        self.line_text = line_text
        self.caller_view = caller_view
        self._memo: dict[tuple[str, Arch, str | None, Args], Outcome] = {}

    def solve(self, function: str, arch: Arch, backend: str | None = None,
              args: Args = None) -> Outcome:
        return self._node(function, arch, backend, set(), 0, args)

    def _node(self, function: str, arch: Arch, backend: str | None, visiting: set[str],
              depth: int, args: Args = None) -> Outcome:
        key = (function, arch, backend, args)
        if key in self._memo:
            return self._memo[key]
        if function in visiting or depth > MAX_DEPTH:
            return _NOTHING
        visiting.add(function)
        try:
            outcome = self._combine(function, arch, backend, visiting, depth, args)
        finally:
            visiting.discard(function)
        self._memo[key] = outcome
        return outcome

    def _combine(self, function: str, arch: Arch, backend: str | None, visiting: set[str],
                 depth: int, args: Args = None) -> Outcome:
        view = self.caller_view(function) if args is not None and self.caller_view else None
        states = view.options(args) if view is not None and args is not None else {}
        if view is not None and not view.usable(states):
            view, states = None, {}
        picked = []
        if view is not None and view.auto is not None and backend == "auto":
            pick = view.auto.resolve(arch, states)
            if pick is not None:
                # FlashInfer's own ``auto`` resolution, for this caller on this arch
                backend = pick.value
                picked.append(Evidence.of(
                    pick.rel, pick.line, Role.KERNEL.value, self.line_text(pick.rel, pick.line),
                    FactKind.KERNEL_CALL, args_of(
                        edge="backend='auto' picks", caller=function.rpartition(".")[2],
                        callee=pick.value, when=pick.when.describe(), select=Tri.TRUE.value)))
        outcome = self._decide(function, arch, backend, visiting, depth, view, states)
        if picked and outcome.chain:
            outcome = dataclasses.replace(outcome, chain=(*picked, *outcome.chain))
        return outcome

    def _decide(self, function: str, arch: Arch, backend: str | None, visiting: set[str],
                depth: int, view: CallerView | None, states: dict[str, str]) -> Outcome:
        # "auto" lets FlashInfer pick among its backends: which one runs stays open
        chosen = backend if backend and backend != "auto" else None
        ctx = Context(arch=arch, options={**states, BACKEND_OPTION: chosen} if chosen else states)
        falses: list[_Candidate] = []
        trues: list[_Candidate] = []
        doubts: list[_Candidate] = []  # passing deny-lists, here or on a required callee
        caveats: list[tuple[Evidence, ...]] = []
        for fact in view.checks if view is not None else ():
            if fact.predicate.evaluate(ctx) is Tri.FALSE:
                # an argument check passing says nothing of the arch: FALSE only
                falses.append(_Candidate(SPECIFICITY.get(fact.kind, 1), (
                    _fact_evidence(fact, Tri.FALSE),), fact.kind))
        for fact in self.facts_of(function, backend):
            value = fact.predicate.evaluate(ctx)
            rank = SPECIFICITY.get(fact.kind, 1)
            if value is Tri.FALSE:
                falses.append(_Candidate(rank, (_fact_evidence(fact, value),), fact.kind))
            elif value is Tri.TRUE and decided(fact.predicate, ctx):
                if deny_list(fact, ctx):
                    doubts.append(_Candidate(rank, (_fact_evidence(
                        fact, value, f"rejects listed archs only (it lets {FAR_FUTURE.name} "
                        f"through too): says nothing about {arch.name}"),), fact.kind))
                elif fact.kind == "jit-spec" and FETCHED in fact.note:
                    doubts.append(_Candidate(rank, (_fact_evidence(
                        fact, value, f"the kernels are fetched at run time, their archs "
                        f"are not in the source: says nothing about {arch.name}"),), fact.kind))
                else:
                    trues.append(_Candidate(rank, (_fact_evidence(fact, value),), fact.kind))
        edges = view.edges(backend) if view is not None and view.edges is not None \
            else self.edges_of(function, backend)
        for edge in sorted(edges, key=lambda e: (e.line, e.callee)):
            when = edge.condition.evaluate(ctx)
            if when is Tri.FALSE:
                continue
            sub = self._node(edge.callee, arch, None, visiting, depth + 1)
            if sub.value is Tri.UNKNOWN and not sub.chain:
                continue
            hop = self._hop(edge, when)
            chain = (hop, *sub.chain)
            through = (edge.callee, *sub.through)
            if sub.value is Tri.FALSE:
                if when is Tri.TRUE:
                    falses.append(_Candidate(sub.rank, chain, sub.kind, through))
                else:
                    caveats.append(chain)
            elif sub.value is Tri.TRUE and when is Tri.TRUE:
                trues.append(_Candidate(sub.rank, chain, sub.kind, through))
            elif sub.value is Tri.UNKNOWN and sub.chain and when is Tri.TRUE:
                doubts.append(_Candidate(sub.rank, chain, sub.kind, through))
            caveats.extend((hop, *c) for c in sub.caveats if when is Tri.TRUE)
        caveats = caveats[:MAX_CAVEATS]
        if falses and trues and _compile_only(falses, trues):
            best = _pick(trues)
            chain = self._with_disagreement(best.chain, falses)
            return Outcome(Tri.TRUE, chain, best.rank, best.kind, tuple(caveats), best.through)
        if falses:
            best = _pick(falses)
            chain = self._with_disagreement(best.chain, trues)
            return Outcome(Tri.FALSE, chain, best.rank, best.kind, tuple(caveats), best.through)
        if trues:
            best = _pick(trues)
            return Outcome(Tri.TRUE, best.chain, best.rank, best.kind, tuple(caveats),
                           best.through)
        if doubts:
            # arch-restricted code that does not say whether this arch is allowed
            best = _pick(doubts)
            return Outcome(Tri.UNKNOWN, best.chain, best.rank, best.kind, tuple(caveats),
                           best.through)
        return Outcome(Tri.UNKNOWN, caveats=tuple(caveats))

    def _hop(self, edge: Edge, when: Tri) -> Evidence:
        return Evidence.of(edge.rel, edge.line, Role.KERNEL.value,
                           self.line_text(edge.rel, edge.line), FactKind.KERNEL_CALL, args_of(
                               edge=edge.kind, caller=edge.caller.rpartition('.')[2],
                               callee=edge.callee, when=edge.path_text,
                               select=when.value if edge.select else None))

    @staticmethod
    def _with_disagreement(chain: tuple[Evidence, ...],
                           others: list[_Candidate]) -> tuple[Evidence, ...]:
        if not others or not chain:
            return chain
        other = _pick(others).chain[-1]
        return (*chain[:-1], chain[-1].qualified(
            f"disagrees with {other.path}:{other.line} ({other.note})"))
