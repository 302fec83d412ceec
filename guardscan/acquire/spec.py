"""acquire (requirement specs): pip download a pinned wheel into the cache, offline reuse, and pip's failures in one line.

A spec such as ``sglang==0.5.9`` is downloaded with ``pip download --no-deps
--only-binary=:all:`` (never an sdist: building one would run its code) into
``<cache>/wheels/<normalized-spec>/`` and then read as a wheel. Offline, only
a wheel already in the cache will do.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from guardscan.acquire.model import AcquireError, cache_root, one_line

#: How long one ``pip download`` may take, in seconds.
PIP_TIMEOUT_S = 600

_NO_NETWORK_MARKERS = (
    "Failed to establish a new connection",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No route to host",
    "Connection refused",
)


def spec_wheel_dir(spec: str, cache_dir: Path | None = None) -> Path:
    """Where wheels downloaded for ``spec`` live: ``<cache>/wheels/<normalized>``."""
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise AcquireError(f"not a requirement spec: {spec} ({exc})") from None
    return cache_root(cache_dir) / "wheels" / _spec_dirname(requirement)


def parse_spec(text: str) -> Requirement | None:
    """``text`` as a pinnable requirement, or None if it is not one.

    A bare name (``sglang``) parses as a requirement but is refused: it is as
    likely a mistyped path as a request for "whatever is newest".
    """
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    if not requirement.url and not str(requirement.specifier):
        if text.lower().endswith(".whl"):
            return None
        raise AcquireError(
            f"no such file or directory: {text}; to download a release, pin it "
            f"(e.g. {requirement.name}==<version>)"
        )
    return requirement


def _spec_dirname(requirement: Requirement) -> str:
    name = canonicalize_name(requirement.name)
    if requirement.url:
        digest = hashlib.sha256(requirement.url.encode()).hexdigest()[:12]
        return f"{name}-url-{digest}"
    raw = f"{name}{requirement.specifier}"
    return re.sub(r"[^A-Za-z0-9._=+!~-]+", "_", raw)


def wheel_for_spec(requirement: Requirement, spec: str, cache: Path, *, offline: bool) -> Path:
    wheel_dir = cache / "wheels" / _spec_dirname(requirement)
    cached = _matching_wheel(wheel_dir, requirement)
    if cached is not None:
        return cached
    if offline:
        raise AcquireError(
            f"offline and no cached wheel for {spec} in {wheel_dir}; run once "
            f"online or pass a wheel file"
        )
    _pip_download(requirement, spec, wheel_dir)
    found = _matching_wheel(wheel_dir, requirement)
    if found is None:
        raise AcquireError(f"pip download of {spec} produced no matching wheel in {wheel_dir}")
    return found


def _matching_wheel(wheel_dir: Path, requirement: Requirement) -> Path | None:
    """The best wheel in ``wheel_dir`` for ``requirement``: highest version,
    then one this interpreter could install (pip would have picked that)."""
    if not wheel_dir.is_dir():
        return None
    wanted = canonicalize_name(requirement.name)
    supported = {str(t) for t in sys_tags()}
    ranked: list[tuple[Version, bool, str, Path]] = []
    for path in wheel_dir.iterdir():
        if not path.name.endswith(".whl") or not path.is_file():
            continue
        try:
            name, version, _build, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if name != wanted:
            continue
        if not requirement.url and not requirement.specifier.contains(version, prereleases=True):
            continue
        compatible = any(str(t) in supported for t in tags)
        ranked.append((version, compatible, path.name, path))
    if not ranked:
        return None
    return max(ranked)[3]


def _pip_download(requirement: Requirement, spec: str, wheel_dir: Path) -> None:
    # Download into a private temp dir and move the wheel into place, so a
    # concurrent run never picks up a half-written file.
    parent = wheel_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=parent))
    except OSError as exc:
        raise AcquireError(f"cannot write the cache {parent}: {exc}") from None
    pip_spec = str(requirement)
    try:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(staging),
            pip_spec,
        ]
        try:
            result = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=PIP_TIMEOUT_S,
                env={**os.environ, "PIP_NO_INPUT": "1"},
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AcquireError(
                f"pip could not download {spec} (timed out after {PIP_TIMEOUT_S}s)"
            ) from None
        except OSError as exc:
            raise AcquireError(f"pip could not download {spec} (cannot run pip: {exc})") from None
        if result.returncode != 0:
            raise AcquireError(_pip_failure(spec, f"{result.stdout}\n{result.stderr}"))
        wheel_dir.mkdir(parents=True, exist_ok=True)
        for downloaded in staging.iterdir():
            if downloaded.name.endswith(".whl"):
                os.replace(downloaded, wheel_dir / downloaded.name)
    except OSError as exc:
        raise AcquireError(f"cannot write the cache {wheel_dir}: {exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _pip_failure(spec: str, output: str) -> str:
    """One line saying why pip failed, with pip's own most telling line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    network = next((line for line in lines if any(m in line for m in _NO_NETWORK_MARKERS)), None)
    errors = [line for line in lines if line.startswith("ERROR:")]
    telling = next(
        (line for line in reversed(errors) if "No matching distribution" in line),
        errors[-1] if errors else (lines[-1] if lines else "no output"),
    )
    if network is not None:
        detail = next((m for m in _NO_NETWORK_MARKERS if m in network), network)
        reason = f"no network? could not reach the package index: {detail}"
    elif "No matching distribution" in telling or "Could not find a version" in telling:
        reason = "no matching wheel; guardscan never builds sdists"
    else:
        reason = "pip failed"
    return one_line(f"pip could not download {spec} ({reason}): {telling}")
