"""verdicts (split): the options judged on every core (up to four), in forked processes, with what one process gives.

Judging is a tenth of a cold scan and most of a scan that reuses the
linking (another ``--quantization``, a guard edit), on one core. Each option
is judged on its own, from the same links, index and kernel answers, so the
options can be shared out: forked children (one per core, ``MAX_CHILDREN``
at most) judge them, each taking the next option not yet taken (the costliest first, by ``work``), while this
process waits. Each child sends back what one process would have kept of
its options:

- each option's verdicts and what it handed the memo of judged choices (its
  ``keep`` and ``forget`` calls, in order), and the faults it met;
- every question it asked the kernel judge, in order, with the answer it
  got. This process asks them again, option by option in the options'
  order: the judge (and the driver's record of who asked what,
  ``memo.narrow.AskedBy``) ends as one process judging the options in order
  leaves it. The kernel answers were worked out before judging began
  (``memo.narrow.ask_kernel_questions``), so these are lookups; should an
  answer come out differently here (a question judging was first to ask,
  whose answer can depend on the order), that option and every later one
  are judged here, and the children's verdicts for them are dropped;
- what it read of the tree (``index.reads``), for the result cache.

This process judges nothing itself: a question it answered first would be
worked out in another order than one process judging in order asks it, and
nothing here could tell. A child that fails in any way (it cannot be forked,
it dies, what it sends does not load) leaves its options, and every later
one, to this process. Forking is only done where the process has one thread
(a fork copies only the calling thread, and a lock another thread holds
would stay held in the child), on a machine with two cores or more, where
``os.fork`` exists, and for at least ``MIN_WORK``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from guardscan.arch import Arch
from guardscan.index import Index
from guardscan.index.reads import Added, absorb, mark, since
from guardscan.link import KernelCall, Links
from guardscan.predicate import Tri
from guardscan.results import BackendVerdict, Diagnostic, Evidence, OptionInfo
from guardscan.verdict.model import Judged, JudgeMemo, KernelJudge

__all__ = ["MAX_CHILDREN", "MIN_WORK", "can_fork", "judge_options", "work"]

#: below this much estimated work (``work``), the fork and the transfer cost
#: more than the second core saves
MIN_WORK = 50_000

#: children at most (one per core): the costliest options take about a second
#: each on sglang 0.5.23 (``--moe-runner-backend``, its speculative twin), and
#: bound the time however many more there are
MAX_CHILDREN = 4

#: judges one option: (option, the kernel judge to ask, the memo of judged
#: choices, the list its faults go to) -> its verdicts
JudgeOne = Callable[[OptionInfo, KernelJudge | None, JudgeMemo | None,
                     list[tuple[str, Diagnostic]]], list[BackendVerdict]]


def work(links: Links, options: Sequence[OptionInfo], archs: Sequence[Arch],
         memo: JudgeMemo | None) -> list[int]:
    """Each option's estimated judging work: the choices the memo cannot give
    back, times the findings and kernel calls each is judged against, times
    the archs."""
    against: dict[str, int] = {}
    for dest in [f.option for f in links.findings] + [c.option for c in links.kernel_calls]:
        if dest is not None:
            against[str(dest)] = against.get(str(dest), 0) + 1
    return [len(archs) * (against.get(o.dest, 0) + 1) * sum(
        1 for choice in o.choices if memo is None or memo.reuse(o.dest, choice) is None)
        for o in options]


def can_fork() -> bool:
    """Whether a second process may judge: ``os.fork`` exists, the process has
    one thread, and the machine has a second core."""
    return (hasattr(os, "fork") and threading.active_count() == 1
            and (os.cpu_count() or 1) >= 2)


class _Claims:
    """Which child judges each option: each claims the next option of the
    order by creating its file in a private folder (``O_EXCL``: one process
    wins). A child that dies holds nothing up."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="guardscan-judging-")

    def take(self, position: int) -> bool:
        try:
            os.close(os.open(os.path.join(self.folder, str(position)),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class _Logged(KernelJudge):
    """The kernel judge as the child's options see it: each question asked,
    with its answer, in order."""

    def __init__(self, inner: KernelJudge) -> None:
        self.inner = inner
        self.asked: list[tuple[str, KernelCall, Arch, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def covers(self, call: KernelCall) -> bool:
        return self.inner.covers(call)

    def installed(self) -> frozenset[str]:
        return self.inner.installed()

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        return self.inner.loadable(call, arch)

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        answer = self.inner.support(call, arch)
        self.asked.append(("support", call, arch, answer))
        return answer

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        answer = self.inner.delegate(call, arch)
        self.asked.append(("delegate", call, arch, answer))
        return answer


@dataclass
class _Kept:
    """The memo of judged choices as the child's options see it: each
    ``keep`` and ``forget``, in order."""

    inner: JudgeMemo
    log: list[tuple[str, str, str, Judged | None]] = field(default_factory=list)

    def reuse(self, dest: str, choice: str) -> Judged | None:
        return self.inner.reuse(dest, choice)

    def keep(self, dest: str, choice: str, judged: Judged) -> None:
        self.log.append(("keep", dest, choice, judged))

    def forget(self, dest: str) -> None:
        self.log.append(("forget", dest, "", None))


@dataclass
class _Judged:
    """One option as the child judged it."""

    verdicts: list[BackendVerdict]
    kept: list[tuple[str, str, str, Judged | None]]
    asked: list[tuple[str, KernelCall, Arch, Any]]
    faults: list[tuple[str, Diagnostic]]


def judge_options(options: Sequence[OptionInfo], judge_one: JudgeOne,
                  costs: Callable[[], Sequence[int]],
                  index: Index, kernels: KernelJudge | None, memo: JudgeMemo | None,
                  faults: list[tuple[str, Diagnostic]], before_option: Callable[[OptionInfo], None],
                  split: bool | None = None) -> list[BackendVerdict]:
    """Every option's verdicts, in order, as ``judge_one`` gives them one by
    one. ``costs``: gives each option's estimated work (``work``; asked only
    where a split is possible); ``before_option``:
    called before an option's questions are asked (the driver names the
    option its kernel judge records askers for). ``split``: True splits
    whatever the work, False never (else: at ``MIN_WORK``, where
    ``can_fork``)."""
    work_of: Sequence[int] = ()
    if split is not False and len(options) > 1 and (split or can_fork()):
        work_of = costs()
        split = split or sum(work_of) >= MIN_WORK
    claims = None
    if split and len(options) > 1:
        try:
            claims = _Claims()
        except OSError:
            pass
    if claims is None:
        return _serial(options, judge_one, kernels, memo, faults, before_option)
    # the costliest first, so that the children end close together
    order = sorted(range(len(options)), key=lambda at: -work_of[at])
    done: dict[int, _Judged] = {}
    added: list[Added] = []
    children: list[_Child | None] = []
    try:
        try:
            for _ in range(min(MAX_CHILDREN, os.cpu_count() or 2)):
                children.append(_fork(options, order, judge_one, index, kernels, memo,
                                      before_option, claims))
            for child in children:
                got, read = _collect(child)
                done.update(got)
                if read is not None:
                    added.append(read)
        except BaseException:
            for child in children:
                _stop(child)
            raise
    finally:
        claims.close()
    out: list[BackendVerdict] = []
    for position, option in enumerate(options):
        judged = done.get(position)
        if judged is None or not _asked_again(judged, kernels, option, before_option):
            # the children's work ends here: the rest is judged in this process
            out += _serial(options[position:], judge_one, kernels, memo, faults, before_option)
            break
        for what, dest, choice, kept in judged.kept:
            if memo is not None:
                if what == "forget":
                    memo.forget(dest)
                elif kept is not None:
                    memo.keep(dest, choice, kept)
        faults.extend(judged.faults)
        out += judged.verdicts
    for read in added:
        absorb(index, read)
    return out


def _serial(options: Sequence[OptionInfo], judge_one: JudgeOne, kernels: KernelJudge | None,
            memo: JudgeMemo | None, faults: list[tuple[str, Diagnostic]],
            before_option: Callable[[OptionInfo], None]) -> list[BackendVerdict]:
    out: list[BackendVerdict] = []
    for option in options:
        before_option(option)
        out += judge_one(option, kernels, memo, faults)
    return out


def _asked_again(judged: _Judged, kernels: KernelJudge | None, option: OptionInfo,
                 before_option: Callable[[OptionInfo], None]) -> bool:
    """Ask this process's kernel judge the child's questions of ``option``,
    in order: whether every answer is the child's."""
    before_option(option)
    for method, call, arch, answer in judged.asked:
        if kernels is None or getattr(kernels, method)(call, arch) != answer:
            return False
    return True


@dataclass
class _Child:
    pid: int
    read_fd: int


def _fork(options: Sequence[OptionInfo], order: Sequence[int], judge_one: JudgeOne,
          index: Index, kernels: KernelJudge | None, memo: JudgeMemo | None,
          before_option: Callable[[OptionInfo], None], claims: _Claims) -> _Child | None:
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: judge, send, and exit without running anything else
        code = 1
        try:
            os.close(read_fd)
            code = _judge_in_child(options, order, judge_one, index, kernels, memo,
                                   before_option, claims, write_fd)
        finally:
            os._exit(code)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _judge_in_child(options: Sequence[OptionInfo], order: Sequence[int], judge_one: JudgeOne,
                    index: Index, kernels: KernelJudge | None, memo: JudgeMemo | None,
                    before_option: Callable[[OptionInfo], None], claims: _Claims,
                    write_fd: int) -> int:
    start = mark(index)
    done: dict[int, _Judged] = {}
    for position in order:
        if not claims.take(position):
            continue
        logged = _Logged(kernels) if kernels is not None else None
        kept = _Kept(memo) if memo is not None else None
        faults: list[tuple[str, Diagnostic]] = []
        before_option(options[position])
        verdicts = judge_one(options[position], logged, kept, faults)
        done[position] = _Judged(verdicts, kept.log if kept is not None else [],
                                 logged.asked if logged is not None else [], faults)
    data = pickle.dumps((done, since(index, start)), protocol=pickle.HIGHEST_PROTOCOL)
    with os.fdopen(write_fd, "wb") as out:
        out.write(data)
    return 0


def _stop(child: _Child | None) -> None:
    """This process failed while the child judged: end it (it would wait to
    be read otherwise)."""
    if child is None:
        return
    try:
        if child.read_fd >= 0:
            os.close(child.read_fd)
            child.read_fd = -1
        os.kill(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)
    except OSError:
        pass


def _collect(child: _Child | None) -> tuple[dict[int, _Judged], Added | None]:
    """The child's options as it judged them, and what it read; nothing when
    it failed (its options are then judged here)."""
    if child is None:
        return {}, None
    chunks: list[bytes] = []
    try:
        with os.fdopen(child.read_fd, "rb") as pipe:
            child.read_fd = -1
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
    except OSError:
        chunks = []
    try:
        _, status = os.waitpid(child.pid, 0)
    except OSError:
        status = 1
    if status != 0 or not chunks:
        return {}, None
    try:
        done, added = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child that sent something unreadable failed
        return {}, None
    return done, added
