"""report (the answer): what a scan result says to try and to avoid, per option and architecture.

Every human-facing renderer (text, Markdown, ``explain``) reads a ScanResult
through here, so they agree on what is safe to try, what to avoid and why. It
decides nothing about verdicts: it sorts and groups the verdicts, evidence and
conditions the scan produced, and words the deciding line of each.

- **try**: ``supported`` choices (evidence that they run), then ``unknown``
  ones (no evidence either way), in the scanned version's order;
- **avoid**: ``blocked`` and ``unsupported`` choices, each with its deciding
  line (``deciding_evidence``) and that line's note;
- **marked**: choices whose verdict would change under a condition
  (``conditions``) or that a gate could still reject under something the scan
  cannot decide (a ``could raise`` caveat); a caveat every choice of the
  option shares (``shared``) is said once for the option, not per choice;
- **auto**: the choices ``auto`` resolves to on the architecture, from the
  ``default`` evidence on their chains;
- **other platforms**: choices documented for a non-CUDA platform only;
- **field**: the field reports attached beside the verdicts (``guardscan.field``),
  per option, one per report with the architectures it was attached on, worst
  outcome first; they never move a choice between try and avoid.

Architectures with the same answer for an option are grouped; options are
ordered by how much the scan decided for them (the share of their CUDA choices
with a verdict other than ``unknown``), most first, ties in the scanned order,
and, when the kernel library was read, the options whose choices reach it
(``kernels``: the MoE, GEMM and attention backends) before the SGLang-only
ones; options with nothing decided on any requested architecture are listed
apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from guardscan.arch import ArchError, parse_arch
from guardscan.evidence import FactKind, Status, arg
from guardscan.results import (
    BackendVerdict,
    Evidence,
    OptionInfo,
    Role,
    ScanNote,
    ScanResult,
    Verdict,
)
from guardscan.verdict.auto import auto_targets

__all__ = [
    "ArchGroup",
    "FieldNote",
    "OptionAnswer",
    "answers",
    "arch_label",
    "arch_names",
    "arch_sort_key",
    "caveats",
    "deciding_evidence",
    "describe_fact",
    "field_notes",
    "method_notes",
    "platform_source",
    "sorted_archs",
]

_AVOID = (Verdict.BLOCKED, Verdict.UNSUPPORTED)


def arch_sort_key(name: str) -> tuple[int, int, str]:
    """Numeric order: sm80 < sm90 < sm100 < sm120 (names that do not parse last)."""
    try:
        arch = parse_arch(name)
    except ArchError:
        return (1 << 30, 0, name)
    return (arch.major, arch.minor, name)


def sorted_archs(result: ScanResult) -> list[str]:
    """The result's architectures, and any a verdict names, in numeric order."""
    names = set(result.archs) | {b.arch for b in result.backends}
    return sorted(names, key=arch_sort_key)


def deciding_evidence(verdict: BackendVerdict) -> Evidence | None:
    """The line that decided a verdict (its ``decides`` status, set by the
    verdict stage); None for ``unknown`` or an empty chain."""
    return verdict.deciding


def caveats(verdict: BackendVerdict) -> list[Evidence]:
    """Gates on the chain that could still raise under something undecidable."""
    return [ev for ev in verdict.caveats if ev.kind == FactKind.GATE]


def platform_source(verdict: BackendVerdict) -> str:
    """Where a choice's platform label comes from: ``code`` (a call into
    another platform's package on its chain) or ``docs`` (the option's own
    help text or list comments)."""
    return "code" if any(ev.role == Role.PLATFORM.value and arg(ev.args, "platform")
                         == verdict.platform for ev in verdict.evidence) else "docs"


def marked(verdict: BackendVerdict) -> bool:
    return bool(verdict.conditions) or bool(caveats(verdict))


