"""acquire (targets): which kind of target the user named, and the SourceTree it becomes.

An existing directory is a checkout, an existing ``*.whl`` file a wheel, text
that parses as a pinned requirement a spec, and ``None`` the installed
package; anything else is an ``AcquireError`` saying what was expected.
"""

from __future__ import annotations

import os
from pathlib import Path

from guardscan.acquire.checkout import acquire_checkout
from guardscan.acquire.installed import acquire_installed
from guardscan.acquire.model import EXPECTED, AcquireError, SourceTree, cache_root
from guardscan.acquire.spec import parse_spec, wheel_for_spec
from guardscan.acquire.wheel import acquire_wheel


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
        return acquire_installed(package)
    text = os.fspath(target)
    if not text.strip():
        raise AcquireError(f"empty target; {EXPECTED}")
    path = Path(text).expanduser()
    if path.exists():
        if path.is_dir():
            return acquire_checkout(path, package)
        if path.is_file() and path.name.lower().endswith(".whl"):
            return acquire_wheel(path, package, cache_root(cache_dir), origin=f"wheel {path}")
        raise AcquireError(f"not a directory or a .whl file: {text}; {EXPECTED}")
    requirement = parse_spec(text)
    if requirement is None:
        raise AcquireError(f"no such file or directory: {text}; {EXPECTED}")
    cache = cache_root(cache_dir)
    wheel = wheel_for_spec(requirement, text, cache, offline=offline)
    return acquire_wheel(wheel, package, cache, origin=f"spec {text} -> {wheel}")
