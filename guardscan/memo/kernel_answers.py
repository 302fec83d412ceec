"""memo (kernel answers): the kernel library's answers of the last scan of a library, per set of archs, replayed in the order they were asked.

See :class:`KernelAnswers`.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

from guardscan.acquire import SourceTree
from guardscan.arch import standard_archs
from guardscan.index import FACTS_VERSION, store_pickle
from guardscan.memo.disk import tree_key
from guardscan.memo.results import Stat, _code_fingerprint, kernel_stats
from guardscan.predicate import Tri
from guardscan.results import Evidence

__all__ = ["KernelAnswers"]


#: (support, evidence chain, whether the library defines the called name, the
#: public library function below the called one that decides a TRUE, or "")
Answer = tuple[Tri, list[Evidence], bool, str]
#: ((call target, backend, arch), answer)
#: (the question, its answer, the unreadable C++ files it depends on: (file, reason))
KernelAnswer = tuple[tuple[object, ...], Answer, tuple[tuple[str, str], ...]]


class KernelAnswers:
    """The kernel-library answers of the last scan of a library, replayed while
    that library's tree is unchanged (every file ``stat``-ed as it was).

    What a kernel-library function supports on an arch depends on the library
    alone, so a scan after a change to SGLang (or a repeated pre-flight check)
    can reuse the answers an earlier scan worked out without reading the
    library at all. The library's solver cuts call cycles, so an answer can
    depend on the questions asked before it: answers are therefore kept as the
    sequence they were asked in, and reused only while this scan asks the same
    questions in the same order. At the first different question the library
    is read and the questions so far are asked again, so every answer is
    exactly what a scan without the cache gives. Each answer records whether
    the library defines the called name, so ``unresolved-kernel`` diagnostics
    come out the same too, and so do the C++ files it could not read that
    the answer depended on (``cpp-parse-failed``; ``kernels.judge``).

    The questions are asked for every arch judged (``driver``), so scans for
    other archs ask another sequence: one sequence is kept per set of archs
    (``archs``), and scans that alternate between two sets replay each.

    A scan of fewer archs after a scan of every standard arch (``guardscan
    X --arch sm120`` after ``guardscan X``) replays that scan's sequence
    with the other archs' questions left out (``borrowed``). It asks those
    same questions in that same order (call by call, each call's archs in
    the standard order); the solver keeps nothing across archs (its memo is
    per arch, and the library's facts do not depend on the arch), and each
    answer's record of unreadable C++ files is what that answer depends on,
    not what was read before it. So each answer, and each record, is the one
    a scan of those archs alone works out.
    """

    def __init__(self, cache_dir: Path, kernel_tree: SourceTree, companions: str = "",
                 archs: tuple[str, ...] = (), stats: dict[str, Stat] | None = None) -> None:
        """``stats``: the library's snapshot if the scan took it already
        (``results.kernel_stats``)."""
        self._key_parts = (tree_key(kernel_tree.root, cache_dir), kernel_tree.package,
                           companions)
        self.path = self._path(cache_dir, archs)
        self.stats = stats if stats is not None else kernel_stats(kernel_tree)
        self.stored: list[KernelAnswer] = []
        #: whether each function's answer depends on the caller's arguments
        #: (``kernels.arguments``): a question about one that does not is
        #: asked without them, so call sites that differ only there share it
        self.depends: dict[str, bool] = {}
        #: the sequence is the scan of every standard arch's, its other
        #: archs' questions left out
        self.borrowed = False
        loaded = self._load(self.path)
        if loaded is None and archs:
            every = tuple(a.name for a in standard_archs())
            if set(archs) < set(every):
                loaded = self._load(self._path(cache_dir, every))
                if loaded is not None:
                    self.borrowed = True
                    loaded = ([entry for entry in loaded[0]
                               if getattr(entry[0][2], "name", None) in archs], loaded[1])
        if loaded is not None:
            self.stored, self.depends = loaded
        self._stored_depends = dict(self.depends)
        #: this scan's questions and answers, in order
        self.asked: list[KernelAnswer] = []
        self.diverged = False

    def _path(self, cache_dir: Path, archs: tuple[str, ...]) -> Path:
        from guardscan import __version__

        tree, package, companions = self._key_parts
        digest = hashlib.sha256(repr((__version__, FACTS_VERSION, _code_fingerprint(),
                                      tree, package)
                                     + ((companions,) if companions else ())
                                     + ((archs,) if archs else ())).encode())
        return cache_dir / "kernels" / f"{digest.hexdigest()}.pickle"

    def _load(self, path: Path) -> tuple[list[KernelAnswer], dict[str, bool]] | None:
        """The sequence stored at ``path`` and its ``depends``, while the
        library is unchanged since."""
        try:
            with path.open("rb") as handle:
                stats, stored, depends = pickle.load(handle)
        except Exception:  # noqa: BLE001 - missing, corrupt or stale: start empty
            return None
        if stats == self.stats and isinstance(stored, list) and isinstance(depends, dict):
            return stored, depends
        return None

    def next(self, key: tuple[object, ...]) -> Answer | None:
        """The stored answer, if ``key`` is the question the last scan asked next."""
        at = len(self.asked)
        if not self.diverged and at < len(self.stored) and self.stored[at][0] == key:
            self.asked.append(self.stored[at])
            return self.stored[at][1]
        self.diverged = True
        return None

    def record(self, key: tuple[object, ...], answer: Answer,
               notes: tuple[tuple[str, str], ...] = ()) -> None:
        self.asked.append((key, answer, notes))

    def notes(self) -> tuple[tuple[str, str], ...]:
        """The unreadable C++ files (file, reason) this scan's answers depended on."""
        return tuple(sorted({note for _, _, notes in self.asked for note in notes}))

    def store(self) -> None:
        """Keep this scan's sequence, if it is not the one already stored (or
        borrowed: the scan of every arch answers for it while it stands)."""
        if self.asked != self.stored or self.depends != self._stored_depends:
            store_pickle(self.path, (self.stats, self.asked, self.depends))
