"""verdicts (ladder): each choice judged on each arch, the rules' outcomes combined into one verdict, with the memo of judged choices.
"""

from __future__ import annotations

from dataclasses import replace

from guardscan.arch import Arch, standard_archs
from guardscan.evidence import FactKind, args_of
from guardscan.index import Index
from guardscan.link import (
    GATE_KINDS,
    Finding,
    FindingKind,
    KernelCall,
    Links,
)
from guardscan.model_facts import ModelFacts
from guardscan.predicate import (
    Const,
    Context,
    Predicate,
    Tri,
    conj,
)
from guardscan.results import BackendVerdict, Evidence, OptionInfo, Role, Verdict
from guardscan.verdict.chain import dedupe_keep_last, mark_statuses
from guardscan.verdict.checkpoint import checkpoint_decides
from guardscan.verdict.every_path import every_path_fails
from guardscan.verdict.model import Asking, Case, Judged, JudgeMemo, KernelJudge, Outcome
from guardscan.verdict.model_needs import model_needs, need_condition
from guardscan.verdict.rename import renamed, renames
from guardscan.verdict.rules import gate as gate_rule
from guardscan.verdict.rules import rule_for
from guardscan.verdict.rules.kernels import carried_scope, for_choice, judge_kernels, kernel_helpers
from guardscan.verdict.rules.requires import companions
from guardscan.verdict.values import (
    Shared,
    Values,
    about_sets,
    holding,
    raises_for,
    unset_while_judging,
)

__all__ = ["judge"]


def judge(index: Index, links: Links, option: OptionInfo, archs: list[Arch],
          quantization: str | None, kernels: KernelJudge | None = None,
          memo: JudgeMemo | None = None, model: ModelFacts | None = None) -> list[BackendVerdict]:
    """Verdicts for every choice of ``option`` on every arch in ``archs``.

    ``memo``: the driver's store of judged choices. A choice it can reuse is
    taken as it was, its kernel questions asked again (so the kernel
    library's answers and diagnostics come out as in a scan from scratch);
    every judged choice is handed to it to keep. ``model``: the model the
    launch serves, when named (``--model-config``); else each choice is
    judged for the common model, or for the models it is for."""
    kernels = kernels or KernelJudge()
    findings = [f for f in links.findings if f.option == option.dest]
    sources: dict[int, tuple[Predicate, str, str]] = {}
    aliased = _aliased(links, option, findings, sources)
    rewrites = renames(findings, option.choices)
    # what each choice a hook rewrites is by the time the model is built
    # (one that also sets other options keeps its own verdict: ``becomes``)
    becomes = {str(f.choice): f.target[1] for f in findings if f.kind == FindingKind.RENAME
               and len(f.target) == 2 and f.target[1] in option.choices}
    findings = [f for f in findings if f.kind not in (FindingKind.ALIAS, FindingKind.RENAME)]
    extra = [f for fs in aliased.values() for f in fs]
    global_quant = [f for f in links.findings
                    if f.kind == FindingKind.QUANT_GATE and f.option is None]
    calls = [carried_scope(c) if quantization is None and c.backends else c
             for c in links.kernel_calls if c.option == option.dest]
    about: dict[int, frozenset[str]] | None = None
    unset = unset_while_judging(links, option.dest)
    shared = Shared(option.dest, unset, links.modes, kernels.installed(),
                    links.checkpoint_methods, model)
    out: list[BackendVerdict] = []
    for choice in option.choices:
        old = memo.reuse(option.dest, choice) if memo is not None else None
        if old is not None:
            for call, arch in old.kernel_asks:
                kernels.support(call, arch)
            judged = old
        else:
            asking = Asking(kernels)
            saved = index.recorder.open()
            if about is None:
                about = about_sets([*findings, *global_quant, *extra], option, quantization,
                                    unset)
            try:
                verdicts = _judge_choice(index, option, choice,
                                         [*findings, *aliased.get(choice, ())], global_quant,
                                         calls, archs, quantization, asking, about, shared,
                                         sources, becomes.get(choice))
            finally:
                # kept as the reads themselves: the recorder's numbers are
                # this scan's, the next scan's record of judging stands apart
                reads = index.recorder.decode(index.recorder.close(saved, merge=False))
            judged = Judged(reads, tuple(asking.asked), verdicts)
        if memo is not None:
            memo.keep(option.dest, choice, judged)
        out.extend(judged.verdicts)
    return renamed(index, out, rewrites)


def _aliased(links: Links, option: OptionInfo, findings: list[Finding],
             sources: dict[int, tuple[Predicate, str, str]]) -> dict[str, list[Finding]]:
    """The gates a choice takes on from the options it sets (``alias``
    findings): each gate of the other option, read with that option holding
    the value the choice gives it, under the alias's condition, and shown
    after the line that sets it. ``sources``: filled with each such gate's own
    condition, the option and the value, by the new finding's id."""
    out: dict[str, list[Finding]] = {}
    for alias in findings:
        if alias.kind != FindingKind.ALIAS or alias.choice is None or len(alias.target) != 2:
            continue
        dest, value = alias.target
        for gate in links.findings:
            if gate.option != dest or gate.kind not in (*GATE_KINDS, FindingKind.IMPORT):
                continue
            cond = holding(gate.condition, dest, value)
            if cond == Const(False):
                continue
            taken = Finding(gate.kind, gate.rel, gate.line, conj(alias.condition, cond),
                            (*alias.hops, *gate.hops), option=option.dest, text=gate.text)
            sources[id(taken)] = (gate.condition, dest, value)
            out.setdefault(alias.choice, []).append(taken)
    return out


