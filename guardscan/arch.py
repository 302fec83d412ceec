"""arch (shared by every stage): what users type, checked against the architectures guardscan knows.

Every known architecture lives in ``data/architectures.json``, one entry each:
its compute capability, whether it is in the standard set, the first CUDA
toolkit that compiles for it, and the GPU names and aliases that stand for it.
A spelling is accepted only when it names one of them: ``sm120``, ``sm_120a``,
``SM_120``, ``12.0``, ``120``, ``compute_120``, a GPU name such as ``H100``,
``B200``, ``RTX PRO 6000``, an alias such as ``DGX Spark``, or ``all`` for the
standard set. Anything else raises ``ArchError`` naming the closest known
spellings (``sm12`` -> ``sm120``, ``sm121``), so a typo never produces a column
of verdicts for a GPU that does not exist.

``local_archs`` asks ``nvidia-smi`` which GPUs this machine has, for a scan run
without ``--arch``; no GPU, no driver or no ``nvidia-smi`` means no answer.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = [
    "FAR_FUTURE",
    "Arch",
    "ArchError",
    "ArchInfo",
    "NoArchError",
    "known_archs",
    "local_answer",
    "local_archs",
    "parse_arch",
    "parse_arch_list",
    "standard_archs",
]


class ArchError(ValueError):
    """An --arch value that names no architecture guardscan knows.

    ``suggestions`` holds the closest known spellings, best first (may be empty).
    """

    def __init__(self, message: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.suggestions = suggestions


class NoArchError(ArchError):
    """No architecture at all: an empty or blank ``--arch`` (``""``, ``" "``,
    ``","``), an empty list, or None. A pre-flight check fails closed: with no
    architecture there is no answer, never an empty "safe to try"."""


#: the one line said for a missing architecture
NO_ARCH = ("no architecture given: pass one such as sm120, a GPU name (H100, 'RTX PRO 6000'), "
           "'all', or 'auto' for the local GPU")


@dataclass(frozen=True, slots=True, order=True)
class Arch:
    """A CUDA compute capability, e.g. ``Arch(12, 0)`` is sm120."""

    major: int
    minor: int

    @property
    def name(self) -> str:
        return f"sm{self.major}{self.minor}"

    @property
    def sm(self) -> int:
        """The integer SGLang's ``get_device_sm()`` returns: major * 10 + minor."""
        return self.major * 10 + self.minor

    @property
    def min_cuda(self) -> tuple[int, int] | None:
        """First CUDA toolkit that compiles for this architecture (curated, cited)."""
        info = _by_capability().get((self.major, self.minor))
        return info.min_cuda if info is not None else None

    @property
    def info(self) -> ArchInfo | None:
        """What the data file says of this architecture (None when it is not known)."""
        return _by_capability().get((self.major, self.minor))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ArchInfo:
    """One entry of ``data/architectures.json``."""

    arch: Arch
    family: str
    standard: bool
    min_cuda: tuple[int, int] | None
    gpus: tuple[str, ...]
    aliases: tuple[str, ...]


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("guardscan").joinpath("data/architectures.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@lru_cache(maxsize=1)
def known_archs() -> tuple[ArchInfo, ...]:
    """Every architecture of the data file, in capability order."""
    out = []
    for name, entry in _data()["architectures"].items():
        major, minor = (int(part) for part in entry["capability"].split("."))
        arch = Arch(major, minor)
        if arch.name != name:
            raise ValueError(f"data/architectures.json: {name} has capability "
                             f"{entry['capability']}")
        cuda = entry.get("min_cuda")
        out.append(ArchInfo(arch, entry.get("family", ""), bool(entry.get("standard")),
                            (int(cuda[0]), int(cuda[1])) if cuda else None,
                            tuple(entry.get("gpus", ())), tuple(entry.get("aliases", ()))))
    return tuple(sorted(out, key=lambda info: info.arch))


@lru_cache(maxsize=1)
def _by_capability() -> dict[tuple[int, int], ArchInfo]:
    return {(info.arch.major, info.arch.minor): info for info in known_archs()}


@lru_cache(maxsize=1)
def _by_name() -> dict[str, Arch]:
    """Normalised GPU names and aliases -> architecture."""
    return {_normalise_name(name): info.arch for info in known_archs()
            for name in (*info.gpus, *info.aliases)}


_NUMERIC = re.compile(
    r"^(?:sm_?|compute_?)?(?P<digits>\d{2,3})(?P<suffix>[af])?$", re.IGNORECASE
)
_DOTTED = re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)$")


def _normalise_name(text: str) -> str:
    text = re.sub(r"[\s_\-/]+", " ", text.strip().upper())
    return re.sub(r"^NVIDIA ", "", text)


