"""Dispatch reach (``guardscan.link.dispatch_reach``): a gate in a class that its
module hands out only under tests of another option applies only there.

The shape is SGLang's DeepEPMoE (built by ``get_moe_impl_class`` only with
``--moe-a2a-backend deepep`` or ``mooncake``): before this form, its assert
on JIT DeepGEMM blocked every ``--moe-runner-backend`` choice on A100."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardscan.arch import parse_arch
from guardscan.driver import ScanOptions, analyse

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "flow_dispatch_reach"
MOE = "--moe-runner-backend"
A2A = "--moe-a2a-backend"


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str, str], str]:
    result = analyse(ScanOptions(target=str(FIXTURE), kernels=False, use_cache=False,
                                 archs=[parse_arch(a) for a in ("sm80", "sm90")])).result
    return {(b.option, b.choice, b.arch): b.verdict.value for b in result.backends}


@pytest.mark.parametrize(("option", "choice", "arch", "expected"), [
    # the runner is judged with --moe-a2a-backend at its default (none): the
    # expert-parallel class is never built, its assert does not apply
    (MOE, "triton", "sm80", "unknown"),
    (MOE, "auto", "sm80", "unknown"),
    (MOE, "cutedsl", "sm80", "unknown"),
    (MOE, "triton", "sm90", "unknown"),
    # the all-to-all that builds it meets the assert: blocked below SM90, and
    # SM90 is let through by a check that rejects older archs
    (A2A, "deepep", "sm80", "blocked"),
    (A2A, "deepep", "sm90", "supported"),
    (A2A, "none", "sm80", "unknown"),
    # MoriEPMoE has no constructor of its own: EPMoE's runs, assert and all
    (A2A, "mori", "sm80", "blocked"),
    (A2A, "mori", "sm90", "supported"),
])
def test_gate_applies_only_where_the_class_is_handed_out(
        verdicts: dict[tuple[str, str, str], str], option: str, choice: str, arch: str,
        expected: str) -> None:
    assert verdicts[(option, choice, arch)] == expected, (option, choice, arch)
