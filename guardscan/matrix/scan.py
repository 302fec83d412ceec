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

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace

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


def _scan_one(opts: ScanOptions) -> Scanned:
    target = opts.target or "(installed sglang)"
    try:
        result = analyse(opts).result
    except AcquireError as exc:
        return Scanned(target, None, " ".join(str(exc).split()))
    if not result.options:
        what = " ".join(p for p in (result.target.package, result.target.version) if p)
        return Scanned(target, None, f"no backend options (--*-backend) found in {what}: "
                                     "not an SGLang source tree?")
    return Scanned(target, result)


def scan_targets(targets: list[str], base: ScanOptions, *, jobs: int | None = None,
                 progress: Callable[[str], None] | None = None) -> list[Scanned]:
    """Each target scanned with ``base``'s options (its ``target`` and
    ``progress`` replaced), in the order given; ``progress`` hears how many
    are done."""
    work = [replace(base, target=target, progress=None) for target in targets]
    jobs = default_jobs(len(work)) if jobs is None else max(1, jobs)
    say = progress or (lambda _message: None)
    if jobs == 1 or len(work) == 1:
        out = []
        for number, opts in enumerate(work, start=1):
            say(f"scanning {opts.target} ({number} of {len(work)})")
            out.append(_scan_one(opts))
        return out
    done: dict[int, Scanned] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: dict[Future[Scanned], int] = {
            pool.submit(_scan_one, opts): number for number, opts in enumerate(work)}
        while pending:
            running = ", ".join(str(work[n].target) for n in sorted(pending.values())[:jobs])
            say(f"scanned {len(done)} of {len(work)}; scanning {running}")
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                number = pending.pop(future)
                done[number] = future.result()
    return [done[number] for number in range(len(work))]
