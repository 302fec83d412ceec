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
    "OlderArch",
    "known_archs",
    "local_answer",
    "local_archs",
    "older_archs",
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
    #: the machines (``aarch64``) of every system it ships in; empty: any
    hosts: tuple[str, ...] = ()


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
                            tuple(entry.get("gpus", ())), tuple(entry.get("aliases", ())),
                            tuple(entry.get("hosts", ()))))
    return tuple(sorted(out, key=lambda info: info.arch))


@lru_cache(maxsize=1)
def _by_capability() -> dict[tuple[int, int], ArchInfo]:
    return {(info.arch.major, info.arch.minor): info for info in known_archs()}


@lru_cache(maxsize=1)
def _by_name() -> dict[str, Arch]:
    """Normalised GPU names and aliases -> architecture."""
    return {_normalise_name(name): info.arch for info in known_archs()
            for name in (*info.gpus, *info.aliases)}


@dataclass(frozen=True, slots=True)
class OlderArch:
    """An architecture older than any guardscan judges (``older`` in the data
    file): named only to say so."""

    name: str
    capability: tuple[int, int]
    family: str
    gpus: tuple[str, ...]


@lru_cache(maxsize=1)
def older_archs() -> tuple[OlderArch, ...]:
    """The architectures of the data file's ``older`` table, in capability order."""
    out = []
    for name, entry in _data().get("older", {}).items():
        if name.startswith("_"):
            continue
        major, minor = (int(part) for part in entry["capability"].split("."))
        out.append(OlderArch(name, (major, minor), entry.get("family", ""),
                             tuple(entry.get("gpus", ()))))
    return tuple(sorted(out, key=lambda older: older.capability))


_NUMERIC = re.compile(
    r"^(?:sm_?|compute_?)?(?P<digits>\d{2,3})(?P<suffix>[af])?$", re.IGNORECASE
)
_DOTTED = re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)$")

#: what ``nvidia-smi`` (or a vendor's page) puts around a GPU's name: the
#: brand before it, and after it memory, form factor and edition words, none
#: of which changes the architecture (``NVIDIA H100 80GB HBM3``, ``NVIDIA
#: A100-SXM4-80GB``, ``NVIDIA RTX PRO 6000 Blackwell Server Edition``)
_BRANDS = ("NVIDIA", "GEFORCE", "TESLA")
_DESCRIPTOR = re.compile(
    r"^(?:\d+GB|\d+G|SXM\d*|PCIE|NVL|NVL\d+|HBM\d*E?|SERVER|WORKSTATION|EDITION|MAX|Q|"
    r"GENERATION|LAPTOP|GPU|MOBILE|TI|SUPER|D|AC|MIG|OEM)$")


def _normalise_name(text: str) -> str:
    text = re.sub(r"[\s_\-/]+", " ", text.strip().upper()).strip()
    words = text.split(" ")
    while words and words[0] in _BRANDS:
        words = words[1:]
    return " ".join(words)


def _by_reported_name(text: str) -> Arch | None:
    """A GPU name as ``nvidia-smi`` prints it: a known name (or alias)
    followed only by descriptor words; the longest known name wins
    (``RTX PRO 6000 Blackwell ...`` before ``RTX PRO 6000``)."""
    words = _normalise_name(text).split(" ")
    for length in range(len(words) - 1, 0, -1):
        arch = _by_name().get(" ".join(words[:length]))
        if arch is not None and all(_DESCRIPTOR.match(w) for w in words[length:]):
            return arch
    return None


