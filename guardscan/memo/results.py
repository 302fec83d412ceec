"""memo (results): whole scan results, reused while what they read is unchanged.


A scan depends on what it read of the files it parsed (recorded by the index
as observations, see ``index.observe``), on the lines it showed as evidence,
and on the answers of its text pre-filters. On the next run every file is
``stat``-ed (no read); a file whose size or mtime changed is re-hashed. The
cached result is reused when, for every changed file, no pre-filter answers
differently, no line shown changed, and no observation of its facts can tell
the old facts from the new (early cutoff: the scan would run exactly as
before). The changed file is parsed for that, and nothing else is. The kernel
library's tree must be unchanged altogether. Anything unreadable or corrupt
in the cache is a miss, never an error.

Beside each entry are the scan's records of reads, of linking and of judged
choices, paired with it by a token. On a miss with the same files, the next
analysis replays from them what the change cannot touch (see
``guardscan.memo.records``).

Linking does not depend on the archs, the ``--quantization`` or the model a
scan judges for (``link.collect_links`` is handed none of them), so the scans
of one tree that differ only there form a family (``family_parts``): the
family's last stored entry is named in ``<family>.family``, and a scan with
no entry of its own links from that one's records (its judged choices are
never reused: they are per arch, method and model).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from guardscan.acquire import SourceTree
from guardscan.guards.questions import StoredAnswer, value_blob
from guardscan.index import (
    FACTS_VERSION,
    MAX_FILE_BYTES,
    Index,
    load_pickles,
    store_pickle,
    store_pickles,
)
from guardscan.index.extract import source_lines
from guardscan.index.facts import FileOutcome
from guardscan.index.observe import unseen_change
from guardscan.memo.records import Changes, LinkRecord
from guardscan.memo.seen import Seen
from guardscan.results import Diagnostic, ScanResult

__all__ = ["ResultCache"]

Stat = tuple[int, int, int]  # size, mtime_ns, mode (chmod changes what can be read)

#: Files modified less than this long before the tree was stat-ed are re-read
#: next time ("racily clean", as git calls it): file systems stamp mtimes with
#: a coarse clock, so a second same-size write can keep the first one's stat.
RACY_NS = 2_000_000_000


@dataclass
class _Entry:
    stats: dict[str, Stat]
    hashes: dict[str, str]
    #: files whose outcome (parsed facts, or why not) the scan holds
    used: frozenset[str]
    #: files of which the scan read anything but a pre-filter answer
    read: frozenset[str]
    greps: list[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]]]
    kernel_stats: dict[str, Stat] | None
    result: ScanResult
    #: when ``stats`` were taken (time.time_ns)
    stat_ns: int = 0
    #: the same in the entry and its record of reads (concurrent scans)
    token: str = ""
    #: which options each option-specific diagnostic belongs to (``memo.narrow``)
    owners: dict[Diagnostic, tuple[tuple[str, str, int], ...]] | None = None


@dataclass
class _Reads:
    """What the scan read, per file: kept beside the entry and loaded only
    when a file it read has changed."""

    #: per file, a pickle read when asked (``memo.seen``)
    seen: Seen
    lines: dict[str, dict[int, str]]
    fact_keys: dict[str, str]
    token: str = ""


@dataclass
class _JudgedEntry:
    judged: dict[str, dict[str, Any]]
    token: str = ""
    #: what judging read besides findings and calls (``Links.judging_context``)
    context: str = ""


#: answers per pickle in a stored link record (units: a sixteenth of it)
_CHUNK = 4096


def _load_links(path: Path, token: str) -> LinkRecord | None:
    """The link record ``store_links`` wrote, if it pairs with ``token``."""
    pieces = load_pickles(path)
    try:
        assert pieces is not None
        head = pieces[0]
        assert isinstance(head, tuple) and len(head) == 7
        kind, stored_token, context, reads, keys, catalog, failed = head
        if kind != "links" or stored_token != token:
            return None
        split = pieces.index(None)
        answers: dict[int, Any] = {}
        for chunk in pieces[1:split]:
            for number, (blob, diagnostic, read, greps) in chunk.items():  # type: ignore[attr-defined]
                answers[number] = StoredAnswer(blob, diagnostic, read, greps)
        units: dict[Any, Any] = {}
        for chunk in pieces[split + 1:]:
            units.update(chunk)  # type: ignore[call-overload]
    except Exception:  # noqa: BLE001 - corrupt: a miss
        return None
    return LinkRecord(context, reads, keys, answers, units, catalog, failed)


def code_files() -> list[Path]:
    """Every file of guardscan's own code (the whole package, not only this
    stage's), as the fingerprint reads them."""
    package = Path(__file__).resolve().parents[1]
    return sorted(package.rglob("*.py")) + sorted(package.rglob("*.json"))


@lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """guardscan's own source, read once per process (at import): a result
    computed by other code is never reused."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in code_files():
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


_code_fingerprint()


def _stat_tree(tree: SourceTree) -> dict[str, Stat]:
    stats = {}
    root = str(tree.root)
    for rel in tree.files:
        try:
            st = os.stat(os.path.join(root, rel))
        except OSError:
            continue
        stats[rel] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return stats


#: the kernel library's C, C++ and CUDA text, which its C++ reader reads by
#: path (``cpp.link.CppLibrary``) beside the Python files of ``tree.files``
_CPP_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".c", ".cc", ".cpp",
                 ".cxx")


def kernel_stats(tree: SourceTree) -> dict[str, Stat]:
    """The stat of every file the kernel stage may read: the library's Python
    files and its C/C++/CUDA text. A file written in the last ``RACY_NS``
    may be written again without its stat moving, so then the snapshot
    holds a mark of its own time, which no later snapshot equals (answers
    stored with it are never reused). A tree extracted from a wheel into the
    cache never changes: its snapshot is the wheel's sha256 (FlashInfer
    0.7.2's 10,097 stats were a quarter of a warm scan)."""
    if tree.wheel_sha256:
        return {f"<extracted from the wheel {tree.wheel_sha256}>": (0, 0, 0)}
    stats = _stat_tree(tree)
    root = str(tree.root)
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        # one relative path per folder (``relpath`` per file was a tenth of
        # a warm scan of a checkout with FlashInfer's 6,700 C++ files)
        base = os.path.relpath(folder, root)
        for name in names:
            if name.endswith(_CPP_SUFFIXES):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                rel = name if base == os.curdir else os.path.join(base, name)
                stats[rel] = (st.st_size, st.st_mtime_ns, st.st_mode)
    now = time.time_ns()
    if any(st[1] >= now - RACY_NS for st in stats.values()):
        stats["<written just now>"] = (0, now, 0)
    return stats


def _hash(tree: SourceTree, rel: str) -> str:
    try:
        return hashlib.sha256(tree.path_of(rel).read_bytes()).hexdigest()
    except OSError:
        return ""


def _same_files(entry: _Entry, stats: dict[str, Stat]) -> frozenset[str]:
    """The files whose bytes are those the stored scan read (and read without
    trouble): on a miss, their pre-filter answers are reused."""
    racy = entry.stat_ns - RACY_NS
    return frozenset(rel for rel, st in stats.items()
                     if entry.stats.get(rel) == st and st[1] < racy
                     and entry.hashes.get(rel) and st[0] <= MAX_FILE_BYTES)


def _changed_files(entry: _Entry, stats: dict[str, Stat], tree: SourceTree,
                   ) -> dict[str, bytes] | str:
    """The files (same set as the entry's) whose bytes differ from those the
    stored scan read, with their new bytes; or the first one unreadable. A
    file whose stat moved is hashed again, and so is one written just before
    the stored stat was taken (it may be written again in the same clock
    tick, leaving its stat unchanged)."""
    racy = entry.stat_ns - RACY_NS
    out: dict[str, bytes] = {}
    for rel, st in stats.items():
        if st == entry.stats[rel] and st[1] < racy:
            continue
        try:
            data = tree.path_of(rel).read_bytes()
        except OSError:
            return rel
        if hashlib.sha256(data).hexdigest() != entry.hashes.get(rel):
            out[rel] = data
    return out


