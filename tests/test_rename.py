"""A choice that a hook rewrites into another choice of the same option is
judged as that choice (``verdict.rename``), the rewrite first in its chain.

The shape is sglang 0.5.19's ``arg_groups/moe_hook.py``: ``--moe-a2a-backend
ascend_tp`` becomes ``none`` before MoE is built. Before, the dispatcher's
``else: raise`` (which the rewritten value never reaches) blocked it."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardscan.arch import parse_arch
from guardscan.driver import ScanOptions, analyse

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "flow_rename"
A2A = "--moe-a2a-backend"


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return analyse(ScanOptions(target=str(FIXTURE), kernels=False, use_cache=False,
                               archs=[parse_arch(a) for a in ("sm90", "sm100")])).result


@pytest.mark.parametrize(("choice", "arch", "expected"), [
    ("ascend_tp", "sm90", "unknown"),   # as none, not the dispatcher's else-raise
    ("ascend_tp", "sm100", "unknown"),
    ("none", "sm90", "unknown"),
    ("deepep", "sm90", "blocked"),      # a gate of its own, untouched
    ("deepep", "sm100", "supported"),
])
def test_verdicts(result, choice: str, arch: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    verdicts = {(b.option, b.choice, b.arch): b.verdict.value for b in result.backends}
    assert verdicts[(A2A, choice, arch)] == expected


def test_the_rewrite_is_in_the_chain(result) -> None:  # type: ignore[no-untyped-def]
    (entry,) = [b for b in result.backends
                if (b.option, b.choice, b.arch) == (A2A, "ascend_tp", "sm90")]
    (line,) = [e for e in entry.evidence if e.kind == "link"]
    assert (line.path, line.line) == ("sglang/srt/arg_groups/moe_hook.py", 15)
    assert "ascend_tp is rewritten to none" in line.note
