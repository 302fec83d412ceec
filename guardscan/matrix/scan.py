"""matrix (scanning): every target of a matrix scanned as ``guardscan TARGET`` scans it, on a process pool.

Each target is one ``driver.analyse`` in a worker process (results come back
pickled: plain frozen dataclasses), so releases are scanned side by side, and
each scan stores its result in the cache as any scan does: a second matrix
over the same releases reads stored results. One target alone is scanned in
this process. A target that cannot be scanned (no such release, an unusable
path, a ``--quantization`` it lacks) is one ``Scanned`` with its error, and the
others stand.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from queue import Empty as QueueEmpty
from typing import Any

from guardscan.acquire import AcquireError
from guardscan.driver import ScanOptions, analyse
from guardscan.results import ScanResult

__all__ = ["Scanned", "default_jobs", "scan_targets"]


@dataclass(frozen=True, slots=True)
class Scanned:
    """One target: its result, or why there is none (``error``, one line)."""

    target: str
    result: ScanResult | None
    error: str = ""


def default_jobs(targets: int) -> int:
    """Workers for ``targets`` scans: one per core, at most four (a cold scan
    of a release peaks near 2 GB), never more than there are targets."""
    return max(1, min(targets, os.cpu_count() or 1, 4))


#: in a worker: where its scan's progress goes (set by ``_start_worker``)
_QUEUE: Any = None


def _start_worker(queue: Any) -> None:
    global _QUEUE
    _QUEUE = queue


def _tell(target: str, message: str) -> None:
    # progress is a hint, never a failure of the scan (a full or closed queue)
    with contextlib.suppress(Exception):
        _QUEUE.put_nowait((target, message))


def _scan_one(opts: ScanOptions) -> Scanned:
    target = opts.target or "(installed sglang)"
    if _QUEUE is not None:
        opts = replace(opts, progress=partial(_tell, target))
    try:
        result = analyse(opts).result
    except AcquireError as exc:
        return Scanned(target, None, " ".join(str(exc).split()))
    if not result.options:
        what = " ".join(p for p in (result.target.package, result.target.version) if p)
        return Scanned(target, None, f"no backend options (--*-backend) found in {what}: "
                                     "not an SGLang source tree?")
    return Scanned(target, result)


def _stage(say: Callable[[str], None], prefix: str, start: float, message: str) -> None:
    say(f"{prefix}: {message} ({_elapsed(start)})")


def _elapsed(start: float) -> str:
    seconds = int(time.monotonic() - start)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def scan_targets(targets: list[str], base: ScanOptions, *, jobs: int | None = None,
                 progress: Callable[[str], None] | None = None) -> list[Scanned]:
    """Each target scanned with ``base``'s options (its ``target`` and
    ``progress`` replaced), in the order given. ``progress`` hears how many
    are done, and what each running scan is at (its stage, as a scan's own
    progress line says it), with the time since the start."""
    work = [replace(base, target=target, progress=None) for target in targets]
    jobs = default_jobs(len(work)) if jobs is None else max(1, jobs)
    say = progress or (lambda _message: None)
    start = time.monotonic()
    if jobs == 1 or len(work) == 1:
        out = []
        for number, opts in enumerate(work, start=1):
            prefix = f"{number - 1} of {len(work)} done; {opts.target}"
            if progress is not None:
                opts = replace(opts, progress=partial(_stage, say, prefix, start))
            say(f"{prefix} ({_elapsed(start)})")
            out.append(_scan_one(opts))
        say(f"{len(work)} of {len(work)} done ({_elapsed(start)})")
        return out
    return _on_pool(work, jobs, say, start, progress is not None)


def _on_pool(work: list[ScanOptions], jobs: int, say: Callable[[str], None], start: float,
             listen: bool) -> list[Scanned]:
    done: dict[int, Scanned] = {}
    context = multiprocessing.get_context()
    queue = context.Queue() if listen else None
    at: dict[str, str] = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker,
                             initargs=(queue,)) as pool:
        pending: dict[Future[Scanned], int] = {
            pool.submit(_scan_one, opts): number for number, opts in enumerate(work)}
        while pending:
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                number = pending.pop(future)
                done[number] = future.result()
                at.pop(str(work[number].target), None)
            while queue is not None:
                try:
                    target, message = queue.get_nowait()
                except (QueueEmpty, OSError, ValueError):
                    break
                if any(str(work[n].target) == target for n in pending.values()):
                    at[target] = message
            running = "; ".join(f"{t}: {m}" for t, m in at.items()) or (
                "starting" if pending else "")
            say(f"{len(done)} of {len(work)} done{'; ' if running else ''}{running} "
                f"({_elapsed(start)})")
    if queue is not None:
        queue.close()
    return [done[number] for number in range(len(work))]
