"""binaries: which GPU architectures a compiled package's libraries hold code for, read from their fatbins.

Read as bytes, never loaded: no ``dlopen``, no import, nothing executed. One
small module per concern:

    source.py         the bytes of a library: a file, memory, a zip member's stream
    elf.py            an ELF64 file's section table, and a section's place
    fatbin.py         a .nv_fatbin section's containers and entry headers
    library.py        one library: its facts, or one failure value
    wheel_members.py  the .so members of a wheel, read from the zip
    cache.py          facts per wheel sha256, as small JSON (atomic writes)
    driver.py         a wheel or a library file, through the cache
    packages.py       the compiled packages a release pins, downloaded
    compat.py         which entries a given GPU could load
    model.py          the plain data: FatbinEntry, LibraryFacts, ReadFailure

``python -m guardscan.binaries WHEEL_OR_SO_OR_SPEC`` prints each library's
SASS and PTX targets. docs/binaries.md has the format, the limits, and the
cross-check against NVIDIA's cuobjdump.

The names below are the public API; they are imported on first use, so that
importing one module (the cross-check script on a bare machine) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "FatbinEntry": "guardscan.binaries.model",
    "LibraryFacts": "guardscan.binaries.model",
    "LibraryOutcome": "guardscan.binaries.model",
    "ReadFailure": "guardscan.binaries.model",
    "read_library": "guardscan.binaries.library",
    "read_library_file": "guardscan.binaries.library",
    "WheelLibraries": "guardscan.binaries.wheel_members",
    "read_file": "guardscan.binaries.driver",
    "read_wheel": "guardscan.binaries.driver",
    "COMPILED_DISTS": "guardscan.binaries.packages",
    "download_compiled": "guardscan.binaries.packages",
    "pinned_compiled": "guardscan.binaries.packages",
    "loadable_entries": "guardscan.binaries.compat",
    "entry_runs_on": "guardscan.binaries.compat",
}

__all__ = [
    "COMPILED_DISTS",
    "FatbinEntry",
    "LibraryFacts",
    "LibraryOutcome",
    "ReadFailure",
    "WheelLibraries",
    "download_compiled",
    "entry_runs_on",
    "loadable_entries",
    "pinned_compiled",
    "read_file",
    "read_library",
    "read_library_file",
    "read_wheel",
]

if TYPE_CHECKING:
    from guardscan.binaries.compat import entry_runs_on, loadable_entries
    from guardscan.binaries.driver import read_file, read_wheel
    from guardscan.binaries.library import read_library, read_library_file
    from guardscan.binaries.model import FatbinEntry, LibraryFacts, LibraryOutcome, ReadFailure
    from guardscan.binaries.packages import COMPILED_DISTS, download_compiled, pinned_compiled
    from guardscan.binaries.wheel_members import WheelLibraries


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guardscan.binaries' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
