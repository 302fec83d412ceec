"""report (JSON): the stable contract documented in docs/json.md.

Package paths are written relative, as evidence paths are (``sglang``, the
package directory inside the directory every evidence path is relative to), so
no report carries a local path such as the download cache's.
"""

from __future__ import annotations

from typing import IO, Any

from guardscan.report import register
from guardscan.report.json_text import write_indented
from guardscan.results import PackageRef, ScanResult

__all__ = ["portable", "render_json"]


def portable(ref: PackageRef) -> dict[str, object]:
    """A package entry with its path relative to the directory holding it."""
    data = ref.to_json()
    data["path"] = ref.path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or ref.package
    return data


@register("json")
def render_json(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    data = result.to_json()
    data["target"] = portable(result.target)
    data["kernels"] = [portable(k) for k in result.kernels]
    if result.notes:
        data["notes"] = [note.text for note in result.notes]
    write_indented(data, stream)
    stream.write("\n")
