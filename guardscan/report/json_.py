"""report (JSON): the stable contract documented in docs/json.md."""

from __future__ import annotations

import json
from typing import IO, Any

from guardscan.report import register
from guardscan.results import ScanResult


@register("json")
def render_json(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    data = result.to_json()
    if result.notes:
        data["notes"] = list(result.notes)
    json.dump(data, stream, indent=2, sort_keys=False)
    stream.write("\n")