def _older(text: str) -> OlderArch | None:
    """The older architecture a spelling names (``sm75``, ``7.5``, ``T4``,
    ``NVIDIA Tesla T4``), if any."""
    capability = _capability(text.strip())
    key = _normalise_name(text)
    for older in older_archs():
        if capability == older.capability:
            return older
        for gpu in older.gpus:
            name = _normalise_name(gpu)
            if key == name or (key.startswith(name + " ") and all(
                    _DESCRIPTOR.match(w) for w in key[len(name) + 1:].split(" "))):
                return older
    return None


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
    ArchError, with the closest known spellings, for anything else.

    GPU names are taken as ``nvidia-smi`` prints them too (``NVIDIA H100 80GB
    HBM3``, ``NVIDIA GeForce RTX 5090``); an architecture older than any
    guardscan judges (``sm75``, ``T4``) is said to be so, with no suggestion."""
    raw = text.strip()
    if not raw:
        raise ArchError("empty architecture")
    capability = _capability(raw)
    if capability is not None and capability in _by_capability():
        return _by_capability()[capability].arch
    arch = _by_name().get(_normalise_name(raw)) or _by_reported_name(raw)
    if arch is not None:
        return arch
    older = _older(raw)
    oldest = known_archs()[0].arch.name
    if older is not None:
        what = "not a known architecture" if capability is not None else "unknown architecture"
        raise ArchError(f"{what} {text!r}: {older.name} ({older.family}) is older than any "
                        f"architecture guardscan judges ({oldest} and newer; "
                        "guardscan archs lists them)")
    from guardscan.suggest import did_you_mean

    suggestions = suggest(raw)
    hint = (did_you_mean(suggestions) if suggestions else
            "known: " + " ".join(info.arch.name for info in known_archs()))
    what = "not a known architecture" if capability is not None else "unknown architecture"
    raise ArchError(f"{what} {text!r}: {hint} (also GPU names such as H100 or "
                    "'RTX PRO 6000', or 'all'; guardscan archs lists them)", suggestions)


def suggest(text: str, limit: int = 3) -> tuple[str, ...]:
    """Known spellings a mistyped one may have meant, best first.

    A number is read as a number, never by edit distance (``sm75`` is one
    substitution from ``sm85`` and two from ``sm87``, and means neither): the
    architectures it is the start of (``sm12`` -> sm120, sm121), the one it
    starts with (``sm1200`` -> sm120), or those of its major version nearest
    its minor (``sm102`` -> sm101, sm103, sm100); nothing for a major guardscan
    does not know. A name is matched by edit distance to the GPU names and
    aliases (``RTX 509`` -> RTX 5090, ``H1000`` -> H100)."""
    from guardscan.suggest import closest

    raw = text.strip()
    digits = re.sub(r"^(?:sm_?|compute_?)", "", raw, flags=re.IGNORECASE)
    digits = re.sub(r"[af]$", "", digits, flags=re.IGNORECASE)
    names = [info.arch.name for info in known_archs()]
    dotted = _DOTTED.match(raw)
    if digits.isdigit() or dotted:
        if dotted:
            major, minor = int(dotted.group("major")), int(dotted.group("minor"))
        else:
            found = [name for name in names if name[2:].startswith(digits) and name[2:] != digits]
            if not found and len(digits) > 3:
                found = [name for name in names if digits.startswith(name[2:])][-1:]
            if found or len(digits) < 2:
                return tuple(found[:limit])
            major, minor = int(digits[:-1]), int(digits[-1])
        same = [info.arch for info in known_archs() if info.arch.major == major]
        same.sort(key=lambda a: (abs(a.minor - minor), a.minor))
        return tuple(a.name for a in same[:limit])
    spelled = {_normalise_name(n): n for info in known_archs()
               for n in (*info.gpus, *info.aliases)}
    key = _normalise_name(raw)
    # every word given, in a longer name (``RTX 6000`` -> RTX 6000 Ada, RTX PRO 6000)
    words = set(key.split(" "))
    within = [name for name in spelled if len(words) > 1 and words < set(name.split(" "))]
    if within:
        return tuple(spelled[name] for name in sorted(within, key=len)[:limit])
    return tuple(spelled[m] for m in closest(key, list(spelled), limit))


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
        # a driver older than the compute_cap field (before 510) still names its GPUs
        return _local_archs_by_name(timeout)
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


def _local_archs_by_name(timeout: float) -> tuple[list[Arch], str]:
    """The local GPUs from the names ``nvidia-smi`` prints (``NVIDIA H100 80GB
    HBM3``), for a driver that cannot report ``compute_cap``."""
    try:
        done = subprocess.run([NVIDIA_SMI, "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return [], "nvidia-smi found no GPU"
    if done.returncode != 0:
        return [], "nvidia-smi found no GPU"
    found: set[Arch] = set()
    unknown: list[str] = []
    for line in done.stdout.splitlines():
        if line.strip():
            try:
                found.add(parse_arch(line))
            except ArchError:
                unknown.append(line.strip())
    if not found and unknown:
        return [], f"nvidia-smi reports {', '.join(unknown)}, not a known GPU"
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
