"""acquire: turn what the user named into a SourceTree read as files.

A target is one of:

* a checkout: a repo root holding ``python/<package>/`` (SGLang's layout), a
  directory holding ``<package>/__init__.py``, or the package directory itself;
* a wheel file (``*.whl``), whose text files are extracted into the cache;
* a requirement spec such as ``sglang==0.5.9``, downloaded with
  ``pip download --no-deps --only-binary=:all:`` (never an sdist: building one
  would run its code) and then read as a wheel;
* ``None``: the installed package, located with ``importlib.util.find_spec``
  on the top-level name, which finds it without importing it.

Nothing here imports or executes the scanned code. Versions come from
metadata read as text (dist-info ``METADATA``, ``pyproject.toml``, a
``__version__ = "..."`` line).

Cache layout (``default_cache_dir()`` unless a ``cache_dir`` is passed)::

    <cache>/wheels/<normalized-spec>/<wheel>.whl     pip downloads, per spec
    <cache>/trees/<wheel-stem>-<sha256[:12]>/...     text files of one wheel

Both are written through a temporary directory in the same parent and moved
into place with ``os.replace``, so concurrent runs never see half a tree.
"""

from __future__ import annotations

import ast
import contextlib
import email.message
import email.parser
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project targets 3.11; 3.10 reads no pyproject
    tomllib = None

__all__ = [
    "KERNEL_DIST",
    "KERNEL_PACKAGE",
    "MAX_EXTRACT_BYTES",
    "AcquireError",
    "SourceTree",
    "acquire",
    "acquire_kernels",
    "default_cache_dir",
    "kernel_requirement",
    "spec_wheel_dir",
]

#: Refuse a wheel whose extracted text would exceed this many bytes (a zip bomb
#: guard; FlashInfer 0.7.2, the largest real target, extracts to ~450 MB).
MAX_EXTRACT_BYTES = 2 * 1024**3

#: ``version.py`` / ``_version.py`` larger than this are not read for a version
#: (a real one is a few lines; a huge one is not worth parsing).
MAX_VERSION_FILE_BYTES = 1024 * 1024

#: How long one ``pip download`` may take, in seconds.
PIP_TIMEOUT_S = 600

#: The kernel library SGLang pins, as a distribution and as an import package.
KERNEL_DIST = "flashinfer-python"
KERNEL_PACKAGE = "flashinfer"

# Text the later stages read: Python, JIT specs and kernel lists (json), the
# C++/CUDA launchers whose checks have the last word at run time (FlashInfer
# ships them under flashinfer/data/), and metadata. `.inl` and `.jinja` are
# CUDA sources too (included headers, JIT templates). Binaries (.so, cubins)
# are never extracted.
_TEXT_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".json",
        ".cu",
        ".cuh",
        ".h",
        ".hpp",
        ".cpp",
        ".cc",
        ".inl",
        ".jinja",
        ".txt",
        ".toml",
    }
)
_METADATA_RE = re.compile(r"^[^/]+\.dist-info/METADATA$")
_NO_NETWORK_MARKERS = (
    "Failed to establish a new connection",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No route to host",
    "Connection refused",
)
_EXAMPLE_SPEC = "sglang==0.5.9"


class AcquireError(Exception):
    """A target that can't be had; the message is one line for the user."""


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

    def path_of(self, rel: str) -> Path:
        return self.root / rel

    def module_name(self, rel: str) -> str:
        parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)


# --------------------------------------------------------------------------
# Entry points


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


