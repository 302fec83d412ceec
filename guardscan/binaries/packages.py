"""binaries (packages): the compiled kernel packages a release pins, and their wheels downloaded.

What it reads: the release's declared requirements (``SourceTree.requires``,
from its dist-info METADATA), through ``guardscan.acquire``'s own pin reader
(``kernel_requirement``: extras dropped, a plain pin preferred to one behind a
marker or an extra). Each pin is downloaded like any spec
(``guardscan.acquire.spec.wheel_for_spec``: ``pip download --no-deps
--only-binary=:all:`` into ``<cache>/wheels/<spec>/``; never an sdist, never
built, never imported), with a progress line on stderr when stderr is a
terminal.

Why it matters: sglang 0.5.23 pins ``sglang-kernel==0.4.10``,
``sgl-flash-mla==1.0.0``, ``sgl-deep-gemm==0.2.3.post2`` and
``sgl-deep-ep==0.1.2.post1``; their libraries, not SGLang's Python, say which
GPUs their kernels were built for.

Known limits: only the distributions in ``COMPILED_DISTS`` are looked for
(SGLang's own kernel packages, under both names sgl-kernel has had); others
can be passed as specs. The progress line shows elapsed time, not bytes: pip
runs with its output captured (``acquire.spec`` does that, to put its errors
in one line). A pin with no wheel for any platform fails as ``AcquireError``
from ``acquire``, one line.

Example::

    >>> from guardscan.acquire import SourceTree
    >>> tree = SourceTree(root=Path("."), package="sglang", version="0.5.23", files=(),
    ...     origin="example", requires=("sglang-kernel==0.4.10", "sgl-flash-mla==1.0.0",
    ...     "torch==2.14.1"))
    >>> pinned_compiled(tree)
    ['sglang-kernel==0.4.10', 'sgl-flash-mla==1.0.0']
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from packaging.requirements import InvalidRequirement, Requirement

from guardscan.acquire import AcquireError, SourceTree, kernel_requirement
from guardscan.acquire.model import cache_root
from guardscan.acquire.spec import wheel_for_spec

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["COMPILED_DISTS", "download_compiled", "pinned_compiled"]

#: SGLang's compiled kernel packages: sgl-kernel (renamed sglang-kernel in
#: 0.5.2x), FlashMLA, DeepGEMM (a JIT package: its library holds no fatbin)
#: and DeepEP
COMPILED_DISTS = ("sglang-kernel", "sgl-kernel", "sgl-flash-mla", "sgl-deep-gemm",
                  "sgl-deep-ep")

_TICK_S = 0.5


def pinned_compiled(tree: SourceTree, dists: Sequence[str] = COMPILED_DISTS) -> list[str]:
    """The specs (``sglang-kernel==0.4.10``) of the compiled packages ``tree`` pins."""
    found = []
    for dist in dists:
        spec = kernel_requirement(tree, dist)
        if spec is not None:
            found.append(spec)
    return found


def download_compiled(spec: str, cache_dir: Path | None = None, *, offline: bool = False,
                      progress: TextIO | None = None) -> Path:
    """The wheel of ``spec`` in the cache, downloaded first when missing.

    ``progress`` gets a ticking line while pip runs; by default that is
    stderr when it is a terminal, and nothing otherwise.
    """
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise AcquireError(f"not a requirement spec: {spec} ({exc})") from None
    stream = progress if progress is not None else (
        sys.stderr if sys.stderr.isatty() else None)
    cache = cache_root(cache_dir)
    try:  # a cached wheel needs no download, and no progress line
        return wheel_for_spec(requirement, spec, cache, offline=True)
    except AcquireError:
        if offline:
            raise
    if stream is None:
        return wheel_for_spec(requirement, spec, cache, offline=False)
    with _Ticker(stream, f"guardscan: fetching {spec}"):
        return wheel_for_spec(requirement, spec, cache, offline=False)


class _Ticker:
    """``label: 12 s`` rewritten in place every half second, then cleared."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self._stream = stream
        self._label = label
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._start = 0.0

    def __enter__(self) -> Self:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self._stream.write(f"\r{self._label}: {time.monotonic() - self._start:.1f} s\n")
        self._stream.flush()

    def _run(self) -> None:
        while not self._done.wait(_TICK_S):
            self._stream.write(f"\r{self._label}: {time.monotonic() - self._start:.0f} s")
            self._stream.flush()
