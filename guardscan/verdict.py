"""verdicts: one per (option, choice, arch), decided from the linked findings.

Rules, in order (each documented in docs/verdicts.md, generated from here):

blocked
    A gate on the choice's path is TRUE for the architecture: SGLang itself
    raises. Needs every atom of the gate's condition decided (device, option,
    and, with ``--quantization``, the method). The choice's path includes what
    the value reaches: code registered for the choice under any option that
    picks from the same choices (``--prefill-attention-backend fa3`` meets the
    gates of the registered ``fa3`` factory), and the gates of another option's
    choice that code run for this one sets (an ``alias``: ``--moe-runner-backend
    megamoe`` is rewritten into ``--moe-a2a-backend megamoe``), and what the
    choice gets back from a dispatcher (a function or class returned under a
    test of the option). While a choice is judged, its twin options that fall
    back to it are taken as not given, the other options and the mode options
    (``--deepep-mode``) hold their defaults, and a gate that another value of
    a mode would change says so in the verdict's conditions (``not blocked
    with --deepep-mode normal``).
unsupported
    Not blocked, but a kernel the choice's own code calls (in a module named
    for the choice, a function registered for it, or code under a test of the
    option) declares that it does not run on the architecture (kernel facts
    from FlashInfer: ``@supported_compute_capability``, the
    ``@backend_requirement`` entry of the ``backend=`` passed, judged with
    the string this choice hands over when SGLang computes it from the
    option's value (``removeprefix("flashinfer_")``), cubin lists,
    JIT specs, per-arch dispatch, explicit checks), and the call is
    *required*: its reach condition is TRUE for the choice on the arch.
    Calls on a branch not taken there (an alternative chosen by the arch or
    the value) do not count. Calls under conditions guardscan cannot decide
    (model config, env) are caveats, unless every call the choice can make
    excludes the arch: then whatever runs fails. A helper on the path (a
    layout, shuffle or quantize step) excludes like any other call.
supported
    Not blocked or unsupported, and positive evidence: the choice's own gate
    (one that raises because of an option value of this choice, not a
    method's requirement that only exempts other choices) admits this
    architecture while it rejects others; ``auto`` resolves to the
    choice under a device condition that holds here and names the arch (a
    fallback for every arch the code does not test, one that would hold on a
    far-future GPU too, is shown but is no claim); or the kernels on the
    path admit it: no call excludes it or leaves it undecided (a check that
    only rejects other archs decides nothing), and a call specific to the
    choice declares it. A helper never supports on its own: a call that code
    of other choices makes too, or whose answer is decided inside another
    public function of the kernel library (``shuffle_matrix_sf_a`` by
    ``block_scale_interleave``).
unknown
    No architecture evidence either way. Gates that could block only under
    conditions guardscan cannot decide (model config, env vars, the
    quantization method when not given) are listed with the verdict, never
    taken as blocking.

Worked chain (sglang 0.5.9 + flashinfer 0.6.3, ``--moe-runner-backend
flashinfer_trtllm`` on sm120, as ``guardscan explain`` prints it, abridged)::

    [link]   sglang/srt/server_args.py:4092  parser.add_argument(
    [select] sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py:37
             if is_flashinfer_available() and is_sm120_supported():
             (picks where fp4_quantize comes from; not a support claim)
    [link]   sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py:486
             @register_fused_func("none", "flashinfer_trtllm")
    [link]   .../flashinfer_trtllm.py:443  result = trtllm_fp4_block_scale_moe(
    [kernel] flashinfer/fused_moe/core.py:2552
             return get_trtllm_moe_sm100_module().trtllm_fp4_block_scale_moe(
    [kernel] flashinfer/fused_moe/core.py:931  module = gen_trtllm_gen_fused_moe_sm100_module()
    [kernel] flashinfer/jit/fused_moe.py:238  supported_major_versions=[10]
             (capability major in [10]: false on sm120) -> unsupported

The deciding fact is always the last line of a chain.

Known limits: a gate is attached to a choice only when it is found in code
linked to the choice (option tests, registries, up to two calls away), so a
gate reached by a longer path is missed (errs toward unknown/supported);
``select`` guards never count as support.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from guardscan.arch import FAR_FUTURE, Arch, parse_arch, standard_archs
from guardscan.evidence import Args, FactKind, Status, arg, args_of
from guardscan.index import Index
from guardscan.index.observe import Read
from guardscan.link import (
    GATE_KINDS,
    Finding,
    FindingKind,
    Hop,
    HopRole,
    KernelCall,
    Links,
    evidence_role,
)
from guardscan.predicate import (
    And,
    Const,
    Context,
    Not,
    OptionIs,
    Or,
    Predicate,
    QuantIs,
    Tri,
    atoms,
    conj,
    mentions_capability,
    substitute,
)
from guardscan.results import BackendVerdict, Evidence, OptionInfo, Role, ScanNote, Verdict

#: the qualifier of a default that holds on every arch its code does not test
FALLBACK = "a fallback for every arch it does not test: not a support claim"

__all__ = ["JudgeMemo", "Judged", "KernelJudge", "dirty_choices", "judge", "mark_statuses",
           "possible", "quantization_notes"]



def possible(pred: Predicate, ctx: Context) -> bool:
    """Could ``pred`` be TRUE on ``ctx`` for some value of what ``ctx`` leaves open?

    Undecided atoms are treated as independent, which over-approximates (a
    correlated ``x and not x`` counts as possible): it errs toward showing a
    gate as a caveat, never toward calling a choice blocked.
    """
    return _may(pred, ctx)[0]


def _may(pred: Predicate, ctx: Context) -> tuple[bool, bool]:
    """(may be true, may be false)."""
    if isinstance(pred, And):
        parts = [_may(p, ctx) for p in pred.items]
        return all(t for t, _ in parts), any(f for _, f in parts)
    if isinstance(pred, Or):
        parts = [_may(p, ctx) for p in pred.items]
        return any(t for t, _ in parts), all(f for _, f in parts)
    if isinstance(pred, Not):
        may_true, may_false = _may(pred.item, ctx)
        return may_false, may_true
    value = pred.evaluate(ctx)
    return value is not Tri.FALSE, value is not Tri.TRUE


class KernelJudge:
    """Plug-in point for kernel facts: support of a kernel-library call on an arch."""

    def covers(self, call: KernelCall) -> bool:
        return False

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        return Tri.UNKNOWN, []

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        """The library's own public function, below the one called, whose facts
        decide a TRUE ``support``: the answer belongs to that building block,
        which other APIs share (a helper on the path). None: not known."""
        return None


#: the kind of fact each hop's line is
_HOP_KINDS = {
    HopRole.LINK: FactKind.LINK,
    HopRole.CALL: FactKind.CALL,
    HopRole.GUARD: FactKind.GUARD,
    HopRole.DEFINITION: FactKind.DEFINITION,
    HopRole.IMPORT: FactKind.MODULE,
    HopRole.QUANT: FactKind.QUANT,
}


def _hops_evidence(index: Index, hops: Iterable[Hop]) -> list[Evidence]:
    out = []
    for hop in hops:
        if hop.line <= 0:
            continue
        out.append(Evidence.of(hop.rel, hop.line, evidence_role(hop.role),
                               index.line_text(hop.rel, hop.line),
                               _HOP_KINDS[HopRole(hop.role)], args_of(text=hop.note)))
    return out


def _finding_evidence(index: Index, finding: Finding, role: Role, kind: FactKind, args: Args,
                      guards: bool = True) -> list[Evidence]:
    hops = finding.hops if guards else [h for h in finding.hops if h.role != HopRole.DEFINITION]
    chain = _hops_evidence(index, hops)
    chain.append(Evidence.of(finding.rel, finding.line, role.value,
                             index.line_text(finding.rel, finding.line), kind, args))
    seen = set()
    out = []
    for ev in chain:
        key = (ev.path, ev.line, ev.role)
        if key not in seen:
            seen.add(key)
            out.append(ev)
    return out


def _undecided(pred: Predicate, ctx: Context) -> list[str]:
    return sorted({a.describe() for a in atoms(pred) if a.evaluate(ctx) is Tri.UNKNOWN})


@dataclass
class Judged:
    """One choice's verdicts as judged, with what judging them read (lines
    shown) and asked of the kernel library, for the next scan."""

    reads: tuple[Read, ...]
    kernel_asks: tuple[tuple[KernelCall, Arch], ...]
    verdicts: list[BackendVerdict]


class JudgeMemo(Protocol):
    """Where the driver keeps judged choices between scans (``guardscan.memo``):
    the verdict stage never imports the cache, it may be handed one."""

    def reuse(self, dest: str, choice: str) -> Judged | None:
        """An earlier scan's judgement of ``choice`` that nothing changed for."""

    def keep(self, dest: str, choice: str, judged: Judged) -> None:
        """This scan's judgement of ``choice``, for the next scan."""

    def forget(self, dest: str) -> None:
        """Judging ``dest`` failed: keep none of its choices."""