def acquire(
    target: str | os.PathLike[str] | None,
    package: str = "sglang",
    *,
    cache_dir: Path | None = None,
    offline: bool = False,
) -> SourceTree:
    """Resolve ``target`` (checkout, wheel, spec, or None for the installed
    package) into a SourceTree for the import package ``package``.

    For wheels and specs ``package`` is taken when the wheel holds it, and is
    otherwise inferred from the distribution (``flashinfer-python`` ->
    ``flashinfer``), so ``acquire("flashinfer-python==0.6.3")`` works as is.
    Raises AcquireError with a one-line message when the target can't be had.
    """
    if target is None:
        return _acquire_installed(package)
    text = os.fspath(target)
    if not text.strip():
        raise AcquireError(f"empty target; {_EXPECTED}")
    path = Path(text).expanduser()
    if path.exists():
        if path.is_dir():
            return _acquire_checkout(path, package)
        if path.is_file() and path.name.lower().endswith(".whl"):
            return _acquire_wheel(path, package, _cache(cache_dir), origin=f"wheel {path}")
        raise AcquireError(f"not a directory or a .whl file: {text}; {_EXPECTED}")
    requirement = _parse_spec(text)
    if requirement is None:
        raise AcquireError(f"no such file or directory: {text}; {_EXPECTED}")
    cache = _cache(cache_dir)
    wheel = _wheel_for_spec(requirement, text, cache, offline=offline)
    return _acquire_wheel(wheel, package, cache, origin=f"spec {text} -> {wheel}")


def kernel_requirement(tree: SourceTree, kernel_dist: str = KERNEL_DIST) -> str | None:
    """The spec of ``kernel_dist`` that ``tree`` pins, ready for pip download.

    Extras are dropped (``flashinfer_python[cu13]==0.7.2`` ->
    ``flashinfer-python==0.7.2``: extras pull in other distributions, and we
    download with --no-deps anyway). A requirement of the plain install wins;
    one only active under an extra (``; extra == "srt"``, how releases before
    0.5 pulled in their server runtime) is taken when there is no other. None
    when the tree declares no such requirement.
    """
    wanted = canonicalize_name(kernel_dist)
    found: list[Requirement] = []
    for line in tree.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != wanted:
            continue
        found.append(req)
    if not found:
        return None
    # An unconditional pin beats one behind a platform marker, which beats one
    # behind an extra.
    found.sort(key=lambda r: (r.marker is not None,
                              r.marker is not None and bool(re.search(r"\bextra\b",
                                                                      str(r.marker)))))
    best = found[0]
    if best.url:
        return f"{wanted} @ {best.url}"
    return f"{wanted}{best.specifier}"


def acquire_kernels(
    tree: SourceTree,
    explicit: str | os.PathLike[str] | None,
    *,
    cache_dir: Path | None = None,
    offline: bool = False,
) -> SourceTree:
    """The FlashInfer source paired with ``tree``.

    ``explicit`` (a path, wheel or spec) if given; else the version ``tree``
    pins (see ``kernel_requirement``); else the installed ``flashinfer``. A
    pinned version that can't be downloaded is an error, not a silent fall
    back to whatever is installed: a different version would give different
    answers.
    """
    if explicit is not None:
        return acquire(explicit, KERNEL_PACKAGE, cache_dir=cache_dir, offline=offline)
    pinned = kernel_requirement(tree)
    if pinned is not None:
        return acquire(pinned, KERNEL_PACKAGE, cache_dir=cache_dir, offline=offline)
    try:
        return _acquire_installed(KERNEL_PACKAGE)
    except AcquireError:
        raise AcquireError(
            f"{tree.package} {tree.version or '(unknown version)'} declares no "
            f"{KERNEL_DIST} requirement and no installed {KERNEL_PACKAGE} was found; "
            f"pass the kernel library explicitly (a checkout, a wheel, or a spec "
            f"such as {KERNEL_DIST}==0.6.3)"
        ) from None


def spec_wheel_dir(spec: str, cache_dir: Path | None = None) -> Path:
    """Where wheels downloaded for ``spec`` live: ``<cache>/wheels/<normalized>``."""
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise AcquireError(f"not a requirement spec: {spec} ({exc})") from None
    return _cache(cache_dir) / "wheels" / _spec_dirname(requirement)


_EXPECTED = (
    "expected a checkout (a repo root with python/<package>/, or the package "
    "directory), a .whl file, or a spec such as " + _EXAMPLE_SPEC
)