def _capability(raw: str) -> tuple[int, int] | None:
    """The (major, minor) a numeric spelling stands for, known or not."""
    match = _NUMERIC.match(raw)
    if match:
        digits = match.group("digits")
        return int(digits[:-1]), int(digits[-1])
    match = _DOTTED.match(raw)
    if match:
        return int(match.group("major")), int(match.group("minor"))
    return None


def parse_arch(text: str) -> Arch:
    """Parse one architecture spelling into a known architecture; raise
    ArchError, with the closest known spellings, for anything else."""
    raw = text.strip()
    if not raw:
        raise ArchError("empty architecture")
    capability = _capability(raw)
    if capability is not None and capability in _by_capability():
        return _by_capability()[capability].arch
    arch = _by_name().get(_normalise_name(raw))
    if arch is not None:
        return arch
    suggestions = suggest(raw)
    hint = (f"did you mean {' or '.join(suggestions)}?" if suggestions else
            "known: " + " ".join(info.arch.name for info in known_archs()))
    what = "not a known architecture" if capability is not None else "unknown architecture"
    raise ArchError(f"{what} {text!r}: {hint} (also GPU names such as H100 or "
                    "'RTX PRO 6000', or 'all')", suggestions)


def suggest(text: str, limit: int = 3) -> tuple[str, ...]:
    """Known spellings close to ``text``: architecture names it is the start of
    (``sm12`` -> sm120, sm121), then the nearest names and GPU names."""
    raw = text.strip()
    digits = re.sub(r"^(?:sm_?|compute_?)", "", raw, flags=re.IGNORECASE)
    names = [info.arch.name for info in known_archs()]
    found: list[str] = []
    if digits.isdigit():
        found = [name for name in names if name[2:].startswith(digits) and name[2:] != digits]
    if not found:
        spelled = {_normalise_name(n): n for info in known_archs()
                   for n in (*info.gpus, *info.aliases)}
        key = raw.lower() if digits.isdigit() or raw.lower().startswith("sm") else None
        if key is not None:
            canonical = key if key.startswith("sm") else f"sm{digits}"
            found = difflib.get_close_matches(canonical.replace("_", ""), names, n=limit,
                                              cutoff=0.75)
        else:
            found = [spelled[m] for m in difflib.get_close_matches(
                _normalise_name(raw), list(spelled), n=limit, cutoff=0.6)]
    return tuple(found[:limit])


#: A capability no GPU has: a condition that holds there names no arch (a
#: deny-list, an ``else`` after tests of older archs), so it is no claim of
#: support for the archs it lets through.
FAR_FUTURE = Arch(42, 0)


def standard_archs() -> list[Arch]:
    """sm80 sm86 sm89 sm90 sm100 sm103 sm110 sm120 sm121."""
    return [info.arch for info in known_archs() if info.standard]


def parse_arch_list(values: list[str] | None) -> list[Arch]:
    """Repeatable, comma-separated --arch values; ``all`` or None = the standard set.

    Values that name nothing (``[]``, ``[""]``, ``[" , "]``) raise
    ``NoArchError``: an arch asked for and left blank is never "every arch"."""
    if values is None:
        return standard_archs()
    found: list[Arch] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if part.lower() == "all":
                found.extend(standard_archs())
            else:
                found.append(parse_arch(part))
    if not found:
        raise NoArchError(NO_ARCH)
    return sorted(set(found))


#: The program asked for the local GPUs' compute capabilities (a module
#: attribute so tests can point it at a stand-in).
NVIDIA_SMI = "nvidia-smi"


def local_archs(timeout: float = 10.0) -> tuple[list[Arch], str]:
    """The known architectures of this machine's GPUs, as ``nvidia-smi`` reports
    them, and a few words on how they were found (or why not).

    An empty list means no answer: no ``nvidia-smi``, no driver, no GPU, a
    failure or a timeout, or only capabilities guardscan does not know.
    """
    try:
        done = subprocess.run(
            [NVIDIA_SMI, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return [], "no nvidia-smi"
    if done.returncode != 0:
        return [], "nvidia-smi found no GPU"
    found: set[Arch] = set()
    unknown: list[str] = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        capability = _capability(line)
        if capability is not None and capability in _by_capability():
            found.add(_by_capability()[capability].arch)
        else:
            unknown.append(line)
    return local_answer(found, unknown, "nvidia-smi", "nvidia-smi found no GPU")


def local_answer(found: set[Arch], unknown: list[str], source: str,
                 nothing: str) -> tuple[list[Arch], str]:
    """What a probe of the local GPUs (``source``: nvidia-smi, NVML) comes to:
    the archs found, and how, or none and why (``nothing`` when it saw no GPU)."""
    if not found:
        if unknown:
            return [], f"{source} reports compute capability {', '.join(unknown)}, not known"
        return [], nothing
    archs = sorted(found)
    return archs, f"the local GPU{'s' if len(archs) > 1 else ''} ({source})"
