"""The C++ checks and the pinned cubin package on real releases (marker ``real``):
the cases issue 20 is done on, with exact verdicts and the deciding file:line.

- sglang 0.5.14 pins ``flashinfer_cubin==0.6.12`` beside ``flashinfer_python``;
  under ``--quantization modelopt_fp4``, ``--moe-runner-backend flashinfer_trtllm``
  loads the trtllm-gen batched-GEMM cubins, which exist for Sm100f and Sm103a
  only: unsupported on sm120, supported on sm100.
- sglang 0.5.16 pins only ``flashinfer_python[cu13]==0.6.14`` (whose ``cu13``
  extra pulls in no cubin package): the cubins come from a download, the
  evidence says so, and nothing decides.
- sglang 0.5.23 + flashinfer 0.7.2: ``--attention-backend trtllm_mla`` reaches the
  trtllm-gen FMHA runner, whose constructor checks ``mSM == kSM_100 || mSM ==
  kSM_103 || mSM == kSM_107`` (``fmhaRunner.cuh:37``).
"""

from __future__ import annotations

from functools import cache

import pytest
import realtrees

from guardscan.arch import parse_arch_list
from guardscan.driver import Analysis, ScanOptions, analyse
from guardscan.results import BackendVerdict

pytestmark = pytest.mark.real

FMHA_CHECK = "flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh"


@cache
def _scan(version: str, option: str, quantization: str | None) -> Analysis:
    with realtrees.one_at_a_time("cpp-cubins", version, option, quantization):
        return analyse(ScanOptions(target=f"sglang=={version}", options=[option],
                                   archs=parse_arch_list(["sm100", "sm120"]),
                                   quantization=quantization,
                                   cache_dir=realtrees.shared_cache_dir()))


def _verdict(analysis: Analysis, choice: str, arch: str) -> BackendVerdict:
    return next(v for v in analysis.result.backends if v.choice == choice and v.arch == arch)


def test_seed_case_decided_by_the_pinned_cubin_package() -> None:
    analysis = _scan("0.5.14", "--moe-runner-backend", "modelopt_fp4")
    sm120 = _verdict(analysis, "flashinfer_trtllm", "sm120")
    assert sm120.verdict.value == "unsupported"
    deciding = sm120.evidence[-1]
    assert deciding.kind == "artifacts" and deciding.tier == "b"
    assert deciding.path.startswith("flashinfer_cubin/cubins/")
    assert deciding.path.endswith("/include/flashinferMetaInfo.h")
    assert "ArtifactPath.TRTLLM_GEN_BMM" in deciding.note
    assert _verdict(analysis, "flashinfer_trtllm", "sm100").verdict.value == "supported"


def test_no_cubin_package_pinned_decides_nothing_and_says_so() -> None:
    analysis = _scan("0.5.16", "--moe-runner-backend", "modelopt_fp4")
    for arch in ("sm100", "sm120"):
        verdict = _verdict(analysis, "flashinfer_trtllm", arch)
        assert verdict.verdict.value == "unknown"
        notes = [e.note for e in verdict.evidence if e.kind == "jit-spec"]
        assert any("is downloaded at run time (sglang 0.5.16 pins no flashinfer-cubin)" in n
                   for n in notes), notes


def test_trtllm_mla_decided_by_the_fmha_runner_check() -> None:
    analysis = _scan("0.5.23", "--attention-backend", None)
    sm120 = _verdict(analysis, "trtllm_mla", "sm120")
    assert sm120.verdict.value == "unsupported"
    deciding = sm120.evidence[-1]
    assert (deciding.path, deciding.line, deciding.kind, deciding.tier) == (
        FMHA_CHECK, 37, "cpp-check", "a")
    assert _verdict(analysis, "trtllm_mla", "sm100").verdict.value == "supported"


def test_no_kernels_reads_none_of_it() -> None:
    analysis = analyse(ScanOptions(target="sglang==0.5.23", options=["--attention-backend"],
                                   archs=parse_arch_list(["sm120"]), kernels=False,
                                   cache_dir=realtrees.shared_cache_dir()))
    verdict = _verdict(analysis, "trtllm_mla", "sm120")
    assert verdict.verdict.value == "supported"
    assert not any(e.kind in ("cpp-check", "artifacts") for e in verdict.evidence)