# --------------------------------------------------------------------------
# Checkouts


def _acquire_checkout(path: Path, package: str) -> SourceTree:
    path = path.resolve()
    if (path / "python" / package / "__init__.py").is_file():
        root = path / "python"
    elif (path / package / "__init__.py").is_file():
        root = path
    elif path.name == package and (path / "__init__.py").is_file():
        root = path.parent
    elif (path / "__init__.py").is_file():
        raise AcquireError(f"{path} is the package {path.name!r}, not {package!r}; {_EXPECTED}")
    else:
        raise AcquireError(f"no {package} package found in {path}; {_EXPECTED}")

    version: str | None = None
    requires: tuple[str, ...] = ()
    # SGLang keeps pyproject.toml next to the package (python/); other repos
    # keep it at the repo root.
    for candidate in (root / "pyproject.toml", path / "pyproject.toml"):
        project = _pyproject_project(candidate)
        if project is not None:
            raw_version = project.get("version")
            if isinstance(raw_version, str):
                version = raw_version
            deps = project.get("dependencies")
            if isinstance(deps, list):
                requires = tuple(d for d in deps if isinstance(d, str))
            break
    if version is None:
        version = _version_from_source(root / package)
    files, skipped = _walk_python_files(root, package)
    return SourceTree(
        root=root,
        package=package,
        version=version,
        files=files,
        origin=f"checkout {path}",
        requires=requires,
        skipped=skipped,
    )


def _pyproject_project(path: Path) -> dict[str, object] | None:
    if tomllib is None or not path.is_file():
        return None
    try:
        with path.open("rb") as stream:
            data = tomllib.load(stream)
    # TOMLDecodeError and UnicodeDecodeError are ValueErrors; tomllib recurses
    # on nested arrays and tables.
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    project = data.get("project")
    return project if isinstance(project, dict) else None


def _version_from_source(package_dir: Path) -> str | None:
    """``__version__ = "..."`` at module level of ``_version.py`` (written by
    setuptools-scm) or ``version.py``. Assignments nested in try/except are
    fallbacks (SGLang's ``version.py`` ends in ``"0.0.0.dev0"``) and are
    ignored."""
    for name in ("_version.py", "version.py"):
        path = package_dir / name
        try:
            if not path.is_file() or path.stat().st_size > MAX_VERSION_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for stmt in module.body:
            targets: list[ast.expr]
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            else:
                continue
            # `__version__ = version = "1.2.3"` keeps chained targets in one list.
            if not any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    return None


def _python_files(root: Path, package: str) -> tuple[str, ...]:
    """Every ``.py`` file under ``root/package``, as sorted POSIX paths
    relative to ``root``. Symlinked directories are not followed (no loops);
    unreadable directories are skipped."""
    return _walk_python_files(root, package)[0]


