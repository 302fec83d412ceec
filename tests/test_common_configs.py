"""The common configurations are never called unsafe: Triton MoE, ``auto``,
Triton attention and no all-to-all, with no quantization, on A100 (sm80), H100
(sm90), B200 (sm100) and RTX PRO 6000 (sm120), and no architecture has every
MoE runner to avoid.

Each release is paired with the FlashInfer it pins. By default the suite checks
0.5.9 and 0.5.23 from the scans other tests share; ``-m releases`` adds every
release below, each scanned once (cached), as ``bench/releases.py`` does. The
configurations are the sweep's own (``COMMON`` there): the sweep checks them on
every release it scans, from 0.5.0 up, and exits 1 if one is called unsafe.
The expected verdicts were read off the scans and checked against the source:
``unknown`` where nothing on the path names an architecture, ``supported``
where ``auto`` resolves to Triton under a Blackwell test (0.5.14) or the
attention registry's gate admits the arch.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import realtrees

from guardscan.arch import parse_arch
from guardscan.results import ScanResult


def _sweep() -> Any:
    """bench/releases.py, whose sweep checks the same configurations on every release."""
    path = Path(__file__).resolve().parent.parent / "bench" / "releases.py"
    spec = importlib.util.spec_from_file_location("guardscan_bench_releases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SWEEP = _sweep()
MOE = "--moe-runner-backend"
ATTENTION = "--attention-backend"
A2A = "--moe-a2a-backend"
ARCHS: tuple[str, ...] = SWEEP.COMMON_ARCHS
COMMON: tuple[tuple[str, str], ...] = SWEEP.COMMON

#: release -> (option, choice) -> verdict letters on ARCHS (u unknown, s supported)
EXPECTED = {
    "0.5.3": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
              (A2A, "none"): "uuuu"},
    "0.5.6": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
              (A2A, "none"): "uuuu"},
    "0.5.9": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
              (A2A, "none"): "uuuu"},
    "0.5.14": {(MOE, "triton"): "uuss", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
               (A2A, "none"): "uuuu"},
    "0.5.19": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
               (A2A, "none"): "uuuu"},
    "0.5.23": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
               (A2A, "none"): "uuuu"},
}
LETTER = {"unknown": "u", "supported": "s", "blocked": "b", "unsupported": "x"}


def _scan(version: str) -> ScanResult:
    from guardscan.driver import ScanOptions, analyse

    return analyse(ScanOptions(
        target=f"sglang=={version}", archs=[parse_arch(a) for a in ARCHS],
        options=[MOE, ATTENTION, A2A], cache_dir=realtrees.shared_cache_dir())).result


def _check(version: str, results: list[ScanResult]) -> None:
    cells = {(b.option, b.choice, b.arch): b.verdict.value
             for result in results for b in result.backends}
    for (option, choice), letters in EXPECTED[version].items():
        got = "".join(LETTER[cells[(option, choice, arch)]] for arch in ARCHS)
        assert got == letters, (version, option, choice, dict(zip(ARCHS, got)))
    for arch in ARCHS:
        moe = [v for (option, _, a), v in cells.items() if option == MOE and a == arch]
        assert moe and any(v in ("supported", "unknown") for v in moe), (
            f"{version}: every {MOE} choice is to avoid on {arch}")


def test_expectations_cover_every_common_configuration() -> None:
    for version, expected in EXPECTED.items():
        assert set(expected) == set(COMMON), version


def test_the_sweep_flags_a_common_configuration_called_unsafe() -> None:
    rows = [{"option": MOE, "choice": "triton", "arch": "sm80", "verdict": "blocked"},
            {"option": MOE, "choice": "triton", "arch": "sm80", "verdict": "blocked",
             "quantization": "fp8"},
            {"option": MOE, "choice": "deep_gemm", "arch": "sm80", "verdict": "blocked"},
            {"option": ATTENTION, "choice": "triton", "arch": "sm121", "verdict": "unsupported"},
            {"option": A2A, "choice": "none", "arch": "sm120", "verdict": "unknown"}]
    assert SWEEP.unsafe_common(rows) == ("--moe-runner-backend triton on sm80: blocked",)


def test_common_configurations_059(pair_059_063: Any) -> None:
    _check("0.5.9", [pair_059_063.result])


def test_common_configurations_0523(pair_0523_072: Any, analysis_0523: Any) -> None:
    # the pair judges the MoE and all-to-all options with FlashInfer's facts;
    # Triton attention calls no FlashInfer kernel, so the SGLang-only scan says it
    _check("0.5.23", [pair_0523_072.result, analysis_0523.result])


@pytest.mark.real
@pytest.mark.releases
@pytest.mark.parametrize("version", sorted(EXPECTED, key=lambda v: tuple(map(int, v.split(".")))))
def test_common_configurations_every_release(version: str) -> None:
    _check(version, [_scan(version)])