def _own_support(finding: Finding, outcome: Outcome, case: Case,
                 sources: dict[int, tuple[Predicate, str, str]]) -> Outcome:
    """A gate taken on through an alias is support only where it raises because
    of the value the alias sets (``attention_backend == "fa3" and not sm100``
    for ``fa3``), not merely because the alias's own test of the choice is in
    its condition: a quantization method's gate that rejects every runner but
    Marlin off Blackwell says nothing for the runner a hook resolves ``auto`` to."""
    source = sources.get(id(finding))
    if source is None or not outcome.positive:
        return outcome
    cond, dest, value = source
    ctx = case.ctx
    own = replace(ctx, options={**ctx.options, dest: value})
    return outcome if raises_for(cond, own) else replace(outcome, positive=())


def _companions(findings: list[Finding], choice: str, shared: Shared
                ) -> tuple[dict[str, str], tuple[str, ...]]:
    """The options ``choice`` requires (``requires`` findings), each holding
    the value it needs while the choice is judged; and every companion's
    option, a flag's included."""
    out: dict[str, str] = {}
    needs: set[str] = set()
    here = Context(options={shared.dest: choice})
    for finding in findings:
        if finding.kind == FindingKind.REQUIRES and \
                finding.condition.evaluate(here) is Tri.TRUE:
            out.update((dest, value) for dest, value in companions(finding) if value)
            needs.update(dest for dest, _ in companions(finding))
    return out, tuple(sorted(needs))


def _judge_choice(index: Index, option: OptionInfo, choice: str, findings: list[Finding],
                  global_quant: list[Finding], calls: list[KernelCall], archs: list[Arch],
                  quantization: str | None, kernels: KernelJudge,
                  about_sets: dict[int, frozenset[str]], shared: Shared,
                  sources: dict[int, tuple[Predicate, str, str]], becomes: str | None = None,
                  ) -> list[BackendVerdict]:
    """The ladder: every rule's outcome for the choice on each arch, combined
    into one verdict: blocked, else unsupported, else supported, else unknown."""
    every = frozenset(option.choices)
    platforms = dict(option.platforms)
    all_archs = tuple(standard_archs())
    origin = Evidence.of(option.path, option.line, Role.LINK.value,
                         index.line_text(option.path, option.line), FactKind.OPTION,
                         args_of(flag=option.flag))
    out: list[BackendVerdict] = []
    # whether a gate is about this choice at all does not depend on the arch
    about = {key: choice in choices for key, choices in about_sets.items()}
    companions_of = _companions(findings, choice, shared)
    values = Values(shared, choice, quantization, *companions_of, becomes=becomes)
    needs = model_needs(findings, about, values)
    if needs:
        values = Values(shared, choice, quantization, *companions_of, becomes=becomes,
                        model_needs=needs)
    # kernel calls that single out this choice (the same on every arch): by a
    # test of the option on their path, or by the string the choice hands
    # them; and the helpers among them
    calls = [for_choice(c, choice) for c in calls
             if c.backends and choice in dict(c.backends) or not c.backends and values.specific(
                 c.condition, every)]
    helpers = kernel_helpers(calls, option.dest, choice, every, quantization, shared)
    ruled = [(finding, rule) for finding in findings if (rule := rule_for(finding)) is not None]
    for arch in archs:
        case = Case(index, option, choice, arch, values.context(arch), all_archs, every, values,
                    quantization, about)
        judged = [(finding, _own_support(finding, rule(finding, case), case, sources))
                  for finding, rule in ruled]
        if quantization is None:
            judged = checkpoint_decides(judged, case)
        judged = every_path_fails(judged, case)
        outcomes = [outcome for _, outcome in judged]
        if quantization is not None:
            # a method-wide gate blocks or is a caveat; it is no choice's support
            outcomes += [replace(gate_rule.judge(finding, case), positive=())
                         for finding in global_quant]
        outcomes.append(judge_kernels(index, calls, kernels, case.ctx, arch, every, values,
                                      helpers))
        blocking = [e for o in outcomes for e in o.blocking]
        excluding = [e for o in outcomes for e in o.excluding]
        positive = [e for o in outcomes for e in o.positive]
        if blocking:
            verdict, evidence = Verdict.BLOCKED, blocking
        elif excluding:
            verdict, evidence = Verdict.UNSUPPORTED, excluding
        elif positive:
            verdict, evidence = Verdict.SUPPORTED, positive
        else:
            verdict, evidence = Verdict.UNKNOWN, []
        docs = [e for o in outcomes for e in o.docs]
        caveats = [e for o in outcomes for e in o.caveats]
        conditions = {c for o in outcomes for c in o.conditions}
        # a way around one refusal is no way around the verdict unless it
        # steps around every refusal (and around none where nothing refuses:
        # a refusal only some checkpoints meet is a condition of its own)
        blockers = [o for o in outcomes if o.blocking]
        conditions -= {c for c in conditions if c.startswith("not blocked ")
                       and not (blockers and all(c in o.conditions for o in blockers))}
        conditions.update(need_condition(atom) for atom in needs)
        # the deciding fact last: `explain` ends where the verdict was decided
        chain = mark_statuses(dedupe_keep_last([origin, *docs, *caveats, *evidence]), verdict)
        platform = platforms.get(choice) or next(
            (p for o in outcomes for p in o.platforms), None)
        out.append(BackendVerdict(option.flag, choice, arch.name, quantization, verdict,
                                  tuple(chain), platform, tuple(sorted(conditions))))
    return out
