"""results (shared by every stage): the plain data a scan produces, evidence, diagnostics, verdicts, the result.

Everything here is frozen and slotted, holds no parse-tree nodes, and compares,
sorts and serialises cleanly. Lines are 1-based.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from guardscan.evidence import Args, Status, render_note, stated, tier_of

__all__ = [
    "CHECKPOINT_ONLY",
    "JSON_SCHEMA",
    "BackendVerdict",
    "Diagnostic",
    "Evidence",
    "ExitCode",
    "OptionInfo",
    "PackageRef",
    "Role",
    "ScanNote",
    "ScanResult",
    "Verdict",
]


#: The JSON contract's version (docs/json.md): 2 added each evidence line's
#: ``kind``, ``tier``, ``status`` and ``args``.
JSON_SCHEMA = 2


class ExitCode(enum.IntEnum):
    """Process exit codes (documented in README and docs/cli.md).

    OK: the scan ran (whatever the verdicts). FOUND: ``--fail-on`` matched a
    verdict, or a preflight/baseline check failed. USAGE: bad usage or an
    unusable target (one line on stderr). INTERNAL: a guardscan bug.
    """

    OK = 0
    FOUND = 1
    USAGE = 2
    INTERNAL = 3


class Role(str, enum.Enum):
    GATE = "gate"
    SELECT = "select"
    IMPORT = "import"
    DEFAULT = "default"
    DOC = "doc"
    PLATFORM = "platform"
    KERNEL = "kernel"
    LINK = "link"
    GUARD = "guard"
    DATA = "data"
    FIELD = "field"  # a field report beside the verdict (guardscan.field), never deciding


class Verdict(str, enum.Enum):
    BLOCKED = "blocked"
    UNSUPPORTED = "unsupported"
    SUPPORTED = "supported"
    UNKNOWN = "unknown"

    @property
    def safe_to_try(self) -> bool:
        return self in (Verdict.SUPPORTED, Verdict.UNKNOWN)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, order=True)
class Evidence:
    """One hop of an evidence chain: a line of source and what it means here.

    ``kind`` (a ``guardscan.evidence.FactKind`` value), ``tier`` and ``args``
    are the fact as data; ``status`` (``Status``) is its part in the verdict,
    set where the verdict is decided; ``note`` is rendered from kind and args
    (``Evidence.of``) for people to read, and nothing parses it."""

    path: str
    line: int
    role: str
    text: str
    note: str = ""
    kind: str = ""
    tier: str = ""
    status: str = Status.CONTEXT.value
    args: Args = ()

    @classmethod
    def of(cls, path: str, line: int, role: str, text: str, kind: str, args: Args = (),
           status: Status = Status.CONTEXT) -> Evidence:
        """A line with its fact's kind and arguments, its note rendered from them."""
        kind = str(kind)
        return cls(path, line, role, text, render_note(kind, args), kind, tier_of(kind),
                   status.value, args)

    def qualified(self, qualifier: str) -> Evidence:
        """This line with one more qualifier (shown after ``; `` in the note)."""
        args = (*self.args, ("qualifier", qualifier))
        return replace(self, args=args, note=render_note(self.kind, args))

    def with_status(self, status: Status) -> Evidence:
        return self if self.status == status.value else replace(self, status=status.value)

    @property
    def identity(self) -> tuple[str, str, str, str, str, Args]:
        """What identifies the fact wherever its line moved: file, role, source
        text, kind, tier and the arguments that state it (no line number)."""
        return (self.path, self.role, self.text.strip(), self.kind, self.tier,
                stated(self.args))

    @property
    def place(self) -> str:
        """``path:line``, or the path alone for a fact of a whole file (line 0:
        a compiled library's fatbin)."""
        return f"{self.path}:{self.line}" if self.line else self.path

    @property
    def decides(self) -> bool:
        return self.status == Status.DECIDES.value

    @property
    def caveat(self) -> bool:
        return self.status == Status.CAVEAT.value

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "line": self.line, "role": self.role,
                                  "text": self.text}
        if self.note:
            out["note"] = self.note
        out["kind"] = self.kind
        if self.tier:
            out["tier"] = self.tier
        out["status"] = self.status
        if self.args:
            values: dict[str, object] = {name: value for name, value in self.args
                                         if name != "qualifier"}
            qualifiers = [value for name, value in self.args if name == "qualifier"]
            if qualifiers:
                values["qualifiers"] = qualifiers
            out["args"] = values
        return out


