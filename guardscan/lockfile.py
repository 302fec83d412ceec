"""lockfile (baseline): the reviewed record of a scan's verdicts, and what a new scan changed.

``guardscan baseline`` writes a lock file (``.guardscan.json``): one entry per
option, choice and architecture with its verdict and a fingerprint of the
line that decided it, the ``unresolved-guard`` diagnostics, and the settings
the scan ran with, so ``guardscan baseline --check`` (the pre-commit hook)
can run the same scan again and tell a new regression from what the tree
already blocked.

Everything here is a plain function of its inputs: no scan, no files. Nothing
recorded carries a line number (a fingerprint is path, role, text, kind and stated facts of
the deciding line, as bandit's baseline leaves lines out of ``Issue.__eq__``),
so the lock survives code moving, and two runs on the same tree give
byte-identical files (``dumps``: sorted keys, fixed layout, ``\\n`` ends).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guardscan.report.answer import deciding_evidence
from guardscan.results import BackendVerdict, Diagnostic, Evidence, ScanResult, Verdict

__all__ = [
    "DEFAULT_LOCK",
    "FORMAT",
    "RECORDED_CODES",
    "Change",
    "Comparison",
    "Deciding",
    "Entry",
    "Lock",
    "LockError",
    "Ref",
    "Settings",
    "Unresolved",
    "compare",
    "describe",
    "dumps",
    "entries_of",
    "fingerprint",
    "guard_text",
    "loads",
    "lock_from_result",
    "settings_from",
    "to_json",
    "unresolved_of",
]

#: Where the lock file is looked for, relative to the working directory.
DEFAULT_LOCK = ".guardscan.json"

#: The lock file's layout version; a newer one is refused, not misread.
FORMAT = 2

#: Diagnostics the lock records: a guard guardscan cannot read is a guard it
#: cannot judge, so a new one is a change a reviewer has to look at.
RECORDED_CODES = ("unresolved-guard",)



class LockError(ValueError):
    """A lock file that cannot be read; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Ref:
    """How a target or kernel library is named in the lock: ``kind`` is
    ``path`` (relative to the lock file's directory), ``spec`` (a requirement
    such as ``sglang==0.5.9``) or ``installed`` (``value`` empty)."""

    kind: str
    value: str = ""

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value}


@dataclass(frozen=True, slots=True)
class Settings:
    """What the scan ran with, so ``--check`` runs the same scan without arguments.

    ``flashinfer`` None with ``kernels`` on: the version the tree pins, read
    again at each check (a commit that moves the pin is judged with the new
    one).
    """

    target: Ref
    archs: tuple[str, ...]
    options: tuple[str, ...] | None = None  # None: every backend option
    quantization: str | None = None
    kernels: bool = True
    flashinfer: Ref | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target.to_json(),
            "archs": list(self.archs),
            "options": list(self.options) if self.options is not None else None,
            "quantization": self.quantization,
            "kernels": self.kernels,
            "flashinfer": self.flashinfer.to_json() if self.flashinfer is not None else None,
        }


@dataclass(frozen=True, slots=True)
class Deciding:
    """The deciding line of a verdict, without its line number: its file,
    role, source text, kind, tier and the arguments that state the fact
    (``Evidence.identity``)."""

    path: str
    role: str
    text: str
    kind: str = ""
    tier: str = ""
    facts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, ev: Evidence) -> Deciding:
        path, role, text, kind, tier, facts = ev.identity
        return cls(path, role, text, kind, tier, facts)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "role": self.role, "text": self.text,
                                  "kind": self.kind}
        if self.tier:
            out["tier"] = self.tier
        if self.facts:
            out["facts"] = {name: value for name, value in self.facts}
        return out