def _walk_python_files(
    root: Path, package: str
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``_python_files``, plus what was left out and why (see ``SourceTree.skipped``)."""
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


# --------------------------------------------------------------------------
# The installed package


def _acquire_installed(package: str) -> SourceTree:
    missing = AcquireError(
        f"no installed {package} found; pass a checkout path, a wheel file, "
        f"or a spec such as {package}==<version> (e.g. {_EXAMPLE_SPEC})"
    )
    if not package.isidentifier():
        # A dotted name would make find_spec import the parent package.
        raise AcquireError(f"not a top-level package name: {package!r}")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        raise missing from None
    if spec is None:
        raise missing
    locations = list(spec.submodule_search_locations or ())
    if locations:
        package_dir = Path(locations[0])
    elif spec.origin and spec.origin.endswith("__init__.py"):
        package_dir = Path(spec.origin).parent
    else:
        raise AcquireError(f"installed {package} is a single module ({spec.origin}), not a package")
    package_dir = package_dir.resolve()
    root = package_dir.parent
    version, requires = _installed_metadata(package)
    files, skipped = _walk_python_files(root, package_dir.name)
    return SourceTree(
        root=root,
        package=package_dir.name,
        version=version,
        files=files,
        origin=f"installed {package_dir}",
        requires=requires,
        skipped=skipped,
    )


def _installed_metadata(package: str) -> tuple[str | None, tuple[str, ...]]:
    """Version and requirements of the distribution providing ``package``,
    read from its installed metadata (never from the module)."""
    candidates = [package]
    # A broken dist-info elsewhere on sys.path must not stop us.
    with contextlib.suppress(OSError, ValueError):
        candidates.extend(importlib.metadata.packages_distributions().get(package, ()))
    for dist_name in candidates:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
            continue
        version = dist.version if isinstance(dist.version, str) else None
        return version, tuple(dist.requires or ())
    return None, ()


# --------------------------------------------------------------------------
# Specs: pip download into the cache


def _parse_spec(text: str) -> Requirement | None:
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


def _wheel_for_spec(requirement: Requirement, spec: str, cache: Path, *, offline: bool) -> Path:
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
    return _one_line(f"pip could not download {spec} ({reason}): {telling}")


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------
# Wheels: extract the text into the cache


def _acquire_wheel(wheel: Path, package: str, cache: Path, *, origin: str) -> SourceTree:
    wheel = wheel.resolve()
    if not zipfile.is_zipfile(wheel):
        raise AcquireError(f"not a wheel (not a zip file): {wheel}")
    stem = wheel.name[: -len(".whl")]
    tree_dir = cache / "trees" / f"{stem}-{_sha256(wheel)[:12]}"
    if not tree_dir.is_dir():
        _extract_wheel(wheel, tree_dir)
    metadata = _read_metadata(tree_dir, _wheel_dist_name(wheel.name))
    version = metadata.get("Version") if metadata is not None else None
    requires = tuple(metadata.get_all("Requires-Dist") or ()) if metadata is not None else ()
    dist_name = (metadata.get("Name") if metadata is not None else None) or _wheel_dist_name(
        wheel.name
    )
    chosen = _wheel_package(tree_dir, package, dist_name, wheel)
    files, skipped = _walk_python_files(tree_dir, chosen)
    return SourceTree(
        root=tree_dir,
        package=chosen,
        version=str(version) if version is not None else None,
        files=files,
        origin=origin,
        requires=tuple(str(r) for r in requires),
        skipped=skipped,
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise AcquireError(f"cannot read {path}: {exc}") from None
    return digest.hexdigest()


def _wheel_dist_name(filename: str) -> str:
    return filename.split("-", 1)[0]


def _unsafe_member(name: str) -> bool:
    """A member path that would land outside the extraction directory."""
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return True
    return ".." in PurePosixPath(name).parts


def _wanted_member(name: str) -> bool:
    if name.endswith("/"):
        return False
    if _METADATA_RE.match(name):
        return True
    return PurePosixPath(name).suffix.lower() in _TEXT_SUFFIXES


def _extract_wheel(wheel: Path, tree_dir: Path) -> None:
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AcquireError(f"not a wheel (not a zip file): {wheel} ({exc})") from None
    # ValueError: a member name that is not valid UTF-8 though flagged so;
    # NotImplementedError: a zip version zipfile does not know.
    except (ValueError, EOFError, NotImplementedError) as exc:
        raise AcquireError(_one_line(f"corrupt wheel {wheel}: {exc}")) from None
    with archive:
        members = archive.infolist()
        for info in members:
            if _unsafe_member(info.filename):
                raise AcquireError(
                    f"refusing wheel {wheel}: member {info.filename!r} escapes the "
                    f"extraction directory"
                )
        wanted = [info for info in members if _wanted_member(info.filename)]
        limit = MAX_EXTRACT_BYTES
        declared = sum(info.file_size for info in wanted)
        if declared > limit:
            raise AcquireError(
                f"refusing wheel {wheel}: {declared} bytes of text to extract exceeds "
                f"the limit of {limit} bytes"
            )
        try:
            tree_dir.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{tree_dir.name}-", dir=tree_dir.parent))
        except OSError as exc:
            raise AcquireError(f"cannot write the cache {tree_dir.parent}: {exc}") from None
        try:
            _write_members(archive, wanted, staging, wheel, limit)
            try:
                os.replace(staging, tree_dir)
            except OSError:
                # Another run finished the same tree first; theirs is as good.
                if not tree_dir.is_dir():
                    raise
        except OSError as exc:
            raise AcquireError(f"cannot extract {wheel} into {tree_dir}: {exc}") from None
        # A damaged deflate stream (zlib.error), a truncated member (EOFError), an
        # encrypted member (RuntimeError), a compression method zipfile lacks
        # (NotImplementedError): the wheel is unusable, not guardscan broken.
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError,
                NotImplementedError, ValueError) as exc:
            raise AcquireError(_one_line(f"corrupt wheel {wheel}: {exc}")) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _write_members(
    archive: zipfile.ZipFile,
    members: Iterable[zipfile.ZipInfo],
    staging: Path,
    wheel: Path,
    limit: int,
) -> None:
    written = 0
    for info in members:
        target = staging.joinpath(*PurePosixPath(info.filename).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as src, target.open("wb") as dst:
            # Count what is really inflated: declared sizes can lie.
            for block in iter(lambda: src.read(1 << 20), b""):
                written += len(block)
                if written > limit:
                    raise AcquireError(
                        f"refusing wheel {wheel}: text to extract exceeds the limit "
                        f"of {limit} bytes"
                    )
                dst.write(block)


def _read_metadata(tree_dir: Path, dist_hint: str) -> email.message.Message | None:
    candidates = sorted(tree_dir.glob("*.dist-info/METADATA"))
    if not candidates:
        return None
    hint = canonicalize_name(dist_hint)
    candidates.sort(key=lambda p: canonicalize_name(p.parent.name.split("-", 1)[0]) != hint)
    try:
        text = candidates[0].read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return email.parser.Parser().parsestr(text, headersonly=True)


def _wheel_package(tree_dir: Path, package: str, dist_name: str, wheel: Path) -> str:
    """The import package to scan in an extracted wheel.

    ``package`` when the wheel holds it. Otherwise inferred from the
    distribution name, not from a table: among the top-level packages (those
    ``top_level.txt`` lists, or every top-level directory with an
    ``__init__.py``), the one named like the distribution, else the longest
    whose name starts the distribution's (``flashinfer`` for
    ``flashinfer_python``, passing over ``b12x`` and ``build_backend``), else
    the only one.
    """
    if (tree_dir / package / "__init__.py").is_file():
        return package
    packages = _top_level_packages(tree_dir)
    normalized = canonicalize_name(dist_name).replace("-", "_")
    by_normal = {canonicalize_name(p).replace("-", "_"): p for p in packages}
    if normalized in by_normal:
        return by_normal[normalized]
    prefixes = [p for n, p in by_normal.items() if normalized.startswith(n)]
    if prefixes:
        return max(prefixes, key=len)
    if len(packages) == 1:
        return packages[0]
    listed = ", ".join(packages) or "none"
    raise AcquireError(
        f"wheel {wheel.name} holds no {package!r} package and none named for "
        f"{dist_name} (top-level packages: {listed})"
    )


def _top_level_packages(tree_dir: Path) -> list[str]:
    declared: list[str] = []
    for top_level in sorted(tree_dir.glob("*.dist-info/top_level.txt")):
        try:
            declared.extend(top_level.read_text(encoding="utf-8", errors="replace").split())
        except OSError:
            continue
    if not declared:
        try:
            declared = sorted(entry.name for entry in tree_dir.iterdir())
        except OSError:
            declared = []
    return sorted({name for name in declared if (tree_dir / name / "__init__.py").is_file()})


def _cache(cache_dir: Path | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