#: What each kind of kernel-library fact is, and how much it says, in plain words.
_FACT_KINDS: dict[str, tuple[str, str, str]] = {
    # kind: (what it is, strength when it excludes, strength when it admits)
    "decorator": ("a capability declaration on the kernel (@supported_compute_capability)",
                  "strong: the kernel itself declares where it runs",
                  "strong: the kernel itself declares where it runs"),
    "backend-requirement": ("a backend requirement table of the kernel (@backend_requirement)",
                            "strong: the kernel checks this before it runs",
                            "strong: the kernel checks this before it runs"),
    "check": ("a capability check that raises in the kernel library",
              "strong: the call raises there",
              "strong: the check lets it through"),
    "cpp-check": ("a capability check in the C++ the kernel library compiles",
                  "strong: the C++ raises there",
                  "strong: the C++ check lets it through"),
    "argument-check": ("a check in the kernel library on the arguments SGLang's call passes",
                       "strong: the call raises there with those arguments",
                       "weak: passing it says nothing about the architecture"),
    "jit-spec": ("a JIT build spec (the architectures a module is compiled for)",
                 "strong: nothing is compiled for it, so the module cannot load",
                 ("moderate: the module compiles for it; which kernels it holds is "
                  "decided at run time")),
    "artifacts": ("the precompiled kernels a module loads (a cubin architecture list)",
                  "strong: no kernel is shipped for it, whatever the JIT spec compiles",
                  "strong: kernels are shipped for it"),
    "binary": ("the machine code a compiled package ships (its libraries' fatbins)",
               "strong: no library the call uses holds code it can load",
               "strong: a library the call uses holds code for it"),
    "dispatch": ("a per-architecture dispatch in the kernel library",
                 "moderate: no branch is taken for it",
                 "weak: a branch exists for it, what it calls decides"),
    "table": ("a per-architecture table in the kernel library",
              "moderate: the table has no entry for it",
              "weak: the table has an entry for it, what it leads to decides"),
}
_ROLE_FACTS: dict[str, tuple[str, str]] = {
    Role.GATE.value: ("a check in SGLang that raises (raise / assert)",
                      "strong: SGLang itself refuses it there"),
    Role.IMPORT.value: ("a name SGLang binds only under a device guard",
                        "strong: the name is missing there, so using it fails"),
    Role.DEFAULT.value: ("a default SGLang picks under a device condition",
                         "moderate: SGLang chooses it itself there"),
    Role.DOC.value: ("a claim in the option's help text", "weak: documentation only"),
    Role.PLATFORM.value: ("a call into code the tree keeps for another platform",
                          "weak: a label, never a verdict"),
    Role.SELECT.value: ("a device test that picks an implementation",
                        "none: picking is not a claim of support"),
}
def describe_fact(ev: Evidence, verdict: Verdict) -> tuple[str, str]:
    """(what kind of fact the line is, how strong it is) in plain words."""
    if ev.role == Role.KERNEL.value:
        if ev.kind in _FACT_KINDS and arg(ev.args, "predicate"):
            what, excludes, admits = _FACT_KINDS[ev.kind]
            # the kernel stage ranks its facts (a: an explicit check on the API
            # called, b: the precompiled artifacts, c: a JIT spec)
            return (f"{what}, tier {ev.tier}" if ev.tier else what), (
                excludes if verdict in _AVOID else admits)
        return "a fact in the kernel library", "as the note says"
    if ev.role == Role.GATE.value and verdict is Verdict.SUPPORTED:
        return ("a check in SGLang that raises elsewhere and admits this architecture",
                "moderate: SGLang's own check lets it through")
    return _ROLE_FACTS.get(ev.role, (f"a {ev.role} line", "as the note says"))



def arch_label(name: str) -> str:
    """``sm120 (RTX PRO 6000, RTX 5090, ...)``: an arch with its first GPU names
    (the name alone when the data file knows none)."""
    try:
        info = parse_arch(name).info
    except ArchError:
        info = None
    if info is None or not info.gpus:
        return name
    return f"{name} ({', '.join(info.gpus[:2])}{', ...' if len(info.gpus) > 2 else ''})"


def arch_names(archs: Sequence[str], none: str = "no architecture") -> str:
    """A report header's archs: one with its GPU names, several by name only."""
    if len(archs) != 1:
        return " ".join(archs) if archs else none
    return arch_label(archs[0])

