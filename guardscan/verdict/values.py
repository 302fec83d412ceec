"""verdicts (values): conditions evaluated for one choice on each arch, each once, and the questions the rules ask of them (could a gate raise, is it about this choice, does it raise because of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from guardscan.arch import Arch
from guardscan.link import (
    GATE_KINDS,
    Finding,
    KernelCall,
    Links,
)
from guardscan.model_facts import ModelFacts, ModelView, phrase
from guardscan.predicate import (
    And,
    Const,
    Context,
    EnvIs,
    ModelIs,
    Not,
    OptionIs,
    Or,
    Predicate,
    QuantIs,
    Tri,
    leaves,
    mentions_capability,
    substitute,
)
from guardscan.predicate_dag import Fold
from guardscan.predicate_dag import value as _value
from guardscan.results import OptionInfo

__all__ = ['Shared', 'Values', 'about_choice', 'about_sets', 'calling_choices', 'choices_about', 'holding', 'method_condition', 'possible', 'raises_for', 'specific', 'undecided_atoms', 'unset_while_judging']


def possible(pred: Predicate, ctx: Context) -> bool:
    """Could ``pred`` be TRUE on ``ctx`` for some value of what ``ctx`` leaves open?

    Undecided atoms are treated as independent, which over-approximates (a
    correlated ``x and not x`` counts as possible): it errs toward showing a
    gate as a caveat, never toward calling a choice blocked. With each
    occurrence of an atom free, that is exactly "not FALSE" in three-valued
    (Kleene) logic, which ``predicate_dag.value`` computes with each shared
    part once and stopping at the first part that decides
    (tests/test_predicate.py checks it against every assignment).
    """
    return _value(pred, ctx) is not Tri.FALSE


def undecided_atoms(pred: Predicate, ctx: Context) -> list[str]:
    return sorted({a.describe() for a in leaves(pred) if a.evaluate(ctx) is Tri.UNKNOWN})


def holding(pred: Predicate, dest: str, value: str) -> Predicate:
    """``pred`` with option ``dest`` holding ``value``: its tests decided."""
    return substitute(pred, lambda atom: Const(value in atom.choices) if
                      isinstance(atom, OptionIs) and atom.option == dest else None)


def about_choice(cond: Predicate, choice_ctx: Context) -> bool:
    """Can the gate's condition hold for this choice (on some arch)?"""
    return possible(cond, choice_ctx)


def about_sets(findings: list[Finding], option: OptionInfo, quantization: str | None,
                unset: dict[str, str] | None = None) -> dict[int, frozenset[str]]:
    """The choices each gate is about (``choices_about``), by the gate's id."""
    return {id(finding): choices_about(finding.condition, option.dest, option.choices,
                                       quantization, unset)
            for finding in findings if finding.kind in GATE_KINDS}


def choices_about(cond: Predicate, dest: str, choices: Iterable[str], quantization: str | None,
                  unset: Mapping[str, str] | None = None) -> frozenset[str]:
    """The choices of ``dest`` for which a gate's condition can hold
    (``about_choice``; ``unset``: the other options' values). The condition
    depends on the choice only through its tests of ``dest``, so choices
    those tests cannot tell apart are decided together."""
    tests = sorted({a.choices for a in leaves(cond)
                    if isinstance(a, OptionIs) and a.option == dest}, key=sorted)
    groups: dict[tuple[bool, ...], list[str]] = {}
    for choice in choices:
        groups.setdefault(tuple(choice in t for t in tests), []).append(choice)
    return frozenset(
        c for members in groups.values() if about_choice(cond, Context(
            options={**(unset or {}), dest: members[0]}, quantization=quantization))
        for c in members)


def unset_while_judging(links: Links, dest: str) -> dict[str, str]:
    """The other options while ``dest`` is judged: each holds its default (a
    launch that sets only this flag), and the twins that fall back to
    ``dest`` are not given."""
    unset = {other: value for other, value in links.defaults.items() if other != dest}
    unset.update({twin: "" for twin in links.unset.get(dest, ())})
    return unset


def calling_choices(call: KernelCall, dest: str, choices: tuple[str, ...],
                    quantization: str | None, unset: Mapping[str, str]) -> set[str]:
    """The choices of ``dest`` whose verdicts read the kernel call: those it
    is handed as ``backend=`` strings, else those its condition singles out
    (``specific``, as the judge picks each choice's calls)."""
    if call.backends:
        return set(dict(call.backends)).intersection(choices)
    every = frozenset(choices)
    return {choice for choice in choices if specific(call.condition, Context(
        options={**unset, dest: choice}, quantization=quantization), every)}