class _Asking(KernelJudge):
    """A kernel judge that notes the questions asked of it."""

    def __init__(self, inner: KernelJudge) -> None:
        self.inner = inner
        self.asked: list[tuple[KernelCall, Arch]] = []

    def covers(self, call: KernelCall) -> bool:
        return self.inner.covers(call)

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        self.asked.append((call, arch))
        return self.inner.support(call, arch)

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        return self.inner.delegate(call, arch)


def dirty_choices(changed: Links, options: Iterable[OptionInfo], quantization: str | None,
                  links: Links | None = None) -> dict[str, set[str]]:
    """The choices (by option dest) whose verdicts can read one of the
    ``changed`` findings or kernel calls: by the rules of ``judge``, a gate
    counts for the choices it is about, a default, doc or select for its
    choice, an import gate for every choice, a kernel call for every choice;
    and a choice that sets another option (an alias in ``links``, all of this
    scan's findings) reads whatever that option's choice reads."""
    dirty = _dirty_direct(changed, options, quantization)
    aliases = [f for f in (*(links.findings if links is not None else ()), *changed.findings)
               if f.kind == FindingKind.ALIAS and f.option and f.choice and len(f.target) == 2]
    for alias in aliases:
        dest, value = alias.target
        if value in dirty.get(dest, ()):
            dirty.setdefault(str(alias.option), set()).add(str(alias.choice))
    return dirty


