"""acquire (installed package): locate it with ``importlib.util.find_spec`` without importing it.

``find_spec`` on a top-level name only looks the package up on ``sys.path``;
a dotted name would import the parent, so it is refused first. Version and
requirements come from the installed distribution's metadata, never from the
module.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
from pathlib import Path

from guardscan.acquire.files import walk_python_files
from guardscan.acquire.model import EXAMPLE_SPEC, AcquireError, SourceTree


def acquire_installed(package: str) -> SourceTree:
    missing = AcquireError(
        f"no installed {package} found; pass a checkout path, a wheel file, "
        f"or a spec such as {package}==<version> (e.g. {EXAMPLE_SPEC})"
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
    files, skipped = walk_python_files(root, package_dir.name)
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
