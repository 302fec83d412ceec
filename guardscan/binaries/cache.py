"""binaries (cache): a wheel's library facts kept as small JSON, keyed by the wheel's sha256.

What it holds, under the cache directory passed in (``default_cache_dir()``
when none is)::

    <cache>/binaries/<sha256>.json          facts of one wheel: an outcome per library read
    <cache>/binaries/stat/<key>             the sha256 of a wheel file, keyed by its path,
                                            size, mtime and inode (saves re-hashing 373 MB)

Every file is written to a temporary file in the same directory and moved into
place with ``os.replace``, so concurrent runs never read half a file; nothing
is written outside ``<cache>/binaries``. A file this reader cannot use
(another ``SCHEMA``, bad JSON) is ignored and rewritten.

Why it matters: inflating sglang-kernel's 1.1 GB library takes seconds; a warm
scan reads a few kilobytes of JSON instead.

Known limits: the facts of the members a call asked for are merged into the
file, so a later call that asks for other members reads only those. The stat
key trusts a file whose path, size, mtime and inode are unchanged to be the
same file (wheels in guardscan's own cache are never rewritten in place).

Example::

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as root:
    ...     store_facts(pathlib.Path(root), "ab" * 32, "x.whl", {})
    ...     load_facts(pathlib.Path(root), "ab" * 32)
    {}
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from guardscan.binaries.model import LibraryFacts, LibraryOutcome, outcome_from_json

__all__ = ["SCHEMA", "facts_path", "load_facts", "store_facts", "wheel_sha256"]

#: the layout of a facts file; a reader change that alters facts bumps it
SCHEMA = 2
_HASH_BLOCK = 1 << 20


def _dir(cache: Path) -> Path:
    return cache / "binaries"


def facts_path(cache: Path, sha256: str) -> Path:
    return _dir(cache) / f"{sha256}.json"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def load_facts(cache: Path, sha256: str) -> dict[str, LibraryOutcome] | None:
    """The outcomes cached for the wheel ``sha256``, by member name; None
    when there is no usable file."""
    try:
        data = json.loads(facts_path(cache, sha256).read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA or data.get("sha256") != sha256:
            return None
        return {name: outcome_from_json(item) for name, item in data["libraries"].items()}
    except (OSError, ValueError, KeyError, TypeError, AssertionError, AttributeError):
        return None


def store_facts(cache: Path, sha256: str, wheel: str,
                outcomes: Mapping[str, LibraryOutcome]) -> None:
    """Write the outcomes of the wheel ``sha256`` (replacing the file)."""
    payload = {"schema": SCHEMA, "sha256": sha256, "wheel": wheel,
               "libraries": {name: _compact(o) for name, o in sorted(outcomes.items())}}
    _write_atomic(facts_path(cache, sha256), json.dumps(payload, separators=(",", ":")))


def _compact(outcome: LibraryOutcome) -> dict[str, object]:
    return outcome.to_json(compact=True) if isinstance(outcome, LibraryFacts) else \
        outcome.to_json()


def wheel_sha256(path: Path, cache: Path | None) -> str:
    """The sha256 of the file at ``path``, remembered under ``cache`` by the
    file's path, size, mtime and inode."""
    stat = path.stat()
    memo = None
    if cache is not None:
        key = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}"
        memo = _dir(cache) / "stat" / hashlib.sha256(key.encode()).hexdigest()[:32]
        try:
            known = memo.read_text(encoding="ascii").strip()
            if len(known) == 64 and all(c in "0123456789abcdef" for c in known):
                return known
        except OSError:
            pass
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    sha = digest.hexdigest()
    if memo is not None:
        try:
            _write_atomic(memo, sha)
        except OSError:
            pass  # a cache we cannot write only costs a re-hash next time
    return sha
