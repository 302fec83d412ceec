"""memo (seen): what a stored scan read of each file, a pickle per file, read when asked.

A scan's record of what it read (``results._Reads.seen``: per file, the
observations its readers made, ``index.observe``) held 32 MB of small tuples
and sets for sglang 0.5.23, and took 0.27 s to load, on every scan after an
edit. Such a scan asks for few files' observations: the changed files' (is
the change seen?) and the readers' answers of the files it reads again. So
each file's observations are kept as a pickle of their own, read the first
time they are asked for, and written back as they came for the files the
scan did not read again.

A pickle that no longer reads (a damaged cache) stands for "the whole file
was read" (``observe.ALL``): any change to that file is then seen, and the
file is analysed again, never reused on a guess.

>>> seen = Seen.of({"a.py": frozenset({("name", "x")})})
>>> sorted(seen["a.py"]), list(seen), seen.get("b.py", frozenset())
([('name', 'x')], ['a.py'], frozenset())
>>> Seen({"a.py": b"not a pickle"})["a.py"]
frozenset({('all',)})
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping

from guardscan.index.observe import ALL

__all__ = ["Seen"]

Observations = frozenset[tuple[object, ...]]

#: what a file whose observations no longer read stands for
_WHOLE: Observations = frozenset({ALL})


class Seen(Mapping[str, Observations]):
    """Per file, what a scan observed of it (``blobs``: each a pickle)."""

    __slots__ = ("_read", "blobs")

    def __init__(self, blobs: dict[str, bytes]) -> None:
        self.blobs = blobs
        self._read: dict[str, Observations] = {}

    @classmethod
    def of(cls, seen: Mapping[str, Observations]) -> Seen:
        return cls({rel: pickle.dumps(keys, protocol=pickle.HIGHEST_PROTOCOL)
                    for rel, keys in seen.items()})

    def __getitem__(self, rel: str) -> Observations:
        found = self._read.get(rel)
        if found is None:
            blob = self.blobs[rel]
            try:
                found = pickle.loads(blob)
                if not isinstance(found, frozenset):
                    found = _WHOLE
            except Exception:  # noqa: BLE001 - damaged: the whole file counts as read
                found = _WHOLE
            self._read[rel] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.blobs)

    def __len__(self) -> int:
        return len(self.blobs)

    def __contains__(self, rel: object) -> bool:
        return rel in self.blobs

    def merged(self, now: Mapping[str, Observations]) -> Seen:
        """This record with ``now`` (a later scan's observations) added: the
        files it did not observe keep their pickles as they are."""
        blobs = dict(self.blobs)
        for rel, keys in now.items():
            if rel in blobs:
                keys = keys | self[rel]
            blobs[rel] = pickle.dumps(keys, protocol=pickle.HIGHEST_PROTOCOL)
        return Seen(blobs)

    def __reduce__(self) -> tuple[type, tuple[dict[str, bytes]]]:
        return Seen, (self.blobs,)