@dataclass(frozen=True, slots=True)
class Avoid:
    choice: str
    verdict: Verdict
    deciding: Evidence | None


@dataclass(frozen=True, slots=True)
class Marker:
    choice: str
    conditions: tuple[str, ...]
    caveats: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class ArchGroup:
    """Architectures on which an option's answer is the same."""

    archs: tuple[str, ...]
    supported: tuple[str, ...]
    unknown: tuple[str, ...]
    avoid: tuple[Avoid, ...]
    markers: tuple[Marker, ...]
    auto: tuple[tuple[str, Evidence], ...]  # (choice auto resolves to, where)
    other_platforms: tuple[tuple[str, str], ...]  # (choice, platform)
    #: caveats most choices share, said once for the option instead of once per
    #: choice: (the caveats, the choices that do not carry them)
    shared: tuple[tuple[tuple[Evidence, ...], tuple[str, ...]], ...] = ()

    @property
    def marked_choices(self) -> frozenset[str]:
        return frozenset(m.choice for m in self.markers)


@dataclass(slots=True)
class OptionAnswer:
    option: str
    info: OptionInfo | None
    groups: list[ArchGroup] = field(default_factory=list)
    decided: float = 0.0  # share of CUDA cells with a verdict other than unknown
    #: whether any choice's chain reaches the kernel library (a kernel fact or a
    #: call into it): the backends that pick kernels, not SGLang-only switches
    kernels: bool = False
    #: how many choices have a verdict that a kernel library fact decides
    by_kernel: int = 0

    @property
    def default(self) -> str | None:
        return self.info.default if self.info is not None else None


def _signature(group: ArchGroup) -> tuple[object, ...]:
    """What must agree for two architectures to share a group: the choices per
    answer, and each avoided choice's deciding line."""
    return (group.supported, group.unknown,
            tuple((a.choice, a.verdict, (a.deciding.path, a.deciding.line)
                   if a.deciding else None) for a in group.avoid),
            tuple((m.choice, m.conditions, tuple((c.path, c.line) for c in m.caveats))
                  for m in group.markers),
            tuple(choice for choice, _ in group.auto), group.other_platforms,
            tuple((tuple((c.path, c.line) for c in caveats), but)
                  for caveats, but in group.shared))


def _arch_answer(arch: str, verdicts: Iterable[BackendVerdict]) -> ArchGroup:
    verdicts = list(verdicts)
    by_choice = {v.choice: v for v in verdicts}
    supported: list[str] = []
    unknown: list[str] = []
    avoid: list[Avoid] = []
    markers: list[Marker] = []
    other: list[tuple[str, str]] = []
    for verdict in verdicts:
        if verdict.platform:
            other.append((verdict.choice, verdict.platform))
            continue
        if verdict.verdict is Verdict.SUPPORTED:
            supported.append(verdict.choice)
        elif verdict.verdict is Verdict.UNKNOWN:
            unknown.append(verdict.choice)
        else:
            avoid.append(Avoid(verdict.choice, verdict.verdict, deciding_evidence(verdict)))
        if marked(verdict):
            markers.append(Marker(verdict.choice, verdict.conditions,
                                  tuple(caveats(verdict))))
    auto = [(choice, ev) for choice, ev in auto_targets(verdicts)
            if by_choice[choice].verdict.safe_to_try]
    choices = [*supported, *unknown, *(a.choice for a in avoid)]
    shared = _shared_caveats(markers, choices)
    if shared:
        places = {(c.path, c.line) for caveats, _ in shared for c in caveats}
        markers = [dataclasses.replace(m, caveats=tuple(c for c in m.caveats
                                                        if (c.path, c.line) not in places))
                   for m in markers]
        markers = [m for m in markers if m.conditions or m.caveats]
    return ArchGroup((arch,), tuple(supported), tuple(unknown), tuple(avoid), tuple(markers),
                     tuple(auto), tuple(other), shared)


