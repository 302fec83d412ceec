"""report: renderers keyed by format name, all with one signature, ``render(result, stream, options)``."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO, Any

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
    """Render into memory, then write once: a renderer writes in thousands of
    small pieces (the JSON encoder in one per token), and an unbuffered
    stream (``PYTHONUNBUFFERED``, ``python -u``) would make each a system
    call."""
    _load()
    buffer = io.StringIO()
    RENDERERS[fmt](result, buffer, options or {})
    stream.write(buffer.getvalue())


def _load() -> None:
    from guardscan.report import json_, text  # noqa: F401

    try:
        from guardscan.report import markdown, sarif  # noqa: F401
    except ImportError:
        pass
