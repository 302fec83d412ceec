"""acquire (files): which ``.py`` files of a package are scanned, and which are left out and why.

Shared by every kind of target: a checkout, an extracted wheel and the
installed package are all walked the same way. The walk uses ``os.scandir``
(the entry types come with the listing, so a regular file costs no ``stat``);
a warm scan pays this walk on every run.
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
    base = os.path.join(str(root), "")

    def rel_of(path: str) -> str:
        if path.startswith(base):
            return Path(path[len(base):]).as_posix()
        return path

    pending = [(os.path.join(str(root), package), package)]
    while pending:
        here, rel_here = pending.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError as error:
            skipped.append((rel_of(here), f"unreadable directory: {error.strerror or error}"))
            continue
        for entry in entries:
            rel = f"{rel_here}/{entry.name}"
            try:
                if entry.is_symlink():
                    # through the link, as os.path does: a loop or a dangling
                    # link is neither a directory nor a file
                    if os.path.isdir(entry.path):
                        skipped.append((rel, "symlinked directory, not followed"))
                        continue
                    if not entry.name.endswith(".py"):
                        continue
                    if not os.path.isfile(entry.path):
                        reason = ("broken or looping symlink" if not os.path.exists(entry.path)
                                  else "not a regular file")
                        skipped.append((rel, reason))
                        continue
                    found.append(rel)
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append((entry.path, rel))
                elif entry.name.endswith(".py"):
                    if entry.is_file(follow_symlinks=False):
                        found.append(rel)
                    else:
                        skipped.append((rel, "not a regular file"))
            except OSError:
                skipped.append((rel, "not a regular file"))
    return tuple(sorted(found)), tuple(sorted(skipped))
