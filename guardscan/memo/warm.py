"""memo (warmer): parse a tree into the facts cache in the background, on an idle core.

A cold scan reads SGLang first and the kernel library last, one core busy
most of the time. Meanwhile a background process parses the kernel library's
files into the facts cache: the package's ``__init__`` and what it imports
(breadth first), where the library's questions begin. When the kernel stage
comes, the files it needs are mostly cached already; any that are not it
parses itself, as it always did. Facts are a function of a file's bytes, so
who parsed them changes nothing in the result.

Only what the ``__init__`` reaches is parsed, never the rest of the tree:
on FlashInfer 0.7.2 the kernel stage of a scan of sglang 0.5.23 reads 526 of
its 3,375 files, 339 of them among the 736 the ``__init__`` reaches, and the
rest of the tree is mostly vendored code no question reaches (CUTLASS's and
CCCL's Python, 747 files). Parsing the whole tree cost a cold scan 38 s of
CPU, a third of it, to save 5 s of waiting.

Then it reads the library's C++ the same way, into the C++ facts cache
(``memo.warm_cpp``): the sources of every JIT spec generator and the
headers they include.

When the driver hands it an ``Ahead`` (a scan with a cache, whose kernel
answers are not stored yet), it does more: it builds the kernel library's
judge as the scan would, reads the library at once (its facts, the C++ its
questions read), waits for the calls linking found, asks them in the
scan's order (``narrow.ask_kernel_questions``) and stores the answers
(``memo.kernel_answers``). The scan then asks the same questions of a judge
that replays them, as a scan after an edit does: the answers, diagnostics
and notes are the ones the library gives, and a question the stored
sequence does not hold (or a background process that failed) reads the
library in the scan's process, as without it. On sglang 0.5.23 the kernel
stage took about 11 s after linking, on the one busy core, and the
library's 190 MB of facts and solver state sat on top of what linking
left; now they are read beside linking, in a process forked while the scan
is small.

The warmer never runs the code it reads, never raises into the scan, and
stops between files when asked (its cache writes are atomic, so stopping
leaves no half-written entry).
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import TYPE_CHECKING, Any

from guardscan.acquire import SourceTree

if TYPE_CHECKING:
    from guardscan.arch import Arch
    from guardscan.index import Index
    from guardscan.link import KernelCall
    from guardscan.results import OptionInfo
    from guardscan.verdict import KernelJudge

__all__ = ["Ahead", "Warmer", "import_order"]


@dataclass
class Ahead:
    """What the background process needs to answer the kernel questions
    ahead of the scan: how the scan builds its kernel index and judge, and
    the options and archs it asks them for."""

    build: Callable[[], tuple[Index, KernelJudge]]
    options: Sequence[OptionInfo]
    archs: Sequence[Arch]

#: ``import a.b`` / ``from .a import b, c`` at the start of a line
_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t\\\n]+)|import[ \t]+([\w.]+))",
    re.MULTILINE)


def import_order(tree: SourceTree) -> list[str]:
    """The tree's files reachable by imports from the package's ``__init__``,
    breadth first. Read from the text with a regular expression: a hint of
    where to start, not an analysis."""
    by_module = {tree.module_name(rel): rel for rel in tree.files}
    start = f"{tree.package}/__init__.py"
    order: list[str] = []
    seen: set[str] = set()
    queue = deque([start] if start in tree.files else [])
    while queue:
        rel = queue.popleft()
        if rel in seen:
            continue
        seen.add(rel)
        order.append(rel)
        try:
            data = tree.path_of(rel).read_bytes()
        except OSError:
            continue
        queue.extend(r for r in _imported(tree, rel, data, by_module) if r not in seen)
    return order


def _imported(tree: SourceTree, rel: str, data: bytes,
              by_module: dict[str, str]) -> Iterable[str]:
    module = tree.module_name(rel)
    package = module if rel.endswith("__init__.py") else module.rpartition(".")[0]
    for match in _IMPORT.finditer(data):
        if match.group(3):
            targets = [match.group(3).decode()]
        else:
            source = match.group(1).decode()
            dots = len(source) - len(source.lstrip("."))
            base = source
            if dots:
                base = package
                for _ in range(dots - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{source[dots:]}" if source[dots:] else base
            names = re.findall(r"\w+", match.group(2).decode())
            targets = [base, *(f"{base}.{name}" for name in names)]
        for target in targets:
            parts = target.split(".")
            for end in range(1, len(parts) + 1):
                found = by_module.get(".".join(parts[:end]))
                if found is not None:
                    yield found


def _warm(tree: SourceTree, cache_dir: Path, stop: Event, go: Event | None = None,
          ahead: Ahead | None = None, conn: Connection | None = None) -> None:
    """The background process: parse what the tree's ``__init__`` imports
    into the cache (``import_order``), once ``go`` is set (at once without
    it); or, given ``ahead``, answer the scan's kernel questions (``_answer``)."""
    try:
        os.nice(10)  # the scan itself comes first
    except OSError:
        pass
    while go is not None and not go.wait(timeout=0.2):
        if stop.is_set():
            return
    if ahead is not None and conn is not None:
        _answer(ahead, conn, stop)
        return
    try:
        from guardscan.index import Index

        index = Index(tree, cache_dir)
        index.release_text()
        for rel in import_order(tree):
            if stop.is_set():
                return
            index.warm(rel)
        from guardscan.memo.warm_cpp import warm_cpp

        warm_cpp(index, stop)
    except Exception:  # noqa: BLE001 - a hint: never a failure of the scan
        return


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
    """A background process parsing ``tree`` into ``cache_dir``, if this
    machine has a core to spare and can fork. It is forked at once (while the
    scan is small) and waits for ``go`` (the scan's own parallel parsing is
    done, a core is idle); ``stop`` ends it."""

    def __init__(self, tree: SourceTree, cache_dir: Path, ahead: Ahead | None = None) -> None:
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
            mine, theirs = context.Pipe() if ahead is not None else (None, None)
            self._process = context.Process(
                target=_warm, args=(tree, cache_dir, self._stop, self._go, ahead, theirs),
                daemon=True)
            self._process.start()
            if theirs is not None:
                theirs.close()  # (the process's end: its closing is then seen here)
            self._conn = mine
        except (OSError, ValueError):
            self._process = None

    def answer(self, calls: Iterable[KernelCall]) -> bool:
        """Hand the background process the calls linking found (given an
        ``Ahead``): it asks them and stores the answers. Returns once it has,
        True when they are stored."""
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