@dataclass(frozen=True, slots=True)
class Entry:
    option: str
    choice: str
    arch: str
    verdict: Verdict
    deciding: Deciding | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.option, self.choice, self.arch)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.deciding)

    def to_json(self) -> dict[str, object]:
        return {"verdict": self.verdict.value,
                "deciding": self.deciding.to_json() if self.deciding is not None else None,
                "fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True, order=True)
class Unresolved:
    """An unresolved guard as the lock identifies it: where, what, no line."""

    path: str
    code: str
    text: str

    @property
    def fingerprint(self) -> str:
        return _digest(self.path, self.code, self.text)

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "text": self.text,
                "fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True)
class Lock:
    guardscan: str
    settings: Settings
    entries: tuple[Entry, ...]
    unresolved: tuple[Unresolved, ...]
    #: what was scanned, for the reviewer: package, version
    target: tuple[str, str | None] = ("sglang", None)
    #: the kernel library paired: package, version, how ("pinned", "installed",
    #: "--flashinfer"); None when none was read
    kernels: tuple[str, str | None, str] | None = None

    def entry_map(self) -> dict[tuple[str, str, str], Entry]:
        return {e.key: e for e in self.entries}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


def fingerprint(deciding: Deciding | None) -> str:
    """Path, role, text, kind, tier and stated facts of the deciding line (no
    line number, nothing read from its note); a fixed
    value for a verdict nothing decides (``unknown``)."""
    if deciding is None:
        return _digest("-")
    return _digest(deciding.path, deciding.role, deciding.text, deciding.kind, deciding.tier,
                   *sorted(f"{name}={value}" for name, value in deciding.facts))


def entries_of(backends: Iterable[BackendVerdict]) -> tuple[Entry, ...]:
    out: dict[tuple[str, str, str], Entry] = {}
    for b in backends:
        ev = deciding_evidence(b)
        entry = Entry(b.option, b.choice, b.arch, b.verdict,
                      Deciding.of(ev) if ev is not None else None)
        out[entry.key] = entry
    return tuple(out[key] for key in sorted(out))


def guard_text(d: Diagnostic) -> str:
    """The guard's source text of an ``unresolved-guard`` diagnostic."""
    text = dict(d.args).get("text")
    return str(text) if text is not None else d.message


def unresolved_of(diagnostics: Iterable[Diagnostic]) -> list[tuple[Unresolved, Diagnostic]]:
    """The recorded diagnostics, each with its lock identity, in a stable order."""
    found = {(d.path, d.line, d.code, d.message): d for d in diagnostics
             if d.code in RECORDED_CODES}
    return [(Unresolved(d.path, d.code, guard_text(d)), d)
            for _, d in sorted(found.items())]


def lock_from_result(result: ScanResult, settings: Settings,
                     paired: str | None = None) -> Lock:
    """The lock of one scan; ``paired`` says how its kernel library was chosen."""
    kernels = None
    if result.kernels:
        k = result.kernels[0]
        kernels = (k.package, k.version, paired or "")
    return Lock(
        guardscan=result.guardscan,
        settings=settings,
        entries=entries_of(result.backends),
        unresolved=tuple(sorted(u for u, _ in unresolved_of(result.diagnostics))),
        target=(result.target.package, result.target.version),
        kernels=kernels,
    )


# -- the file -------------------------------------------------------------------------------

def to_json(lock: Lock) -> dict[str, object]:
    verdicts: dict[str, dict[str, dict[str, object]]] = {}
    for e in lock.entries:
        verdicts.setdefault(e.option, {}).setdefault(e.choice, {})[e.arch] = e.to_json()
    kernels = None
    if lock.kernels is not None:
        kernels = {"package": lock.kernels[0], "version": lock.kernels[1],
                   "paired": lock.kernels[2]}
    return {
        "format": FORMAT,
        "guardscan": lock.guardscan,
        "settings": lock.settings.to_json(),
        "target": {"package": lock.target[0], "version": lock.target[1]},
        "kernels": kernels,
        "verdicts": verdicts,
        "unresolved": [u.to_json() for u in lock.unresolved],
    }


def dumps(lock: Lock) -> str:
    """The lock file's text: keys sorted at every level, one line per setting,
    per unresolved guard and per option/choice/arch entry (a review diff shows
    one line per changed verdict), UTF-8 kept, a final newline."""
    data = to_json(lock)
    lines = ["{"]
    keys = sorted(data)
    for ki, key in enumerate(keys):
        comma = "," if ki + 1 < len(keys) else ""
        value = data[key]
        if key == "verdicts":
            assert isinstance(value, dict)
            lines.append('  "verdicts": {')
            lines.extend(_nested(value, 2))
            lines.append("  }" + comma)
        elif key == "unresolved":
            assert isinstance(value, list)
            if not value:
                lines.append(f'  "unresolved": []{comma}')
                continue
            lines.append('  "unresolved": [')
            lines.extend(f"    {_compact(item)}" + ("," if i + 1 < len(value) else "")
                         for i, item in enumerate(value))
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {_compact(key)}: {_compact(value)}{comma}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    # the hand-made layout must still be the JSON of the lock
    assert json.loads(text) == data
    return text


def _nested(mapping: dict[str, Any], depth: int) -> list[str]:
    """option -> choice -> {arch: entry on one line}."""
    pad = "  " * depth
    lines: list[str] = []
    keys = sorted(mapping)
    for i, key in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        value = mapping[key]
        if depth < 4:
            lines.append(f"{pad}{_compact(key)}: {{")
            lines.extend(_nested(value, depth + 1))
            lines.append(f"{pad}}}{comma}")
        else:
            lines.append(f"{pad}{_compact(key)}: {_compact(value)}{comma}")
    return lines


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def loads(text: str, source: str = DEFAULT_LOCK) -> Lock:
    """A lock file's text as a Lock; LockError (one line) when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError(f"{source} is not JSON ({exc}); re-record it with `guardscan "
                        "baseline`") from None
    try:
        return _from_json(data, source)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, LockError):
            raise
        raise LockError(f"{source} is not a guardscan lock file ({type(exc).__name__}: "
                        f"{exc}); re-record it with `guardscan baseline`") from None


def _ref(data: Any) -> Ref:
    kind = str(data["kind"])
    if kind not in ("path", "spec", "installed"):
        raise ValueError(f"unknown kind {kind!r}")
    return Ref(kind, str(data.get("value", "")))


def _from_json(data: Any, source: str) -> Lock:
    if not isinstance(data, dict) or "verdicts" not in data:
        raise ValueError("no 'verdicts'")
    if data.get("format") != FORMAT:
        raise LockError(f"{source} has format {data.get('format')!r}; this guardscan reads "
                        f"format {FORMAT}: re-record it with `guardscan baseline`")
    s = data["settings"]
    settings = Settings(
        target=_ref(s["target"]),
        archs=tuple(str(a) for a in s["archs"]),
        options=tuple(str(o) for o in s["options"]) if s.get("options") is not None else None,
        quantization=s.get("quantization"),
        kernels=bool(s.get("kernels", True)),
        flashinfer=_ref(s["flashinfer"]) if s.get("flashinfer") is not None else None,
    )
    entries: list[Entry] = []
    for option, choices in data["verdicts"].items():
        for choice, archs in choices.items():
            for arch, entry in archs.items():
                deciding = entry.get("deciding")
                entries.append(Entry(
                    option, choice, arch, Verdict(entry["verdict"]),
                    Deciding(deciding["path"], deciding["role"], deciding["text"],
                             deciding.get("kind", ""), deciding.get("tier", ""),
                             tuple((str(k), str(v)) for k, v in
                                   dict(deciding.get("facts", {})).items()))
                    if deciding else None))
    unresolved = tuple(sorted(Unresolved(u["path"], u["code"], u["text"])
                              for u in data.get("unresolved", [])))
    target = data.get("target") or {}
    kernels = data.get("kernels")
    return Lock(
        guardscan=str(data.get("guardscan", "")),
        settings=settings,
        entries=tuple(sorted(entries, key=lambda e: e.key)),
        unresolved=unresolved,
        target=(str(target.get("package", "sglang")), target.get("version")),
        kernels=(str(kernels["package"]), kernels.get("version"), str(kernels.get("paired", "")))
        if kernels else None,
    )


# -- the comparison -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Change:
    """One (option, choice, arch) whose verdict or deciding line moved.

    ``before`` is None for a choice the lock does not hold; ``evidence`` is the
    new deciding line, with its line number (None: nothing decides it now).
    """

    option: str
    choice: str
    arch: str
    before: Verdict | None
    after: Verdict
    evidence: Evidence | None

    @property
    def regression(self) -> bool:
        """Safe to try before, not now: supported/unknown -> blocked/unsupported."""
        return self.before is not None and self.before.safe_to_try and \
            not self.after.safe_to_try

    @property
    def better(self) -> bool:
        return self.before is not None and not self.before.safe_to_try and \
            self.after.safe_to_try


@dataclass
class Comparison:
    """What a scan changed against a lock. Only ``failed`` decides the exit."""

    #: safe before, not safe now
    regressions: list[Change] = field(default_factory=list)
    #: unresolved-guard diagnostics the lock does not hold (with their lines)
    new_unresolved: list[Diagnostic] = field(default_factory=list)
    #: not safe before, safe now
    better: list[Change] = field(default_factory=list)
    #: the same safety, another verdict or another deciding line
    changed: list[Change] = field(default_factory=list)
    #: choices the lock does not hold
    added: list[Change] = field(default_factory=list)
    #: lock entries the scan no longer gives
    gone: list[Entry] = field(default_factory=list)
    #: unresolved guards of the lock the scan no longer reports
    resolved: list[Unresolved] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.new_unresolved)

    @property
    def quiet(self) -> bool:
        """Nothing at all to say."""
        return not (self.failed or self.better or self.changed or self.added or self.gone
                    or self.resolved)


def compare(lock: Lock, result: ScanResult) -> Comparison:
    """How ``result`` (a scan with the lock's settings) differs from ``lock``."""
    out = Comparison()
    old = lock.entry_map()
    seen: set[tuple[str, str, str]] = set()
    for b in sorted(result.backends, key=lambda b: (b.option, b.choice, b.arch)):
        key = (b.option, b.choice, b.arch)
        if key in seen:
            continue
        seen.add(key)
        ev = deciding_evidence(b)
        now = Entry(b.option, b.choice, b.arch, b.verdict,
                    Deciding.of(ev) if ev is not None else None)
        before = old.get(key)
        if before is None:
            out.added.append(Change(*key, None, b.verdict, ev))
            continue
        if before.verdict is now.verdict and before.fingerprint == now.fingerprint:
            continue
        change = Change(*key, before.verdict, now.verdict, ev)
        if change.regression:
            out.regressions.append(change)
        elif change.better:
            out.better.append(change)
        else:
            out.changed.append(change)
    out.gone = [e for key, e in sorted(old.items()) if key not in seen]
    recorded = Counter(lock.unresolved)
    for ident, d in unresolved_of(result.diagnostics):
        if recorded[ident] > 0:
            recorded[ident] -= 1
        else:
            out.new_unresolved.append(d)
    out.resolved = sorted(ident for ident, n in recorded.items() for _ in range(n))
    return out


# -- what the hook says ---------------------------------------------------------------------

def _identity(path: str) -> str:
    return path


def _where(ev: Evidence | None, where: Callable[[str], str]) -> str:
    return f"{where(ev.path)}:{ev.line}" if ev is not None else "(no deciding line)"


def describe(comparison: Comparison, lock_name: str = DEFAULT_LOCK,
             where: Callable[[str], str] = _identity, verbose: bool = False) -> list[str]:
    """The hook's lines: each regression and new unresolved guard as
    ``path:line: ...`` (``where`` maps a scan path to one the user can open),
    then how to accept; changes that fail nothing in one summary line each, or
    one line per change with ``verbose``."""
    lines: list[str] = []
    for c in comparison.regressions:
        text = f" ({c.evidence.text})" if c.evidence is not None else ""
        lines.append(f"{_where(c.evidence, where)}: {c.option} {c.choice} on {c.arch}: "
                     f"{c.before} -> {c.after}{text}")
    for d in comparison.new_unresolved:
        reason = dict(d.args).get("reason")
        lines.append(f"{where(d.path)}:{d.line}: new arch guard guardscan cannot resolve: "
                     f"`{guard_text(d)}`" + (f" ({reason})" if reason else ""))
    quiet_kinds: list[tuple[str, list[Change]]] = [
        ("better than the baseline", comparison.better),
        ("changed, no worse", comparison.changed),
        ("new", comparison.added),
    ]
    for label, changes in quiet_kinds:
        if not changes:
            continue
        if verbose:
            for c in changes:
                lines.append(f"{_where(c.evidence, where)}: {c.option} {c.choice} on {c.arch}: "
                             f"{c.before or 'new'} -> {c.after} ({label})")
        else:
            lines.append(f"note: {len(changes)} verdict(s) {label}: "
                         + _few(f"{c.option} {c.choice} on {c.arch}" for c in changes))
    if comparison.gone:
        lines.append(f"note: {len(comparison.gone)} verdict(s) of {lock_name} no longer "
                     "given: " + _few(f"{e.option} {e.choice} on {e.arch}"
                                      for e in comparison.gone))
    if comparison.resolved:
        lines.append(f"note: {len(comparison.resolved)} unresolved guard(s) of {lock_name} "
                     "gone: " + _few(u.path for u in comparison.resolved))
    if comparison.failed:
        counts = []
        if comparison.regressions:
            counts.append(f"{len(comparison.regressions)} verdict(s) worse than {lock_name}")
        if comparison.new_unresolved:
            counts.append(f"{len(comparison.new_unresolved)} new unresolved guard(s)")
        lines.append(f"guardscan: {' and '.join(counts)}.")
        lines.append(f"to accept: run `guardscan baseline` (it re-records with the settings "
                     f"in {lock_name}), review `git diff {lock_name}`, and commit it.")
    elif not comparison.quiet:
        lines.append(f"(nothing worse; `guardscan baseline` records these in {lock_name})")
    return lines


def _few(items: Iterable[str], limit: int = 3) -> str:
    listed = list(dict.fromkeys(items))
    shown = ", ".join(listed[:limit])
    return shown + (f", ... (+{len(listed) - limit})" if len(listed) > limit else "")


def settings_from(data: Mapping[str, object]) -> Settings:
    """Settings from their ``to_json`` form (for tests and tools)."""
    return _from_json({"format": FORMAT, "settings": data, "verdicts": {}}, "settings").settings
