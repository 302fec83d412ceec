"""field (model): one field report, what it claims and where it was read.

A field report is what people saw when they ran a backend choice on a GPU:
a crash, wrong output, a hang, a slow run, or a run that worked. It is
evidence beside the static verdict, never the verdict: the source says what
SGLang checks, a report says what happened on someone's machine, with the
thread that says so.

Everything here is frozen, slotted and plain (strings, tuples, an enum), so a
report compares, sorts, caches and serialises cleanly. Version ranges stay
the text the file holds (``>=0.5.5,<0.5.8``); ``guardscan.field.match``
parses them when it compares.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["FieldReport", "FieldReportError", "KernelRange", "Outcome"]


class Outcome(str, enum.Enum):
    """What the report says happened, worst first."""

    CRASH = "crash"
    WRONG_OUTPUT = "wrong-output"
    HANG = "hang"
    SLOW = "slow"
    WORKS = "works"

    @property
    def rank(self) -> int:
        """0 for crash ... 4 for works: the order reports are listed in."""
        return list(Outcome).index(self)

    def __str__(self) -> str:
        return self.value


class FieldReportError(Exception):
    """A field-report file that can't be used, as one line for the user.

    ``source`` names the file (``bundled`` for guardscan's own data),
    ``where`` the entry (``reports[3] (id 'x')``, empty for the whole file)
    and ``problem`` what is wrong with it; ``str()`` joins them.
    """

    def __init__(self, source: str, problem: str, where: str = "") -> None:
        self.source = source
        self.where = where
        self.problem = problem
        super().__init__(": ".join(part for part in (source, where, problem) if part))


@dataclass(frozen=True, slots=True, order=True)
class KernelRange:
    """The kernel library a report was seen with: a distribution name
    (canonical, ``flashinfer-python``) and a ``packaging`` specifier."""

    name: str
    specifier: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "specifier": self.specifier}


@dataclass(frozen=True, slots=True)
class FieldReport:
    """One cited report: on these archs, with this option set to this choice,
    in these SGLang (and kernel-library) releases, this happened.

    ``sglang`` is a specifier (``""`` for every release); ``archs`` are
    canonical names (``sm120``); ``quantization`` and ``model_family`` are
    None when the report does not depend on them; ``date`` is the ISO date
    of the report; ``fixed_in`` the SGLang release that fixed it, when known;
    ``source`` the file it was read from (``bundled`` for guardscan's own).
    """

    id: str
    sglang: str
    kernel_library: KernelRange | None
    option: str
    choice: str
    archs: tuple[str, ...]
    quantization: str | None
    model_family: str | None
    outcome: Outcome
    symptom: str
    urls: tuple[str, ...]
    date: str
    fixed_in: str | None = None
    notes: str = ""
    source: str = "bundled"

    @property
    def url(self) -> str:
        """The first thread cited (every report has one)."""
        return self.urls[0]

    def to_json(self) -> dict[str, object]:
        """The report in the data file's own shape, plus where it was read."""
        out: dict[str, object] = {
            "id": self.id,
            "sglang": self.sglang,
            "kernel_library": (self.kernel_library.to_json()
                               if self.kernel_library is not None else None),
            "option": self.option,
            "choice": self.choice,
            "archs": list(self.archs),
            "quantization": self.quantization,
            "model_family": self.model_family,
            "outcome": self.outcome.value,
            "symptom": self.symptom,
            "urls": list(self.urls),
            "date": self.date,
            "fixed_in": self.fixed_in,
        }
        if self.notes:
            out["notes"] = self.notes
        out["source"] = self.source
        return out
