"""link (model): what linking hands on, and the names of finding kinds and hop roles.

A ``Finding`` is a guard with the condition under which it acts, a ``Hop`` one
line on the way from the choice to it, a ``KernelCall`` a call into the kernel
library for the kernels stage to judge; ``Links`` holds them all. Finding kinds
and hop roles are defined here once (``FindingKind``, ``HopRole``) and used by
verdicts, the graph and the reports; ``HopRole.evidence_role`` is the one map
from a hop's role to the role its line plays in an evidence chain.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from guardscan.pickling import fields_reduce
from guardscan.predicate import Predicate
from guardscan.results import Diagnostic, OptionInfo, Role

__all__ = [
    "GATE_KINDS",
    "Finding",
    "FindingKind",
    "Found",
    "Hop",
    "HopRole",
    "KernelCall",
    "Links",
    "default_choices",
    "evidence_role",
]


class FindingKind(str, enum.Enum):
    """What a finding says about a choice (the kinds are described in
    ``guardscan.link``'s docstring). Prints and compares as its value."""

    GATE = "gate"
    DEFAULT = "default"
    SELECT = "select"
    QUANT_GATE = "quant-gate"
    IMPORT = "import"
    DOC = "doc"
    ALIAS = "alias"
    RENAME = "rename"
    REQUIRES = "requires"
    PLATFORM = "platform"

    # equal to its value as a str, so hashed and printed as one: a plain
    # "gate" (a test's, or an older cache's) finds the same dict entries
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)


#: the kinds that say a choice raises where their condition holds
GATE_KINDS = (FindingKind.GATE, FindingKind.QUANT_GATE)


class HopRole(str, enum.Enum):
    """What a line on the way to a finding does there."""

    LINK = "link"  # ties the code to the choice (an option test, a registry, a module name)
    CALL = "call"  # a call followed out of the choice's code
    GUARD = "guard"  # a device test on the path
    DEFINITION = "definition"  # a line that gives a guard its meaning
    IMPORT = "import"  # a module imported, or a name bound, on the way
    QUANT = "quant"  # a quantization method's config class and what it returns

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)

    @property
    def evidence_role(self) -> Role:
        """The role this hop's line plays in an evidence chain (``results.Role``):
        a guard's definition is part of the guard, and what only leads to the
        deciding line (a call, an import, a method's config class) is a link."""
        return _EVIDENCE_ROLE[self]


_EVIDENCE_ROLE = {
    HopRole.LINK: Role.LINK,
    HopRole.CALL: Role.LINK,
    HopRole.GUARD: Role.GUARD,
    HopRole.DEFINITION: Role.GUARD,
    HopRole.IMPORT: Role.LINK,
    HopRole.QUANT: Role.LINK,
}


def evidence_role(role: HopRole | str) -> str:
    """``HopRole.evidence_role`` as plain text, for a role given as its value too."""
    return HopRole(role).evidence_role.value


@dataclass(frozen=True, slots=True)
class Hop:
    """A line on the way from the choice to the finding."""

    rel: str
    line: int
    role: HopRole
    note: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    rel: str
    line: int
    condition: Predicate
    hops: tuple[Hop, ...] = ()
    choice: str | None = None  # for defaults: the choice assigned
    option: str | None = None  # the dest this finding is about (None: any)
    text: str = ""
    #: for aliases: (dest, choice) the choice sets another option to; for
    #: ``requires``: the companions, each ``dest=value`` (``dest=`` a flag given);
    #: for a gate read with a call's arguments (``link.bound_gates``): the
    #: other options' values, each ``dest=value``, with which it may not raise
    target: tuple[str, ...] = ()
    #: for a gate in a method that implements an interface's abstract method
    #: (``link.gates``): that interface method, ``FusedMoEMethodBase.apply``
    implements: str = ""
    #: for a gate in a quantization method's code, judged on the way the
    #: option's tests take: its condition with the checkpoint's tests on the
    #: way kept too (``QuantPaths.escape``), or None where none was left out
    escape: Predicate | None = None
    #: for a gate read with a call's arguments (``link.bound_gates``): code run
    #: once the model is built, which sees what a hook rewrote the choice into
    built: bool = False


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
    #: a ``backend=`` argument computed from the option's value: (choice, the
    #: string that choice hands the kernel library), e.g. ("flashinfer_trtllm",
    #: "trtllm"); the verdict judges each choice's call with its own string
    backends: tuple[tuple[str, str], ...] = ()
    #: the arguments the call passes, (keyword or position, state), when all
    #: are read (``link.kernel_args``); None: not known
    args: tuple[tuple[str, str], ...] | None = None


@dataclass
class Found:
    """What one unit of linking found. A unit returns it; the runner adds it to
    the scan's ``Links`` (a unit that fails returns only its diagnostic, so
    nothing half-found is ever added)."""

    findings: list[Finding] = field(default_factory=list)
    kernel_calls: list[KernelCall] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass
class Links:
    findings: list[Finding] = field(default_factory=list)
    kernel_calls: list[KernelCall] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    quant_methods: dict[str, tuple[str, str]] = field(default_factory=dict)  # method -> (rel, class)
    #: methods a checkpoint selects that ``--quantization`` does not offer
    checkpoint_methods: frozenset[str] = frozenset()
    #: dest -> the options taken as not given while judging it: its twins
    #: (the same choices) whose default is unset, which fall back to it
    #: (``--prefill-attention-backend`` while judging ``--attention-backend``)
    unset: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: dest -> its default when that is one of its choices: what another
    #: option holds while one is judged (a launch that sets only the flag judged)
    defaults: dict[str, str] = field(default_factory=dict)
    #: mode options (``--deepep-mode``): dest -> (flag, choices); they hold
    #: their defaults while judging, and a verdict that another value of
    #: theirs would change says so in its conditions
    modes: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    def judging_context(self) -> str:
        """What judging reads of the links besides their findings and kernel
        calls (the options held at their defaults, the modes and their
        choices, the twins taken as unset, the quantization methods): a
        judged choice of an earlier scan stands only where this is the same
        (a commit that changes only a mode's default changes no finding)."""
        return repr((sorted(self.defaults.items()), sorted(self.modes.items()),
                     sorted(self.unset.items()), sorted(self.quant_methods.items()),
                     sorted(self.checkpoint_methods)))

    def add(self, found: Found) -> None:
        """What a unit returned."""
        self.findings.extend(found.findings)
        self.kernel_calls.extend(found.kernel_calls)
        self.diagnostics.extend(found.diagnostics)


for _cls in (Hop, Finding, KernelCall):
    _cls.__reduce__ = fields_reduce  # type: ignore[method-assign]


def default_choices(options: Sequence[OptionInfo]) -> dict[str, str]:
    """Each option's default, where it is a literal that names one of its
    choices (``"auto"``, ``"none"``)."""
    out = {}
    for opt in options:
        default = (opt.default or "").strip()
        if len(default) >= 2 and default[0] == default[-1] and default[0] in "\"'":
            default = default[1:-1]
        if default in opt.choices:
            out[opt.dest] = default
    return out
