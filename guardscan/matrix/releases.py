"""matrix (releases): the release specs a version range names, read from the package index.

``--releases ">=0.5.19"`` becomes ``sglang==0.5.19``, ``sglang==0.5.20``, ...:
the versions ``pip index versions`` lists (so a configured mirror or
``--index-url`` in pip's own configuration is honoured), filtered by the
range with ``packaging``, pre-releases only when the range names one, oldest
first. Offline, the versions are those with a wheel in the download cache.
Nothing is downloaded here; each spec is acquired as any other target is.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from guardscan.acquire.model import AcquireError, cache_root, one_line

__all__ = ["PIP_INDEX_TIMEOUT_S", "indexed_versions", "release_specs", "select_versions"]

#: How long ``pip index versions`` may take, in seconds.
PIP_INDEX_TIMEOUT_S = 120

_AVAILABLE = re.compile(r"Available versions:\s*(.+)")


def release_specs(package: str, releases: str, *, cache_dir: Path | None = None,
                  offline: bool = False) -> list[str]:
    """``package==V`` for every version in the range ``releases``, oldest
    first; AcquireError for a range that does not parse, an index pip cannot
    read, or a range no version falls in."""
    try:
        specifier = SpecifierSet(releases)
    except InvalidSpecifier:
        raise AcquireError(f"--releases {releases!r} is not a version range "
                           "(e.g. '>=0.5.19' or '>=0.5.9,<0.5.20')") from None
    versions = (cached_versions(package, cache_dir) if offline
                else indexed_versions(package))
    chosen = select_versions(versions, specifier)
    if not chosen:
        where = "in the download cache (--offline)" if offline else "on the package index"
        newest = f"; newest {max(versions)}" if versions else ""
        raise AcquireError(f"no {package} release {where} matches --releases "
                           f"{releases!r}{newest}")
    return [f"{package}=={version}" for version in chosen]


def select_versions(versions: list[Version], specifier: SpecifierSet) -> list[Version]:
    """The versions in the range, oldest first; pre-releases only when the
    range itself names one (``>=0.6.0rc1``), as pip decides."""
    return sorted(set(specifier.filter(versions)))


def indexed_versions(package: str) -> list[Version]:
    """Every version ``pip index versions`` lists for ``package``."""
    command = [sys.executable, "-m", "pip", "index", "versions", package,
               "--disable-pip-version-check"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=PIP_INDEX_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AcquireError(f"pip could not list the releases of {package} (timed out "
                           f"after {PIP_INDEX_TIMEOUT_S}s)") from None
    except OSError as exc:
        raise AcquireError(f"pip could not list the releases of {package} ({exc})") from None
    match = _AVAILABLE.search(done.stdout)
    if done.returncode != 0 or match is None:
        lines = [line for line in done.stderr.splitlines()
                 if line.strip() and not line.startswith("WARNING")]
        raise AcquireError(one_line(f"pip could not list the releases of {package}: "
                                    f"{lines[-1].strip() if lines else 'no versions found'}"))
    return _parse_versions(match.group(1).split(","))


def cached_versions(package: str, cache_dir: Path | None) -> list[Version]:
    """The versions of ``package`` with a wheel in the download cache."""
    wanted = canonicalize_name(package)
    found: list[str] = []
    wheels = cache_root(cache_dir) / "wheels"
    if wheels.is_dir():
        for wheel in wheels.glob("*/*.whl"):
            try:
                name, version, _, _ = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if name == wanted:
                found.append(str(version))
    return _parse_versions(found)


def _parse_versions(texts: list[str]) -> list[Version]:
    out = set()
    for text in texts:
        try:
            out.add(Version(text.strip()))
        except InvalidVersion:
            continue
    return sorted(out)
