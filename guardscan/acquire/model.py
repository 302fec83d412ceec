"""acquire (model): the SourceTree a target becomes, the error when it can't, the cache.

Every kind of target (checkout, wheel, spec, installed package) ends as one
``SourceTree``; every failure ends as one ``AcquireError`` whose message is a
single line for the user.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLE_SPEC = "sglang==0.5.9"

#: The end of every "I can't use that target" message: what a target may be.
EXPECTED = (
    "expected a checkout (a repo root with python/<package>/, or the package "
    "directory), a .whl file, or a spec such as " + EXAMPLE_SPEC
)


class AcquireError(Exception):
    """A target that can't be had; the message is one line for the user.

    ``reason``: the cause alone, without what to do about it (a summary that
    says what to do in its own words shows this); the message when not given."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


@dataclass(frozen=True)
class SourceTree:
    """A package's source, as plain files on disk.

    ``root`` is the directory that holds the package directory, so
    ``root / "sglang/srt/utils/common.py"`` is a file; ``files`` are the
    ``.py`` files as POSIX paths relative to ``root`` (sorted); evidence paths
    use the same relative form. ``requires`` are the distribution's declared
    requirements (``Requires-Dist`` lines, or ``project.dependencies`` of a
    checkout's pyproject.toml). ``skipped`` are the paths under the package
    left out of ``files``, as sorted (POSIX path relative to ``root``, reason):
    directories that could not be listed, symlinked directories (never
    followed: no loops), and ``*.py`` entries that are not regular files
    (broken or looping symlinks, fifos, devices: reading one could hang). A
    report should say so, since their code is not in the scan.
    """

    root: Path
    package: str
    version: str | None
    files: tuple[str, ...]
    origin: str
    requires: tuple[str, ...] = field(default=())
    skipped: tuple[tuple[str, str], ...] = field(default=())
    #: the sha256 of the wheel this tree was extracted from into the cache
    #: (``acquire.wheel``), else "": such a tree is written once, whole, and
    #: never changes, so its files need no stat to be known unchanged
    wheel_sha256: str = ""

    def path_of(self, rel: str) -> Path:
        return self.root / rel

    def module_name(self, rel: str) -> str:
        parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)


def default_cache_dir() -> Path:
    """``$GUARDSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/guardscan``, else
    ``~/.cache/guardscan``."""
    explicit = os.environ.get("GUARDSCAN_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "guardscan"
    return Path.home() / ".cache" / "guardscan"


#: a cached tree or download folder used within this long is not marked again
_MARK_EVERY_S = 3600


def mark_used(path: Path) -> None:
    """Set the mtime of a cached tree or download folder to now (at most once
    an hour): ``guardscan cache`` and the size limit remove what was used
    longest ago (guardscan.memo.disk)."""
    try:
        if time.time() - path.stat().st_mtime > _MARK_EVERY_S:
            os.utime(path)
    except OSError:
        pass


def cache_root(cache_dir: Path | None) -> Path:
    """``cache_dir`` as given, else ``default_cache_dir()``."""
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()


def one_line(text: str, limit: int = 400) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
