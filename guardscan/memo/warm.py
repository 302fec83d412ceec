"""memo (warmer): the kernel stage of a cold scan, in the background, on an idle core.

A cold scan reads SGLang first and the kernel library last, one core busy
most of the time. A scan whose kernel answers are not stored yet (with a
cache) forks a background process before linking, while the scan is small.
Once the scan's own parallel parsing is done (``go``), it builds the kernel
library's judge as the scan would, reads the library (its Python facts),
then its C++ into the C++ facts cache (``memo.warm_cpp``: the sources of
every JIT spec generator and the headers they include), until the calls
linking found come (``Warmer.answer``). It asks them in the scan's order
(``narrow.ask_kernel_questions``) and stores the answers
(``memo.kernel_answers``). The scan then asks the same questions of a judge
that replays them, as a scan after an edit does: the answers, diagnostics
and notes are the ones the library gives, and a question the stored
sequence does not hold (or a background process that failed) reads the
library in the scan's process, as without it. Facts are a function of a
file's bytes, so who read them changes nothing in the result either.

On sglang 0.5.23 with flashinfer 0.7.2 the library's facts take 3 s, its
C++ 6 s, both beside linking, and the questions 10 s once linking is done;
the library's facts and solver state (about 190 MB) never enter the scan's
process.

The process never runs the code it reads, never raises into the scan, and
stops between files when asked (its cache writes are atomic, so stopping
leaves no half-written entry).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guardscan.arch import Arch
    from guardscan.index import Index
    from guardscan.link import KernelCall
    from guardscan.results import OptionInfo
    from guardscan.verdict import KernelJudge

__all__ = ["Ahead", "Warmer"]


@dataclass
class Ahead:
    """What the background process needs to answer the kernel questions
    ahead of the scan: how the scan builds its kernel index and judge, and
    the options and archs it asks them for."""

    build: Callable[[], tuple[Index, KernelJudge]]
    options: Sequence[OptionInfo]
    archs: Sequence[Arch]


def _warm(stop: Event, go: Event, ahead: Ahead, conn: Connection) -> None:
    """The background process: once ``go`` is set, answer the scan's kernel
    questions (``_answer``)."""
    try:
        os.nice(10)  # the scan itself comes first
    except OSError:
        pass
    while not go.wait(timeout=0.2):
        if stop.is_set():
            return
    _answer(ahead, conn, stop)


class _Either:
    """Set once ``stop`` is or ``conn`` has something to read (an ``Event``
    to ``warm_cpp``, which asks between files)."""

    def __init__(self, stop: Event, conn: Connection) -> None:
        self._stop, self._conn = stop, conn

    def is_set(self) -> bool:
        return self._stop.is_set() or self._conn.poll()


def _answer(ahead: Ahead, conn: Connection, stop: Event) -> None:
    """Build the scan's kernel judge and read the library, then ask the
    calls the scan sends (``Warmer.answer``) and store the answers; send
    back whether they are stored. Anything that fails sends False: the
    scan then reads the library itself."""
    done = False
    try:
        parent = os.getppid()
        index, judge = ahead.build()
        getattr(judge, "library", None)  # the library's facts, read now
        # and the C++ its questions read, into the C++ facts cache, until
        # linking is done (the calls come) or the scan stops
        from guardscan.memo.warm_cpp import warm_cpp

        warm_cpp(index, _Either(stop, conn))
        while not conn.poll(0.2):
            if stop.is_set() or os.getppid() != parent:
                return
        calls: list[KernelCall] = conn.recv()
        from guardscan.memo.narrow import AskedBy, ask_kernel_questions

        ask_kernel_questions(calls, ahead.options, ahead.archs, AskedBy(judge))
        store = getattr(judge, "store_answers", None)
        if store is not None:
            store()
        index.release_text()
        done = True
    except Exception:  # noqa: BLE001 - the scan asks its questions itself
        done = False
    finally:
        try:
            conn.send(done)
        except (OSError, ValueError):
            pass


class Warmer:
    """The background process answering ``ahead``'s kernel questions, if this
    machine has a core to spare and can fork. It is forked at once (while the
    scan is small) and waits for ``go`` (the scan's own parallel parsing is
    done, a core is idle); ``stop`` ends it."""

    def __init__(self, ahead: Ahead) -> None:
        self._process: Any = None
        self._stop: Event | None = None
        self._go: Event | None = None
        self._conn: Connection | None = None
        if (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return
        try:
            context = multiprocessing.get_context("fork")
            self._stop = context.Event()
            self._go = context.Event()
            mine, theirs = context.Pipe()
            self._process = context.Process(
                target=_warm, args=(self._stop, self._go, ahead, theirs), daemon=True)
            self._process.start()
            theirs.close()  # (the process's end: its closing is then seen here)
            self._conn = mine
        except (OSError, ValueError):
            self._process = None

    def answer(self, calls: Iterable[KernelCall]) -> bool:
        """Hand the background process the calls linking found: it asks them
        and stores the answers. Returns once it has, True when they are
        stored."""
        conn, self._conn = self._conn, None
        if conn is None or self._process is None:
            return False
        self.go()  # (a scan that parsed nothing in parallel never said go)
        try:
            conn.send(list(calls))
            return bool(conn.recv())
        except (OSError, EOFError, ValueError):
            return False
        finally:
            conn.close()

    def go(self) -> None:
        if self._go is not None:
            self._go.set()

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._process is None:
            return
        assert self._stop is not None
        self._stop.set()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._process = None
