"""Parts of a linking unit (``RecordingUnits.part``): each call followed out of
a choice's code is replayed on its own when its unit runs again.

``fixtures/flow_follow_parts``: ``layer.py`` tests ``--moe-runner-backend``
and calls the cutlass runner or the TRT-LLM runner, each in a file of its own
with a device gate. An edit to one runner's gate runs ``layer.py``'s unit
again; the call into the other runner is replayed, and the result is what a
scan from scratch gives.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fixturetree import FIXTURES

from guardscan.driver import Analysis, ScanOptions, analyse
from guardscan.link.model import Found
from guardscan.link.units import Units
from guardscan.memo.link_units import RecordingUnits

LAYER = "sglang/srt/layers/moe/layer.py"
TRTLLM = "sglang/srt/layers/moe/trtllm_runner.py"


def _analyse(root: Path, cache: Path, use_cache: bool = True) -> Analysis:
    return analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                               cache_dir=cache, use_cache=use_cache))


def _json(analysis: Analysis) -> str:
    return json.dumps(analysis.result.to_json(), indent=2, sort_keys=True)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


@pytest.fixture
def parts_logged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bool]]:
    """(the unit's first key part, the function followed, replayed) per part."""
    log: list[tuple[str, str, bool]] = []
    part = RecordingUnits.part

    def logged(self: RecordingUnits, key: tuple[str, ...], run: Any, given: Any) -> Found:
        before = self.parts_replayed
        found = part(self, key, run, given)
        log.append((self._running[0] if self._running else "", key[-1],
                    self.parts_replayed > before))
        return found

    monkeypatch.setattr(RecordingUnits, "part", logged)
    return log


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "flow_follow_parts", root)
    return root


def test_an_edit_in_one_callee_replays_the_call_into_the_other(
        tmp_path: Path, parts_logged: list[tuple[str, str, bool]]) -> None:
    root, cache = _tree(tmp_path), tmp_path / "cache"
    first = _analyse(root, cache)
    assert sorted(parts_logged) == [("follow", "run_cutlass_moe", False),
                                    ("follow", "run_trtllm_moe", False)]
    parts_logged.clear()
    _edit(root / TRTLLM, "is_sm100_supported()", "is_sm90_supported()")
    _edit(root / TRTLLM, "import is_sm100_supported", "import is_sm90_supported")
    after = _analyse(root, cache)
    assert sorted(parts_logged) == [("follow", "run_cutlass_moe", True),
                                    ("follow", "run_trtllm_moe", False)]
    assert _json(after) == _json(_analyse(root, tmp_path / "none", use_cache=False))
    assert _json(after) != _json(first)
    verdicts = {(v.choice, v.arch): v.verdict.value for v in after.result.backends
                if v.option == "--moe-runner-backend" and v.arch in ("sm90", "sm100")}
    assert verdicts == {("auto", "sm90"): "unknown", ("auto", "sm100"): "unknown",
                        ("triton", "sm90"): "unknown", ("triton", "sm100"): "unknown",
                        ("cutlass", "sm90"): "supported", ("cutlass", "sm100"): "blocked",
                        ("trtllm", "sm90"): "supported", ("trtllm", "sm100"): "blocked"}


def test_an_edit_in_the_callers_scope_follows_both_calls_again(
        tmp_path: Path, parts_logged: list[tuple[str, str, bool]]) -> None:
    """A part reads the calls of the scope its call is made in (whether that
    scope is another platform's code, ``Gates._platform_wide``): a condition
    changed there follows both calls again."""
    root, cache = _tree(tmp_path), tmp_path / "cache"
    _analyse(root, cache)
    parts_logged.clear()
    _edit(root / LAYER, 'if backend == "cutlass":', 'if backend == "cutlass" and x is not None:')
    after = _analyse(root, cache)
    assert sorted(parts_logged) == [("follow", "run_cutlass_moe", False),
                                    ("follow", "run_trtllm_moe", False)]
    assert _json(after) == _json(_analyse(root, tmp_path / "none", use_cache=False))


def test_the_plain_runner_runs_a_part() -> None:
    found = Found()
    assert Units().part(("follow", "x"), lambda: found, ("given",)) is found


def test_a_method_linked_again_takes_what_functions_run_from_the_earlier_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memos the units share (``link.recorded``) keep their entries in
    the record: after an edit to a branch in ``NvFp4LinearMethod.__init__``,
    nvfp4's path is linked again, and what every other function on it runs
    is taken from the earlier scan (``RecordingUnits._earlier``)."""
    root, cache = tmp_path / "tree", tmp_path / "cache"
    shutil.copytree(FIXTURES / "quant_method_paths", root)
    scan = {"quantization": "nvfp4"}
    analyse(ScanOptions(target=str(root), kernels=False, offline=True, cache_dir=cache, **scan))
    taken: list[tuple[str, Any, bool]] = []
    earlier = RecordingUnits._earlier

    def logged(self: RecordingUnits, name: str, key: Any) -> Any:
        entry = earlier(self, name, key)
        taken.append((name.split()[0], key, entry is not None))
        return entry

    monkeypatch.setattr(RecordingUnits, "_earlier", logged)
    nvfp4 = "sglang/srt/layers/quantization/nvfp4.py"
    _edit(root / nvfp4, "if self.quant_config.is_checkpoint_serialized:",
          "if self.quant_config.is_checkpoint_serialized and is_sm90_supported():")
    after = analyse(ScanOptions(target=str(root), kernels=False, offline=True, cache_dir=cache,
                                **scan))
    edges = {key[0]: hit for name, key, hit in taken if name == "edges"}
    # the function edited is walked again; the others of its file, and those of
    # the files it reaches, are taken as they were
    assert [func for func, hit in edges.items() if not hit] == [
        (nvfp4, "NvFp4LinearMethod.__init__")]
    assert {rel for rel, _ in edges} == {nvfp4, "sglang/srt/layers/quantization/fp4_utils.py",
                                         "sglang/srt/layers/quantization/base_config.py"}
    fresh = analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                                cache_dir=tmp_path / "none", use_cache=False, **scan))
    assert _json(after) == _json(fresh)