def _shared_caveats(markers: list[Marker], choices: list[str]
                    ) -> tuple[tuple[tuple[Evidence, ...], tuple[str, ...]], ...]:
    """The caveats (by place) that nearly every CUDA choice of an option carries
    (all of two, or all but a third of three or more), grouped by the choices
    that do not: one line for the option says each group, not one per choice."""
    carriers: dict[tuple[str, int], list[str]] = {}
    found: dict[tuple[str, int], Evidence] = {}
    for marker in markers:
        for caveat in marker.caveats:
            place = (caveat.path, caveat.line)
            found.setdefault(place, caveat)
            carriers.setdefault(place, []).append(marker.choice)
    groups: dict[tuple[str, ...], list[Evidence]] = {}
    for place, who in sorted(carriers.items()):
        but = tuple(c for c in choices if c not in who)
        if len(who) >= 2 and len(but) * 3 <= len(choices) and (not but or len(choices) >= 3):
            groups.setdefault(but, []).append(found[place])
    return tuple((tuple(caveats), but) for but, caveats in groups.items())


def answers(result: ScanResult) -> tuple[list[OptionAnswer], list[str]]:
    """(options with something decided, best first; options with nothing decided)."""
    archs = sorted_archs(result)
    infos = {o.flag: o for o in result.options}
    by_option: dict[str, dict[str, list[BackendVerdict]]] = {}
    for verdict in result.backends:
        by_option.setdefault(verdict.option, {}).setdefault(verdict.arch, []).append(verdict)
    decided: list[tuple[int, int, float, int, OptionAnswer]] = []
    nothing: list[str] = []
    for position, (option, per_arch) in enumerate(by_option.items()):
        cuda = [v for cells in per_arch.values() for v in cells if not v.platform]
        known = [v for v in cuda if v.verdict is not Verdict.UNKNOWN]
        if not known and not any(marked(v) for v in cuda):
            nothing.append(option)
            continue
        answer = OptionAnswer(option, infos.get(option),
                              decided=len(known) / len(cuda) if cuda else 0.0,
                              kernels=any(ev.role == Role.KERNEL.value
                                          for v in cuda for ev in v.evidence),
                              by_kernel=len({v.choice for v in known
                                             if _kernel_decided(v)}))
        groups: dict[tuple[object, ...], ArchGroup] = {}
        for arch in archs:
            if arch not in per_arch:
                continue
            one = _arch_answer(arch, per_arch[arch])
            key = _signature(one)
            if key in groups:
                first = groups[key]
                groups[key] = dataclasses.replace(first, archs=(*first.archs, arch))
            else:
                groups[key] = one
        answer.groups = list(groups.values())
        # with the kernel library read, the options whose choices reach it (the
        # MoE, GEMM and attention backends) come before SGLang-only switches
        # among those, the options whose answers the kernel library decides for
        # the most choices first (what only reading the kernels can tell)
        rank = 0 if answer.kernels or not result.kernels else 1
        decided.append((rank, -answer.by_kernel, -answer.decided, position, answer))
    decided.sort(key=lambda item: item[:4])
    return _bases_first([item[4] for item in decided]), nothing


def _bases_first(ordered: list[OptionAnswer]) -> list[OptionAnswer]:
    """``ordered``, with an option named after another
    (``--speculative-moe-runner-backend`` after ``--moe-runner-backend``)
    moved to just after it where it came first: the base is the one the
    reader looks for, and a like-named one that says nothing more is then
    folded into it (``report.text``), not the other way round.

    >>> a, b, c = (OptionAnswer(f, None) for f in (
    ...     "--speculative-moe-runner-backend", "--fp8-gemm-backend", "--moe-runner-backend"))
    >>> [x.option for x in _bases_first([a, b, c])]
    ['--fp8-gemm-backend', '--moe-runner-backend', '--speculative-moe-runner-backend']
    """
    out = list(ordered)
    for answer in ordered:
        name = answer.option.lstrip("-")
        bases = [b for b in out if b is not answer and len(b.option) < len(answer.option)
                 and b.option.lstrip("-") in name]
        if not bases:
            continue
        base = max(bases, key=lambda b: len(b.option))
        if out.index(answer) < out.index(base):
            out.remove(answer)
            out.insert(out.index(base) + 1, answer)
    return out