@dataclass(frozen=True, slots=True, order=True)
class Diagnostic:
    """Something guardscan could not analyse or resolve, with where and why."""

    path: str
    line: int
    code: str
    message: str
    #: the template's arguments (see ``guardscan.messages``); not part of identity
    args: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "code": self.code,
                "message": self.message}


@dataclass(frozen=True, slots=True)
class PackageRef:
    package: str
    version: str | None
    path: str

    def to_json(self) -> dict[str, object]:
        return {"package": self.package, "version": self.version, "path": self.path}


@dataclass(frozen=True, slots=True)
class BackendVerdict:
    option: str
    choice: str
    arch: str
    quantization: str | None
    verdict: Verdict
    evidence: tuple[Evidence, ...] = ()
    platform: str | None = None  # set when the choice is for a non-CUDA platform only
    conditions: tuple[str, ...] = ()  # verdict changes under these (e.g. quantization)

    @property
    def safe_to_try(self) -> bool:
        return self.verdict.safe_to_try

    @property
    def deciding(self) -> Evidence | None:
        """The line that decided the verdict (set where it was decided); None
        for ``unknown``."""
        return next((ev for ev in reversed(self.evidence) if ev.decides), None)

    @property
    def caveats(self) -> tuple[Evidence, ...]:
        """The lines that could change the verdict under something undecided."""
        return tuple(ev for ev in self.evidence if ev.caveat)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "option": self.option,
            "choice": self.choice,
            "arch": self.arch,
            "quantization": self.quantization,
            "verdict": self.verdict.value,
            "safe_to_try": self.safe_to_try,
            "evidence": [e.to_json() for e in self.evidence],
        }
        if self.platform:
            out["platform"] = self.platform
        if self.conditions:
            out["conditions"] = list(self.conditions)
        return out


@dataclass(frozen=True, slots=True)
class OptionInfo:
    """A backend-selecting option as the scanned version defines it."""

    flag: str  # --moe-runner-backend
    dest: str  # moe_runner_backend
    choices: tuple[str, ...]
    path: str
    line: int
    help: str = ""
    default: str | None = None
    platforms: tuple[tuple[str, str], ...] = ()  # (choice, platform) for non-CUDA choices


#: a quantization note's ``reason`` for a method only a checkpoint names
CHECKPOINT_ONLY = "checkpoint"


@dataclass(frozen=True, slots=True)
class ScanNote:
    """A note on the scan as a whole, with what it is about as fields:
    ``topic`` is ``kernels`` (the kernel library not read, and why: ``reason``),
    ``quantization`` (a ``method`` rejected whatever the backend; ``reason``
    ``CHECKPOINT_ONLY`` when only a checkpoint names the method, which no
    ``--quantization`` flag offers) or ``model`` (the model judged for, from
    ``--model-config``)."""

    topic: str
    text: str
    method: str | None = None
    reason: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class ScanResult:
    guardscan: str
    target: PackageRef
    kernels: list[PackageRef] = field(default_factory=list)
    archs: list[str] = field(default_factory=list)
    options: list[OptionInfo] = field(default_factory=list)
    backends: list[BackendVerdict] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    quantization: str | None = None
    notes: list[ScanNote] = field(default_factory=list)

    def __repr__(self) -> str:
        """A summary, not the data (``to_json()`` has every verdict):
        ``ScanResult(sglang 0.5.23 with flashinfer 0.7.2, archs=['sm120'], ...)``."""
        what = f"{self.target.package} {self.target.version or '(version unknown)'}"
        if self.kernels:
            what += " with " + ", ".join(f"{k.package} {k.version or '(version unknown)'}"
                                         for k in self.kernels)
        counts = {v.value: 0 for v in Verdict}
        for entry in self.backends:
            counts[entry.verdict.value] += 1
        tally = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
        return (f"ScanResult({what}, archs={self.archs!r}, quantization={self.quantization!r}, "
                f"{len(self.options)} options, {len(self.backends)} verdicts"
                f"{f' ({tally})' if tally else ''}, {len(self.diagnostics)} diagnostics)")

    def to_json(self) -> dict[str, object]:
        return {
            "schema": JSON_SCHEMA,
            "guardscan": self.guardscan,
            "target": self.target.to_json(),
            "kernels": [k.to_json() for k in self.kernels],
            "archs": list(self.archs),
            "quantization": self.quantization,
            "backends": [b.to_json() for b in self.backends],
            "diagnostics": [d.to_json() for d in sorted(set(self.diagnostics))],
        }
