"""binaries (sources): the bytes of one library, read at offsets, from a file, memory or a zip stream.

What it reads: a library's bytes through one small interface, ``ByteSource``:
``read_at(offset, length)`` and ``find(needle, start, end)``. Three kinds:

* ``BytesSource``: bytes in memory (tests, tiny files);
* ``FileSource``: a file, or a stored (uncompressed) zip member, through
  ``os.pread``: random access, nothing read but what is asked for;
* ``ForwardSource``: a stream that only goes forward (a deflated zip member
  inflated as it is read). It keeps the last ``WINDOW`` bytes it passed, so a
  read a little behind the stream's position is served from memory; a read
  further back starts the stream again from the beginning (``passes`` counts
  the starts). Memory stays at about ``WINDOW + CHUNK`` bytes whatever the
  member's size.

Why it matters: sglang-kernel 0.4.10's ``flash_ops.abi3.so`` is 1.1 GB
inflated; reading its fatbin's headers must not extract it, nor hold it.

Known limits: a ``ForwardSource`` costs a full inflate per pass (about 4 s
for that 1.1 GB member here); the readers order their reads so that one pass
is the rule (see ``guardscan.binaries.library``). Every read is bounded by the
source's declared size: a member that inflates to more is cut there, one that
inflates to less fails as truncated.

Example::

    >>> source = BytesSource(b"\\x7fELF" + bytes(60), name="x.so")
    >>> source.read_at(0, 4)
    b'\\x7fELF'
    >>> source.find(b"ELF", 0, source.size)
    1
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from guardscan.binaries.model import Malformed

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "CHUNK",
    "MAX_READ",
    "WINDOW",
    "ByteSource",
    "BytesSource",
    "FileSource",
    "ForwardSource",
    "InflateReader",
    "Reader",
]

#: how much a forward stream inflates at a time
CHUNK = 1 << 20
#: how far behind its position a forward stream can still read without restarting
WINDOW = 4 << 20
#: the most one ``read_at`` returns: headers are small, and this caps a
#: hostile length field before it becomes an allocation
MAX_READ = 64 << 20


class ByteSource(Protocol):
    """The bytes of one library: ``size`` of them, read at offsets."""

    @property
    def name(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def random_access(self) -> bool:
        """True when any read costs about the same (a file, memory); False for
        a forward stream, where reading behind the window restarts it."""
        ...

    @property
    def passes(self) -> int:
        """How many times the underlying stream was started (1 for random access)."""
        ...

    def retained_from(self) -> int:
        """The lowest offset readable without restarting a stream."""
        ...

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset``; ``Malformed("truncated")`` past the end."""
        ...

    def find(self, needle: bytes, start: int, end: int) -> int:
        """The first offset in ``[start, end)`` where ``needle`` begins, or -1."""
        ...


def _check_span(name: str, size: int, offset: int, length: int) -> None:
    if offset < 0 or length < 0:
        raise Malformed("bad-elf", f"negative offset or length ({offset}, {length}) in {name}")
    if length > MAX_READ:
        raise Malformed("bad-elf", f"a {length}-byte read at {offset:#x} in {name}")
    if offset + length > size:
        raise Malformed("truncated", offset + length, size)


class _Source:
    """What every source shares: its name and size, and closing it on leaving
    a ``with`` block (a source with nothing to release closes as a no-op)."""

    _name: str
    _size: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def size(self) -> int:
        return self._size

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BytesSource(_Source):
    """``data`` in memory, read at offsets."""

    def __init__(self, data: bytes, name: str = "<bytes>") -> None:
        self._data = data
        self._name = name
        self._size = len(data)

    random_access = True
    passes = 1

    def retained_from(self) -> int:
        return 0

    def read_at(self, offset: int, length: int) -> bytes:
        _check_span(self._name, len(self._data), offset, length)
        return self._data[offset:offset + length]

    def find(self, needle: bytes, start: int, end: int) -> int:
        return self._data.find(needle, max(start, 0), min(end, len(self._data)))


