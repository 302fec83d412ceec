"""link (bound gates): a followed call's raises, read with the arguments that call passes.

A function reached from a choice's code often raises on what its caller
passed, not on the device::

    # modelopt_quant.py, ModelOptNvFp4FusedMoEMethod.create_moe_runner
    self.runner = MoeRunner(moe_runner_backend, moe_runner_config)

    # runner.py, MoeRunner.__init__(self, runner_backend, config, lora_enabled=False)
    elif runner_backend.is_flashinfer_trtllm():
        self.runner_core = None
    ...
    if not lora_enabled:
        self.fused_func = FusedOpPool.get_fused_func(a2a_backend_name, runner_backend_name)
        if self.runner_core is None and self.fused_func is None:
            raise NotImplementedError(...)

Read alone, every test of that raise is open (a parameter, attributes the
constructor sets per branch, a registry lookup). Where the call passes the
followed option's value (an argument whose value is the option, or depends
on it), the raise is read again with the callee's parameters bound to the
call's arguments and defaults (``Vocabulary.path_bound``). It becomes a gate
of the option for the choices it surely stops (with the other options at
their defaults, on some arch), and for those only: a choice the bound
reading leaves open gains nothing. Calls on no test of the option are read
the same way when an argument is a local fetched by a call named for an
option (``carried``). Made in a quantization method's code,
the gate holds only under the methods whose code makes the call (without
``--quantization``, a condition: ``blocked with --quantization
modelopt_fp4``); made in another platform's package, it holds nowhere
here. Raises that already test the device or the model are the
linker's usual gates and are not read again.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from guardscan.arch import Arch, standard_archs
from guardscan.guards import AltV, ChoiceV, ClassV, ConstV, FuncV, OptV, UnkV, Value
from guardscan.index.facts import CallFact
from guardscan.index.observe import FactsView
from guardscan.link.model import Finding, FindingKind, Hop, HopRole, default_choices
from guardscan.link.platform_code import platform_package
from guardscan.model_facts import mentions_model
from guardscan.predicate import (
    FALSE,
    Context,
    OptionIs,
    Predicate,
    Tri,
    conj,
    leaves,
    mentions_device,
)
from guardscan.predicate_dag import Fold, residual
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext
    from guardscan.link.quantization import QuantizationMethods

__all__ = ["BoundGates"]

_ARCHS = standard_archs()


def _carries(value: Value, dest: str) -> bool:
    """Whether ``value`` is the option's value or depends on it."""
    if isinstance(value, (OptV, ChoiceV)):
        return value.dest == dest
    if isinstance(value, AltV):
        return any(_carries(v, dest) or any(isinstance(a, OptionIs) and a.option == dest
                                            for a in leaves(c))
                   for c, v in value.alternatives)
    return False


