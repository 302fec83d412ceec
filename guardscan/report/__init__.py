"""report: renderers keyed by format name, all with one signature, ``render(result, stream, options)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, cast

from guardscan.results import ScanResult

__all__ = ["RENDERERS", "formats", "render"]

Renderer = Callable[[ScanResult, IO[str], dict[str, Any]], None]

RENDERERS: dict[str, Renderer] = {}


def register(name: str) -> Callable[[Renderer], Renderer]:
    def decorator(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return decorator


def formats() -> list[str]:
    _load()
    return sorted(RENDERERS)


def render(result: ScanResult, stream: IO[str], fmt: str = "text",
           options: dict[str, Any] | None = None) -> None:
    """Render through ``_Coalesced``: a renderer writes in thousands of small
    pieces (the text report one per line), and an unbuffered stream
    (``PYTHONUNBUFFERED``, ``python -u``) would make each a system call. The
    report is not held whole: a JSON report of sglang 0.5.23 is 12 MB of
    text, and held, then copied by a buffer, it was the last rise of a cold
    scan's peak memory."""
    _load()
    pieces = _Coalesced(stream)
    RENDERERS[fmt](result, cast(IO[str], pieces), options or {})
    pieces.flush()


class _Coalesced:
    """Writes gathered and passed on as pieces of at least ``PIECE`` characters."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.pending: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        self.pending.append(text)
        self.size += len(text)
        if self.size >= PIECE:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write("".join(self.pending))
            self.pending.clear()
            self.size = 0


#: the least text ``_Coalesced`` passes on in one write
PIECE = 1 << 16


def _load() -> None:
    from guardscan.report import json_, text  # noqa: F401

    try:
        from guardscan.report import markdown, sarif  # noqa: F401
    except ImportError:
        pass
