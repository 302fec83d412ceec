"""link: which code runs when a backend choice is set, and the guards found there.

Findings are collected once for the whole tree, then judged per (choice, arch)
by ``verdict``. A finding is a guard with the condition under which it acts,
already translated to a Predicate by the vocabulary, so the condition says both
*which choice* it is about (``OptionIs`` atoms) and *which devices* (``Device``
atoms). The kinds, one recogniser each:

- ``gate``: a ``raise`` or failing ``assert`` whose path mentions the option and
  the device (``if backend == "x" and not is_sm100_supported(): raise``), found
  directly, inside a function registered for the choice
  (``@register_attention_backend("fa3")``), or one or two calls away from code
  that runs only for the choice.
- ``default``: the option is assigned a choice under a device condition
  (``if is_sm100_supported(): self.moe_runner_backend = "flashinfer_trtllm"``):
  ``auto`` resolves to that choice there.
- ``select``: a device test in the choice's code that picks between two
  implementations and raises in neither branch. It makes no support claim
  (``if is_sm120_supported(): from flashinfer import fp4_quantize``).
- ``quant-gate``: a gate in a quantization method's own code, or the loader's
  ``capability < quant_config.get_min_capability()`` check read through each
  method's config class.
- ``import``: a module-level name bound only under a device guard (no binding
  in the other branch) and used by the choice's own module: where the guard is
  false the name does not exist and the choice fails with NameError.
- ``doc``: the option's help text says which architectures a choice is for
  (``'flashinfer_deepgemm' (Hopper SM90 only; ...)``). Weak evidence: shown in
  the chain, never deciding a verdict, and checked against the code
  (``doc-drift`` diagnostics).
- ``kernel-call``: a call into the kernel library from the choice's code, for
  the kernels stage to judge.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from guardscan.incremental import Changes, LinkRecord, Table, Unit, UnitKey, numbers
from guardscan.index import Index
from guardscan.index.facts import CallFact
from guardscan.index.observe import FactsView
from guardscan.messages import internal_error, scanned_line
from guardscan.predicate import (
    Const,
    Device,
    OptionIs,
    Predicate,
    QuantIs,
    Unknown,
    atoms,
    conj,
    disj,
    fast_reduce,
    mentions_capability,
    mentions_device,
    neg,
    substitute,
)
from guardscan.results import Diagnostic, OptionInfo
from guardscan.syntax import parse_expr
from guardscan.vocabulary import (
    Answer,
    ClassV,
    ConstV,
    EnumMemberV,
    ExtV,
    FuncV,
    OptionModel,
    QueryKey,
    Resolved,
    Vocabulary,
)

__all__ = ["Hop", "Finding", "KernelCall", "Links", "collect_links", "option_model"]

_MISSING_VALUE_CHECK = re.compile(r"^\s*[\w.]+\s+is\s+None\s*$")

#: How many calls away from a choice's own code a gate still counts.
FOLLOW_DEPTH = 2
#: Definition lines shown per guard (the closest first: the rest is in the graph).
MAX_DEFINITION_HOPS = 4


@dataclass(frozen=True, slots=True)
class Hop:
    """A line on the way from the choice to the finding."""

    rel: str
    line: int
    role: str  # link | call | guard | gate | select | default | import | kernel
    note: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # gate | default | select | quant-gate
    rel: str
    line: int
    condition: Predicate
    hops: tuple[Hop, ...] = ()
    choice: str | None = None  # for defaults: the choice assigned
    option: str | None = None  # the dest this finding is about (None: any)
    text: str = ""


@dataclass(frozen=True, slots=True)
class KernelCall:
    option: str
    condition: Predicate
    target: str  # qualified name outside the tree, e.g. flashinfer.fused_moe.trtllm_fp4_block_scale_moe
    rel: str
    line: int
    hops: tuple[Hop, ...] = ()
    backend: str | None = None  # a literal ``backend="cudnn"`` argument, if any
    choice: str | None = None  # set when found in the choice's own module
    #: found in code that exists for the choice (its module, a function registered
    #: for it, or what those call), not merely under a test of the option
    owned: bool = False


@dataclass
class Links:
    findings: list[Finding] = field(default_factory=list)
    kernel_calls: list[KernelCall] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    quant_methods: dict[str, tuple[str, int]] = field(default_factory=dict)  # method -> class site
    #: how linking went, for the next scan (see ``guardscan.incremental``)
    record: LinkRecord | None = None
    #: units (replayed, run)
    units: tuple[int, int] = (0, 0)
    #: after incremental linking: what differs from the earlier scan's
    #: linking (None: not known, everything may differ)
    changed: Links | None = None


for _cls in (Hop, Finding, KernelCall):
    _cls.__reduce__ = fast_reduce  # type: ignore[method-assign,assignment]


def option_model(options: Iterable[OptionInfo], enums: Iterable[object],
                 quantization: OptionInfo | None) -> OptionModel:
    """What the vocabulary needs to recognise option tests, from the catalog."""
    model = OptionModel()
    for opt in options:
        model.dests[opt.dest] = opt.choices
    if quantization is not None:
        model.dests[quantization.dest] = quantization.choices
        model.quantization = quantization.dest
    for enum in enums:
        qualname = str(getattr(enum, "qualname"))
        short = qualname.rsplit(".", 1)[-1]
        dests = tuple(getattr(enum, "option_dests", ()))
        primary = min(dests, key=len) if dests else None
        for method, values in getattr(enum, "predicates"):
            model.enum_predicates.setdefault(method, []).append(
                (short, primary, frozenset(values)))
        if primary is None:
            continue
        model.enum_dests[short] = primary
        model.enum_dests[qualname] = primary
        for member, value in getattr(enum, "members"):
            model.enum_members[f"{short}.{member}"] = value
    return model


def _option_atoms(pred: Predicate) -> list[OptionIs]:
    return [a for a in atoms(pred) if isinstance(a, OptionIs)]


def _dest_tokens(dest: str) -> set[str]:
    return {t for t in dest.split("_") if t not in ("backend", "runner")} or {dest}


class _Linker:
    def __init__(self, index: Index, vocab: Vocabulary, options: list[OptionInfo],
                 quantization: OptionInfo | None) -> None:
        self.index = index
        self.vocab = vocab
        self.options = options
        self.quantization = quantization
        self.links = Links()
        self.dests = {o.dest for o in options}
        self._assert_trail: dict[tuple[str, int], tuple[tuple[str, int], ...]] = {}
        self._followed: set[tuple[str, str, str]] = set()
        #: this scan's units; an earlier scan's, and what changed since
        self.units: dict[UnitKey, Unit] = {}
        self.prior: LinkRecord | None = None
        #: numbers for reads, extending the earlier record's
        self.reads = Table()
        self.changes: Changes | None = None
        #: units replayed / run (for progress and tests)
        self.replayed = 0
        self.ran = 0
        self._followed_log: list[tuple[Any, bool]] | None = None
        self._quant_log: list[tuple[tuple[str, str], Predicate]] | None = None
        self._scoped: dict[tuple[str, str], dict[str, list[Any]]] = {}
        #: (rel, class) -> {method: condition under which the method's config builds it}
        self.quant_context: dict[tuple[str, str], dict[str, Predicate]] = {}
        self.quant_dirs: set[str] = set()
        self._table_of: dict[str, str] = {}
        self.kernel_packages: set[str] = {"flashinfer"}

    # -- units ----------------------------------------------------------------------------
    def unit(self, key: UnitKey, run: Callable[[], None],
             state: tuple[Callable[[], Any], Callable[[Any], None]] | None = None) -> None:
        """Run one unit of linking, or replay it from the earlier scan (see
        ``guardscan.incremental``). ``state``: how to take and restore what the
        unit leaves for later units."""
        prior = self.prior.units.get(key) if self.prior is not None else None
        if prior is not None and self._replayable(prior):
            if state is not None:
                state[1](prior.state)
            self.links.findings.extend(prior.findings)
            self.links.kernel_calls.extend(prior.kernel_calls)
            self._followed.update(k for k, present in prior.followed if not present)
            for query in self._queries(prior):
                answer = self.vocab.answers.get(query) or self.vocab.stored.get(query)
                if answer is not None and answer.diagnostic is not None:
                    self.vocab.report(answer.diagnostic)
            self.units[key] = prior
            self.replayed += 1
            return
        self.ran += 1
        findings, calls = len(self.links.findings), len(self.links.kernel_calls)
        greps = len(self.index.grep_log)
        recorder = self.index.recorder
        saved = recorder.open()
        asked: list[QueryKey] = []
        followed: list[tuple[Any, bool]] = []
        quant: list[tuple[tuple[str, str], Predicate]] = []
        self.vocab.asked, self._followed_log, self._quant_log = asked, followed, quant
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - one unit never stops the scan
            self._unit_failed(key, exc, findings, calls)
            return
        finally:
            reads = recorder.close(saved, merge=False)
            self.vocab.asked = self._followed_log = self._quant_log = None
        unit = self.units[key] = Unit(
            self.reads.encode(reads), tuple(dict.fromkeys(asked)), tuple(followed), tuple(dict.fromkeys(quant)),
            self.links.findings[findings:], self.links.kernel_calls[calls:],
            tuple(self.index.grep_log[greps:]), state[0]() if state is not None else None)
        if self.prior is not None:
            self._changed(prior, unit)

    def _unit_failed(self, key: UnitKey, exc: Exception, findings: int, calls: int) -> None:
        """A unit that raised: what it found so far is dropped (it may be half
        of it), an ``internal-error`` diagnostic says where, and the unit is
        not recorded, so a later scan runs it again rather than replaying it."""
        del self.links.findings[findings:]
        del self.links.kernel_calls[calls:]
        rel = next((str(part) for part in reversed(key) if str(part).endswith(".py")),
                   self.quantization.path if self.quantization is not None else "")
        unit = " ".join(str(part) for part in key[:-1] if part) or str(key[0])
        self.links.diagnostics.append(internal_error(
            rel, scanned_line(rel, exc), f"link unit `{unit}` of {rel}", exc))
        if self.prior is not None:
            self._changed(self.prior.units.get(key), None)

    def _changed(self, old: Unit | None, new: Unit | None) -> None:
        """Note the findings and kernel calls a unit no longer gives or gives
        anew (all of them when their order changed): verdicts that read none of
        them stand (see ``verdict.judge``)."""
        changed = self.links.changed
        assert changed is not None
        for kind in ("findings", "kernel_calls"):
            before = getattr(old, kind) if old is not None else []
            after = getattr(new, kind) if new is not None else []
            if before == after:
                continue
            gone, came = Counter(before), Counter(after)
            gone.subtract(after)
            came.subtract(before)
            moved = [f for f, n in gone.items() if n > 0] + [f for f, n in came.items() if n > 0]
            getattr(changed, kind).extend(moved or [*before, *after])

    def _replayable(self, prior: Unit) -> bool:
        changes = self.changes
        if changes is None or changes.any(prior.reads):
            return False
        for query in self._queries(prior):
            if query not in self.vocab.stored and not self.vocab.same_answer(query):
                return False
        for where, cond in prior.quant:
            if self._quant_condition(*where) != cond:
                return False
        for pattern, within, matched in prior.greps:
            if tuple(self.index.grep_re(pattern, within)) != matched:
                return False
        added: set[Any] = set()
        for key, present in prior.followed:
            if (key in self._followed or key in added) != present:
                return False
            added.add(key)
        return True

    def _already_followed(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` was followed before in this scan (else it is now)."""
        present = key in self._followed
        if self._followed_log is not None:
            self._followed_log.append((key, present))
        self._followed.add(key)
        return present

    # -- conditions ------------------------------------------------------------------
    def cond(self, facts: FactsView, signed: int, scope: str = "") -> Predicate:
        """Branch test ``signed`` (negated when below 0), read in the scope it
        is written in."""
        pred = self._resolved(facts, signed).predicate
        return pred if signed > 0 else neg(pred)

    def _resolved(self, facts: FactsView, signed: int) -> Resolved:
        cond = facts.cond(signed)
        return self.vocab.predicate(cond.text, facts.rel, facts.cond_scope_of(signed), cond.line)

    def path(self, facts: FactsView, path: tuple[int, ...], scope: str) -> Predicate:
        """The condition of a path.

        In an ``if/elif`` chain that dispatches on an option, an earlier branch
        whose test says nothing about device or options (a plug-in lookup such as
        ``(f := CUSTOM.get(name)) is not None``) is taken as not taken: the chain
        exists to reach the option's own branch. Likewise a guard clause for a
        missing value (``if quant_config is None: return``) is taken as passed.
        Both err toward finding a gate, never toward calling a choice supported.
        """
        parts = []
        for position, signed in enumerate(path):
            pred = self.cond(facts, signed, scope)
            if signed < 0 and (self._extension_point(facts, path, position, scope, pred)
                               or _MISSING_VALUE_CHECK.match(facts.cond(signed).text)):
                continue
            parts.append(pred)
        return conj(*parts)

    def _extension_point(self, facts: FactsView, path: tuple[int, ...], position: int,
                         scope: str, pred: Predicate) -> bool:
        if not all(isinstance(a, Unknown) for a in atoms(pred)):
            return False
        for later in path[position + 1:]:
            cond = facts.cond(later)
            if cond.kind != "elif":
                return False
            if later > 0:
                return bool(_option_atoms(self.cond(facts, later, scope)))
        return False

    def guard_hops(self, facts: FactsView, path: tuple[int, ...], scope: str,
                   line: int = 0) -> list[Hop]:
        """Device guards on the path (and, for an assert at ``line``, its test),
        each followed by the definition lines that give it meaning."""
        hops = []
        shown = 0
        for trel, tline in self._assert_trail.get((facts.rel, line), ()):
            text = self.index.line_text(trel, tline)
            if (trel, tline) == (facts.rel, line) or text.startswith(("import ", "from ")) \
                    or shown >= MAX_DEFINITION_HOPS:
                continue
            shown += 1
            hops.append(Hop(trel, tline, "definition", "what the assert tests"))
        for signed in path:
            pred = self.cond(facts, signed, scope)
            if mentions_device(pred):
                cond = facts.cond(signed)
                hops.append(Hop(facts.rel, cond.line, "guard",
                                ("" if signed > 0 else "not ") + pred.describe()))
                shown = 0
                for trel, tline in self._resolved(facts, signed).trail:
                    text = self.index.line_text(trel, tline)
                    if (trel, tline) == (facts.rel, cond.line) or text.startswith(
                            ("import ", "from ")) or shown >= MAX_DEFINITION_HOPS:
                        continue
                    shown += 1
                    hops.append(Hop(trel, tline, "definition", "what the guard means"))
        return hops

    def _by_scope(self, facts: FactsView, kind: str, scope: str) -> list[Any]:
        """One kind of a file's facts (``calls``, ``raises``...) directly in
        ``scope``, in file order."""
        facts.note("scope", scope)
        key = (facts.rel, kind)
        table = self._scoped.get(key)
        if table is None:
            table = self._scoped[key] = {}
            for fact in getattr(facts.unobserved, kind):
                table.setdefault(fact.scope, []).append(fact)
        return table.get(scope, [])

    def failure_conditions(self, facts: FactsView, scope_filter: str | None = None,
                           ) -> Iterable[tuple[str, int, str, Predicate, tuple[int, ...]]]:
        """(scope, line, text, condition, path) for every raise and assert."""
        raises, asserts = (facts.raises, facts.asserts) if scope_filter is None else (
            self._by_scope(facts, "raises", scope_filter),
            self._by_scope(facts, "asserts", scope_filter))
        for fact in raises:
            yield fact.scope, fact.line, f"raise {fact.exc}", self.path(facts, fact.path,
                                                                         fact.scope), fact.path
        for afact in asserts:
            resolved = self.vocab.predicate(afact.test, facts.rel, afact.scope, afact.line)
            self._assert_trail[(facts.rel, afact.line)] = resolved.trail
            yield (afact.scope, afact.line, f"assert {afact.test}",
                   conj(self.path(facts, afact.path, afact.scope), neg(resolved.predicate)),
                   afact.path)

    # -- direct gates and defaults -------------------------------------------------------
    def quant_condition(self, rel: str, scope: str) -> Predicate:
        """Code of a quantization method runs only under that method: the
        constructors of classes a method's config instantiates get ``QuantIs``;
        their other methods also need to be called (undecidable here); other code
        beside them gets an undecidable condition. None blocks a choice by itself."""
        cond = self._quant_condition(rel, scope)
        if self._quant_log is not None:
            self._quant_log.append(((rel, scope), cond))
        return cond

    def _quant_condition(self, rel: str, scope: str) -> Predicate:
        top = scope.split(".")[0]
        methods = self.quant_context.get((rel, top))
        if methods:
            built = disj(*(conj(QuantIs(frozenset({m})), c) for m, c in sorted(
                methods.items())))
            if scope in (top, f"{top}.__init__"):
                return built
            # another method of the class: runs only when something calls it
            return conj(built, Unknown(f"{scope}() is called"))
        if any(rel.startswith(d) for d in self.quant_dirs):
            return Unknown("code used only by some quantization method")
        return Const(True)

    def scan_file(self, rel: str) -> None:
        facts = self.index.view(rel)
        if facts is None:
            return
        for scope, line, text, cond, path in self.failure_conditions(facts):
            if not mentions_device(cond):
                continue
            cond = conj(self.quant_condition(rel, scope), cond)
            option_atoms = _option_atoms(cond)
            dests = sorted({a.option for a in option_atoms})
            hops = tuple(self.guard_hops(facts, path, scope, line))
            if dests:
                for dest in dests:
                    self.links.findings.append(Finding(
                        "gate", rel, line, cond, hops, option=dest, text=text))
            elif any(isinstance(a, QuantIs) for a in atoms(cond)):
                self.links.findings.append(Finding("quant-gate", rel, line, cond, hops,
                                                   text=text))
        self.scan_defaults(facts)

    def scan_defaults(self, facts: FactsView) -> None:
        for assign in facts.assigns:
            for target in assign.targets:
                dest = target.rsplit(".", 1)[-1]
                if dest not in self.dests:
                    continue
                self._default(facts, assign.scope, assign.line, assign.path, dest, assign.value)
        for call in facts.calls:
            for name, value in call.kwargs:
                if name in self.dests:
                    self._default(facts, call.scope, call.line, call.path, name, value)

    def _default(self, facts: FactsView, scope: str, line: int, path: tuple[int, ...],
                 dest: str, value_text: str) -> None:
        node = parse_expr(value_text)
        if node is None:
            return
        value = self.vocab.value(value_text, facts.rel, scope, line)
        if isinstance(value, ConstV) and isinstance(value.value, str):
            choices = {value.value}
        elif isinstance(value, EnumMemberV):
            choices = set(value.values)
        else:
            return
        cond = self.path(facts, path, scope)
        if not mentions_device(cond):
            return
        for choice in sorted(choices):
            self.links.findings.append(Finding(
                "default", facts.rel, line, cond, tuple(self.guard_hops(facts, path, scope)),
                choice=choice, option=dest, text=facts.rel))

    # -- regions: code that runs only for one choice ---------------------------------
    def registered_regions(self, rel: str,
                           ) -> list[tuple[str, str, str, int, Predicate, bool]]:
        """(dest, choice, function qualname, line, region, owned) for functions
        registered with ``@register_x("choice")``.

        ``@register_fused_func("none", "flashinfer_trtllm")`` registers for a
        pair: the region needs both values, and it is owned by the choice that is
        not its option's default (the runner, not ``--moe-a2a-backend none``)."""
        facts = self.index.view(rel)
        if facts is None:
            return []
        found = []
        path_tokens = set(re.split(r"[/_.]", rel))
        for func in facts.functions:
            for deco, deco_line in func.decorators:
                node = parse_expr(deco)
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                name = ast.unparse(node.func).rsplit(".", 1)[-1].lower()
                if "register" not in name:
                    continue
                pairs = []
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        pairs.extend(self._registered(arg.value, name, path_tokens,
                                                      func.qualname, deco_line))
                if not pairs:
                    continue
                region = conj(*(OptionIs(d, frozenset({c})) for d, c, _, _ in pairs))
                defaults = {o.dest: (o.default or "").strip("\"'") for o in self.options}
                owners = [p for p in pairs if defaults.get(p[0]) != p[1]] or pairs
                for dest, choice, qualname, line in pairs:
                    found.append((dest, choice, qualname, line, region,
                                  (dest, choice, qualname, line) in owners))
        return found

    def _registered(self, choice: str, name: str, path_tokens: set[str], qualname: str,
                    line: int) -> list[tuple[str, str, str, int]]:
        """The option a registered literal belongs to; several candidates are
        narrowed by the file path and the decorator's name, and an option's
        prefill/decode/speculative twins give way to the shortest dest."""
        candidates = [o for o in self.options if choice in o.choices]
        if len(candidates) > 1:
            candidates = [o for o in candidates if _dest_tokens(o.dest) & (
                path_tokens | set(name.split("_")))]
            if candidates:
                shortest = min(len(o.dest) for o in candidates)
                candidates = [o for o in candidates if len(o.dest) == shortest]
        if len(candidates) > 1:
            return []  # ambiguous: say nothing rather than guess
        return [(o.dest, choice, qualname, line) for o in candidates]

    def scan_region(self, rel: str, scope: str, dest: str, choice: str, link: Hop,
                    region: Predicate | None = None, owned: bool = True) -> None:
        """Gates inside a registered function, and what it calls."""
        facts = self.index.view(rel)
        if facts is None:
            return
        region = region if region is not None else OptionIs(dest, frozenset({choice}))
        for fscope, line, text, cond, path in self.failure_conditions(facts):
            if fscope != scope and not fscope.startswith(scope + "."):
                continue
            if not mentions_device(cond):
                continue
            hops = (link, *self.guard_hops(facts, path, fscope, line))
            self.links.findings.append(Finding("gate", rel, line, conj(region, cond), hops,
                                               option=dest, text=text))
        self.follow_calls(facts, scope, dest, region, (link,), FOLLOW_DEPTH, True, owned)

    def scan_registered(self, rel: str) -> None:
        for dest, choice, scope, line, region, owned in self.registered_regions(rel):
            self.scan_region(rel, scope, dest, choice,
                             Hop(rel, line, "link", f"registered for {choice}"), region, owned)

    def scan_named(self, dest: str, choice: str, rel: str) -> None:
        self.scan_selects(dest, choice, rel)
        self.scan_guarded_names(dest, choice, rel)
        self.scan_module_kernel_calls(dest, choice, rel)

    def record(self) -> LinkRecord:
        """This scan's linking, for the next scan: its units, and the answers
        they used (extending the earlier record's tables, whose numbers the
        replayed units and kept answers use)."""
        reads = self.reads
        keys = Table(self.prior.keys if self.prior is not None else None)
        answers: dict[int, Answer] = {}
        units: dict[UnitKey, Unit] = {}
        for key, unit in self.units.items():
            queries = self._queries(unit)
            for query in queries:
                number = keys.id(query)
                if number in answers:
                    continue
                answer = self.vocab.answers.get(query) or self.vocab.stored.get(query)
                if answer is not None:
                    if not isinstance(answer.reads, bytes):
                        answer = Answer(answer.value, answer.diagnostic, reads.encode(answer.reads))
                    answers[number] = answer
            if not isinstance(unit.queries, bytes):
                unit = replace(unit, queries=keys.encode(queries))
            units[key] = unit
        return LinkRecord(self.context(), reads.items, keys.items, answers, units)

    def _queries(self, unit: Unit) -> list[QueryKey] | tuple[QueryKey, ...]:
        if isinstance(unit.queries, bytes):
            assert self.prior is not None
            return [self.prior.keys[i] for i in numbers(unit.queries)]
        return unit.queries

    def context(self) -> str:
        """What units assume beyond the tree: the options and the enums."""
        return repr((sorted(self.vocab.options.dests.items()),
                     sorted((method, [(enum, dest, sorted(values)) for enum, dest, values in v])
                            for method, v in self.vocab.options.enum_predicates.items()),
                     sorted(self.vocab.options.enum_members.items()),
                     sorted(self.vocab.options.enum_dests.items()),
                     self.vocab.options.quantization,
                     [(o.dest, o.default, o.choices) for o in self.options],
                     sorted(self.kernel_packages)))

    def follow_region_calls(self, rel: str) -> None:
        """Calls whose path holds an option test: follow them into their callees."""
        facts = self.index.view(rel)
        if facts is None:
            return
        for call in facts.calls:
            if not call.path:
                continue
            cond = self.path(facts, call.path, call.scope)
            done: set[str] = set()
            for signed in call.path:
                if signed < 0:
                    continue  # a branch not taken names other choices
                for atom in _option_atoms(self.cond(facts, signed, call.scope)):
                    if atom.option not in self.dests or atom.option in done:
                        continue
                    done.add(atom.option)
                    link = Hop(rel, facts.cond(signed).line, "link", atom.describe())
                    self._follow_one(facts, call, atom.option, cond, (link,), FOLLOW_DEPTH)

    def follow_calls(self, facts: FactsView, scope: str, dest: str, region: Predicate,
                     hops: tuple[Hop, ...], depth: int, include_nested: bool,
                     owned: bool = False) -> None:
        calls = facts.in_tree("calls", scope) if include_nested \
            else self._by_scope(facts, "calls", scope)
        for call in calls:
            cond = conj(region, self.path(facts, call.path, call.scope))
            self._follow_one(facts, call, dest, cond, hops, depth, owned)
        # function-local imports of modules: their module-level gates apply
        for imp in self._by_scope(facts, "imports", scope):
            module = f"{imp.module}.{imp.name}" if imp.name else imp.module
            if module in self.index.by_module:
                self._module_gates(module, dest, conj(region, self.path(facts, imp.path, scope)),
                                   (*hops, Hop(facts.rel, imp.line, "import", module)))

    def _module_gates(self, module: str, dest: str, region: Predicate,
                      hops: tuple[Hop, ...]) -> None:
        if self._already_followed((module, dest, repr(region))):
            return
        rel = self.index.by_module[module]
        facts = self.index.view(rel)
        if facts is None:
            return
        for scope, line, text, cond, path in self.failure_conditions(facts, ""):
            if mentions_device(cond):
                self.links.findings.append(Finding(
                    "gate", rel, line, conj(region, cond),
                    (*hops, *self.guard_hops(facts, path, scope, line)), option=dest, text=text))

    def _follow_one(self, facts: FactsView, call: CallFact, dest: str, cond: Predicate,
                    hops: tuple[Hop, ...], depth: int, owned: bool = False) -> None:
        if depth <= 0 or cond == Const(False):
            return
        if parse_expr(call.func) is None:
            return
        callee = self.vocab.value(call.func, facts.rel, call.scope, call.line)
        hop = Hop(facts.rel, call.line, "call", call.func)
        if isinstance(callee, ExtV):
            self.links.kernel_calls.append(KernelCall(
                dest, cond, callee.path, facts.rel, call.line, (*hops, hop),
                _literal_backend(self.vocab, facts, call), owned=owned))
            return
        target: tuple[str, str] | None = None
        if isinstance(callee, FuncV):
            target = (callee.rel, callee.qualname)
        elif isinstance(callee, ClassV):
            cfacts = self.index.view(callee.rel)
            if cfacts is not None and cfacts.function(f"{callee.qualname}.__init__"):
                target = (callee.rel, f"{callee.qualname}.__init__")
        if target is None:
            return
        if self._already_followed((target[0], target[1], f"{dest}:{repr(cond)}")):
            return
        tfacts = self.index.view(target[0])
        if tfacts is None:
            return
        for scope, line, text, gate, path in self.failure_conditions(tfacts, target[1]):
            if not mentions_device(gate):
                continue
            self.links.findings.append(Finding(
                "gate", target[0], line, conj(cond, gate),
                (*hops, hop, *self.guard_hops(tfacts, path, scope, line)), option=dest,
                text=text))
        self.follow_calls(tfacts, target[1], dest, cond, (*hops, hop), depth - 1, False, owned)

    # -- select guards in a choice's own module -------------------------------------------
    def named_modules(self) -> list[tuple[str, str, str]]:
        """(dest, choice, rel) for modules named for a choice inside the option's package."""
        by_stem: dict[str, list[tuple[str, list[str]]]] = {}
        for rel in self.index.tree.files:
            parts = rel[:-3].split("/")
            stem = parts[-1]
            for name in {stem, stem.removesuffix("_backend"), stem.removesuffix("_moe")}:
                by_stem.setdefault(name, []).append((rel, parts[:-1]))
        order = {rel: i for i, rel in enumerate(self.index.tree.files)}
        found = []
        for opt in self.options:
            tokens = _dest_tokens(opt.dest)
            hits: list[tuple[str, int, str]] = []
            for position, choice in enumerate(opt.choices):
                for rel, dirs in by_stem.get(choice, ()):
                    stem = rel[:-3].rsplit("/", 1)[-1]
                    if stem in (choice, f"{choice}_backend", f"{choice}_moe") and any(
                            t in part for part in dirs for t in tokens):
                        hits.append((rel, position, choice))
            # in the order of the files, then of the choices
            found.extend((opt.dest, choice, rel) for rel, _, choice in sorted(
                set(hits), key=lambda h: (order[h[0]], h[1])))
        return found

    def scan_selects(self, dest: str, choice: str, rel: str) -> None:
        facts = self.index.view(rel)
        if facts is None:
            return
        raising_paths = {abs(s) for r in facts.raises for s in r.path}
        used: set[int] = set()
        for group in (facts.imports, facts.assigns, facts.calls, facts.functions,
                      facts.returns):
            for fact in group:
                used.update(fact.path)  # type: ignore[attr-defined]
        for index, cond in enumerate(facts.conds, start=1):
            if cond.kind not in ("if", "elif") or index in raising_paths:
                continue
            if index not in used or -index not in used:
                continue  # picks nothing: code on one side only
            scope = facts.cond_scope[index - 1]
            pred = self.cond(facts, index, scope)
            if mentions_device(pred) and any(isinstance(a, Device) for a in atoms(pred)):
                self.links.findings.append(Finding(
                    "select", rel, cond.line, pred,
                    (Hop(rel, 1, "link", f"module named for {choice}"),),
                    option=dest, choice=choice, text=cond.text))

    def scan_module_kernel_calls(self, dest: str, choice: str, rel: str) -> None:
        """Calls into the kernel library from a module named for the choice."""
        facts = self.index.view(rel)
        if facts is None:
            return
        region = OptionIs(dest, frozenset({choice}))
        link = Hop(rel, 1, "link", f"module named for {choice}")
        for call in facts.calls:
            if parse_expr(call.func) is None:
                continue
            callee = self.vocab.value(call.func, rel, call.scope, call.line)
            if isinstance(callee, ExtV) and callee.path.split(".")[0] in self.kernel_packages:
                cond = conj(region, self.path(facts, call.path, call.scope))
                self.links.kernel_calls.append(KernelCall(
                    dest, cond, callee.path, rel, call.line,
                    (link, Hop(rel, call.line, "call", call.func)),
                    _literal_backend(self.vocab, facts, call), choice, True))

    def scan_guarded_names(self, dest: str, choice: str, rel: str) -> None:
        """Names bound only under a device guard, used in the choice's module."""
        facts = self.index.view(rel)
        if facts is None:
            return
        bindings: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for imp in facts.imports:
            if not imp.scope:
                bindings.setdefault(imp.local, []).append((imp.line, imp.path))
        for func in facts.functions:
            if not func.scope:
                bindings.setdefault(func.name, []).append((func.line, func.path))
        for assign in facts.assigns:
            if not assign.scope:
                for target in assign.targets:
                    bindings.setdefault(target, []).append((assign.line, assign.path))
        region = OptionIs(dest, frozenset({choice}))
        for name, sites in bindings.items():
            guarded = [(line, path) for line, path in sites if path]
            if not guarded or len(guarded) != len(sites):
                continue  # bound unconditionally somewhere
            line, path = guarded[0]
            if any(_exclusive(path, other) for _, other in guarded[1:]):
                continue  # bound in both branches: a select, not an import gate
            bound_when = self.path(facts, path, "")
            if not mentions_capability(bound_when):
                continue
            guard_texts = {facts.cond(s).text for s in path}
            for call in facts.calls:
                if call.func != name and not call.func.startswith(name + "."):
                    continue
                if guard_texts & {facts.cond(s).text for s in call.path}:
                    continue  # used under the same guard
                hops = (Hop(rel, 1, "link", f"module named for {choice}"),
                        *self.guard_hops(facts, path, ""),
                        Hop(rel, line, "import", f"{name} bound only when "
                            f"{bound_when.describe()}"))
                self.links.findings.append(Finding(
                    "import", rel, call.line, conj(region, neg(bound_when)), hops,
                    option=dest, text=f"{name} used"))
                break

    def scan_docs(self) -> None:
        """Help-text claims per choice: ``'x' (Hopper SM90 only; ...)``."""
        for opt in self.options:
            for choice, segment in _help_segments(opt.help, opt.choices):
                pred = _doc_predicate(segment)
                if pred is None:
                    continue
                only = bool(re.search(r"\bonly\b", segment, re.IGNORECASE))
                self.links.findings.append(Finding(
                    "doc", opt.path, opt.line, pred, (), choice=choice, option=opt.dest,
                    text=("only: " if only else "") + segment))

    # -- quantization methods ---------------------------------------------------------------
    def scan_quantization(self) -> None:
        """Map each --quantization method to its config class, then find (a) the
        loader's threshold check read through the class's method, (b) gates in the
        classes the config instantiates."""
        if self.quantization is None:
            return
        methods = set(self.quantization.choices)
        threshold_methods = self._threshold_methods()
        # Another runtime in the same wheel (sglang/multimodal_gen beside
        # sglang/srt) has its own method tables, with same-named config classes
        # that mean something else: only the option's own runtime counts.
        option_parts = self.quantization.path.split("/")
        runtime_depth = min(2, len(option_parts) - 1)
        for rel in self.index.grep([f'"{m}"' for m in sorted(methods)][:400]):
            if "quantization" not in rel or _shared_prefix(rel, self.quantization.path) < \
                    runtime_depth:
                continue
            facts = self.index.view(rel)
            if facts is None:
                continue
            # ``TABLE = {"fp8": Fp8Config, ...}`` and ``TABLE.update({"mxfp4": ...})``
            tables = [(a.value, a.scope, a.line) for a in facts.assigns]
            tables += [(c.args[0], c.scope, c.line) for c in facts.calls
                       if c.func.endswith(".update") and len(c.args) == 1]
            for text, scope, line in tables:
                node = parse_expr(text)
                if not isinstance(node, ast.Dict):
                    continue
                for key, val in zip(node.keys, node.values):
                    if not (isinstance(key, ast.Constant) and key.value in methods):
                        continue
                    cls = self.vocab.value_at(val, rel, scope, line)
                    if not isinstance(cls, ClassV):
                        continue
                    method = str(key.value)
                    known = self.links.quant_methods.get(method)
                    # several method tables (e.g. a second runtime in the same wheel):
                    # keep the one nearest the --quantization option's definition
                    if known is None or _shared_prefix(rel, self.quantization.path) > \
                            _shared_prefix(self._table_of[method], self.quantization.path):
                        self.links.quant_methods[method] = (cls.rel, cls.qualname)
                        self._table_of[method] = rel
        for method, (crel, cqual) in sorted(self.links.quant_methods.items()):
            region = QuantIs(frozenset({method}))
            for tname, (trel, tline, tcond, ttext) in threshold_methods.items():
                value = self._class_method_constant(crel, cqual, tname)
                if value is None:
                    continue
                number, vrel, vline = value
                gate = Device("sm", "<", number)
                self.links.findings.append(Finding(
                    "quant-gate", trel, tline, conj(region, tcond, gate),
                    (Hop(crel, vline, "quant", f"{method}: {cqual}.{tname}() returns {number}"),),
                    text=ttext))
            self.quant_dirs.add(crel.rsplit("/", 1)[0] + "/")
            for qrel, qscope, built_when in self._classes_of(crel, cqual):
                known = self.quant_context.setdefault((qrel, qscope), {})
                known[method] = disj(known[method], built_when) if method in known \
                    else built_when

    def quant_state(self) -> Any:
        return (dict(self.links.quant_methods), {k: dict(v) for k, v in self.quant_context.items()},
                set(self.quant_dirs), dict(self._table_of))

    def restore_quant_state(self, state: Any) -> None:
        methods, context, dirs, table_of = state
        self.links.quant_methods = dict(methods)
        self.quant_context = {k: dict(v) for k, v in context.items()}
        self.quant_dirs, self._table_of = set(dirs), dict(table_of)

    def _threshold_methods(self) -> dict[str, tuple[str, int, Predicate, str]]:
        """Methods compared with the device capability in a raising check:
        ``if capability < quant_config.get_min_capability(): raise``."""
        found: dict[str, tuple[str, int, Predicate, str]] = {}
        for rel in self.index.grep(["capability"]):
            if "quantization" in rel and "loader" not in rel:
                continue
            facts = self.index.view(rel)
            if facts is None:
                continue
            for fact in facts.raises:
                for signed in fact.path:
                    cond = facts.cond(signed)
                    node = parse_expr(cond.text)
                    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                            node.ops[0], (ast.Lt, ast.LtE)) and isinstance(
                            node.comparators[0], ast.Call) and isinstance(
                            node.comparators[0].func, ast.Attribute)):
                        continue
                    left = self.vocab.value_at(node.left, rel, fact.scope, cond.line)
                    if getattr(left, "kind", None) != "sm":
                        continue
                    others = [s for s in fact.path if s != signed]
                    found[node.comparators[0].func.attr] = (
                        rel, cond.line, self.path(facts, tuple(others), fact.scope),
                        cond.text)
        return found

    def _class_method_constant(self, rel: str, cls: str, method: str,
                               ) -> tuple[int, str, int] | None:
        facts = self.index.view(rel)
        if facts is None:
            return None
        for ret in facts.in_scope("returns", f"{cls}.{method}"):
            node = parse_expr(ret.value)
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node.value, rel, ret.line
        return None

    def _classes_of(self, rel: str, cls: str) -> list[tuple[str, str, Predicate]]:
        """The config class and the classes its methods instantiate, each with
        the condition it is built under. ``isinstance(layer, X)`` tests pick a
        class per layer kind and are taken as met; other conditions stay."""
        out: list[tuple[str, str, Predicate]] = [(rel, cls, Const(True))]
        facts = self.index.view(rel)
        if facts is None:
            return out
        found: dict[tuple[str, str], Predicate] = {}
        for call in facts.in_tree("calls", cls):
            if not call.scope.startswith(cls + "."):
                continue
            if call.func in ("isinstance", "issubclass", "type"):
                continue
            # built here (``C(...)``) or handed to a builder (``build(Moe=C)``)
            texts = [call.func, *call.args, *(v for _, v in call.kwargs)]
            for position, text in enumerate(texts):
                if position and not re.fullmatch(r"[\w.]+", text):
                    continue
                if parse_expr(text) is None:
                    continue
                value = self.vocab.value(text, rel, call.scope, call.line)
                if not isinstance(value, ClassV) or (value.rel, value.qualname) == (rel, cls):
                    continue
                kept = tuple(p for p in call.path
                             if not _PER_LAYER.search(facts.cond(p).text))
                cond = self.path(facts, kept, call.scope)
                key = (value.rel, value.qualname)
                found[key] = disj(found[key], cond) if key in found else cond
        out.extend((r, q, _fold_tautology(c)) for (r, q), c in found.items())
        return out


