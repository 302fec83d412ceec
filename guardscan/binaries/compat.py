"""binaries (compatibility): which fatbin entries a GPU of a given compute capability could load.

What it judges: one entry against one compute capability, by CUDA's own
rules for binary and PTX compatibility:

* SASS ``sm_XY`` (and the family ``sm_XYf``, whose cubin is the same) runs on
  X.Z for Z >= Y, same major: ``sm_80`` on sm86 and sm89, ``sm_100f`` on
  sm100 and sm103, ``sm_120`` on sm121; never on another major;
* SASS ``sm_XYa`` runs on X.Y only;
* PTX ``compute_XY`` can be JIT-compiled for any X'.Y' >= X.Y, later majors
  included;
* PTX ``compute_XYf`` for the same major at minor >= Y; ``compute_XYa`` for
  X.Y only.

Only loadable entries count (``.nv_fatbin``; relocatable device code is never
loaded as it is).

Why it matters: "this library holds code that sm120 could load" is the fact a
verdict rule needs; it is not the same as "an entry says 120" (an ``sm_120a``
entry does nothing for sm121, a ``compute_90`` entry could serve sm120).

Known limits: this says what the driver could load, not whether a kernel is
correct or fast there, nor whether JIT compilation is allowed at run time
(``CUDA_DISABLE_PTX_JIT``), nor whether the installed driver understands the
PTX version. No verdict is decided here.

Example::

    >>> from guardscan.binaries.model import FatbinEntry
    >>> def sass(sm, variant=""):
    ...     return FatbinEntry(".nv_fatbin", 0, 0, 2, sm, variant, 0, 64, 0, "", 0, 0,
    ...                        (1, 8), sm)
    >>> entry_runs_on(sass(100, "f"), 10, 3), entry_runs_on(sass(103, "a"), 10, 0)
    (True, False)
"""

from __future__ import annotations

from guardscan.binaries.model import FatbinEntry, LibraryFacts

__all__ = ["entry_runs_on", "loadable_entries"]


def entry_runs_on(entry: FatbinEntry, major: int, minor: int) -> bool:
    """Whether a GPU of compute capability ``major.minor`` could load ``entry``."""
    if not entry.loadable or entry.kind not in ("sass", "ptx"):
        return False
    entry_major, entry_minor = divmod(entry.sm, 10)
    if entry.variant == "a":
        return (major, minor) == (entry_major, entry_minor)
    same_family = major == entry_major and minor >= entry_minor
    if entry.kind == "sass" or entry.variant == "f":
        return same_family
    return (major, minor) >= (entry_major, entry_minor)


def loadable_entries(facts: LibraryFacts, major: int, minor: int) -> tuple[FatbinEntry, ...]:
    """The entries of ``facts`` a GPU of compute capability ``major.minor`` could load."""
    return tuple(e for e in facts.entries if entry_runs_on(e, major, minor))
