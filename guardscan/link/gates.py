"""link (gates): raises on a device guard in a file, ``auto`` defaults, and calls followed out of a choice's code.

A file's ``raise`` / failing ``assert`` whose condition tests the option and
the device is a ``gate`` for each option it tests (``quant-gate`` when it
tests a quantization method instead); an assignment of a choice to the option
under a device test is a ``default``. From code that runs only for a choice
(an option test, a registered function), calls are followed up to
``FOLLOW_DEPTH`` calls away: gates in the callees count for the choice, and
calls that leave the tree for the kernel library become ``KernelCall``\\ s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from guardscan.guards import (
    ClassV,
    ConstV,
    EnumMemberV,
    ExtV,
    FuncV,
)
from guardscan.index.facts import CallFact, ReturnFact
from guardscan.index.observe import FactsView
from guardscan.link.alias_tables import alias_table_renames
from guardscan.link.backend_argument import (
    backend_argument,
    backend_choices,
    carried_backend_calls,
)
from guardscan.link.before_device_gate import refusals_on_the_way
from guardscan.link.bound_gates import BoundGates
from guardscan.link.caller_reach import where_called
from guardscan.link.companions import companion_requirement
from guardscan.link.conditions import Failure, option_atoms
from guardscan.link.dispatch_reach import Reach, dispatch_reach
from guardscan.link.everywhere import raises_for_some_method, rejects_everywhere
from guardscan.link.kernel_args import call_arguments
from guardscan.link.model import (
    Finding,
    FindingKind,
    Found,
    Hop,
    HopRole,
    KernelCall,
    default_choices,
)
from guardscan.link.platform_code import platform_package
from guardscan.link.recorded import MemoFactory, RecordedMemo
from guardscan.model_facts import mentions_model
from guardscan.predicate import (
    Const,
    Context,
    OptionIs,
    Predicate,
    QuantIs,
    Tri,
    conj,
    leaves,
    mentions_device,
)
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext
    from guardscan.link.quantization import QuantizationMethods
    from guardscan.link.units import UnitKey

__all__ = ["FOLLOW_DEPTH", "Gates"]

#: How many calls away from a choice's own code a gate still counts.
FOLLOW_DEPTH = 2

_SUPER_INIT = "super().__init__"



class Gates:
    """``already_followed``: the scan's record of calls followed (a call
    followed once for a choice under a condition is not followed again).
    ``part``: runs what a call followed out of a choice's code holds as a part
    of the unit running (``Units.part``)."""

    def __init__(self, ctx: LinkContext, conditions: Conditions, quant: QuantizationMethods,
                 already_followed: Callable[[tuple[str, str, str]], bool],
                 part: Callable[[UnitKey, Callable[[], Found], Any], Found] | None = None,
                 memo: MemoFactory | None = None,
                 ) -> None:
        self.ctx = ctx
        self.conditions = conditions
        self.quant = quant
        self.already_followed = already_followed
        self.part = part or (lambda key, run, given: run())
        self.bound = BoundGates(ctx, conditions, quant)
        #: shared by the units: a hit counts as read by the unit that takes it
        self._platform_scopes: RecordedMemo[bool] = (
            memo("platform scopes", ctx.index, ctx.vocab) if memo is not None
            else RecordedMemo(ctx.index, ctx.vocab))

    def scan_file(self, rel: str) -> Found:
        """Gates and defaults anywhere in one file."""
        ctx, out = self.ctx, Found()
        facts = ctx.index.view(rel)
        if facts is None:
            return out
        reaches: dict[str, Reach | None] = {}  # each scope's, asked once
        #: failures that test an option and no device, kept where a device
        #: gate of their function is reached through them
        #: (``link.before_device_gate``); the device gates, to tell
        pending: list[Failure] = []
        device_gates: list[Failure] = []
        for failure in self.conditions.failure_conditions(facts):
            scope, line, text, cond, path = failure
            escape: Predicate | None = None
            model_only = not mentions_device(cond) and mentions_model(cond)
            if not mentions_device(cond) and not model_only:
                required = companion_requirement(cond, ctx.dests)
                if required is not None:
                    test, needs = required
                    out.findings.append(Finding(
                        FindingKind.REQUIRES, rel, line, test,
                        tuple(self.conditions.guard_hops(facts, path, scope, line)),
                        option=test.option, text=text,
                        target=tuple(f"{dest}={value}" for dest, value in needs)))
                    continue
                every = self._every_arch(facts, scope, cond)
                if every is None:
                    if rejects_everywhere(cond) and not self.quant.inside(rel):
                        pending.append(failure)
                    continue
                cond, implements = every
            else:
                if mentions_device(cond):
                    device_gates.append(failure)
                escape = self.quant.escape(rel, scope, cond)
                cond, implements = self.quant.qualify(rel, scope, cond), ""
            self._gate(facts, out, reaches, failure, cond, implements, escape, model_only)
        for failure, gate in refusals_on_the_way(pending, device_gates, self._choices()):
            self._gate(facts, out, reaches, failure, failure[3], "", None, False, (Hop(
                rel, gate[1], HopRole.LINK, f"read like the device gate at line {gate[1]}: the "
                "function runs for the choice, and passes here on its way there"),))
        self.scan_defaults(facts, out)
        out.kernel_calls.extend(carried_backend_calls(ctx, self.conditions, self.quant, facts))
        if not self.quant.inside(rel):
            out.findings.extend(alias_table_renames(ctx.index, facts, ctx.options))
        return out

    def _gate(self, facts: FactsView, out: Found, reaches: dict[str, Reach | None],
              failure: Failure, cond: Predicate, implements: str, escape: Predicate | None,
              model_only: bool, lead: tuple[Hop, ...] = ()) -> None:
        """``failure``'s gate (``cond``, as qualified) for each option it tests
        (``lead``: hops shown before its own)."""
        rel = facts.rel
        scope, line, text, _, path = failure
        runs = () if not implements else (Hop(
            rel, _def_line(facts, scope), HopRole.LINK,
            f"{scope}() implements {implements}(), which runs on every object "
            "the method builds"),)
        dests = sorted({a.option for a in option_atoms(cond)})
        hops = (*lead, *runs, *self.conditions.guard_hops(facts, path, scope, line))
        if scope not in reaches:
            reaches[scope] = dispatch_reach(self.ctx.index, self.conditions, facts, scope)
        reach = reaches[scope]
        if model_only:
            # a test of the model alone is a gate only in code a choice's
            # dispatch reaches: elsewhere in the file, what calls it (a
            # flag's validator) is not known
            if reach is None:
                return
            dests = sorted({a.option for a in option_atoms(conj(reach.condition, cond))})
        if reach is not None:
            cond = conj(reach.condition, cond)
            escape = conj(reach.condition, escape) if escape is not None else None
            hops = (Hop(rel, reach.lines[0], HopRole.LINK,
                        "reached only where " + reach.condition.describe()), *hops)
        elif not model_only and not self.quant.inside(rel):
            cond, escape, hops = where_called(self.ctx.vocab, rel, scope, cond, escape, hops)
        if dests:
            for dest in dests:
                out.findings.append(Finding(
                    FindingKind.GATE, rel, line, cond, hops, option=dest, text=text,
                    implements=implements, escape=escape))
        elif any(isinstance(a, QuantIs) for a in leaves(cond)):
            out.findings.append(Finding(FindingKind.QUANT_GATE, rel, line, cond, hops,
                                        text=text))

    def _every_arch(self, facts: FactsView, scope: str, cond: Predicate
                    ) -> tuple[Predicate, str] | None:
        """A failure that tests no device, as a gate on every arch: kept only
        in a quantization method's code that runs whenever the method does (a
        function of the module, a constructor, the implementation of an
        interface's abstract method, which it names), qualified by the methods
        whose paths reach it, and only when it surely raises for some choice
        (``link.everywhere``)."""
        rel = facts.rel
        if not (rejects_everywhere(cond) and self.quant.inside(rel)):
            return None
        implements = ""
        if not _module_function(facts, scope):
            implements = self.quant.paths.implements_abstract((rel, scope)) or ""
            if not implements:
                return None
        cond = self.quant.qualify(rel, scope, cond, every_arch=True,
                                  whole_way=bool(implements))
        if not raises_for_some_method(cond, self._choices()):
            return None
        return cond, implements

    def _choices(self) -> dict[str, tuple[str, ...]]:
        return {o.dest: o.choices for o in self.ctx.options}

    def scan_defaults(self, facts: FactsView, out: Found) -> None:
        dests = self.ctx.dests
        for assign in facts.assigns:
            for target in assign.targets:
                dest = target.rsplit(".", 1)[-1]
                if dest not in dests:
                    continue
                self._default(facts, assign.scope, assign.line, assign.path, dest, assign.value,
                              out)
        for call in facts.calls:
            for name, value in call.kwargs:
                if name in dests:
                    self._default(facts, call.scope, call.line, call.path, name, value, out)

    def _default(self, facts: FactsView, scope: str, line: int, path: tuple[int, ...],
                 dest: str, value_text: str, out: Found) -> None:
        ctx = self.ctx
        node = parse_expr(value_text)
        if node is None:
            return
        value = ctx.vocab.value(value_text, facts.rel, scope, line)
        if isinstance(value, ConstV) and isinstance(value.value, str):
            choices = {value.value}
        elif isinstance(value, EnumMemberV):
            choices = set(value.values)
        else:
            return
        raw = self.conditions.path(facts, path, scope)
        self._alias(facts, line, path, scope, dest, choices, raw, out)
        cond = self.quant.qualify(facts.rel, scope, raw, True)
        if not mentions_device(cond):
            return
        for choice in sorted(choices):
            out.findings.append(Finding(
                FindingKind.DEFAULT, facts.rel, line, cond,
                tuple(self.conditions.guard_hops(facts, path, scope)),
                choice=choice, option=dest, text=facts.rel))

    def _alias(self, facts: FactsView, line: int, path: tuple[int, ...], scope: str, dest: str,
               values: set[str], cond: Predicate, out: Found) -> None:
        """``dest`` set to one value where the path holds only for some choices
        of another option (a hook rewriting one option from another): those
        choices imply ``dest`` has that value. A path that also depends on
        anything else (the device, the model, ``dest`` itself) is not an alias."""
        ctx = self.ctx
        if len(values) != 1:
            return
        value = next(iter(values))
        sources = sorted({a.option for a in option_atoms(cond)
                          if a.option != dest and a.option in ctx.dests})
        by_dest = {o.dest: o for o in ctx.options}
        if value not in by_dest[dest].choices:
            return
        if not sources:
            self._rename(facts, line, dest, value, cond, by_dest[dest].choices, out)
            return
        if len(sources) != 1:
            return
        source = sources[0]
        # a hook that resolves ``dest``'s default (``if cfg.moe_runner_backend ==
        # "auto": declare_resolution(..., moe_runner_backend="deep_gemm")``)
        # sets it for a launch that leaves it alone; not a quantization
        # method's own pick for its layers (``verdict.auto`` reads those)
        default = {} if self.quant.inside(facts.rel) else default_choices([by_dest[dest]])
        for choice in by_dest[source].choices:
            answer = cond.evaluate(Context(options={source: choice}))
            resolves = answer is Tri.UNKNOWN and bool(default) and cond.evaluate(
                Context(options={source: choice, **default})) is Tri.TRUE
            if answer is not Tri.TRUE and not resolves:
                continue
            note = f"{source} == {choice} sets {dest} to {value}"
            if resolves:
                note = (f"{source} == {choice} resolves {dest} {default[dest]} "
                        f"(its default) to {value}")
            hops = (Hop(facts.rel, line, HopRole.LINK, note),)
            out.findings.append(Finding(
                FindingKind.ALIAS, facts.rel, line, conj(OptionIs(source, frozenset({choice})),
                                                           cond),
                hops, choice=choice, option=source, text=f"{dest} = {value}",
                target=(dest, value)))

    def _rename(self, facts: FactsView, line: int, dest: str, value: str, cond: Predicate,
                choices: tuple[str, ...], out: Found) -> None:
        """``dest`` set to ``value`` where it holds another of its choices,
        whatever else holds (``if a2a == "ascend_tp": declare_resolution(...,
        moe_a2a_backend="none")``): that choice is rewritten into ``value``
        (``verdict.rename`` judges it as ``value``). Not in a quantization
        method's code: ModelOpt FP4's ``create_moe_runner`` turns ``auto`` into
        ``flashinfer_trtllm`` for its own layers only, never for a launch
        without that method."""
        if not any(a.option == dest for a in option_atoms(cond)) or self.quant.inside(facts.rel):
            return
        for choice in choices:
            if choice == value or cond.evaluate(Context(options={dest: choice})) is not Tri.TRUE:
                continue
            hops = (Hop(facts.rel, line, HopRole.LINK, f"{dest} {choice} is rewritten to {value}"),)
            out.findings.append(Finding(
                FindingKind.RENAME, facts.rel, line, OptionIs(dest, frozenset({choice})), hops,
                choice=choice, option=dest, text=f"{dest} = {value}", target=(dest, value)))

    def follow_region_calls(self, rel: str) -> Found:
        """Calls whose path holds an option test: follow them into their callees.

        A function or class returned there (``if backend.is_flashinfer_trtllm():
        return fp8_linear_trtllm``, ``if a2a.is_deepep(): return DeepEPMoE``, a
        dispatcher handing back the implementation its caller runs) is followed
        as if called there: the caller calls what it gets back, and only that
        choice gets it back."""
        ctx, out = self.ctx, Found()
        facts = ctx.index.view(rel)
        if facts is None:
            return out
        returned = self._returned_functions(facts, facts.conditional_returns())
        followed: set[tuple[int, str]] = set()
        for call in (*facts.calls, *returned):
            if not call.path:
                continue
            cond = self.conditions.path(facts, call.path, call.scope)
            done: set[str] = set()
            for signed in call.path:
                if signed < 0:
                    continue  # a branch not taken names other choices
                test = self.conditions.cond(facts, signed, call.scope)
                for atom in option_atoms(test):
                    if atom.option not in ctx.dests or atom.option in done:
                        continue
                    done.add(atom.option)
                    followed.add((call.line, atom.option))
                    link = Hop(rel, facts.cond(signed).line, HopRole.LINK, _test_text(test, atom))
                    self._follow_one(facts, call, atom.option, cond, (link,), FOLLOW_DEPTH,
                                     out, call in returned
                                     and self._for_choice(cond, atom.option))
        out.findings.extend(self.bound.carried(facts, followed))
        return out

    @staticmethod
    def _for_choice(path: Predicate, dest: str) -> bool:
        """Whether ``path`` holds only for some choices of ``dest``: a function
        returned there is the implementation of those choices (code that exists
        for them, like a function registered for a choice)."""
        return any(isinstance(a, OptionIs) and a.option == dest for a in leaves(path)) \
            and path.evaluate(Context()) is not Tri.TRUE

    def _returned_functions(self, facts: FactsView, returns: Iterable[ReturnFact]
                            ) -> list[CallFact]:
        """``return NAME`` under an option test, where NAME is a function or a
        class of the tree (a class is instantiated: its ``__init__`` runs) or a
        function of the kernel library, as a call of NAME at that line."""
        out: list[CallFact] = []
        for ret in returns:
            if not ret.value.replace(".", "").replace("_", "").isalnum():
                continue
            value = self.ctx.vocab.value(ret.value, facts.rel, ret.scope, ret.line)
            if isinstance(value, (FuncV, ClassV)) or (
                    isinstance(value, ExtV)
                    and value.path.split(".")[0] in self.ctx.kernel_packages):
                out.append(CallFact(ret.scope, ret.value, (), (), ret.line, ret.path))
        return out

    def follow_calls(self, facts: FactsView, scope: str, dest: str, region: Predicate,
                     hops: tuple[Hop, ...], depth: int, include_nested: bool, out: Found,
                     owned: bool = False) -> None:
        """Calls made in ``scope`` (and its nested scopes when
        ``include_nested``), each followed for ``dest`` under ``region``;
        what they hold goes into ``out``."""
        conditions = self.conditions
        calls = facts.in_tree("calls", scope) if include_nested \
            else conditions.by_scope(facts, "calls", scope)
        returns = facts.in_tree("returns", scope) if include_nested \
            else conditions.by_scope(facts, "returns", scope)
        returned = self._returned_functions(facts, returns)
        for call in calls:
            cond = conj(region, conditions.path(facts, call.path, call.scope))
            # a base's constructor goes on building the same object: no step away
            self._follow_one(facts, call, dest, cond, hops,
                             depth + 1 if call.func == _SUPER_INIT else depth, out, owned)
        for call in returned:
            path = conditions.path(facts, call.path, call.scope)
            self._follow_one(facts, call, dest, conj(region, path), hops, depth, out,
                             owned or self._for_choice(path, dest))
        # function-local imports of modules: their module-level gates apply
        for imp in conditions.by_scope(facts, "imports", scope):
            module = f"{imp.module}.{imp.name}" if imp.name else imp.module
            if module in self.ctx.index.by_module:
                self._module_gates(module, dest,
                                   conj(region, conditions.path(facts, imp.path, scope)),
                                   (*hops, Hop(facts.rel, imp.line, HopRole.IMPORT, module)),
                                   out)

    def _module_gates(self, module: str, dest: str, region: Predicate,
                      hops: tuple[Hop, ...], out: Found) -> None:
        ctx = self.ctx
        if self.already_followed((module, dest, _under(region))):
            return
        rel = ctx.index.by_module[module]
        facts = ctx.index.view(rel)
        if facts is None:
            return
        for scope, line, text, cond, path in self.conditions.failure_conditions(facts, ""):
            if mentions_device(cond) or mentions_model(cond):
                out.findings.append(Finding(
                    FindingKind.GATE, rel, line, conj(region, cond),
                    (*hops, *self.conditions.guard_hops(facts, path, scope, line)), option=dest,
                    text=text))

    def _platform_wide(self, facts: FactsView, scope: str, dest: str) -> bool:
        """Whether ``scope`` calls into another platform's package for more than
        one set of ``dest``'s choices (``link.platform_code``): a call on a path
        that tests no choice, or calls under a choice's test and under its
        negation. Then the scope is that platform's code itself (the Ascend MoE
        runner picking NPU kernels per all-to-all backend), and its calls label
        no choice."""
        return self._platform_scopes.get((facts.rel, scope, dest),
                                         lambda: self._calls_platform_for(facts, scope, dest))

    def _calls_platform_for(self, facts: FactsView, scope: str, dest: str) -> bool:
        choices = self._choices().get(dest, ())
        admitted: set[frozenset[str]] = set()
        for other in self.conditions.by_scope(facts, "calls", scope):
            if parse_expr(other.func) is None:
                continue
            value = self.ctx.vocab.value(other.func, facts.rel, other.scope, other.line)
            if not isinstance(value, (FuncV, ClassV)) or platform_package(value.rel) is None:
                continue
            path = self.conditions.path(facts, other.path, other.scope)
            admitted.add(frozenset(c for c in choices if path.evaluate(
                Context(options={dest: c})) is not Tri.FALSE))
        return len(admitted) > 1

    def _follow_one(self, facts: FactsView, call: CallFact, dest: str, cond: Predicate,
                    hops: tuple[Hop, ...], depth: int, out: Found, owned: bool = False) -> None:
        ctx = self.ctx
        if depth <= 0 or cond == Const(False):
            return
        if parse_expr(call.func) is None:
            return
        hop = Hop(facts.rel, call.line, HopRole.CALL, call.func)
        if call.func == _SUPER_INIT:
            base = self._base_constructor(facts, call.scope)
            if base is not None:
                self._follow_target(base, facts, call, dest, cond, hops, hop, depth, out, owned)
            return
        callee = ctx.vocab.value(call.func, facts.rel, call.scope, call.line)
        if isinstance(callee, ExtV):
            backend = backend_argument(ctx.vocab, facts, call)
            carried = backend_choices(backend, self._choices())
            out.kernel_calls.append(KernelCall(
                dest, cond, callee.path, facts.rel, call.line, (*hops, hop),
                backend.value if isinstance(backend, ConstV) and isinstance(
                    backend.value, str) else None, owned=owned,
                backends=carried[1] if carried is not None and carried[0] == dest else (),
                args=call_arguments(ctx, facts, call)))
            return
        target: tuple[str, str] | None = None
        if isinstance(callee, FuncV):
            target = (callee.rel, callee.qualname)
        elif isinstance(callee, ClassV):
            # the constructor that runs: the class's own or the nearest base's
            target = self.quant.paths.lookup((callee.rel, callee.qualname), "__init__")
        if target is None:
            return
        self._follow_target(target, facts, call, dest, cond, hops, hop, depth, out, owned)

    def _base_constructor(self, facts: FactsView, scope: str) -> tuple[str, str] | None:
        """What ``super().__init__`` calls in the constructor ``scope``: the
        next ``__init__`` among the class's bases in the tree."""
        func = facts.function(scope)
        if func is None or not func.cls or func.name != "__init__":
            return None
        cls = (facts.rel, func.cls)
        return self.quant.paths.lookup(cls, "__init__", after=cls)

    def _follow_target(self, target: tuple[str, str], facts: FactsView, call: CallFact,
                       dest: str, cond: Predicate, hops: tuple[Hop, ...], hop: Hop, depth: int,
                       out: Found, owned: bool) -> None:
        if self.already_followed((target[0], target[1], f"{dest}:{_under(cond)}")):
            return
        if depth == FOLLOW_DEPTH:
            # a call followed out of a choice's code: replayed on its own when
            # its unit runs again for another of its calls
            found = self.part(
                ("follow", facts.rel, str(call.line), call.func, dest, *target),
                partial(self._target_found, target, facts, call, dest, cond, hops, hop, depth,
                        owned),
                (call, cond, hops, hop, owned))
            out.findings.extend(found.findings)
            out.kernel_calls.extend(found.kernel_calls)
            return
        self._into_target(target, facts, call, dest, cond, hops, hop, depth, out, owned)

    def _target_found(self, target: tuple[str, str], facts: FactsView, call: CallFact,
                      dest: str, cond: Predicate, hops: tuple[Hop, ...], hop: Hop, depth: int,
                      owned: bool) -> Found:
        out = Found()
        self._into_target(target, facts, call, dest, cond, hops, hop, depth, out, owned)
        return out

    def _into_target(self, target: tuple[str, str], facts: FactsView, call: CallFact,
                     dest: str, cond: Predicate, hops: tuple[Hop, ...], hop: Hop, depth: int,
                     out: Found, owned: bool) -> None:
        """What calling ``target`` holds for ``dest``: platform code, its gates,
        its raises read with the call's arguments, and the calls it makes."""
        ctx = self.ctx
        tfacts = ctx.index.view(target[0])
        if tfacts is None:
            return
        platform = platform_package(target[0])
        if platform is not None and not self._platform_wide(facts, call.scope, dest):
            out.findings.append(Finding(
                FindingKind.PLATFORM, target[0], _def_line(tfacts, target[1]), cond,
                (*hops, hop), option=dest, text=f"{target[1]}() is {platform} code",
                target=(platform,)))
        for scope, line, text, gate, path in self.conditions.failure_conditions(tfacts, target[1]):
            if not mentions_device(gate) and not mentions_model(gate):
                continue
            out.findings.append(Finding(
                FindingKind.GATE, target[0], line, conj(cond, gate),
                (*hops, hop, *self.conditions.guard_hops(tfacts, path, scope, line)), option=dest,
                text=text))
        if call.args or call.kwargs:
            out.findings.extend(self.bound.scan(facts, call, tfacts, target[1], dest, cond,
                                                (*hops, hop)))
        self.follow_calls(tfacts, target[1], dest, cond, (*hops, hop), depth - 1, False, out,
                          owned)


