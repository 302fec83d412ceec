"""acquire (requirement specs): pip download a pinned wheel into the cache, offline reuse, and pip's failures in one line.

A spec such as ``sglang==0.5.9`` is downloaded with ``pip download --no-deps
--only-binary=:all:`` (never an sdist: building one would run its code) into
``<cache>/wheels/<normalized-spec>/`` and then read as a wheel. Offline, only
a wheel already in the cache will do.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from guardscan.acquire.model import AcquireError, cache_root, mark_used, one_line

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
        mark_used(wheel_dir)
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
    try:
        _download_any_platform(requirement, spec, staging)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        for downloaded in staging.iterdir():
            if downloaded.name.endswith(".whl"):
                os.replace(downloaded, wheel_dir / downloaded.name)
    except OSError as exc:
        raise AcquireError(f"cannot write the cache {wheel_dir}: {exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _download_any_platform(requirement: Requirement, spec: str, staging: Path) -> None:
    """``pip download`` for this interpreter and platform; when no wheel fits
    them, again for a Python version and platform a wheel of the release is
    built for (its files are Python source whatever the tag).

    Which tags to ask for, the configured indexes say: pip's own debug listing
    of the links it found (``-vv``, so pip's index configuration, find-links
    and credentials all apply) names every file of the release. When that
    listing names no link at all (a pip that logs differently), a bounded list
    is tried: CPython 3.10 to 3.14 on the manylinux platforms of this machine's
    and the other common architecture. Always ``--only-binary=:all:``: never an
    sdist, never built.
    """
    first = _run_pip(_download_command(requirement, staging), spec)
    if first.returncode == 0:
        return
    output = f"{first.stdout}\n{first.stderr}"
    failure = _pip_failure(spec, output)
    if not _no_wheel_for_here(output):
        raise AcquireError(failure)
    targets = _retry_targets(requirement, spec, staging)
    if _has_wheel(staging):  # the listing run itself found one (the index changed)
        return
    for target in targets:
        retry = _run_pip(_download_command(requirement, staging, target), spec)
        if retry.returncode == 0 and _has_wheel(staging):
            return
    raise AcquireError(failure)


def _has_wheel(staging: Path) -> bool:
    return any(p.name.endswith(".whl") for p in staging.iterdir())


def _download_command(requirement: Requirement, staging: Path,
                      target: Sequence[str] = (), verbosity: str = "-q") -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        verbosity,
        "-d",
        str(staging),
        *target,
        str(requirement),
    ]


def _run_pip(command: list[str], spec: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
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


def _no_wheel_for_here(output: str) -> bool:
    """pip found no distribution to fit (not: no network, nor another error)."""
    if any(marker in output for marker in _NO_NETWORK_MARKERS):
        return False
    return "No matching distribution" in output or "Could not find a version" in output \
        or "is not a supported wheel on this platform" in output


_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.+!%-]+\.whl\b")
_LINK = re.compile(r"(?:Found|Skipping) link", re.IGNORECASE)


def offered_wheels(requirement: Requirement, listing: str) -> tuple[list[str], bool]:
    """(the wheel file names of ``requirement`` that pip's ``-vv`` listing
    names, whether the listing names any link at all). A URL requirement
    offers the wheel its URL names."""
    names: list[str] = []
    texts = [requirement.url] if requirement.url else \
        [line for line in listing.splitlines() if _LINK.search(line)]
    wanted = canonicalize_name(requirement.name)
    for text in texts:
        for match in _WHEEL_NAME.finditer(text or ""):
            filename = unquote(match.group(0).rsplit("/", 1)[-1])
            try:
                name, version, _build, _tags = parse_wheel_filename(filename)
            except InvalidWheelFilename:
                continue
            if name != wanted:
                continue
            if not requirement.url and not requirement.specifier.contains(
                    version, prereleases=True):
                continue
            if filename not in names:
                names.append(filename)
    return names, bool(texts)


def _retry_targets(requirement: Requirement, spec: str, staging: Path) -> list[list[str]]:
    """The pip target options to retry with, best first (see
    ``_download_any_platform``)."""
    listing = ""
    if not requirement.url:
        run = _run_pip(_download_command(requirement, staging, verbosity="-vv"), spec)
        listing = f"{run.stdout}\n{run.stderr}"
    names, logged = offered_wheels(requirement, listing)
    if names:
        return [target_options(best_wheel(names))]
    return [] if logged else fallback_targets()


def _python_here() -> tuple[int, int]:
    return sys.version_info[0], sys.version_info[1]


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def best_wheel(names: Sequence[str]) -> str:
    """The wheel to fetch when none fits this interpreter: one for this
    machine's architecture (or any), for the Python version nearest this one
    (the newer on a tie), then by name, so the choice is stable."""
    here = _python_here()[0] * 100 + _python_here()[1]
    machine = _machine()

    def rank(name: str) -> tuple[int, int, int, str]:
        tags = parse_wheel_filename(name)[3]
        on_machine = any(t.platform == "any" or machine in t.platform for t in tags)
        versions = [_python_number(t.interpreter) for t in tags]
        nearest = min(versions, key=lambda v: (abs(v - here), -v))
        return (0 if on_machine else 1, abs(nearest - here), -nearest, name)

    return min(names, key=rank)


def _python_number(interpreter: str) -> int:
    """``cp312`` -> 312, ``py3`` -> 300 (any 3.x), ``pp310`` -> 310."""
    digits = re.sub(r"^[a-z]+", "", interpreter)
    if len(digits) == 1:
        return int(digits) * 100 + _python_here()[1]
    return int(digits[0]) * 100 + int(digits[1:] or 0) if digits.isdigit() else 0


def target_options(wheel: str) -> list[str]:
    """pip's target options (``--python-version``, ``--implementation``,
    ``--abi``, ``--platform``) under which ``wheel`` is the one to fetch."""
    tags = sorted(parse_wheel_filename(wheel)[3], key=str)
    here = _python_here()[0] * 100 + _python_here()[1]
    tag = min(tags, key=lambda t: (abs(_python_number(t.interpreter) - here), str(t)))
    implementation = re.sub(r"\d+$", "", tag.interpreter) or "py"
    digits = tag.interpreter[len(implementation):]
    version = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    out = ["--python-version", version, "--implementation", implementation]
    for abi in dict.fromkeys(t.abi for t in tags if t.interpreter == tag.interpreter):
        out += ["--abi", abi]
    for plat in dict.fromkeys(t.platform for t in tags if t.interpreter == tag.interpreter):
        out += ["--platform", plat]
    return out


#: manylinux glibc minors tried when the index cannot be asked (2_17 is
#: manylinux2014, the oldest a current wheel is built for)
_FALLBACK_GLIBC = range(17, 41)
_FALLBACK_PYTHONS = range(10, 15)


def fallback_targets() -> list[list[str]]:
    """Bounded retries: CPython 3.10..3.14 (not this one), each with every
    manylinux platform tag of this machine's architecture and the other common
    one, plus ``any``."""
    machines = list(dict.fromkeys([_machine(), "x86_64", "aarch64"]))
    platforms = [f"manylinux_2_{minor}_{m}" for m in machines for minor in _FALLBACK_GLIBC]
    platforms += [f"manylinux2014_{m}" for m in machines] + ["any"]
    out: list[list[str]] = []
    for minor in _FALLBACK_PYTHONS:
        if (3, minor) == _python_here():
            continue
        target = ["--python-version", f"3.{minor}", "--implementation", "cp",
                  "--abi", f"cp3{minor}", "--abi", "abi3", "--abi", "none"]
        for plat in platforms:
            target += ["--platform", plat]
        out.append(target)
    return out


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
