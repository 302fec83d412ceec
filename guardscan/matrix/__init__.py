"""matrix (after verdicts): many targets x architectures, as one page.

Targets (release specs, a ``--releases`` range read from the package index,
checkouts, wheels) are scanned as ``guardscan TARGET`` scans them, on a process
pool, each result cached (``matrix/scan.py``); ``matrix/model.py`` lays them
side by side (rows option x choice, columns architecture, per release) with the
history of each cell across the releases and the changes ``compare`` finds;
``matrix/html.py`` (with ``page.py``) writes the self-contained page,
``matrix/render.py`` JSON and Markdown. Nothing here decides a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from guardscan.matrix.model import Change, Matrix, Release, Row, build_matrix
from guardscan.matrix.releases import release_specs
from guardscan.matrix.scan import Scanned, scan_targets

__all__ = ["FORMATS", "Change", "Matrix", "Release", "Row", "Scanned", "build_matrix",
           "release_specs", "render_matrix", "scan_targets"]

Renderer = Callable[[Matrix, IO[str], dict[str, Any]], None]


def _renderers() -> dict[str, Renderer]:
    from guardscan.matrix.html import render_html
    from guardscan.matrix.render import render_json, render_markdown

    return {"html": render_html, "markdown": render_markdown, "json": render_json}


#: the formats ``guardscan matrix --format`` takes
FORMATS = ("html", "markdown", "json")


def render_matrix(matrix: Matrix, stream: IO[str], fmt: str = "html",
                  options: dict[str, Any] | None = None) -> None:
    """Write ``matrix`` to ``stream`` as ``fmt`` (one of ``FORMATS``)."""
    _renderers()[fmt](matrix, stream, options or {})