def collect_links(index: Index, vocab: Vocabulary, options: list[OptionInfo],
                  quantization: OptionInfo | None, enum_names: Iterable[str] = (),
                  enum_methods: Iterable[str] = (),
                  kernel_packages: Iterable[str] = ("flashinfer",),
                  prior: tuple[LinkRecord, Changes] | None = None) -> Links:
    """Every finding for every option, from the files that can hold one.
    With ``prior`` (an earlier scan's linking and what changed since), units
    nothing changed for are replayed; ``Links.record`` is this scan's."""
    linker = _Linker(index, vocab, options, quantization)
    linker.kernel_packages = set(kernel_packages)
    if prior is not None and prior[0].context == linker.context():
        record, changes = prior
        linker.links.changed = Links()
        changes.table = record.reads
        stored, former = {}, {}
        for number, answer in record.answers.items():
            (former if changes.any(answer.reads) else stored)[record.keys[number]] = answer
        vocab.stored, vocab.former = stored, former
        linker.prior, linker.changes = record, changes
        linker.reads = Table(record.reads)
    vocab.reads_table = linker.reads
    tokens = sorted({o.dest for o in options} | set(enum_names) | set(enum_methods))
    candidates = index.grep(tokens) if tokens else []
    registering = index.grep_re(rb"@[\w.]*register\w*\(\s*[\"']")
    if linker.prior is None:
        index.prefetch(candidates)  # cold: parse on every core
    elif index.after_prefetch is not None:
        index.after_prefetch()
    linker.unit(("quantization",), linker.scan_quantization,
                (linker.quant_state, linker.restore_quant_state))
    # the last whole-tree pre-filter is done: the tree's text need not stay in
    # memory beside the facts (68 MB for sglang 0.5.23)
    index.release_text()
    quant_files = sorted({rel for rel, _ in linker.quant_context} - set(candidates))
    for rel in [*candidates, *quant_files]:
        linker.unit(("file", rel), partial(linker.scan_file, rel))
    for rel in candidates:
        linker.unit(("follow", rel), partial(linker.follow_region_calls, rel))
    for rel in registering:
        linker.unit(("registered", rel), partial(linker.scan_registered, rel))
    for dest, choice, rel in linker.named_modules():
        linker.unit(("named", dest, choice, rel), partial(linker.scan_named, dest, choice, rel))
    linker.scan_docs()
    if linker.prior is not None:
        for key, unit in linker.prior.units.items():
            if key not in linker.units:
                linker._changed(unit, None)
    linker.links.record = linker.record()
    linker.links.units = (linker.replayed, linker.ran)
    return linker.links


