"""memo (C++ warmer): read the kernel library's JIT sources into the C++ facts cache in the background.

What it does
    In the background process that answers a cold scan's kernel questions
    (``memo.warm``), once it has read the library's Python and while the
    scan links, it reads the C++ those questions read:
    the sources every JIT spec generator names (``kernels.cpp_checks``: the
    export table reads them all, whatever is asked) and, for each
    generator, those sources with the headers they include
    (``CppLibrary.module_files``, what a check of one of its exports reads).
    The facts go into ``<cache>/cpp/`` exactly as the scan's own reading
    would store them.
Why it matters
    Reading FlashInfer 0.7.2's C++ with tree-sitter is about 9 s of CPU in a
    cold scan of sglang 0.5.23, on the one busy core, and its parse trees
    were the main process's peak (about 70 MB above the scan's otherwise).
    Read here, on the idle core while SGLang is linked, the kernel stage
    loads facts instead.
Known limits
    It reads every generator's closure: 456 files of FlashInfer 0.7.2 where
    the scan of sglang 0.5.23 asks 364. A file it has not reached yet when
    the questions come is read when a question asks for it, as without it;
    facts are a function of a file's bytes, so who read them changes no
    result.
Example
    ``warm_cpp(index, stop)`` with FlashInfer's index: ``<cache>/cpp/`` then
    holds the facts of ``data/csrc/trtllm_fmha_kernel_launcher.cu`` and of
    the headers it includes.
"""

from __future__ import annotations

from typing import Protocol

from guardscan.index import Index

__all__ = ["Stop", "warm_cpp"]


class Stop(Protocol):
    """When to stop (an ``Event``, or anything else asked between files)."""

    def is_set(self) -> bool: ...


def warm_cpp(index: Index, stop: Stop) -> int:
    """Read the C++ of every JIT spec generator of ``index``'s package into
    the cache, generator by generator, until ``stop`` is set; returns how
    many files the cache now holds facts of, that this read or found."""
    if index.cache_dir is None or stop.is_set():
        return 0
    from guardscan.kernels.cpp_checks import CppChecks
    from guardscan.kernels.library import EXCLUDED_DIRS
    from guardscan.kernels.symbols import Resolver

    package = index.tree.package
    excluded = tuple(f"{package}/{d}/" for d in EXCLUDED_DIRS)
    source_files = tuple(rel for rel in index.tree.files
                         if rel.startswith(package + "/") and not rel.startswith(excluded))
    checks = CppChecks(index, Resolver(index), source_files)
    done: set[tuple[str, ...]] = set()
    for owners in checks.exports.values():
        for _, sources in owners:
            if stop.is_set():
                return len(checks.cpp.facts_read)
            key = tuple(sources)
            if key not in done:
                done.add(key)
                checks.cpp.module_files(sources)
    return len(checks.cpp.facts_read)
