"""Real SGLang / FlashInfer releases for tests, acquired once and cached.

Use from any test module (pytest puts ``tests/`` on ``sys.path``)::

    from realtrees import sglang_tree, flashinfer_tree
    tree = sglang_tree("0.5.9")

or through the session fixtures in ``conftest.py`` (``sglang_059``, ...).

The cache persists across test runs, laid out as ``guardscan.acquire`` lays
out any cache, so a release is downloaded (and extracted) once per machine. It
is, as the environment said when the suite started (``shared_cache_dir``):
``$GUARDSCAN_TEST_CACHE``; else ``$GUARDSCAN_CACHE_DIR/tests`` (where you keep
guardscan's caches, apart from your own scans' entries); else
``$XDG_CACHE_HOME/guardscan-tests``; else ``~/.cache/guardscan-tests``. Wheels
already on disk in ``$GUARDSCAN_TEST_SEED_WHEELS`` (default ``/tmp/wheels``)
are copied into the cache instead of downloading them; without them the code
path is the real one, ``pip download``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from guardscan.acquire import SourceTree, acquire, spec_wheel_dir

__all__ = ["flashinfer_tree", "sglang_tree", "shared_cache_dir"]

_DEFAULT_SEED_DIR = "/tmp/wheels"


#: The environment as the suite found it: tests set $GUARDSCAN_CACHE_DIR to
#: throwaway directories, which must not move the shared cache.
_STARTING_ENV = {name: os.environ.get(name, "") for name in
                 ("GUARDSCAN_TEST_CACHE", "GUARDSCAN_CACHE_DIR", "XDG_CACHE_HOME")}


def shared_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The cache shared by every test run on this machine (see the module
    docstring); ``env`` stands in for the starting environment in tests."""
    env = _STARTING_ENV if env is None else env
    if env.get("GUARDSCAN_TEST_CACHE"):
        return Path(env["GUARDSCAN_TEST_CACHE"]).expanduser()
    if env.get("GUARDSCAN_CACHE_DIR"):
        return Path(env["GUARDSCAN_CACHE_DIR"]).expanduser() / "tests"
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "guardscan-tests"
    return Path.home() / ".cache" / "guardscan-tests"


@cache
def sglang_tree(version: str) -> SourceTree:
    """The SGLang release ``version`` (e.g. ``"0.5.9"``), from its wheel."""
    return _release(f"sglang=={version}", "sglang")


@cache
def flashinfer_tree(version: str) -> SourceTree:
    """The FlashInfer release ``version`` (distribution ``flashinfer-python``)."""
    return _release(f"flashinfer-python=={version}", "flashinfer")


def _release(spec: str, package: str) -> SourceTree:
    cache = shared_cache_dir()
    _seed_from_local_wheels(spec, cache)
    return acquire(spec, package, cache_dir=cache)


def _seed_from_local_wheels(spec: str, cache: Path) -> None:
    """Copy a matching wheel from the seed dir into the cache's spec dir,
    atomically (copy under a temp name, then rename), unless one is there."""
    seed_dir = Path(os.environ.get("GUARDSCAN_TEST_SEED_WHEELS", _DEFAULT_SEED_DIR))
    if not seed_dir.is_dir():
        return
    requirement = Requirement(spec)
    wanted = canonicalize_name(requirement.name)
    wheel_dir = spec_wheel_dir(spec, cache)
    if wheel_dir.is_dir() and any(p.name.endswith(".whl") for p in wheel_dir.iterdir()):
        return
    for candidate in sorted(seed_dir.glob("*.whl")):
        try:
            name, version, _build, _tags = parse_wheel_filename(candidate.name)
        except InvalidWheelFilename:
            continue
        if name != wanted or not requirement.specifier.contains(version, prereleases=True):
            continue
        wheel_dir.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=".seed-", suffix=".partial", dir=wheel_dir)
        os.close(fd)
        try:
            shutil.copyfile(candidate, partial)
            os.replace(partial, wheel_dir / candidate.name)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return
