"""acquire (files): which ``.py`` files of a package are scanned, and which are left out and why.

Shared by every kind of target: a checkout, an extracted wheel and the
installed package are all walked the same way.
"""

from __future__ import annotations

import os
from pathlib import Path


def walk_python_files(
    root: Path, package: str
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Every ``.py`` file under ``root/package``, as sorted POSIX paths
    relative to ``root``, plus what was left out and why (see
    ``SourceTree.skipped``). Symlinked directories are not followed (no
    loops); unreadable directories are skipped."""
    found: list[str] = []
    skipped: list[tuple[str, str]] = []

    def rel_of(path: Path) -> str:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            return str(path)

    def unlistable(error: OSError) -> None:
        where = Path(error.filename) if error.filename else root / package
        skipped.append((rel_of(where), f"unreadable directory: {error.strerror or error}"))

    for dirpath, dirnames, filenames in os.walk(
        root / package, onerror=unlistable, followlinks=False
    ):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            if name == "__pycache__":
                continue
            if (here / name).is_symlink():
                skipped.append((rel_of(here / name), "symlinked directory, not followed"))
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            if not name.endswith(".py"):
                continue
            full = here / name
            if not full.is_file():
                reason = ("broken or looping symlink" if full.is_symlink() and not full.exists()
                          else "not a regular file")
                skipped.append((rel_of(full), reason))
                continue
            found.append(full.relative_to(root).as_posix())
    return tuple(sorted(found)), tuple(sorted(skipped))
