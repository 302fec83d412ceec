"""The common configurations are never called unsafe: Triton and ``auto`` MoE,
Triton and FlashInfer attention, no all-to-all, ``auto`` FP8 and FP4 GEMMs,
FlashInfer and PyTorch sampling, with no quantization, on A100 (sm80), H100
(sm90), B200 (sm100) and RTX PRO 6000 (sm120), and FA3 attention on H100; and
no architecture has every MoE runner to avoid.

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
FP8 = "--fp8-gemm-backend"
FP4 = "--fp4-gemm-backend"
SAMPLING = "--sampling-backend"
ARCHS: tuple[str, ...] = SWEEP.COMMON_ARCHS
#: (option, choice) -> the architectures it is checked on
COMMON: dict[tuple[str, str], tuple[str, ...]] = {
    (option, choice): archs for option, choice, archs in SWEEP.COMMON}

#: what every release before 0.5.9 defines of the configurations added since
_LATER = {(FP8, "auto"): "----", (FP4, "auto"): "----"}
_SAMPLING = {(SAMPLING, "flashinfer"): "uuuu", (SAMPLING, "pytorch"): "uuuu"}

#: release -> (option, choice) -> verdict letters on its architectures (u unknown,
#: s supported, - the release does not define the option)
EXPECTED = {
    "0.5.3": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
              (ATTENTION, "flashinfer"): "uusu", (ATTENTION, "fa3"): "s",
              (A2A, "none"): "uuuu", **_LATER, **_SAMPLING},
    "0.5.6": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
              (ATTENTION, "flashinfer"): "uuss", (ATTENTION, "fa3"): "s",
              (A2A, "none"): "uuuu", **_LATER, **_SAMPLING},
    "0.5.9": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
              (ATTENTION, "flashinfer"): "uuss", (ATTENTION, "fa3"): "s",
              (A2A, "none"): "uuuu", (FP8, "auto"): "uuuu", (FP4, "auto"): "uuuu",
              **_SAMPLING},
    "0.5.14": {(MOE, "triton"): "uuss", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuss",
               (ATTENTION, "flashinfer"): "uuss", (ATTENTION, "fa3"): "s",
               (A2A, "none"): "uuuu", (FP8, "auto"): "uuuu", (FP4, "auto"): "uuuu",
               **_SAMPLING},
    "0.5.19": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
               (ATTENTION, "flashinfer"): "uuuu", (ATTENTION, "fa3"): "s",
               (A2A, "none"): "uuuu", (FP8, "auto"): "uuuu", (FP4, "auto"): "uuuu",
               **_SAMPLING},
    "0.5.23": {(MOE, "triton"): "uuuu", (MOE, "auto"): "uuuu", (ATTENTION, "triton"): "uuuu",
               (ATTENTION, "flashinfer"): "uuuu", (ATTENTION, "fa3"): "s",
               (A2A, "none"): "uuuu", (FP8, "auto"): "uuuu", (FP4, "auto"): "uuuu",
               **_SAMPLING},
}
LETTER = {"unknown": "u", "supported": "s", "blocked": "b", "unsupported": "x"}


def _scan(version: str) -> ScanResult:
    from guardscan.driver import ScanOptions, analyse

    # every option: the GEMM options are not defined before 0.5.9
    return analyse(ScanOptions(
        target=f"sglang=={version}", archs=[parse_arch(a) for a in ARCHS],
        cache_dir=realtrees.shared_cache_dir())).result


def _check(version: str, results: list[ScanResult]) -> None:
    cells = {(b.option, b.choice, b.arch): b.verdict.value
             for result in results for b in result.backends}
    for (option, choice), letters in EXPECTED[version].items():
        got = "".join(LETTER[cells[(option, choice, arch)]]
                      if (option, choice, arch) in cells else "-"
                      for arch in COMMON[(option, choice)])
        assert got == letters, (version, option, choice,
                                dict(zip(COMMON[(option, choice)], got)))
    for arch in ARCHS:
        moe = [v for (option, _, a), v in cells.items() if option == MOE and a == arch]
        assert moe and any(v in ("supported", "unknown") for v in moe), (
            f"{version}: every {MOE} choice is to avoid on {arch}")


def test_expectations_cover_every_common_configuration() -> None:
    for version, expected in EXPECTED.items():
        assert set(expected) == set(COMMON), version


def test_the_sweep_flags_a_common_configuration_called_unsafe() -> None:
    rows = [{"option": MOE, "choice": "triton", "arch": "sm80", "verdict": "blocked"},
            # FA3 is checked on Hopper only: blocked elsewhere is what the source says
            {"option": ATTENTION, "choice": "fa3", "arch": "sm80", "verdict": "blocked"},
            {"option": MOE, "choice": "triton", "arch": "sm80", "verdict": "blocked",
             "quantization": "fp8"},
            {"option": MOE, "choice": "deep_gemm", "arch": "sm80", "verdict": "blocked"},
            {"option": ATTENTION, "choice": "triton", "arch": "sm121", "verdict": "unsupported"},
            {"option": A2A, "choice": "none", "arch": "sm120", "verdict": "unknown"}]
    assert SWEEP.unsafe_common(rows) == ("--moe-runner-backend triton on sm80: blocked",)


def test_common_configurations_059(pair_059_063: Any, analysis_059: Any) -> None:
    # the pair (kernel facts on) judges the options it scans; the SGLang-only
    # scan of every option gives the sampling backends
    _check("0.5.9", [analysis_059.result, pair_059_063.result])


def test_common_configurations_0523(pair_0523_072: Any, analysis_0523: Any) -> None:
    # the pair judges the MoE and all-to-all options with FlashInfer's facts;
    # Triton attention calls no FlashInfer kernel, so the SGLang-only scan says it
    _check("0.5.23", [pair_0523_072.result, analysis_0523.result])


@pytest.mark.real
@pytest.mark.releases
@pytest.mark.parametrize("version", sorted(EXPECTED, key=lambda v: tuple(map(int, v.split(".")))))
def test_common_configurations_every_release(version: str) -> None:
    _check(version, [_scan(version)])
