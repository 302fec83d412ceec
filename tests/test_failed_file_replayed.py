"""A file that does not parse is reported (``file-failed``) by every scan that
reads it, the incremental ones included: a scan that replays the linking unit
or reuses the option catalog that read it (``memo.session``, the link
record's ``failed``) reports it as a scan from scratch does.

roles_gate's MoE runner gains a gate on a helper from a file that does not
parse, and a second gate file; an edit of the second file makes the next scan
run its unit again and replay the runner's.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from fixturetree import FIXTURES

from guardscan.arch import parse_arch
from guardscan.driver import Analysis, ScanOptions, analyse

RUNNER = "sglang/srt/layers/moe/runner.py"
BROKEN = "sglang/srt/layers/moe/broken_helpers.py"
OTHER = "sglang/srt/layers/attention.py"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_gate", root)
    runner = root / RUNNER
    runner.write_text(runner.read_text(encoding="utf-8").replace(
        "from sglang.srt.utils import is_sm100_supported\n",
        "from sglang.srt.utils import is_sm100_supported\n"
        "from sglang.srt.layers.moe.broken_helpers import is_fast\n") +
        '    if server_args.moe_runner_backend == "y" and not is_fast():\n'
        '        raise ValueError("y needs a fast GPU")\n', encoding="utf-8")
    (root / BROKEN).write_text("def is_fast(:\n    return True\n", encoding="utf-8")
    (root / OTHER).write_text(
        "from sglang.srt.utils import is_sm100_supported\n\n\n"
        "def create_attention(server_args):\n"
        '    if server_args.attention_backend == "fa3" and is_sm100_supported():\n'
        '        raise ValueError("fa3 is not for SM100")\n', encoding="utf-8")
    return root


def _scan(root: Path, cache: Path, **extra: Any) -> Analysis:
    return analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                               cache_dir=cache, **extra))


def _json(analysis: Analysis) -> dict[str, Any]:
    return json.loads(json.dumps(analysis.result.to_json(), sort_keys=True))


def _failed(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["path"], d["code"]) for d in report["diagnostics"] if d["code"] == "file-failed"]


def _edit_other(root: Path) -> None:
    path = root / OTHER
    path.write_text(path.read_text(encoding="utf-8").replace('== "fa3"', '== "flashinfer"'),
                    encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


def test_a_replayed_unit_reports_the_file_it_read_that_does_not_parse(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    first = _scan(root, cache)
    assert _failed(_json(first)) == [(BROKEN, "file-failed")]
    _edit_other(root)
    again = _scan(root, cache)
    replayed, ran = again.units
    assert ran > 0 and replayed > 0, again.units  # the runner's unit is replayed
    fresh = _json(_scan(root, tmp_path / "fresh", use_cache=False))
    assert _failed(fresh) == [(BROKEN, "file-failed")]
    assert _json(again) == fresh


def test_a_narrower_scan_after_the_edit_reports_it_too(tmp_path: Path) -> None:
    """The record written by the incremental scan keeps the outcome it took
    over: the scan after it (another arch, linking from that record) still
    reports the file."""
    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    _scan(root, cache)
    _edit_other(root)
    _scan(root, cache)
    _edit_other(root)  # the same text: only the stat moves
    narrower = _scan(root, cache, archs=[parse_arch("sm90")])
    fresh = _scan(root, tmp_path / "fresh", use_cache=False, archs=[parse_arch("sm90")])
    assert _failed(_json(narrower)) == [(BROKEN, "file-failed")]
    assert _json(narrower) == _json(fresh)