def _kernel_decided(verdict: BackendVerdict) -> bool:
    """Whether the fact that decides ``verdict`` is the kernel library's."""
    return any(ev.status == Status.DECIDES.value and ev.role == Role.KERNEL.value
               for ev in verdict.evidence)


@dataclass(frozen=True, slots=True)
class FieldNote:
    """One field report beside an option's verdicts: the choice it is about, the
    scanned archs it was attached on, and its evidence line."""

    choice: str
    archs: tuple[str, ...]
    evidence: Evidence

    @property
    def outcome(self) -> str:
        return arg(self.evidence.args, "outcome")

    def holds_for(self) -> list[str]:
        """What the report holds for, in words: ``sglang >=0.5.5``, the kernel
        range, ``with modelopt_fp4``, ``deepseek models`` (those it names)."""
        args = self.evidence.args
        out = [f"sglang {arg(args, 'sglang', 'any')}"]
        if arg(args, "kernel"):
            out.append(arg(args, "kernel"))
        if arg(args, "quantization"):
            out.append(f"with {arg(args, 'quantization')}")
        if arg(args, "model_family"):
            out.append(f"{arg(args, 'model_family')} models")
        return out

    @property
    def rank(self) -> int:
        """0 for a crash ... 4 for a run that worked (the order they are shown in)."""
        order = ("crash", "wrong-output", "hang", "slow", "works")
        return order.index(self.outcome) if self.outcome in order else len(order)


def field_notes(result: ScanResult) -> dict[str, list[FieldNote]]:
    """option -> its field reports, one note per report, worst outcome first,
    then in the order of the option's choices."""
    archs = sorted_archs(result)
    found: dict[str, dict[str, tuple[str, list[str], Evidence, int]]] = {}
    for position, verdict in enumerate(result.backends):
        for ev in verdict.evidence:
            if ev.kind != FactKind.FIELD:
                continue
            key = arg(ev.args, "id") or ev.note
            per_option = found.setdefault(verdict.option, {})
            if key not in per_option:
                per_option[key] = (verdict.choice, [], ev, position)
            if verdict.arch not in per_option[key][1]:
                per_option[key][1].append(verdict.arch)
    out: dict[str, list[FieldNote]] = {}
    for option, notes in found.items():
        made = [(FieldNote(choice, tuple(sorted(on, key=archs.index)), ev), position)
                for choice, on, ev, position in notes.values()]
        made.sort(key=lambda item: (item[0].rank, item[1]))
        out[option] = [note for note, _ in made]
    return out


def method_notes(result: ScanResult) -> tuple[list[ScanNote], list[str]]:
    """The notes split into those about one quantization method (``method``
    set; ``reason`` "checkpoint" for a method only a checkpoint names), and
    the others (about the scan as a whole)."""
    methods: list[ScanNote] = []
    others: list[str] = []
    for note in result.notes:
        if note.method is not None:
            methods.append(note)
        else:
            others.append(note.text)
    return methods, others


def short_reason(ev: Evidence) -> str:
    """A deciding line's note cut to its head: ``raises on sm120`` of a gate's
    ``raises on sm120: <condition>``, ``jit-spec: capability major in [10]`` of a
    kernel fact's ``jit-spec: capability major in [10] -> false (...)``."""
    if not ev.note.strip():
        return ""
    if ev.role == Role.KERNEL.value:
        predicate = arg(ev.args, "predicate")
        if ev.kind in _FACT_KINDS and predicate:
            strength = arg(ev.args, "strength")
            return f"{ev.kind} ({strength}): {predicate}" if strength else \
                f"{ev.kind}: {predicate}"
        return ev.note.strip() if len(ev.note.strip()) <= 60 else ""
    if ev.role == Role.IMPORT.value:
        return "a name it needs is bound only under a device guard"
    # a gate's head ("raises on sm120") says no more than ``blocked``; its
    # condition is too long for one line (explain shows it)
    return ""