class BoundGates:
    def __init__(self, ctx: LinkContext, conditions: Conditions,
                 quant: QuantizationMethods) -> None:
        self.ctx = ctx
        self.conditions = conditions
        self.quant = quant
        self._defaults = default_choices(ctx.options)
        self._choices = {o.dest: o.choices for o in ctx.options}
        self._folds: dict[tuple[Arch, str, str | None], Fold] = {}

    def bindings(self, caller: FactsView, call: CallFact, tfacts: FactsView, scope: str,
                 dest: str) -> dict[str, Value] | None:
        """The callee's parameters as ``call`` binds them (None: the call
        passes nothing that carries ``dest``, or binds what is not read here)."""
        func = tfacts.function(scope)
        if func is None or any(a.startswith("*") for a in call.args) or any(
                k.startswith("*") for k, _ in call.kwargs):
            return None
        params = list(func.params)
        if func.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        vocab = self.ctx.vocab
        env: dict[str, Value] = {}
        for name, default in func.defaults:
            if parse_expr(default) is not None:
                env[name] = vocab.value(default, tfacts.rel, func.scope, func.line)
        given = [*zip(params, call.args), *((k, v) for k, v in call.kwargs if k in params)]
        carried = False
        for name, text in given:
            if parse_expr(text) is None:
                return None
            value = vocab.value(text, caller.rel, call.scope, call.line)
            carried = carried or _carries(value, dest)
            env[name] = value
        if not carried:
            return None
        return {k: v for k, v in env.items() if not isinstance(v, UnkV)}

    def carried(self, facts: FactsView, followed: set[tuple[int, str]]) -> list[Finding]:
        """Calls on no test of the option that pass its value
        (``MoeRunner(moe_runner_backend, config)`` after ``moe_runner_backend =
        get_moe_runner_backend()``): the callee's raises read with those
        arguments. Only a local its function assigns
        from a call named for an option is read (the pre-filter; the value
        decides): an attribute named like an option (``self.attention_backend``
        of another program's config) is not taken, on no test of the option
        only a value fetched for it is."""
        dests = self.ctx.dests
        out: list[Finding] = []
        # locals assigned from a call named for an option, by scope: the pre-filter
        fetched: dict[str, dict[str, set[str]]] = {}
        for assign in facts.assigns:
            if "(" not in assign.value or not assign.scope:
                continue
            named_here = {d for d in dests if d + "(" in assign.value}
            if named_here:
                by_name = fetched.setdefault(assign.scope, {})
                for target in assign.targets:
                    by_name.setdefault(target, set()).update(named_here)
        for call in facts.calls:
            locals_ = fetched.get(call.scope)
            if not locals_:
                continue
            named = sorted({d for text in (*call.args, *(v for _, v in call.kwargs))
                            for d in locals_.get(text, ())})
            named = [d for d in named if (call.line, d) not in followed]
            if not named or parse_expr(call.func) is None:
                continue
            target = self._callee(facts, call)
            if target is None:
                continue
            tfacts = self.ctx.index.view(target[0])
            if tfacts is None:
                continue
            cond = self.conditions.path(facts, call.path, call.scope)
            hop = Hop(facts.rel, call.line, HopRole.CALL, call.func)
            for dest in named:
                out.extend(self.scan(facts, call, tfacts, target[1], dest, cond, (hop,)))
        return out

    def _callee(self, facts: FactsView, call: CallFact) -> tuple[str, str] | None:
        """The function a call of the tree runs: a function, or a class's constructor."""
        callee = self.ctx.vocab.value(call.func, facts.rel, call.scope, call.line)
        if isinstance(callee, FuncV):
            return callee.rel, callee.qualname
        if isinstance(callee, ClassV):
            return self.quant.paths.lookup((callee.rel, callee.qualname), "__init__")
        return None

    def scan(self, caller: FactsView, call: CallFact, tfacts: FactsView, scope: str,
             dest: str, cond: Predicate, hops: tuple[Hop, ...]) -> list[Finding]:
        """Gates of ``dest`` among the device-free raises of ``scope`` read
        with ``call``'s arguments (``cond``: where the call is made)."""
        if platform_package(caller.rel) is not None:
            return []  # another platform's code runs only there
        failures = [f for f in self.conditions.failure_conditions(tfacts, scope)
                    if not mentions_device(f[3]) and not mentions_model(f[3])]
        if not failures:
            return []
        env = self.bindings(caller, call, tfacts, scope, dest)
        if env is None:
            return []
        raises = {r.line for r in self.conditions.by_scope(tfacts, "raises", scope)}
        asserts = {a.line: a.test for a in self.conditions.by_scope(tfacts, "asserts", scope)}
        out: list[Finding] = []
        for fscope, line, text, _, path in failures:
            if line not in raises and line not in asserts:
                continue  # a call through an unbound import: not read with arguments
            bound = self.ctx.vocab.path_bound(tfacts.rel, fscope, path, env,
                                              asserts.get(line, "") if line not in raises
                                              else "", line)
            stopped = self._stopped(bound, dest)
            if not stopped:
                continue
            # what stays of the reading per choice stopped: the rest (an
            # environment variable, another option) becomes the verdict's condition
            by_rest: dict[Predicate, list[str]] = {}
            for choice in stopped:
                rest = residual(bound, Context(options={dest: choice}),
                                lambda a: not (isinstance(a, OptionIs) and a.option == dest))
                by_rest.setdefault(rest, []).append(choice)
            note = "with " + ", ".join(
                f"{name}={_describe(value)}" for name, value in sorted(env.items()))
            # the value handed over is read where the caller read it: where
            # another option's value stands in there (``link.shared_values``),
            # and the arguments do not name that option, the gate is its too
            texts = (*call.args, *(v for _, v in call.kwargs))
            shared = tuple(other for other in self.ctx.vocab.options.shared.get(dest, ())
                           if not any(other in text for text in texts))
            # one finding per way the choices stopped are stopped: each says
            # which other options' values let its choices through
            for rest, choices in by_rest.items():
                gate = conj(OptionIs(dest, frozenset(choices), shared), rest)
                # made in a quantization method's code: only under the methods
                # that reach the call (a refusal on every arch, under a
                # ``--quantization`` naming one)
                where = self.quant.qualify(caller.rel, call.scope, conj(cond, gate),
                                           every_arch=not mentions_device(gate))
                out.append(Finding(
                    FindingKind.GATE, tfacts.rel, line, where,
                    (*hops, Hop(caller.rel, call.line, HopRole.LINK, note[:200]),
                     *self.conditions.guard_hops(tfacts, path, fscope, line)),
                    option=dest, text=text,
                    target=tuple(self._ways_around(rest, dest, choices)), built=True))
        return out

    def _ways_around(self, rest: Predicate, dest: str, choices: list[str]) -> list[str]:
        """``other=value`` for each value of another backend option the
        reading tests with which the gate may not raise for these choices on
        any arch (``--moe-a2a-backend flashinfer_megamoe``, the one all-to-all
        a fused function is registered for)."""
        others = sorted({a.option for a in leaves(rest) if isinstance(a, OptionIs)
                         and a.option != dest and a.option in self._choices})
        out = []
        for other in others:
            for value in self._choices[other]:
                if value == self._defaults.get(other):
                    continue
                if all(rest.evaluate(Context(arch=arch, options={
                        **self._defaults, dest: choice, other: value})) is not Tri.TRUE
                       for choice in choices for arch in _ARCHS):
                    out.append(f"{other}={value}")
        return out

    def _stopped(self, bound: Predicate, dest: str) -> list[str]:
        """The choices of ``dest`` that ``bound`` surely stops, on some arch,
        the other options at their defaults."""
        archs = _ARCHS if mentions_device(bound) else _ARCHS[:1]
        choices = self._choices.get(dest, ())
        stopped: set[str] = set()
        for arch in archs:
            # folded to what ``dest`` decides (the folds of one arch share
            # their parts), then asked once per way the choices meet its tests
            rest = self._fold_for(arch, dest).residual(bound)
            if rest == FALSE:
                continue
            tests = [a.choices for a in leaves(rest)
                     if isinstance(a, OptionIs) and a.option == dest]
            holds: dict[tuple[bool, ...], bool] = {}
            for choice in choices:
                met = tuple(choice in t for t in tests)
                if met not in holds:
                    holds[met] = self._fold_for(arch, dest, choice).value(rest) is Tri.TRUE
                if holds[met]:
                    stopped.add(choice)
        return [choice for choice in choices if choice in stopped]

    def _fold_for(self, arch: Arch, dest: str, choice: str | None = None) -> Fold:
        """The fold of the readings on ``arch`` with the other options at their
        defaults: to what ``dest`` decides (no ``choice``), or with ``dest``
        holding ``choice``. Kept for the scan: the readings share their parts
        (a callee's raises, read for each call), each folded once."""
        fold = self._folds.get((arch, dest, choice))
        if fold is None:
            if choice is None:
                fold = Fold(Context(arch=arch, options=self._defaults),
                            partial(_tests_option, dest))
            else:
                fold = Fold(Context(arch=arch, options={**self._defaults, dest: choice}))
            self._folds[(arch, dest, choice)] = fold
        return fold


def _tests_option(dest: str, atom: Predicate) -> bool:
    return isinstance(atom, OptionIs) and atom.option == dest


def _describe(value: Value) -> str:
    if isinstance(value, OptV):
        return f"--{value.dest.replace('_', '-')}'s value"
    if isinstance(value, ConstV):
        return repr(value.value)
    if isinstance(value, (AltV, ChoiceV)):
        return "a value computed from the options"
    return type(value).__name__