def _fold_tautology(pred: Predicate) -> Predicate:
    """``not a or a`` is TRUE whatever ``a`` is: Kleene logic alone cannot see it
    (both branches of ``if not x: build(C) ... return`` / ``build(C)``)."""
    free = sorted({a for a in atoms(pred) if isinstance(a, Unknown)}, key=repr)
    if not free or len(free) > 8 or len(free) != len(set(atoms(pred)) - {Const(True),
                                                                           Const(False)}):
        return pred
    for values in itertools.product((Const(True), Const(False)), repeat=len(free)):
        mapping = dict(zip(free, values))
        if substitute(pred, mapping.get) != Const(True):
            return pred
    return Const(True)


#: Per-layer dispatch (``isinstance(layer, FusedMoE)``,
#: ``self.is_layer_excluded(prefix)``) says which layers get a class, not whether
#: the method uses it: such branch tests are taken as met, either way.
_PER_LAYER = re.compile(r"\b(isinstance\(|layer|prefix)")


def _literal_backend(vocab: Vocabulary, facts: FactsView, call: CallFact) -> str | None:
    """A ``backend=`` argument that resolves to a string, e.g. ``backend="cudnn"``."""
    for name, text in call.kwargs:
        if name == "backend":
            if parse_expr(text) is None:
                return None
            value = vocab.value(text, facts.rel, call.scope, call.line)
            return value.value if isinstance(value, ConstV) and isinstance(
                value.value, str) else None
    return None


