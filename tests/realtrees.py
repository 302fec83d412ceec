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

The suite runs in several processes (pytest-xdist), each with its own session
fixtures; :func:`one_at_a_time` makes the first process that needs a release
or a scan of one compute it while the others wait, then read it from the cache
instead of computing it beside the first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from guardscan.acquire import SourceTree, acquire, spec_wheel_dir

__all__ = ["flashinfer_tree", "one_at_a_time", "sglang_tree", "shared_cache_dir"]

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


@contextmanager
def one_at_a_time(*key: object) -> Iterator[None]:
    """Hold the lock named by ``key`` across the processes of this machine
    (an advisory ``flock`` on a file in the shared cache) while the body runs.
    The cache writes atomically either way: this only saves the work of two
    processes computing the same release or scan at once."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): each process computes its own
        yield
        return
    locks = shared_cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    with open(locks / f"{name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    with one_at_a_time("release", spec):
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