def _dirty_direct(changed: Links, options: Iterable[OptionInfo], quantization: str | None,
                  ) -> dict[str, set[str]]:
    dirty: dict[str, set[str]] = {}
    options = list(options)
    by_dest = {o.dest: o for o in options}
    for finding in changed.findings:
        if finding.option is None:  # a method-wide quantization gate
            if finding.kind == FindingKind.QUANT_GATE and quantization is not None:
                for each in options:
                    dirty.setdefault(each.dest, set()).update(
                        c for c in each.choices if _about_choice(finding.condition, Context(
                            options={each.dest: c}, quantization=quantization)))
            continue
        opt = by_dest.get(finding.option)
        if opt is None:
            continue
        if finding.kind in GATE_KINDS:
            dirty.setdefault(opt.dest, set()).update(
                c for c in opt.choices if _about_choice(finding.condition, Context(
                    options={opt.dest: c}, quantization=quantization)))
        elif finding.kind == FindingKind.IMPORT or finding.choice is None:
            dirty.setdefault(opt.dest, set()).update(opt.choices)
        else:
            dirty.setdefault(opt.dest, set()).add(finding.choice)
    for call in changed.kernel_calls:
        if call.option in by_dest:
            dirty.setdefault(call.option, set()).update(by_dest[call.option].choices)
    return dirty


def judge(index: Index, links: Links, option: OptionInfo, archs: list[Arch],
          quantization: str | None, kernels: KernelJudge | None = None,
          memo: JudgeMemo | None = None) -> list[BackendVerdict]:
    """Verdicts for every choice of ``option`` on every arch in ``archs``.

    ``memo``: the driver's store of judged choices. A choice it can reuse is
    taken as it was, its kernel questions asked again (so the kernel
    library's answers and diagnostics come out as in a scan from scratch);
    every judged choice is handed to it to keep."""
    kernels = kernels or KernelJudge()
    findings = [f for f in links.findings if f.option == option.dest]
    aliased = _aliased(links, option, findings)
    findings = [f for f in findings if f.kind != FindingKind.ALIAS]
    extra = [f for fs in aliased.values() for f in fs]
    global_quant = [f for f in links.findings
                    if f.kind == FindingKind.QUANT_GATE and f.option is None]
    calls = [_carried_scope(c) if quantization is None and c.backends else c
             for c in links.kernel_calls if c.option == option.dest]
    about: dict[int, frozenset[str]] | None = None
    # while one option is judged the others hold their defaults (a launch that
    # sets only this flag), and its twins that fall back to it are not given
    unset = {dest: value for dest, value in links.defaults.items() if dest != option.dest}
    unset.update({twin: "" for twin in links.unset.get(option.dest, ())})
    shared = _Shared(option.dest, unset, links.modes)
    out: list[BackendVerdict] = []
    for choice in option.choices:
        old = memo.reuse(option.dest, choice) if memo is not None else None
        if old is not None:
            for call, arch in old.kernel_asks:
                kernels.support(call, arch)
            judged = old
        else:
            asking = _Asking(kernels)
            saved = index.recorder.open()
            if about is None:
                about = _about_sets([*findings, *global_quant, *extra], option, quantization,
                                    unset)
            try:
                verdicts = _judge_choice(index, option, choice,
                                         [*findings, *aliased.get(choice, ())], global_quant,
                                         calls, archs, quantization, asking, about, shared)
            finally:
                reads = index.recorder.close(saved, merge=False)
            judged = Judged(reads, tuple(asking.asked), verdicts)
        if memo is not None:
            memo.keep(option.dest, choice, judged)
        out.extend(judged.verdicts)
    return out


def _aliased(links: Links, option: OptionInfo, findings: list[Finding],
             ) -> dict[str, list[Finding]]:
    """The gates a choice takes on from the options it sets (``alias``
    findings): each gate of the other option, read with that option holding
    the value the choice gives it, under the alias's condition, and shown
    after the line that sets it."""
    out: dict[str, list[Finding]] = {}
    for alias in findings:
        if alias.kind != FindingKind.ALIAS or alias.choice is None or len(alias.target) != 2:
            continue
        dest, value = alias.target
        for gate in links.findings:
            if gate.option != dest or gate.kind not in (*GATE_KINDS, FindingKind.IMPORT):
                continue
            cond = _holding(gate.condition, dest, value)
            if cond == Const(False):
                continue
            out.setdefault(alias.choice, []).append(Finding(
                gate.kind, gate.rel, gate.line, conj(alias.condition, cond),
                (*alias.hops, *gate.hops), option=option.dest, text=gate.text))
    return out


