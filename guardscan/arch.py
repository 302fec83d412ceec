"""arch (shared by every stage): what users type, parsed into a GPU architecture, a (major, minor) capability.

Accepted spellings: ``sm120``, ``sm_120a``, ``SM_120``, ``12.0``, ``120``,
``compute_120``, ``sm_90a``, GPU names such as ``H100``, ``B200``, ``RTX PRO 6000``,
``GB10`` / ``DGX Spark``, and ``all`` for the standard set. GPU names and the
minimum CUDA toolkit of each architecture are curated facts that live in
``data/architectures.json`` with their sources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["Arch", "ArchError", "parse_arch", "parse_arch_list", "standard_archs"]


class ArchError(ValueError):
    """An --arch value that names no architecture we know how to read."""


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("guardscan").joinpath("data/architectures.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


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
        value = _data()["min_cuda"].get(f"{self.major}.{self.minor}")
        return (int(value[0]), int(value[1])) if value else None

    def __str__(self) -> str:
        return self.name


_NUMERIC = re.compile(
    r"^(?:sm_?|compute_?)?(?P<digits>\d{2,3})(?P<suffix>[af])?$", re.IGNORECASE
)
_DOTTED = re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)$")


def _normalise_name(text: str) -> str:
    text = re.sub(r"[\s_\-/]+", " ", text.strip().upper())
    return re.sub(r"^NVIDIA ", "", text)


def parse_arch(text: str) -> Arch:
    """Parse one architecture spelling; raise ArchError with a helpful message."""
    raw = text.strip()
    if not raw:
        raise ArchError("empty architecture")
    match = _NUMERIC.match(raw)
    if match:
        digits = match.group("digits")
        return Arch(int(digits[:-1]), int(digits[-1]))
    match = _DOTTED.match(raw)
    if match:
        return Arch(int(match.group("major")), int(match.group("minor")))
    gpus = {_normalise_name(k): v for k, v in _data()["gpus"].items()}
    key = _normalise_name(raw)
    if key in gpus:
        major, minor = gpus[key].split(".")
        return Arch(int(major), int(minor))
    raise ArchError(
        f"unknown architecture {text!r}: use sm120, sm_120a, 12.0, 120, a GPU name "
        f"such as H100 or 'RTX PRO 6000', or 'all'"
    )


def standard_archs() -> list[Arch]:
    """sm80 sm86 sm89 sm90 sm100 sm103 sm110 sm120 sm121."""
    return [parse_arch(name) for name in _data()["standard"]]


def parse_arch_list(values: list[str] | None) -> list[Arch]:
    """Repeatable, comma-separated --arch values; ``all`` or nothing = the standard set."""
    if not values:
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
    return sorted(set(found))
