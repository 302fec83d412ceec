"""A cache of whole scan results, valid while the files they depend on are unchanged.

A scan depends on the facts of the files it parsed and on the answers of its
whole-tree text pre-filters. On the next run every file is ``stat``-ed (no
read); a file whose size or mtime changed is re-hashed; the cached result is
reused when no parsed file changed and no pre-filter would answer differently
for the changed files. The kernel library's tree must be unchanged altogether.
Anything unreadable or corrupt in the cache is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from guardscan.acquire import SourceTree
from guardscan.index import FACTS_VERSION, Index
from guardscan.predicate import Tri
from guardscan.results import Evidence, ScanResult

__all__ = ["KernelAnswers", "ResultCache"]

Stat = tuple[int, int, int]  # size, mtime_ns, mode (chmod changes what can be read)


@dataclass
class _Entry:
    stats: dict[str, Stat]
    hashes: dict[str, str]
    used: frozenset[str]
    greps: list[tuple[bytes, tuple[str, ...]]]
    kernel_stats: dict[str, Stat] | None
    result: ScanResult


@lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """guardscan's own source, read once per process (at import): a result
    computed by other code is never reused."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")) + sorted(package.rglob("*.json")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


_code_fingerprint()


def _stat_tree(tree: SourceTree) -> dict[str, Stat]:
    stats = {}
    for rel in tree.files:
        try:
            st = tree.path_of(rel).stat()
        except OSError:
            continue
        stats[rel] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return stats


def _hash(tree: SourceTree, rel: str) -> str:
    try:
        return hashlib.sha256(tree.path_of(rel).read_bytes()).hexdigest()
    except OSError:
        return ""


class ResultCache:
    def __init__(self, cache_dir: Path, key_parts: tuple[object, ...]) -> None:
        from guardscan import __version__

        digest = hashlib.sha256(repr((__version__, FACTS_VERSION, _code_fingerprint(),
                                      key_parts)).encode())
        self.path = cache_dir / "results" / f"{digest.hexdigest()}.pickle"

    def load(self, tree: SourceTree, kernel_tree: SourceTree | None) -> ScanResult | None:
        try:
            with self.path.open("rb") as handle:
                entry = pickle.load(handle)
            if not isinstance(entry, _Entry):
                return None
        except Exception:
            return None
        stats = _stat_tree(tree)
        if set(stats) != set(entry.stats):
            return None
        if kernel_tree is not None and _stat_tree(kernel_tree) != entry.kernel_stats:
            return None
        if (kernel_tree is None) != (entry.kernel_stats is None):
            return None
        changed = [rel for rel, st in stats.items() if st != entry.stats[rel]
                   and _hash(tree, rel) != entry.hashes.get(rel)]
        if any(rel in entry.used for rel in changed):
            return None
        for rel in changed:
            try:
                data = tree.path_of(rel).read_bytes()
            except OSError:
                return None
            for pattern, matches in entry.greps:
                if bool(re.search(pattern, data)) != (rel in matches):
                    return None
        return entry.result

    def store(self, index: Index, kernel_tree: SourceTree | None, result: ScanResult) -> None:
        tree = index.tree
        stats = _stat_tree(tree)
        used = frozenset(index.outcomes)
        entry = _Entry(
            stats=stats,
            # the pre-filter already read (and hashed) every file: don't re-read
            hashes={rel: index.digest(rel) or _hash(tree, rel) for rel in stats},
            used=used,
            greps=list(index.grep_log),
            kernel_stats=_stat_tree(kernel_tree) if kernel_tree is not None else None,
            result=result,
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(entry, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except OSError:
            pass


#: (support, evidence chain, whether the library defines the called name)
Answer = tuple[Tri, list[Evidence], bool]
#: ((call target, backend, arch), answer)
KernelAnswer = tuple[tuple[object, ...], Answer]


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
    come out the same too.
    """

    def __init__(self, cache_dir: Path, kernel_tree: SourceTree) -> None:
        from guardscan import __version__

        digest = hashlib.sha256(repr((__version__, FACTS_VERSION, _code_fingerprint(),
                                      str(kernel_tree.root), kernel_tree.package)).encode())
        self.path = cache_dir / "kernels" / f"{digest.hexdigest()}.pickle"
        self.stats = _stat_tree(kernel_tree)
        self.stored: list[KernelAnswer] = []
        try:
            with self.path.open("rb") as handle:
                stats, stored = pickle.load(handle)
            if stats == self.stats and isinstance(stored, list):
                self.stored = stored
        except Exception:  # noqa: BLE001 - missing, corrupt or stale: start empty
            self.stored = []
        #: this scan's questions and answers, in order
        self.asked: list[KernelAnswer] = []
        self.diverged = False

    def next(self, key: tuple[object, ...]) -> Answer | None:
        """The stored answer, if ``key`` is the question the last scan asked next."""
        at = len(self.asked)
        if not self.diverged and at < len(self.stored) and self.stored[at][0] == key:
            self.asked.append(self.stored[at])
            return self.stored[at][1]
        self.diverged = True
        return None

    def record(self, key: tuple[object, ...], answer: Answer) -> None:
        self.asked.append((key, answer))

    def store(self) -> None:
        """Keep this scan's sequence, if it is not the one already stored."""
        if self.asked == self.stored:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((self.stats, self.asked), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except OSError:
            pass