def _holding(pred: Predicate, dest: str, value: str) -> Predicate:
    """``pred`` with option ``dest`` holding ``value``: its tests decided."""
    return substitute(pred, lambda atom: Const(value in atom.choices) if
                      isinstance(atom, OptionIs) and atom.option == dest else None)


def _about_sets(findings: list[Finding], option: OptionInfo, quantization: str | None,
                unset: dict[str, str] | None = None) -> dict[int, frozenset[str]]:
    """The choices each gate is about (``_about_choice``), by the gate's id.
    A gate's condition depends on the choice only through its tests of this
    option, so choices those tests cannot tell apart are decided together."""
    about: dict[int, frozenset[str]] = {}
    for finding in findings:
        if finding.kind not in GATE_KINDS:
            continue
        tests = sorted({a.choices for a in atoms(finding.condition)
                        if isinstance(a, OptionIs) and a.option == option.dest}, key=sorted)
        groups: dict[tuple[bool, ...], list[str]] = {}
        for choice in option.choices:
            groups.setdefault(tuple(choice in t for t in tests), []).append(choice)
        about[id(finding)] = frozenset(
            c for members in groups.values() if _about_choice(finding.condition, Context(
                options={**(unset or {}), option.dest: members[0]}, quantization=quantization))
            for c in members)
    return about