def specific(cond: Predicate, ctx: Context, every: frozenset[str]) -> bool:
    """Does the condition single out the option's value in ``ctx`` (not merely
    allow it, as a test naming ``every`` choice would)? Code run for every
    choice alike says nothing about one."""
    for atom in leaves(cond):
        if isinstance(atom, OptionIs) and atom.option in ctx.options and \
                atom.evaluate(ctx) is Tri.TRUE and not every <= atom.choices:
            return True
    return False


def raises_for(cond: Predicate, ctx: Context, positive: bool = True) -> bool:
    """Whether ``cond`` (a gate's failure condition) holds partly because of
    an option value of ``ctx``: an option test that is TRUE there and that
    makes the gate more likely to raise (not under an odd number of ``not``)."""
    if isinstance(cond, (And, Or)):
        return any(raises_for(item, ctx, positive) for item in cond.items)
    if isinstance(cond, Not):
        return raises_for(cond.item, ctx, not positive)
    return positive and isinstance(cond, OptionIs) and cond.evaluate(ctx) is Tri.TRUE


def method_condition(method: str, checkpoint_methods: frozenset[str],
                     verdict: str = "blocked") -> str:
    """The condition a method's gate gives: ``blocked with --quantization
    mxfp4``; for a method only a checkpoint names (its ``quant_method``, not a
    ``--quantization`` choice), ``blocked with a minimax_m3_nvfp4 checkpoint``.

    >>> method_condition("mxfp4", frozenset()), method_condition("m3", frozenset({"m3"}))
    ('blocked with --quantization mxfp4', 'blocked with a m3 checkpoint')
    """
    if method in checkpoint_methods:
        return f"{verdict} with a {method} checkpoint"
    return f"{verdict} with --quantization {method}"


def env_alternatives(atom: EnvIs) -> list[str]:
    """Values to try for an environment variable besides its default: ``0``,
    ``1`` and the values the code compares it with, one for each answer the
    test gives other than the default's (``1`` stands for ``true``, ``yes``...)."""
    default = atom.evaluate(Context())
    out: dict[Tri, str] = {}
    for value in ["0", "1", *sorted(atom.values)]:
        answer = atom.evaluate(Context(env={atom.name: value}))
        if answer is not default:
            out.setdefault(answer, value)
    return sorted(out.values())


class Shared:
    """What conditions come to for an option's choices, shared between
    choices that the conditions' tests of the option cannot tell apart."""

    def __init__(self, dest: str, unset: dict[str, str] | None = None,
                 modes: dict[str, tuple[str, tuple[str, ...]]] | None = None,
                 installed: frozenset[str] = frozenset(),
                 checkpoint_methods: frozenset[str] = frozenset(),
                 model: ModelFacts | None = None) -> None:
        self.dest = dest
        self.installed = installed
        #: the model the launch serves, when named (else the common model)
        self.model = model
        #: methods only a checkpoint names (``--quantization`` does not offer them)
        self.checkpoint_methods = checkpoint_methods
        self.unset = unset or {}
        self.modes = modes or {}
        self.mode_atoms: dict[int, tuple[OptionIs | EnvIs | ModelIs, ...]] = {}
        self.mode_answers: dict[tuple[int, Arch, tuple[object, ...], Tri, str], tuple[str, ...]] = {}
        #: whether a kernel call's condition can hold for another choice
        #: (``rules.kernels.kernel_helpers``), by the condition and its tests' answers
        self.helpers: dict[tuple[int, tuple[bool, ...]], bool] = {}
        self.tests: dict[int, list[frozenset[str]]] = {}
        self.values: dict[tuple[int, Arch, tuple[object, ...]], Tri] = {}
        self.specific: dict[tuple[int, tuple[object, ...]], bool] = {}
        self.mentions: dict[int, bool] = {}
        self.undecided: dict[tuple[int, Arch, tuple[object, ...]],
                             tuple[bool, tuple[str, ...], list[str] | None]] = {}

    def signature(self, pred: Predicate, choice: str) -> tuple[bool, ...]:
        tests = self.tests.get(id(pred))
        if tests is None:
            tests = self.tests[id(pred)] = sorted(
                {a.choices for a in leaves(pred) if isinstance(a, OptionIs) and a.option == self.dest},
                key=sorted)
        return tuple([choice in t for t in tests]) if tests else ()