def _under(cond: Predicate) -> str:
    """A condition as a key of calls followed: a digest of its ``repr``
    (which can run to kilobytes, and every unit's record keeps its keys)."""
    return hashlib.blake2b(repr(cond).encode(), digest_size=16).hexdigest()


def _def_line(facts: FactsView, scope: str) -> int:
    func = facts.function(scope)
    return func.line if func is not None else 0


def _module_function(facts: FactsView, scope: str) -> bool:
    """Whether ``scope`` is a function of the module or a module class's
    constructor, not another method (a base class's default, ``raise
    NotImplementedError(... does not expose quant info)``, is overridden where
    it matters; a constructor runs for every object the method builds, its
    subclasses' included through ``super().__init__``)."""
    func = facts.function(scope)
    if func is None:
        return False
    if not func.cls:
        return "." not in scope
    return scope.count(".") == 1 and scope.endswith(".__init__")


def _test_text(test: Predicate, atom: OptionIs) -> str:
    """What a branch test that names the option says, as the hop's note: the
    option's test itself, or the whole test when it says more (``self.quant_mode
    == "w4a4"`` is ``not (SGLANG_X and backend == flashinfer_cutedsl)``, which
    links every choice of the option, not only the one it names)."""
    if test == atom:
        return atom.describe()
    text = test.describe()
    return text if len(text) <= 200 else text[:197] + "..."
