"""A class a method builds only for the checkpoints that pick it
(``link.checkpoint_picks``; fixtures/quant_checkpoint_picks): under a method
that dispatches on the checkpoint, a picked class's gate is a caveat and the
fall-through's gate blocks; under a plain if/else both count."""

from __future__ import annotations

from functools import cache

from fixturetree import fixture, run_scan

from guardscan.results import BackendVerdict, ScanResult

MOE = "--moe-runner-backend"
METHODS = "sglang/srt/layers/quantization/moe_methods.py"


@cache
def scan(quantization: str) -> ScanResult:
    return run_scan(fixture("quant_checkpoint_picks"), archs=["sm80", "sm90"], option=MOE,
                    quantization=quantization)


def verdict(quantization: str, choice: str, arch: str) -> BackendVerdict:
    return next(b for b in scan(quantization).backends
                if (b.option, b.choice, b.arch) == (MOE, choice, arch))


def test_a_special_case_the_checkpoint_picks_is_a_caveat() -> None:
    marlin = verdict("tensors", "marlin", "sm80")
    assert marlin.verdict.value == "unknown"
    caveat = next(e for e in marlin.evidence if (e.path, e.line) == (METHODS, 12))
    assert caveat.status == "caveat"
    assert "the checkpoint picks Mxfp4MoEMethod" in caveat.note


def test_the_fall_through_is_the_common_case_and_blocks() -> None:
    triton = verdict("tensors", "triton", "sm80")
    assert triton.verdict.value == "blocked"
    assert (triton.evidence[-1].path, triton.evidence[-1].line) == (METHODS, 28)
    assert verdict("tensors", "triton", "sm90").verdict.value == "supported"


def test_a_plain_if_else_says_nothing_of_which_is_common_so_both_count() -> None:
    assert verdict("plain", "marlin", "sm80").verdict.value == "blocked"
    assert verdict("plain", "marlin", "sm90").verdict.value == "supported"