class ResultCache:
    def __init__(self, cache_dir: Path, key_parts: tuple[object, ...],
                 family_parts: tuple[object, ...] | None = None) -> None:
        """``family_parts``: the parts of ``key_parts`` that linking depends
        on (None: no family, a scan with no entry of its own links afresh)."""
        from guardscan import __version__

        def digest(parts: tuple[object, ...]) -> str:
            return hashlib.sha256(repr((__version__, FACTS_VERSION, _code_fingerprint(),
                                        parts)).encode()).hexdigest()

        self.cache_dir = cache_dir
        self.path = cache_dir / "results" / f"{digest(key_parts)}.pickle"
        self.reads_path = self.path.with_suffix(".reads.pickle")
        self.links_path = self.path.with_suffix(".links.pickle")
        self.judged_path = self.path.with_suffix(".judged.pickle")
        self.family_path = cache_dir / "results" / f"{digest(family_parts)}.family" \
            if family_parts is not None else None
        #: after a miss: the entry the records of an earlier scan are read
        #: from (this scan's own, or its family's last one)
        self._source = self.path
        #: after a miss with the same files: the stored entry, and the files
        #: whose bytes changed since (for incremental linking)
        self._entry: _Entry | None = None
        self._changed: dict[str, bytes] = {}
        self._reads: _Reads | None = None
        #: pairs this scan's entry with its records of reads and linking
        self.token = os.urandom(8).hex()
        #: the process writing the link record, if one was forked
        self._writer = 0
        #: the kernel library's stat, taken once per scan (``library_stats``)
        self.kernel_stats: dict[str, Stat] | None = None
        #: why the last ``load`` missed, or how it hit (for progress and tests)
        self.outcome = ""
        #: on a hit: whom the result's option-specific diagnostics belong to
        self.owners: dict[Diagnostic, tuple[tuple[str, str, int], ...]] = {}
        #: the tree's stat before the scan read anything, and when it was taken
        self.stats: dict[str, Stat] | None = None
        self.stat_ns = 0
        #: after a miss: the stored entry's pre-filter answers, the files whose
        #: bytes are as that scan read them, and their hashes (see ``prime``)
        self._prior: tuple[list[tuple[bytes, tuple[str, ...] | None, tuple[str, ...]]],
                           frozenset[str], dict[str, str]] | None = None

    def library_stats(self, kernel_tree: SourceTree) -> dict[str, Stat]:
        """The kernel library's snapshot (``kernel_stats``), taken the first
        time a part of this scan asks, before the library is read: the
        stored result and the kernel answers hold the same one."""
        if self.kernel_stats is None:
            self.kernel_stats = kernel_stats(kernel_tree)
        return self.kernel_stats

    def load(self, tree: SourceTree, kernel_tree: SourceTree | None) -> ScanResult | None:
        self.stat_ns = time.time_ns()
        self.stats = _stat_tree(tree)
        entry = _load(self.path, _Entry)
        if entry is None:
            self.outcome = "no stored result"
            self._from_family(self.stats, tree, kernel_tree)
            return None
        return self._check(entry, self.stats, tree, kernel_tree)

    def _from_family(self, stats: dict[str, Stat], tree: SourceTree,
                     kernel_tree: SourceTree | None) -> None:
        """With no entry of its own: the family's last entry (the same tree
        scanned for other archs, another method or model), whose linking this
        scan replays where the files it read are unchanged."""
        if self.family_path is None:
            return
        try:
            name = self.family_path.read_text(encoding="utf-8").strip()
        except OSError:
            return
        source = self.path.parent / name
        if not name.endswith(".pickle") or "/" in name or source == self.path:
            return
        entry = _load(source, _Entry)
        if entry is None:
            return
        library = self.library_stats(kernel_tree) if kernel_tree is not None else None
        if set(stats) != set(entry.stats) or library != entry.kernel_stats:
            return
        changed = _changed_files(entry, stats, tree)
        if isinstance(changed, str):
            return
        self._prior = (entry.greps, _same_files(entry, stats), entry.hashes)
        self._entry, self._changed, self._source = entry, changed, source
        self.outcome = "no stored result (linking from the scan of other archs or options)"

    def _check(self, entry: _Entry, stats: dict[str, Stat], tree: SourceTree,
               kernel_tree: SourceTree | None) -> ScanResult | None:
        self._prior = (entry.greps, _same_files(entry, stats), entry.hashes)
        if set(stats) != set(entry.stats):
            self.outcome = "files added or removed"
            return None
        if (kernel_tree is None) != (entry.kernel_stats is None) or (
                kernel_tree is not None and self.library_stats(kernel_tree) != entry.kernel_stats):
            self.outcome = "kernel library changed"
            return None
        new_data = _changed_files(entry, stats, tree)
        if isinstance(new_data, str):
            self.outcome = f"{new_data} unreadable"
            return None
        # the stat moved (or was racy): remember the new state below
        moved = any(st != entry.stats[rel] or st[1] >= entry.stat_ns - RACY_NS
                    for rel, st in stats.items())
        self._entry, self._changed = entry, new_data
        for rel, data in new_data.items():
            for pattern, within, matches in entry.greps:
                if (within is None or rel in within) and \
                        bool(re.search(pattern, data)) != (rel in matches):
                    self.outcome = f"{rel}: a pre-filter answers differently"
                    return None
        read = [rel for rel in new_data if rel in entry.used or rel in entry.read]
        fact_keys: dict[str, str] = {}
        reads: _Reads | None = None
        if read:
            reads = self._reads = _load(self.reads_path, _Reads)
            if reads is None or reads.token != entry.token:
                self.outcome = "no record of what the last scan read"
                return None
            index = Index(tree, self.cache_dir)
            for rel in read:
                reason = self._unseen(index, reads, rel, new_data[rel], rel in entry.used)
                if reason is not None:
                    self.outcome = f"{rel}: {reason}"
                    return None
            fact_keys = {rel: index.fact_keys[rel] for rel in read if rel in index.fact_keys}
        if moved:  # remember the new state, so the next run need not compare again
            entry.stats = stats
            entry.stat_ns = self.stat_ns
            entry.hashes.update((rel, hashlib.sha256(data).hexdigest())
                                for rel, data in new_data.items())
            store_pickle(self.path, entry)
            if fact_keys and reads is not None:
                reads.fact_keys.update(fact_keys)
                store_pickle(self.reads_path, reads)
        self._prior = self._entry = self._reads = None
        self.outcome = (f"reused: the changes to {', '.join(sorted(new_data))} are not "
                        "read by the scan") if new_data else "reused: nothing changed"
        self.owners = entry.owners or {}
        return entry.result

    def prime(self, index: Index) -> None:
        """After a miss: let ``index`` answer pre-filters for unchanged files
        as the stored scan did, instead of reading the whole tree again."""
        if self._prior is not None:
            greps, same, _ = self._prior
            index.reuse(greps, same)

    def prior_links(self, index: Index) -> tuple[LinkRecord, Changes] | None:
        """After a miss on a tree with the same files: the stored scan's
        linking, and what changed since, for ``collect_links`` to replay what
        the change cannot touch. None when there is nothing usable."""
        entry = self._entry
        if entry is None:
            return None
        record = _load_links(self._source.with_suffix(".links.pickle"), entry.token)
        if record is None:
            return None
        reads = self._reads or _load(self._source.with_suffix(".reads.pickle"), _Reads)
        if reads is None or reads.token != entry.token:
            return None
        self._reads = reads
        # the text readers' answers for unchanged files, as that scan read them
        index.reuse_reads(reads.seen)
        changed: dict[str, tuple[FileOutcome | None, FileOutcome | None, bytes]] = {}
        for rel, data in self._changed.items():
            if rel not in entry.used:
                continue  # never looked at: no unit or answer read it
            key = reads.fact_keys.get(rel)
            old = index.cached_outcome(key) if key is not None else None
            if old is None:
                return None
            changed[rel] = (old, index.outcome_of(rel, data), data)
        return record, Changes(changed)

    def _unseen(self, index: Index, reads: _Reads, rel: str, data: bytes,
                used: bool) -> str | None:
        """None when nothing the last scan read of ``rel`` differs in ``data``."""
        lines = reads.lines.get(rel)
        if lines:
            texts = source_lines(data)
            for line, text in lines.items():
                if (texts[line - 1].strip() if 0 < line <= len(texts) else "") != text:
                    return f"line {line}, shown as evidence, changed"
        seen = reads.seen.get(rel, frozenset())
        if not used:
            # read as text only (pre-filter answers, lines): facts never parsed
            return unseen_change(None, None, seen, data)
        key = reads.fact_keys.get(rel)
        old = index.cached_outcome(key) if key is not None else None
        if old is None:
            return "its earlier facts are not cached"
        return unseen_change(old, index.outcome_of(rel, data), seen, data)

    def store_links(self, record: LinkRecord, background: bool = False) -> None:
        """Keep this scan's linking (written before the entry, which pairs with
        it by token; see ``store``). ``background``: write it from a forked
        process while this one goes on (the process is small then: after a
        change, most of the linking was replayed, not computed); ``store``
        waits for it."""
        if background and hasattr(os, "fork"):
            try:
                pid = os.fork()
            except OSError:
                pid = -1
            if pid == 0:  # the writer: nothing else, no exit handlers
                code = 1
                try:
                    code = 0 if self._write_links(record) else 1
                finally:
                    os._exit(code)
            if pid > 0:
                self._writer = pid
                return
        self._write_links(record)

    def _write_links(self, record: LinkRecord) -> bool:
        answers, units = list(record.answers.items()), list(record.units.items())
        return store_pickles(self.links_path, [
            ("links", self.token, record.context, record.reads, record.keys, record.catalog,
             record.failed),
            # each value a pickle of its own, read when asked (``StoredAnswer``)
            *({number: (value_blob(answer), answer.diagnostic, answer.reads, answer.greps)
               for number, answer in answers[i:i + _CHUNK]}
              for i in range(0, len(answers), _CHUNK)),
            None,
            *(dict(units[i:i + _CHUNK // 16]) for i in range(0, len(units), _CHUNK // 16))])

    def wait_for_writer(self) -> None:
        """Wait for ``store_links``'s forked writer, if any."""
        if self._writer:
            try:
                os.waitpid(self._writer, 0)
            except OSError:
                pass
            self._writer = 0

    def prior_judged(self, context: str) -> dict[str, dict[str, Any]] | None:
        """After a miss with the same files: the stored scan's judged choices
        (``verdict.Judged``, by option dest and choice), if kept and judged
        in the same ``context`` (``Links.judging_context``)."""
        entry = self._entry
        if entry is None or self._source != self.path:
            return None  # a family member's choices were judged for another scan
        judged = _load(self.judged_path, _JudgedEntry)
        return judged.judged if judged is not None and judged.token == entry.token \
            and judged.context == context else None

    def store(self, index: Index, kernel_tree: SourceTree | None, result: ScanResult,
              replayed: bool = False, judged: dict[str, dict[str, Any]] | None = None,
              judged_context: str = "",
              owners: dict[Diagnostic, tuple[tuple[str, str, int], ...]] | None = None) -> None:
        """Keep ``result`` with what the scan read (``owners``: see
        ``memo.narrow``). ``replayed``: linking
        replayed units of the stored scan, whose reads are then counted as
        this scan's too (they were not read again)."""
        tree = index.tree
        if self.stats is None:  # not loaded first: stat now
            self.stat_ns, self.stats = time.time_ns(), _stat_tree(tree)
        # the stat taken before the scan read anything: a file changed while the
        # scan ran differs from it next time, and is compared
        stats = self.stats
        prior_hashes = {rel: self._prior[2][rel] for rel in self._prior[1]} \
            if self._prior is not None else {}
        used = frozenset(index.outcomes)
        read = frozenset(rel for rel, seen in index.seen.items() if seen) | frozenset(
            index.lines_read)
        observed = {rel: frozenset(keys) for rel, keys in index.seen.items() if keys}
        lines = dict(index.lines_read)
        fact_keys = dict(index.fact_keys)
        prior, prior_reads = self._entry, self._reads
        if replayed and prior is not None and prior_reads is not None:
            used |= prior.used
            read |= prior.read
            # the files this scan did not read keep their pickles as they came
            seen = prior_reads.seen.merged(observed)
            for rel, texts in prior_reads.lines.items():
                if rel in self._changed:  # keep the lines that read the same now
                    now = source_lines(self._changed[rel])
                    texts = {line: text for line, text in texts.items()
                             if (now[line - 1].strip() if 0 < line <= len(now) else "") == text}
                lines[rel] = {**texts, **lines.get(rel, {})}
            for rel, key in prior_reads.fact_keys.items():
                fact_keys.setdefault(rel, key)
        else:
            seen = Seen.of(observed)
        entry = _Entry(
            stats=stats,
            # the pre-filter already read (and hashed) every file, or knew it
            # unchanged: don't re-read
            hashes={rel: index.digest(rel) or prior_hashes.get(rel) or _hash(tree, rel)
                    for rel in stats},
            used=used,
            read=read,
            greps=list(index.grep_log),
            kernel_stats=self.library_stats(kernel_tree) if kernel_tree is not None else None,
            result=result,
            stat_ns=self.stat_ns,
            owners=owners,
        )
        token = self.token
        entry.token = token
        reads = _Reads(seen=seen, lines=lines, fact_keys=fact_keys, token=token)
        self.wait_for_writer()
        # the records first: an entry is never paired with older ones
        if store_pickle(self.reads_path, reads) and (
                judged is None or store_pickle(self.judged_path, _JudgedEntry(judged, token, judged_context))) \
                and store_pickle(self.path, entry) and self.family_path is not None:
            _write_name(self.family_path, self.path.name)


def _write_name(path: Path, name: str) -> None:
    """``path`` holds ``name`` (written whole or not at all)."""
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        staging.write_text(name, encoding="utf-8")
        os.replace(staging, path)
    except OSError:
        try:
            staging.unlink()
        except OSError:
            pass


_T = TypeVar("_T")


def _load(path: Path, kind: type[_T]) -> _T | None:
    try:
        with path.open("rb") as handle:
            loaded = pickle.load(handle)
    except Exception:  # noqa: BLE001 - missing or corrupt: a miss
        return None
    return loaded if isinstance(loaded, kind) else None
