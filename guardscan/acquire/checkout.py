"""acquire (checkouts): find the package in a repo root or package directory, and read its pyproject metadata.

A checkout is a repo root holding ``python/<package>/`` (SGLang's layout), a
directory holding ``<package>/__init__.py``, or the package directory itself.
Its version and requirements come from ``pyproject.toml`` read as TOML, else
from a ``__version__ = "..."`` line read with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from guardscan.acquire.files import walk_python_files
from guardscan.acquire.model import EXPECTED, AcquireError, SourceTree

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project targets 3.11; 3.10 reads no pyproject
    tomllib = None

#: ``version.py`` / ``_version.py`` larger than this are not read for a version
#: (a real one is a few lines; a huge one is not worth parsing).
MAX_VERSION_FILE_BYTES = 1024 * 1024


def acquire_checkout(path: Path, package: str) -> SourceTree:
    path = path.resolve()
    if (path / "python" / package / "__init__.py").is_file():
        root = path / "python"
    elif (path / package / "__init__.py").is_file():
        root = path
    elif path.name == package and (path / "__init__.py").is_file():
        root = path.parent
    elif (path / "__init__.py").is_file():
        raise AcquireError(f"{path} is the package {path.name!r}, not {package!r}; {EXPECTED}")
    else:
        raise AcquireError(f"no {package} package found in {path}; {EXPECTED}")

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
    files, skipped = walk_python_files(root, package)
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