class FileSource(_Source):
    """A file (or ``size`` bytes of it from ``base``: a stored zip member),
    read with ``os.pread``; use as a context manager, or ``close()``."""

    def __init__(self, path: str | os.PathLike[str], *, base: int = 0,
                 size: int | None = None, name: str | None = None) -> None:
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            available = os.fstat(self._fd).st_size - base
            self._size = available if size is None else size
            if self._size > available:
                raise Malformed("truncated", base + self._size, base + max(available, 0))
        except BaseException:
            os.close(self._fd)
            raise
        self._base = base
        self._name = name if name is not None else os.fspath(path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    random_access = True
    passes = 1

    def retained_from(self) -> int:
        return 0

    def read_at(self, offset: int, length: int) -> bytes:
        _check_span(self._name, self._size, offset, length)
        out = os.pread(self._fd, length, self._base + offset)
        if len(out) != length:  # the file shrank under us
            raise Malformed("truncated", offset + length, offset + len(out))
        return out

    def find(self, needle: bytes, start: int, end: int) -> int:
        end = min(end, self._size)
        pos = max(start, 0)
        while pos < end:
            block = os.pread(self._fd, min(CHUNK + len(needle) - 1, end - pos),
                             self._base + pos)
            if not block:
                return -1
            hit = block.find(needle)
            if hit >= 0 and pos + hit + len(needle) <= end:
                return pos + hit
            pos += max(len(block) - len(needle) + 1, 1)
        return -1


class Reader(Protocol):
    """A forward stream: ``read(n)`` gives at most ``n`` bytes, ``b""`` at the end."""

    def read(self, n: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class InflateReader:
    """A raw-deflate zip member inflated as it is read: the compressed bytes
    from ``offset`` (``length`` of them) of the file at ``path``.

    zipfile's own stream does the same with a CRC check on every byte; the
    reader here only wants headers, and this runs about twice as fast
    (4.2 s against 9.3 s for the 1.1 GB ``flash_ops.abi3.so``)."""

    def __init__(self, path: str | os.PathLike[str], offset: int, length: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._file.seek(offset)
        self._left = length
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        self._tail = b""
        self._pending = b""

    def read(self, n: int = -1, /) -> bytes:
        n = CHUNK if n < 0 else n
        while not self._pending:
            if self._inflate.eof:
                return b""
            if not self._tail and self._left > 0:
                self._tail = self._file.read(min(self._left, CHUNK))
                self._left -= len(self._tail)
                if not self._tail:  # the zip itself is shorter than its directory says
                    self._left = 0
            if not self._tail:
                self._pending = self._inflate.flush()
                if not self._pending:
                    return b""
                break
            try:
                self._pending = self._inflate.decompress(self._tail, n)
            except zlib.error as exc:
                raise Malformed("bad-zip", f"inflating the member: {exc}") from None
            self._tail = self._inflate.unconsumed_tail
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def close(self) -> None:
        self._file.close()


class ForwardSource(_Source):
    """``size`` bytes from a stream that ``open_stream`` starts afresh each
    pass; reads behind the retained window start a new pass."""

    def __init__(self, open_stream: Callable[[], Reader], size: int, name: str) -> None:
        self._open_stream = open_stream
        self._size = size
        self._name = name
        self._stream: Reader | None = None
        self._passes = 0
        self._buf = bytearray()
        self._buf_start = 0  # offset of self._buf[0]
        self._pos = 0  # offset just past the last byte taken from the stream
        self._ended = False

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    random_access = False

    @property
    def passes(self) -> int:
        return self._passes

    def retained_from(self) -> int:
        return self._buf_start if self._stream is not None else 0

    def _restart(self) -> None:
        self.close()
        self._stream = self._open_stream()
        self._passes += 1
        self._buf = bytearray()
        self._buf_start = self._pos = 0
        self._ended = False

    def _pull(self, keep_from: int) -> bool:
        """Take one chunk from the stream, keeping what lies at or after
        ``keep_from`` (and at least the window); False at the stream's end."""
        assert self._stream is not None
        want = min(CHUNK, self._size - self._pos)
        chunk = self._stream.read(want) if want > 0 and not self._ended else b""
        if not chunk:
            self._ended = True
            return False
        self._buf += chunk
        self._pos += len(chunk)
        drop = min(keep_from, self._pos - WINDOW) - self._buf_start
        if drop > 0:
            del self._buf[:drop]
            self._buf_start += drop
        return True

    def _skip_to(self, offset: int) -> None:
        """Pass over the stream up to ``offset`` without keeping what lies
        more than a window behind it."""
        if self._stream is None or offset < self._buf_start:
            self._restart()
        while self._pos < offset - WINDOW - CHUNK:
            if not self._pull(keep_from=self._pos):
                return

    def read_at(self, offset: int, length: int) -> bytes:
        _check_span(self._name, self._size, offset, length)
        self._skip_to(offset)
        while self._pos < offset + length:
            if not self._pull(keep_from=offset):
                raise Malformed("truncated", offset + length, self._pos)
        start = offset - self._buf_start
        return bytes(self._buf[start:start + length])

    def find(self, needle: bytes, start: int, end: int) -> int:
        end = min(end, self._size)
        cursor = max(start, 0)
        self._skip_to(cursor)
        while True:
            lo = max(cursor, self._buf_start) - self._buf_start
            hi = min(end, self._pos) - self._buf_start
            hit = self._buf.find(needle, lo, hi) if hi > lo else -1
            if hit >= 0:
                return self._buf_start + hit
            if self._pos >= end:
                return -1
            cursor = max(cursor, self._pos - len(needle) + 1)
            if not self._pull(keep_from=cursor):
                return -1
