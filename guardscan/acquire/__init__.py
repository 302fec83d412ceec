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

One module per concern: ``model`` (SourceTree, AcquireError, the cache
directory), ``files`` (which ``.py`` files are scanned), ``targets`` (which
kind of target was named), ``checkout``, ``wheel``, ``spec`` (pip download),
``installed`` (find_spec without importing) and ``pairing`` (which FlashInfer
the tree pins).
"""

from guardscan.acquire.model import AcquireError, SourceTree, default_cache_dir
from guardscan.acquire.pairing import (
    KERNEL_DIST,
    KERNEL_PACKAGE,
    acquire_kernels,
    kernel_requirement,
)
from guardscan.acquire.spec import spec_wheel_dir
from guardscan.acquire.targets import acquire
from guardscan.acquire.wheel import MAX_EXTRACT_BYTES

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