class _Shared:
    """What conditions come to for an option's choices, shared between
    choices that the conditions' tests of the option cannot tell apart."""

    def __init__(self, dest: str, unset: dict[str, str] | None = None,
                 modes: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
        self.dest = dest
        self.unset = unset or {}
        self.modes = modes or {}
        self.mode_atoms: dict[int, tuple[OptionIs, ...]] = {}
        self.tests: dict[int, list[frozenset[str]]] = {}
        self.values: dict[tuple[int, Arch, tuple[bool, ...]], Tri] = {}
        self.specific: dict[tuple[int, tuple[bool, ...]], bool] = {}
        self.mentions: dict[int, bool] = {}
        self.undecided: dict[tuple[int, Arch, tuple[bool, ...]],
                             tuple[bool, tuple[str, ...], list[str] | None]] = {}

    def signature(self, pred: Predicate, choice: str) -> tuple[bool, ...]:
        tests = self.tests.get(id(pred))
        if tests is None:
            tests = self.tests[id(pred)] = sorted(
                {a.choices for a in atoms(pred) if isinstance(a, OptionIs) and a.option == self.dest},
                key=sorted)
        return tuple(choice in t for t in tests)


class _Values:
    """Conditions evaluated on each arch for one choice, each once (and once
    for the choices that cannot tell them apart)."""

    def __init__(self, shared: _Shared, choice: str, quantization: str | None) -> None:
        self.shared, self.choice, self.quantization = shared, choice, quantization
        self._contexts: dict[Arch, Context] = {}
        self._signatures: dict[int, tuple[bool, ...]] = {}

    def context(self, arch: Arch) -> Context:
        ctx = self._contexts.get(arch)
        if ctx is None:
            ctx = self._contexts[arch] = Context(
                arch=arch, options={**self.shared.unset, self.shared.dest: self.choice},
                quantization=self.quantization)
        return ctx

    def _signature(self, pred: Predicate) -> tuple[bool, ...]:
        signature = self._signatures.get(id(pred))
        if signature is None:
            signature = self._signatures[id(pred)] = self.shared.signature(pred, self.choice)
        return signature

    def __call__(self, pred: Predicate, arch: Arch) -> Tri:
        key = (id(pred), arch, self._signature(pred))
        value = self.shared.values.get(key)
        if value is None:
            value = self.shared.values[key] = pred.evaluate(self.context(arch))
        return value

    def _without_modes(self, cond: Predicate, arch: Arch) -> Tri:
        """``cond`` on ``arch`` with the mode options not given."""
        if not self.shared.modes:
            return self(cond, arch)
        ctx = self.context(arch)
        options = {k: v for k, v in ctx.options.items() if k not in self.shared.modes}
        return cond.evaluate(Context(arch=arch, options=options,
                                     quantization=ctx.quantization))

    def mode_conditions(self, cond: Predicate, arch: Arch, now: Tri) -> list[str]:
        """What another value of a mode option that ``cond`` tests would do to
        a gate that is ``now`` TRUE (raises) or FALSE at the modes' defaults:
        ``not blocked with --deepep-mode normal``, ``blocked with ...``."""
        if not self.shared.modes:
            return []
        tested = self.shared.mode_atoms.get(id(cond))
        if tested is None:
            tested = self.shared.mode_atoms[id(cond)] = tuple(
                a for a in atoms(cond) if isinstance(a, OptionIs) and a.option in self.shared.modes)
        out: set[str] = set()
        ctx = self.context(arch)
        for atom in tested:
            flag, choices = self.shared.modes[atom.option]
            for value in choices:
                if value == ctx.options.get(atom.option):
                    continue
                other = cond.evaluate(Context(arch=arch, options={**ctx.options,
                                                                  atom.option: value},
                                              quantization=ctx.quantization))
                if now is Tri.TRUE and other is not Tri.TRUE:
                    out.add(f"not blocked with {flag} {value}")
                elif now is Tri.FALSE and other is Tri.TRUE:
                    out.add(f"blocked with {flag} {value}")
        return sorted(out)

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
            if not possible(cond, ctx):
                known = (False, (), None)
            else:
                methods = []
                if ctx.quantization is None:
                    for atom in [a for a in atoms(cond) if isinstance(a, QuantIs)]:
                        for method in sorted(atom.methods):
                            if cond.evaluate(Context(arch=arch, options=ctx.options,
                                                     quantization=method)) is Tri.TRUE:
                                methods.append(f"blocked with --quantization {method}")
                # another choice's gate (open only through other options), or
                # undecided on every arch alike: not architecture evidence. A
                # mode's default does not make it evidence: code testing a
                # mode mostly serves another option's choice (DeepEP's modes)
                evidence = self.specific(cond, every) and self.mentions(cond) and any(
                    self._without_modes(cond, other) is not Tri.UNKNOWN
                    for other in all_archs)
                known = (True, tuple(methods), _undecided(cond, ctx) if evidence else None)
            self.shared.undecided[key] = known
        return known

    def specific(self, pred: Predicate, every: frozenset[str]) -> bool:
        key = (id(pred), self._signature(pred))
        value = self.shared.specific.get(key)
        if value is None:
            value = self.shared.specific[key] = _specific(
                pred, Context(options={**self.shared.unset, self.shared.dest: self.choice},
                              quantization=self.quantization), every)
        return value


def _judge_choice(index: Index, option: OptionInfo, choice: str, findings: list[Finding],
                  global_quant: list[Finding], calls: list[KernelCall], archs: list[Arch],
                  quantization: str | None, kernels: KernelJudge,
                  about_sets: dict[int, frozenset[str]], shared: _Shared) -> list[BackendVerdict]:
    every = frozenset(option.choices)
    platforms = dict(option.platforms)
    all_archs = standard_archs()
    origin = Evidence.of(option.path, option.line, Role.LINK.value,
                         index.line_text(option.path, option.line), FactKind.OPTION,
                         args_of(flag=option.flag))
    out: list[BackendVerdict] = []
    # whether a gate is about this choice at all does not depend on the arch
    about = {key: choice in choices for key, choices in about_sets.items()}
    values = _Values(shared, choice, quantization)
    # kernel calls that single out this choice (the same on every arch): by a
    # test of the option on their path, or by the string the choice hands
    # them; and the helpers among them
    calls = [_for_choice(c, choice) for c in calls
             if c.backends and choice in dict(c.backends) or not c.backends and values.specific(
                 c.condition, every)]
    helpers = _kernel_helpers(calls, option.dest, choice, every, quantization)
    for arch in archs:
        ctx = values.context(arch)
        blocking: list[Evidence] = []
        positive: list[Evidence] = []
        caveats: list[Evidence] = []
        docs: list[Evidence] = []
        conditions: list[str] = []
        for finding in findings:
            if finding.kind in GATE_KINDS:
                if about[id(finding)]:
                    _judge_gate(index, finding, ctx, arch, all_archs, every, blocking,
                                positive, caveats, conditions, values)
            elif finding.kind == FindingKind.DEFAULT and finding.choice == choice:
                dctx = Context(arch=arch, quantization=quantization)
                if possible(finding.condition, dctx) and mentions_capability(
                        finding.condition) and any(
                        not possible(finding.condition, Context(arch=o,
                                                                quantization=quantization))
                        for o in all_archs):
                    where = args_of(flag=option.flag, choice=choice,
                                    condition=finding.condition.describe())
                    if possible(finding.condition,
                                Context(arch=FAR_FUTURE, quantization=quantization)):
                        # a default for "every arch but these" (an ``else``
                        # after tests of older archs) holds on a far-future
                        # arch too: it names no arch, like a check that
                        # rejects some archs only; shown, but no support
                        caveats.extend(_finding_evidence(
                            index, finding, Role.DEFAULT, FactKind.DEFAULT,
                            (*where, ("fallback", "true"), ("qualifier", FALLBACK))))
                    else:
                        positive.extend(_finding_evidence(index, finding, Role.DEFAULT,
                                                          FactKind.DEFAULT, where))
            elif finding.kind == FindingKind.IMPORT:
                if finding.condition.evaluate(ctx) is Tri.TRUE:
                    blocking.extend(_finding_evidence(
                        index, finding, Role.IMPORT, FactKind.IMPORT,
                        args_of(arch=arch.name, condition=finding.condition.describe())))
            elif finding.kind == FindingKind.DOC and finding.choice == choice:
                claims = finding.condition.evaluate(Context(arch=arch))
                if claims is Tri.TRUE:
                    docs.append(Evidence.of(finding.rel, finding.line, Role.DOC.value,
                                            finding.text, FactKind.DOC,
                                            args_of(claim="names", arch=arch.name)))
                elif finding.text.startswith("only: "):
                    docs.append(Evidence.of(finding.rel, finding.line, Role.DOC.value,
                                            finding.text, FactKind.DOC,
                                            args_of(claim="excludes", arch=arch.name)))
            elif finding.kind == FindingKind.SELECT and finding.choice == choice:
                value = finding.condition.evaluate(Context(arch=arch))
                caveats.extend(_finding_evidence(
                    index, finding, Role.SELECT, FactKind.SELECT,
                    args_of(value=value.value, arch=arch.name)))
        if quantization is not None:
            for finding in global_quant:
                if about[id(finding)]:
                    _judge_gate(index, finding, ctx, arch, all_archs, every, blocking, [],
                                caveats, conditions, values)
        kernel_false, kernel_true, kernel_mixed = _judge_kernels(
            index, calls, kernels, ctx, arch, every, values, helpers)
        caveats.extend(kernel_mixed)
        if blocking:
            verdict, evidence = Verdict.BLOCKED, blocking
        elif kernel_false:
            verdict, evidence = Verdict.UNSUPPORTED, kernel_false
        elif positive or kernel_true:
            verdict, evidence = Verdict.SUPPORTED, [*positive, *kernel_true]
        else:
            verdict, evidence = Verdict.UNKNOWN, []
        # the deciding fact last: `explain` ends where the verdict was decided
        chain = mark_statuses(_dedupe_keep_last([origin, *docs, *caveats, *evidence]),
                               verdict)
        platform = platforms.get(choice)
        out.append(BackendVerdict(option.flag, choice, arch.name, quantization, verdict,
                                  tuple(chain), platform, tuple(sorted(set(conditions)))))
    return out


def _carried_scope(call: KernelCall) -> KernelCall:
    """A call that carries the option's value, judged without ``--quantization``:
    the choice matters only under a method that makes the call, so the methods
    that reach it are taken as chosen (``QuantIs`` -> true)."""
    cond = substitute(call.condition,
                      lambda atom: Const(True) if isinstance(atom, QuantIs) else None)
    return replace(call, condition=cond)


def _for_choice(call: KernelCall, choice: str) -> KernelCall:
    """The call as ``choice`` makes it: with the ``backend=`` string it hands over."""
    if not call.backends:
        return call
    return replace(call, backend=dict(call.backends)[choice])


def _specific(cond: Predicate, ctx: Context, every: frozenset[str]) -> bool:
    """Does the condition single out the option's value in ``ctx`` (not merely
    allow it, as a test naming ``every`` choice would)? Code run for every
    choice alike says nothing about one."""
    for atom in atoms(cond):
        if isinstance(atom, OptionIs) and atom.option in ctx.options and \
                atom.evaluate(ctx) is Tri.TRUE and not every <= atom.choices:
            return True
    return False


def _kernel_helpers(mine: list[KernelCall], dest: str, choice: str, every: frozenset[str],
                    quantization: str | None) -> frozenset[tuple[str, str | None, str, int]]:
    """The choice's kernel calls (``mine``, by ``_call_key``) made by code that
    other choices of the option run too (the call's condition can hold for
    another choice: ``if backend in ("flashinfer_trtllm", "marlin"):
    shuffle_matrix_a(...)``). Code several choices run (a layout, shuffle or
    quantize step) says nothing about one, as ``_specific`` says of shared
    conditions; a TRUE from such a call is not support for the choice
    (``_judge_kernels``). Two call sites each specific to its own choice may
    call the same kernel: each is that choice's own."""
    others = sorted(every - {choice})
    # a call handed the choice's own string (``backend=``) is the choice's own
    return frozenset(_call_key(c) for c in mine if not c.backends and any(
        possible(c.condition, Context(options={dest: each}, quantization=quantization))
        for each in others))


def _call_key(call: KernelCall) -> tuple[str, str | None, str, int]:
    return call.target, call.backend, call.rel, call.line


def _judge_kernels(index: Index, calls: list[KernelCall], kernels: KernelJudge, ctx: Context,
                   arch: Arch, every: frozenset[str], values: _Values | None = None,
                   helpers: frozenset[tuple[str, str | None, str, int]] = frozenset(),
                   ) -> tuple[list[Evidence], list[Evidence], list[Evidence]]:
    """Kernel-library calls the choice can make: (excluding, supporting, caveat) evidence.

    Which calls count, by their reach condition on (choice, arch):

    * TRUE: the call is *required*. Every required call must admit the arch
      for ``supported``; one that excludes it makes the choice
      ``unsupported``, whatever the others say.
    * FALSE: an alternative chosen by the arch or the option's value that is
      not taken here; it does not count at all.
    * Undecided (model config, env, the quantization method): the call may or
      may not be made. Its exclusion is a caveat, and a mix decides nothing;
      but when every call the choice can make (required and undecided alike)
      excludes the arch, whatever runs fails: ``unsupported``.

    Only code that exists for the choice (``owned``: its module, a function
    registered for it, what those call) counts under an undecided condition;
    shared code under an option test counts only where its reach is TRUE, since
    its other conditions are about other things (the method, the model) that
    may never hold for this choice.

    A *helper* on the path can make the choice ``unsupported`` but never
    ``supported``: that needs a TRUE answer from a call specific to the choice.
    A call is a helper when code other choices run makes it too
    (``_kernel_helpers``), or when its TRUE is decided
    inside another public function of the kernel library (``KernelJudge.
    delegate``: ``shuffle_matrix_sf_a`` is supported where
    ``block_scale_interleave``, which many APIs call, is).
    A call the library cannot judge (arch-restricted code whose facts do not
    say, e.g. a check that only rejects other archs) is a doubt: no
    ``supported``, no all-exclude ``unsupported``. A call with no fact anywhere
    below it (a pure layout helper) is arch-neutral and does not count.
    """
    required_false: list[list[Evidence]] = []
    falses: list[list[Evidence]] = []
    trues: list[list[Evidence]] = []
    helper_trues: list[list[Evidence]] = []
    doubts: list[list[Evidence]] = []
    #: excluding calls made only for some value of another option (which
    #: that option's flag avoids): caveats, never "whatever runs fails"
    avoidable: list[list[Evidence]] = []
    for call in calls:
        reach = values(call.condition, arch) if values is not None else call.condition.evaluate(ctx)
        if reach is Tri.FALSE or values is None and not _specific(call.condition, ctx, every):
            continue  # (with ``values``, the caller kept the calls specific to the choice)
        if not call.owned and reach is not Tri.TRUE:
            continue  # shared code that may or may not make this call for the choice
        if not kernels.covers(call):
            continue  # torch, sgl_kernel...: not the kernel library
        support, chain = kernels.support(call, arch)
        if support is Tri.UNKNOWN and not chain:
            continue  # no fact anywhere below it (a layout helper): arch-neutral, not a doubt
        full = [*_hops_evidence(index, call.hops), *chain]
        if support is Tri.FALSE:
            if reach is Tri.TRUE:
                required_false.append(full)
            elif _chosen_elsewhere(call.condition, ctx):
                avoidable.append(full)
            else:
                falses.append(full)
        elif support is Tri.UNKNOWN:
            doubts.append(_noted(full, "the kernel facts do not decide this arch", Status.CAVEAT))
        elif _call_key(call) in helpers:
            helper_trues.append(_noted(full, "a helper on the path (code other choices run "
                                             "makes this call too): can exclude, never "
                                             "support"))
        elif (delegate := kernels.delegate(call, arch)) is not None:
            helper_trues.append(_noted(full, f"a helper on the path (decided in {delegate}, a "
                                             "public function other APIs share): can exclude, "
                                             "never support"))
        else:
            trues.append(full)
    if required_false:
        # a call made whatever the model excludes the arch; show the first one last
        return [e for chain in [*required_false[1:], required_false[0]] for e in chain], [], []
    if falses and not trues and not doubts:
        # every call the choice can make excludes the arch (a helper that runs
        # there does not make the choice's kernels run)
        return [e for chain in [*falses[1:], falses[0]] for e in chain], [], []
    if trues and not falses and not doubts:
        return [], [e for chain in [*helper_trues, *trues] for e in chain], []
    mixed = [e for chain in falses for e in _noted(
        chain, "other kernel calls of the choice are not excluded: decides nothing",
        Status.CAVEAT)]
    mixed += [e for chain in avoidable for e in _noted(
        chain, "made only for some value of another option: decides nothing", Status.CAVEAT)]
    return [], [], [*mixed, *(e for chain in [*doubts, *helper_trues] for e in chain)]


def _chosen_elsewhere(cond: Predicate, ctx: Context) -> bool:
    """Does reaching the call depend on an option ``ctx`` leaves open
    (``--nsa-decode-backend trtllm``)?"""
    return any(isinstance(a, OptionIs) and a.evaluate(ctx) is Tri.UNKNOWN for a in atoms(cond))


def _noted(chain: list[Evidence], note: str, status: Status = Status.CONTEXT,
           ) -> list[Evidence]:
    """``chain`` with ``note`` added to its last (deciding) hop, and that hop's
    ``status`` in the verdict."""
    if not chain:
        return chain
    return [*chain[:-1], chain[-1].qualified(note).with_status(status)]


#: the roles whose line can decide each verdict; the chain's last such line does
_DECIDING_ROLES: dict[Verdict, tuple[str, ...]] = {
    Verdict.BLOCKED: (Role.GATE.value, Role.IMPORT.value),
    Verdict.UNSUPPORTED: (Role.KERNEL.value,),
    Verdict.SUPPORTED: (Role.KERNEL.value, Role.GATE.value, Role.DEFAULT.value),
}


def mark_statuses(chain: list[Evidence], verdict: Verdict) -> list[Evidence]:
    """The chain with each line's part in ``verdict``: the gates that could
    still raise are caveats; the last line of a role that can decide the
    verdict and is not a caveat decides it (for a decided verdict with no
    such line, its last line); an ``unknown`` has no deciding line."""
    out = [ev.with_status(Status.CAVEAT) if ev.kind == FactKind.GATE
           and arg(ev.args, "effect") == "could-raise" else ev for ev in chain]
    if verdict is Verdict.UNKNOWN or not out:
        return out
    roles = _DECIDING_ROLES[verdict]
    position = next((i for i in range(len(out) - 1, -1, -1)
                     if out[i].role in roles and not out[i].caveat), len(out) - 1)
    out[position] = out[position].with_status(Status.DECIDES)
    return out


def _about_choice(cond: Predicate, choice_ctx: Context) -> bool:
    """Can the gate's condition hold for this choice (on some arch)?"""
    return cond.evaluate(choice_ctx) is not Tri.FALSE and possible(cond, choice_ctx)


def _judge_gate(index: Index, finding: Finding, ctx: Context, arch: Arch, all_archs: list[Arch],
                every: frozenset[str],
                blocking: list[Evidence], positive: list[Evidence], caveats: list[Evidence],
                conditions: list[str], values: _Values) -> None:
    """One gate on one arch; the caller has checked it is ``_about_choice``.
    ``values`` evaluates conditions for this choice (``ctx`` is its context
    for ``arch``)."""
    cond = finding.condition
    value = values(cond, arch)
    if value is not Tri.UNKNOWN:
        conditions.extend(values.mode_conditions(cond, arch, value))
    if value is Tri.TRUE:
        blocking.extend(_finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="raises", arch=arch.name, condition=cond.describe())))
        return
    if value is Tri.UNKNOWN:
        could, methods, undecided = values.undecided_gate(cond, arch, every, all_archs)
        if not could:
            return
        conditions.extend(methods)
        if undecided is None:
            return  # another choice's gate, or undecided on every arch alike
        caveats.extend(_finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="could-raise", arch=arch.name,
                    undecided="; ".join(undecided)[:300]), guards=False))
        return
    # the gate lets this arch through: positive evidence when it stops others,
    # and raises because of this choice (a method's requirement that exempts
    # some choices, ``if not is_blackwell() and not marlin: raise``, says
    # nothing of the others' kernels)
    if value is Tri.FALSE and values.mentions(cond) and any(
            values(cond, other) is Tri.TRUE for other in all_archs if other != arch) \
            and _raises_for(cond, values.context(arch)):
        positive.extend(_finding_evidence(
            index, finding, Role.GATE, FactKind.GATE,
            args_of(effect="admits", arch=arch.name, condition=cond.describe())))