def _shared_prefix(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        count += 1
    return count


def _exclusive(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return any(-i in b for i in a)


def _help_segments(help_text: str, choices: Iterable[str]) -> list[tuple[str, str]]:
    """(choice, parenthesised text) for ``'choice' (text)`` in a help string."""
    found = []
    for match in re.finditer(r"'([\w\-.]+)'\s*\(((?:[^()]|\([^()]*\))*)\)", help_text):
        if match.group(1) in choices:
            found.append((match.group(1), match.group(2).strip()))
    return found


_DOC_WORDS = {"ampere": Device("major", "==", 8), "ada": Device("sm", "==", 89),
              "hopper": Device("major", "==", 9),
              "blackwell": Device("major", "in", (10, 11, 12))}


def _doc_predicate(text: str) -> Predicate | None:
    """Architectures a help-text segment names (SM90, SM100/SM103, SM80+, SM10x,
    SM80-SM90, Hopper, Blackwell...). Curated words map to families, cited in
    docs/verdicts.md; only ever weak evidence."""
    parts: list[Predicate] = []
    for match in re.finditer(r"SM\s?(\d{2,3})(x|\+)?(?:\s*-\s*SM\s?(\d{2,3}))?", text,
                             re.IGNORECASE):
        number, suffix, upper = match.group(1), match.group(2), match.group(3)
        if suffix and suffix.lower() == "x":
            parts.append(Device("major", "==", int(number)))
        elif suffix == "+":
            parts.append(Device("sm", ">=", int(number)))
        elif upper:
            parts.append(conj(Device("sm", ">=", int(number)), Device("sm", "<=", int(upper))))
        else:
            parts.append(Device("sm", "==", int(number)))
    for word, pred in _DOC_WORDS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE) and not parts:
            parts.append(pred)
    if not parts:
        return None
    return disj(*parts)

