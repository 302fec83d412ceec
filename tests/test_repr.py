"""``repr`` of a ``ScanResult`` and a ``Preflight`` is a summary of a line or
two, not the data (on sglang 0.5.23 it was 135,509 characters)."""

from __future__ import annotations

from pathlib import Path

from fixturetree import fixture

import guardscan

GATE = fixture("gate_server_args")


def test_short_reprs(tmp_cache: Path) -> None:
    answer = guardscan.preflight(["sglang", "serve", "--moe-runner-backend", "sm120_only"],
                                 arch="sm100", target=str(GATE),
                                 flashinfer=str(GATE / "flashinfer"), offline=True)
    result = (
        "ScanResult(sglang (version unknown) with flashinfer (version unknown), "
        "archs=['sm100'], quantization=None, 2 options, 7 verdicts (1 unsupported, "
        "3 supported, 3 unknown), 1 diagnostics)")
    assert repr(answer.result) == result
    assert repr(answer) == (
        "Preflight(ok=False, archs=('sm100',), problems=[not-safe --moe-runner-backend "
        f"sm120_only], 0 warnings, 2 checks, result={result})")