def _raises_for(cond: Predicate, ctx: Context, positive: bool = True) -> bool:
    """Whether ``cond`` (a gate's failure condition) holds partly because of
    an option value of ``ctx``: an option test that is TRUE there and that
    makes the gate more likely to raise (not under an odd number of ``not``)."""
    if isinstance(cond, (And, Or)):
        return any(_raises_for(item, ctx, positive) for item in cond.items)
    if isinstance(cond, Not):
        return _raises_for(cond.item, ctx, not positive)
    return positive and isinstance(cond, OptionIs) and cond.evaluate(ctx) is Tri.TRUE


def _dedupe_keep_last(chain: list[Evidence]) -> list[Evidence]:
    """Drop repeated lines, keeping each where it last appears; the first entry
    (the option's definition) stays first."""
    if not chain:
        return chain
    seen = set()
    out = []
    for ev in reversed(chain[1:]):
        key = (ev.path, ev.line, ev.role)
        if key in seen or key == (chain[0].path, chain[0].line, chain[0].role):
            continue
        seen.add(key)
        out.append(ev)
    return [chain[0], *reversed(out)]




def quantization_notes(index: Index, links: Links, archs: list[Arch]) -> list[ScanNote]:
    """Gates of a quantization method that hold whatever the backend choice:
    one line per method, naming the archs it is rejected on."""
    notes = []
    per_method: dict[str, tuple[list[str], str]] = {}
    for finding in links.findings:
        if finding.kind != FindingKind.QUANT_GATE or finding.option is not None:
            continue
        methods = sorted({m for a in atoms(finding.condition) if isinstance(a, QuantIs)
                          for m in a.methods})
        for method in methods:
            blocked = [arch.name for arch in archs if finding.condition.evaluate(
                Context(arch=arch, quantization=method)) is Tri.TRUE]
            if blocked:
                names, where = per_method.get(method, ([], ""))
                per_method[method] = (sorted(set(names) | set(blocked),
                                             key=lambda name: parse_arch(name)),
                                      where or f"{finding.rel}:{finding.line}")
    for method, (names, where) in sorted(per_method.items()):
        notes.append(ScanNote(
            "quantization", f"--quantization {method} is rejected on {', '.join(names)} "
            f"whatever the backend ({where}; use --quantization {method} to judge choices "
            "under it)", method=method))
    return notes