class Values:
    """Conditions evaluated on each arch for one choice, each once (and once
    for the choices that cannot tell them apart)."""

    def __init__(self, shared: Shared, choice: str, quantization: str | None,
                 companions: dict[str, str] | None = None, needs: tuple[str, ...] = (),
                 becomes: str | None = None, model_needs: tuple[ModelIs, ...] = ()) -> None:
        """``companions``: other options the choice requires, holding the
        value it needs while it is judged (``link.companions``); ``needs``:
        every option it requires, a flag's included; ``becomes``: the choice
        a hook rewrites it into before the model is built (``link.gates``
        renames), which the code run then sees; ``model_needs``: the model
        properties the choice is for (``verdict.model_needs``), taken as
        holding where no model is named."""
        self.shared, self.choice, self.quantization = shared, choice, quantization
        self.companions = companions or {}
        self.needs = needs
        self.becomes = becomes
        self.model = ModelView(shared.model, model_needs if shared.model is None else ())
        self._contexts: dict[Arch, Context] = {}
        self._signatures: dict[int, tuple[object, ...]] = {}
        #: what every signature ends with: the companions' values, the model's needs
        self._beside: tuple[object, ...] = (*sorted(self.companions.items()), *self.model.needs)
        # per arch and kind of fold: the conditions asked share their parts
        self._folds: dict[tuple[Arch, str], Fold] = {}

    def _fold(self, arch: Arch, kind: str = "value") -> Fold:
        fold = self._folds.get((arch, kind))
        if fold is None:
            modes = self.shared.modes
            keep = {"value": None,
                    "modes": lambda a: isinstance(a, (EnvIs, ModelIs)) or
                    isinstance(a, OptionIs) and a.option in modes,
                    "methods": lambda a: isinstance(a, QuantIs)}[kind]
            fold = self._folds[(arch, kind)] = Fold(self.context(arch), keep)
        return fold

    def context(self, arch: Arch) -> Context:
        ctx = self._contexts.get(arch)
        if ctx is None:
            ctx = self._contexts[arch] = Context(
                arch=arch, options={**self.shared.unset, **self.companions,
                                    self.shared.dest: self.choice},
                quantization=self.quantization, installed=self.shared.installed,
                model=self.model)
        return ctx

    def as_built(self, pred: Predicate, arch: Arch) -> Tri:
        """``pred`` on ``arch`` as code run once the model is built sees it:
        with the option holding what a hook rewrote the choice into."""
        if self.becomes is None:
            return self(pred, arch)
        ctx = self.context(arch)
        return _value(pred, replace(ctx, options={**ctx.options,
                                                  self.shared.dest: self.becomes}))

    def _signature(self, pred: Predicate) -> tuple[object, ...]:
        signature = self._signatures.get(id(pred))
        if signature is None:
            signature = self._signatures[id(pred)] = (
                *self.shared.signature(pred, self.choice), *self._beside)
        return signature

    def __call__(self, pred: Predicate, arch: Arch) -> Tri:
        key = (id(pred), arch, self._signature(pred))
        value = self.shared.values.get(key)
        if value is None:
            value = self.shared.values[key] = self._fold(arch).value(pred)
        return value

    def _without_modes(self, cond: Predicate, arch: Arch) -> Tri:
        """``cond`` on ``arch`` with the mode options not given."""
        if not self.shared.modes:
            return self(cond, arch)
        ctx = self.context(arch)
        options = {k: v for k, v in ctx.options.items() if k not in self.shared.modes}
        return _value(cond, Context(arch=arch, options=options, quantization=ctx.quantization,
                                   installed=ctx.installed, model=ctx.model))

    def mode_conditions(self, cond: Predicate, arch: Arch, now: Tri,
                        verdict: str = "blocked") -> list[str]:
        """What another value of a mode option, or of an environment variable,
        that ``cond`` tests would do to a gate that is ``now`` TRUE (raises) or
        FALSE at their defaults: ``not blocked with --deepep-mode normal``,
        ``blocked with SGLANG_USE_X=1``; or another model, where none is
        named: ``blocked with an MLA model``. ``verdict``: what holding gives (a
        kernel call that excludes the arch, made only at a default: ``not
        unsupported with SGLANG_USE_W4A16=1``)."""
        tested = self.shared.mode_atoms.get(id(cond))
        if tested is None:
            tested = self.shared.mode_atoms[id(cond)] = tuple(
                a for a in leaves(cond) if isinstance(a, OptionIs) and a.option in self.shared.modes
                or isinstance(a, EnvIs) or isinstance(a, ModelIs) and self.shared.model is None
                and a not in self.model.needs)
        if not tested:
            return []
        key = (id(cond), arch, self._signature(cond), now, verdict)
        known = self.shared.mode_answers.get(key)
        if known is None:
            known = self.shared.mode_answers[key] = self._mode_conditions(
                cond, tested, arch, now, verdict)
        return list(known)

    def _mode_conditions(self, cond: Predicate, tested: tuple[OptionIs | EnvIs | ModelIs, ...],
                         arch: Arch, now: Tri, verdict: str) -> tuple[str, ...]:
        out: set[str] = set()
        ctx = self.context(arch)
        # what the alternatives leave alone, decided once
        rest = self._fold(arch, "modes").residual(cond)
        for atom in tested:
            if isinstance(atom, ModelIs):
                tries = [(phrase(atom), replace(ctx, model=ModelView(
                    None, (*self.model.needs, atom))))]
            elif isinstance(atom, EnvIs):
                tries = [(f"{atom.name}={value}", Context(
                    arch=arch, options=ctx.options, quantization=ctx.quantization,
                    env={**ctx.env, atom.name: value}, installed=ctx.installed,
                    model=ctx.model))
                    for value in env_alternatives(atom)]
            else:
                flag, choices = self.shared.modes[atom.option]
                tries = [(f"{flag} {value}", Context(
                    arch=arch, options={**ctx.options, atom.option: value},
                    quantization=ctx.quantization, env=ctx.env, installed=ctx.installed,
                    model=ctx.model))
                    for value in choices if value != ctx.options.get(atom.option)]
            for label, other_ctx in tries:
                other = _value(rest, other_ctx)
                if now is Tri.TRUE and other is not Tri.TRUE:
                    out.add(f"not {verdict} with {label}")
                elif now is Tri.FALSE and other is Tri.TRUE:
                    out.add(f"{verdict} with {label}")
        return tuple(sorted(out))

    def mentions(self, pred: Predicate) -> bool:
        """``mentions_capability``, once per condition."""
        known = self.shared.mentions.get(id(pred))
        if known is None:
            known = self.shared.mentions[id(pred)] = mentions_capability(pred)
        return known

    def undecided_gate(self, cond: Predicate, arch: Arch, every: frozenset[str],
                       all_archs: list[Arch]) -> tuple[bool, tuple[str, ...], list[str] | None]:
        """For a gate undecided on ``arch``: whether it could raise there; the
        ``--quantization`` methods under which it does; and, when it is this
        choice's architecture evidence, what it depends on (else None)."""
        key = (id(cond), arch, self._signature(cond))
        known = self.shared.undecided.get(key)
        if known is None:
            ctx = self.context(arch)
            if self._fold(arch).value(cond) is Tri.FALSE:
                known = (False, (), None)
            else:
                methods = []
                if ctx.quantization is None:
                    # only the method tests read the method: the rest is decided once
                    rest = self._fold(arch, "methods").residual(cond)
                    raises: dict[str, bool] = {}
                    for atom in [a for a in leaves(cond) if isinstance(a, QuantIs)]:
                        for method in sorted(atom.methods):
                            if method not in raises:
                                raises[method] = _value(rest, Context(
                                    arch=arch, options=ctx.options, quantization=method,
                                    installed=ctx.installed, model=ctx.model)) is Tri.TRUE
                            if raises[method]:
                                methods.append(method_condition(
                                    method, self.shared.checkpoint_methods))
                # another choice's gate (open only through other options), or
                # undecided on every arch alike: not architecture evidence. A
                # mode's default does not make it evidence: code testing a
                # mode mostly serves another option's choice (DeepEP's modes)
                evidence = self.specific(cond, every) and self.mentions(cond) and any(
                    self._without_modes(cond, other) is not Tri.UNKNOWN
                    for other in all_archs)
                known = (True, tuple(methods), undecided_atoms(cond, ctx) if evidence else None)
            self.shared.undecided[key] = known
        return known

    def specific(self, pred: Predicate, every: frozenset[str]) -> bool:
        key = (id(pred), self._signature(pred))
        value = self.shared.specific.get(key)
        if value is None:
            value = self.shared.specific[key] = specific(
                pred, Context(options={**self.shared.unset, self.shared.dest: self.choice},
                              quantization=self.quantization), every)
        return value
