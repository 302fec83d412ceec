"""The background process that answers the kernel questions ahead of a
cold scan: it stops when asked, and it changes no result (whether it
answers or fails)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fixturetree import FIXTURES, fixture

from guardscan.driver import ScanOptions, analyse
from guardscan.memo.warm import Ahead, Warmer


def _kernel_tree(tmp_path: Path) -> Path:
    root = tmp_path / "kernels" / "flashinfer"
    shutil.copytree(FIXTURES / "kernels_decorator" / "flashinfer", root)
    return root


def test_a_stopped_warmer_leaves_no_process(tmp_path: Path) -> None:
    def build() -> object:
        raise AssertionError("never built: the scan never said go")

    warmer = Warmer(Ahead(build, [], []))  # type: ignore[arg-type]
    process = warmer._process
    if process is None:
        pytest.skip("one core, or no fork: the warmer never starts here")
    warmer.stop()
    assert not process.is_alive()
    assert process.exitcode is not None
    assert not warmer.answer([])  # stopped: nothing answers


def test_a_scan_with_the_warmer_gives_the_same_result(tmp_path: Path) -> None:
    kernels = _kernel_tree(tmp_path)

    def scan(**options: object) -> str:
        result = analyse(ScanOptions(target=str(fixture("roles_gate")), flashinfer=str(kernels),
                                     offline=True, **options)).result  # type: ignore[arg-type]
        return json.dumps(result.to_json(), sort_keys=True)

    reference = scan(cache_dir=tmp_path / "none", use_cache=False)
    assert '"package": "flashinfer"' in reference
    # a fresh cache: no stored kernel answers, so the warmer runs beside the scan
    assert scan(cache_dir=tmp_path / "cache") == reference


def test_the_kernel_questions_answered_ahead_are_the_scans_own(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    """With a fresh cache the background process answers the kernel
    questions linking finds, and the scan replays them without reading the
    library; when it fails, the scan reads the library itself. Either way
    the result is a scan's without the cache."""
    from guardscan.memo import warm

    kernels = fixture("flow_kernel_arguments") / "flashinfer"

    def scan(**options: object) -> object:
        return analyse(ScanOptions(target=str(fixture("flow_kernel_arguments")),
                                   flashinfer=str(kernels), offline=True,
                                   **options))  # type: ignore[arg-type]

    def text(analysis: object) -> str:
        return json.dumps(analysis.result.to_json(), sort_keys=True)  # type: ignore[attr-defined]

    reference = text(scan(cache_dir=tmp_path / "none", use_cache=False))
    probe = warm.Warmer(warm.Ahead(lambda: None, [], []))  # type: ignore[arg-type, return-value]
    if probe._process is None:
        pytest.skip("one core, or no fork: nothing runs beside the scan here")
    probe.stop()
    ahead = scan(cache_dir=tmp_path / "ahead")
    assert text(ahead) == reference
    assert ahead.kernel_judge._library is None  # type: ignore[attr-defined]
    assert list((tmp_path / "ahead" / "kernels").glob("*.pickle"))

    def failing(ahead: warm.Ahead, conn: object, stop: object) -> None:
        conn.send(False)  # type: ignore[attr-defined]

    monkeypatch.setattr(warm, "_answer", failing)  # (forked: the process runs it too)
    alone = scan(cache_dir=tmp_path / "alone")
    assert text(alone) == reference
    assert alone.kernel_judge._library is not None  # type: ignore[attr-defined]
