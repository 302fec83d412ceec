"""A local reassigned on branches, then tested (``guards.lookup``), and what
``auto`` becomes when a resolution hook and a fallback both assign it
(``verdict.auto``).

The shape is sglang 0.5.23's ``arg_groups/overrides.py``: ``moe_runner_backend
= view.moe_runner_backend``, reassigned under ``--quantization mxfp8``, then
``if moe_runner_backend == "auto" and view.quantization == "modelopt_fp4" and
is_sm120: ... = "flashinfer_cutlass"``. Read as its latest assignment, the
local was the mxfp8 branch's constant: the test was false everywhere, the
hook's default and the gate after it were lost (every verdict ``unknown``),
and ``check ... --moe-runner-backend auto`` followed a later fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardscan.arch import parse_arch
from guardscan.driver import ScanOptions, analyse
from guardscan.launch import judge_launch, parse_launch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "flow_branch_local"
MOE = "--moe-runner-backend"
ARCHS = ("sm90", "sm100", "sm120")


def _result(quantization: str | None, archs: tuple[str, ...] = ARCHS):  # type: ignore[no-untyped-def]
    return analyse(ScanOptions(target=str(FIXTURE), kernels=False, use_cache=False,
                               archs=[parse_arch(a) for a in archs],
                               quantization=quantization)).result


@pytest.fixture(scope="module")
def results():  # type: ignore[no-untyped-def]
    return {q: _result(q) for q in (None, "modelopt_fp4")}


@pytest.mark.parametrize(("quantization", "choice", "arch", "expected"), [
    # the hook's default, read through the branch-assigned local
    ("modelopt_fp4", "flashinfer_cutlass", "sm120", "supported"),
    ("modelopt_fp4", "flashinfer_cutlass", "sm100", "unknown"),
    # the gate after it tests the same local: an explicit trtllm meets it off SM100
    ("modelopt_fp4", "flashinfer_trtllm", "sm120", "blocked"),
    ("modelopt_fp4", "flashinfer_trtllm", "sm90", "blocked"),
    ("modelopt_fp4", "flashinfer_trtllm", "sm100", "supported"),
    (None, "triton", "sm90", "supported"),
    (None, "triton", "sm120", "unknown"),
])
def test_verdicts(results, quantization: str | None, choice: str, arch: str,  # type: ignore[no-untyped-def]
                  expected: str) -> None:
    verdicts = {(b.option, b.choice, b.arch): b.verdict.value
                for b in results[quantization].backends}
    assert verdicts[(MOE, choice, arch)] == expected


@pytest.mark.parametrize(("quantization", "judged", "candidates"), [
    # the hook surely holds: auto is resolved before the fallback reads it
    ("modelopt_fp4", "flashinfer_cutlass", ("flashinfer_cutlass",)),
    # without --quantization the hook only may hold: either, at run time
    (None, "auto", ("flashinfer_trtllm", "flashinfer_cutlass")),
])
def test_what_auto_becomes_on_sm120(quantization: str | None, judged: str,
                                    candidates: tuple[str, ...]) -> None:
    argv = ["python", "-m", "sglang.launch_server", MOE, "auto"]
    if quantization:
        argv += ["--quantization", quantization]
    result = _result(quantization, ("sm120",))
    (check,) = [c for c in judge_launch(result, parse_launch(argv)).checks if c.option == MOE]
    assert (check.judged, check.auto) == (judged, candidates)
