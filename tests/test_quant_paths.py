"""Quantization scope: a method's gates count under it, other methods' code
does not (fixtures/quant_method_paths: a method table, a config class that
hands its linear and MoE classes over as arguments, a shared helper with a
gate on the option, another method's code), and the cases of real releases."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture, run_scan

from guardscan.results import BackendVerdict, ScanResult

ARCHS = ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"]
FP4 = "--fp4-gemm-backend"
MOE = "--moe-runner-backend"
NVFP4 = "sglang/srt/layers/quantization/nvfp4.py"
HELPER = "sglang/srt/layers/quantization/fp4_utils.py"


@cache
def scan(quantization: str | None) -> ScanResult:
    return run_scan(fixture("quant_method_paths"), option=[FP4, MOE], quantization=quantization)


def row(result: ScanResult, flag: str, choice: str) -> str:
    by_arch = {b.arch: b.verdict.value[0].upper() for b in result.backends
               if b.option == flag and b.choice == choice}
    return "".join(by_arch[a] for a in ARCHS)


def deciding(result: ScanResult, flag: str, choice: str, arch: str) -> tuple[str, str]:
    verdict = next(b for b in result.backends
                   if (b.option, b.choice, b.arch) == (flag, choice, arch))
    return verdict.evidence[-1].path, verdict.evidence[-1].role


@pytest.mark.parametrize(("quantization", "expected"), [
    (None, "BBBBSSBBB"),     # the helper tests the option: it counts without a method
    ("nvfp4", "BBBBSSBBB"),  # on nvfp4's path: the config hands NvFp4LinearMethod over
    ("mxfp4", "UUUUUUUUU"),  # mxfp4 never runs the helper: no evidence either way
])
def test_helper_gate_on_the_option(quantization: str | None, expected: str) -> None:
    result = scan(quantization)
    assert row(result, FP4, "trtllm") == expected
    if quantization != "mxfp4":
        verdict = next(b for b in result.backends
                       if (b.option, b.choice, b.arch) == (FP4, "trtllm", "sm90"))
        assert (HELPER, "gate") in [(e.path, e.role) for e in verdict.evidence]


def test_gate_after_an_option_return_is_the_methods() -> None:
    """``if backend == "marlin": return`` then ``if not blackwell: raise`` in a
    method the framework invokes (declared on the interface) holds for every
    backend but marlin under the method; ``auto`` is resolved at run time,
    so it stays undecided; without a method it is a condition. Where it lets
    the arch through it is no support for cutlass: it raises for the method,
    whatever the backend but marlin, so it says nothing of cutlass's kernels."""
    nvfp4 = scan("nvfp4")
    assert row(nvfp4, FP4, "cutlass") == "BBBBUUUUU"
    assert deciding(nvfp4, FP4, "cutlass", "sm90") == (NVFP4, "gate")
    assert row(nvfp4, FP4, "marlin") == "UUUUUUUUU"
    assert row(nvfp4, FP4, "auto") == "UUUUUUUUU"
    plain = next(b for b in scan(None).backends
                 if (b.option, b.choice, b.arch) == (FP4, "cutlass", "sm90"))
    assert plain.verdict.value == "unknown"
    assert "blocked with --quantization nvfp4" in plain.conditions


@pytest.mark.parametrize(("quantization", "triton", "marlin"), [
    (None, "BBBBSSBBB", "BBBSBBBBB"),
    ("nvfp4", "UUUUUUUUU", "BBBSBBBBB"),  # mxfp4's triton gate is not nvfp4's
    ("mxfp4", "BBBBSSBBB", "UUUUUUUUU"),  # nvfp4's marlin gate is not mxfp4's
])
def test_each_method_is_judged_on_its_own_code(quantization: str | None, triton: str,
                                               marlin: str) -> None:
    result = scan(quantization)
    assert row(result, MOE, "triton") == triton
    assert row(result, MOE, "marlin") == marlin


def test_a_constructor_refusing_a_choice_on_every_arch_holds_under_its_method() -> None:
    """``NvFp4MoEMethod.__init__`` raises for ``lora`` whatever the device: a
    gate on every arch under nvfp4; without ``--quantization`` it says what
    the method refuses (a condition), not what the arch does."""
    assert row(scan("nvfp4"), MOE, "lora") == "BBBBBBBBB"
    assert deciding(scan("nvfp4"), MOE, "lora", "sm90") == (NVFP4, "gate")
    assert row(scan("mxfp4"), MOE, "lora") == "UUUUUUUUU"
    assert row(scan(None), MOE, "lora") == "UUUUUUUUU"
    plain = next(b for b in scan(None).backends
                 if (b.option, b.choice, b.arch) == (MOE, "lora", "sm90"))
    assert "blocked with --quantization nvfp4" in plain.conditions


@pytest.mark.parametrize(("quantization", "expected"), [
    # sm90: mxfp4's gate refuses cutlass, nvfp4 picks it itself: the checkpoint decides
    (None, "BBBUSSBBB"),
    ("mxfp4", "BBBBSSBBB"),  # the gate of the method given
    ("nvfp4", "UUUSUUUUU"),  # the method's own pick
])
def test_one_methods_gate_against_anothers_pick_without_a_method(
        quantization: str | None, expected: str) -> None:
    """mxfp4 refuses ``cutlass`` off SM100; nvfp4 resolves ``auto`` to it on
    SM90 (``verdict/checkpoint.py``). Without ``--quantization`` the refusal
    on SM90 is a condition and the pick is shown, not counted; where nothing
    picks it (SM80), the gate still blocks, as ``triton``'s and ``marlin``'s
    do (``test_each_method_is_judged_on_its_own_code``)."""
    result = scan(quantization)
    assert row(result, MOE, "cutlass") == expected
    if quantization is None:
        plain = next(b for b in result.backends
                     if (b.option, b.choice, b.arch) == (MOE, "cutlass", "sm90"))
        assert plain.conditions == ("blocked with --quantization mxfp4",)
        assert [(e.path, e.role, e.status) for e in plain.evidence
                if e.role in ("gate", "default")] == [
            ("sglang/srt/layers/quantization/mxfp4.py", "gate", "caveat"),
            (NVFP4, "default", "caveat")]
    if quantization == "mxfp4":
        assert deciding(result, MOE, "cutlass", "sm90") == (
            "sglang/srt/layers/quantization/mxfp4.py", "gate")


@cache
def checkpoint_scan(quantization: str | None) -> ScanResult:
    return run_scan(fixture("quant_checkpoint_decides"), option=[MOE], quantization=quantization)


@pytest.mark.parametrize(("quantization", "marlin", "cutlass"), [
    # sm80-89: nvfp4 spares marlin (its Marlin fallback) and cutlass; sm90: it
    # picks cutlass for auto. mxfp4's gates are conditions there, not blocks
    (None, "UUUSBBBBB", "UUUUSSBBB"),
    ("nvfp4", "UUUUUUUUU", "UUUSUUUUU"),
    ("mxfp4", "BBBSBBBBB", "BBBBSSBBB"),
])
def test_the_checkpoint_decides_between_one_methods_gate_and_anothers_word(
        quantization: str | None, marlin: str, cutlass: str) -> None:
    """fixtures/quant_checkpoint_decides (``verdict/checkpoint.py``): where
    nvfp4 runs a choice that mxfp4 refuses, a launch without
    ``--quantization`` is judged by neither; where nvfp4 says nothing
    (sm100 up for marlin), mxfp4's gate still blocks. A sibling choice the
    same test covers (``experimental_marlin``) goes with it."""
    result = checkpoint_scan(quantization)
    assert row(result, MOE, "marlin") == marlin
    assert row(result, MOE, "experimental_marlin") == marlin
    assert row(result, MOE, "cutlass") == cutlass


def test_what_the_checkpoint_decides_is_shown_not_counted() -> None:
    mxfp4, nvfp4 = ("sglang/srt/layers/quantization/mxfp4.py",
                    "sglang/srt/layers/quantization/nvfp4.py")
    # nvfp4's word: its Blackwell gate sparing the choice, and on sm90 its pick
    for choice, arch, words in (("marlin", "sm80", ["gate"]),
                                ("cutlass", "sm90", ["gate", "default"])):
        verdict = next(b for b in checkpoint_scan(None).backends
                       if (b.option, b.choice, b.arch) == (MOE, choice, arch))
        assert verdict.conditions == ("blocked with --quantization mxfp4",)
        assert [(e.path, e.role, e.status) for e in verdict.evidence
                if e.role in ("gate", "default")] == [
            (mxfp4, "gate", "caveat"), *((nvfp4, word, "caveat") for word in words)]


def test_undecided_ways_stay_undecided() -> None:
    """A method-wide gate reached only for some checkpoints (``prepare_online``)
    and one in a method nothing calls (``debug_dump``) never block."""
    nvfp4 = scan("nvfp4")
    assert row(nvfp4, MOE, "auto") == "UUUUUUUUU"
    assert not nvfp4.notes or all(n.method != "nvfp4" for n in nvfp4.notes)


# -- real releases -------------------------------------------------------------------


def _verdict(analysis: Any, flag: str, choice: str, arch: str) -> BackendVerdict:
    return next(b for b in analysis.result.backends
                if (b.option, b.choice, b.arch) == (flag, choice, arch))


def _show(verdict: BackendVerdict) -> str:
    return "\n".join(f"{e.path}:{e.line} [{e.role}] {e.note[:160]}" for e in verdict.evidence)


FP8_UTILS = "sglang/srt/layers/quantization/fp8_utils.py"
MODELOPT = "sglang/srt/layers/quantization/modelopt_quant.py"


@pytest.fixture(scope="session")
def analysis_0523_fp8(sglang_0523: Any) -> Any:
    from conftest import _analyse
    return _analyse("0.5.23", quantization="fp8")


@pytest.fixture(scope="session")
def analysis_0523_mxfp4(sglang_0523: Any) -> Any:
    from conftest import _analyse
    return _analyse("0.5.23", quantization="mxfp4")


def _check_fp8_trtllm(analysis: Any) -> None:
    for arch in ARCHS:
        verdict = _verdict(analysis, "--fp8-gemm-backend", "flashinfer_trtllm", arch)
        if arch in ("sm100", "sm103"):  # is_sm100: capability major in [10]
            # source says supported, errs to unknown: the gate admits major 10 once
            # flashinfer imports (is_flashinfer_available(), an environment fact;
            # sglang requires flashinfer_python): see
            # sglang/srt/layers/quantization/fp8_utils.py:840 and :1111
            assert verdict.verdict.value == "unknown", _show(verdict)
            continue
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert (verdict.evidence[-1].path, verdict.evidence[-1].role) == (FP8_UTILS, "gate"), \
            _show(verdict)
        assert "is_sm100" in verdict.evidence[-2].text or any(
            "is_sm100" in e.text for e in verdict.evidence), _show(verdict)


@pytest.mark.real
def test_0523_fp8_gemm_trtllm_without_quantization(analysis_0523: Any) -> None:
    _check_fp8_trtllm(analysis_0523)


@pytest.mark.real
def test_0523_fp8_gemm_trtllm_under_fp8(analysis_0523_fp8: Any) -> None:
    _check_fp8_trtllm(analysis_0523_fp8)


@pytest.mark.real
def test_0523_mxfp4_is_not_judged_on_modelopt_code(analysis_0523_mxfp4: Any) -> None:
    verdict = _verdict(analysis_0523_mxfp4, "--moe-runner-backend", "marlin", "sm90")
    # source says supported, errs to unknown: both of mxfp4's Marlin gates admit
    # sm90 (sglang/srt/layers/quantization/mxfp4.py:651, mxfp4_marlin_moe.py:160),
    # reached only where a method runs that the scan cannot pin down
    assert verdict.verdict.value == "unknown", _show(verdict)
    assert all(e.path != MODELOPT for e in verdict.evidence if e.role in ("default", "gate")), \
        _show(verdict)


@pytest.mark.real
def test_0523_modelopt_fp4_dense_gemm_needs_blackwell(analysis_0523_modelopt_fp4: Any) -> None:
    for choice in ("flashinfer_cutlass", "flashinfer_trtllm", "flashinfer_cudnn"):
        for arch in ("sm80", "sm90"):
            verdict = _verdict(analysis_0523_modelopt_fp4, "--fp4-gemm-backend", choice, arch)
            assert verdict.verdict.value == "blocked", _show(verdict)
            assert verdict.evidence[-1].path == MODELOPT, _show(verdict)
            assert "native dense GEMM" in "".join(e.text for e in verdict.evidence) or \
                verdict.evidence[-1].text.startswith("raise ValueError"), _show(verdict)
        # the gate lets Blackwell through; the GEMM's own kernel is not read here
        sm100 = _verdict(analysis_0523_modelopt_fp4, "--fp4-gemm-backend", choice, "sm100")
        assert sm100.verdict.value == "unknown", _show(sm100)
    # marlin returns before the gate (modelopt_quant.py:1919); auto becomes marlin
    # on SM80-SM90 (its help text), which the scan cannot resolve
    for choice in ("marlin", "auto"):
        verdict = _verdict(analysis_0523_modelopt_fp4, "--fp4-gemm-backend", choice, "sm90")
        assert verdict.verdict.value == "unknown", _show(verdict)


@pytest.mark.real
def test_059_modelopt_fp4_moe_method_gate(analysis_059_modelopt_fp4: Any) -> None:
    """0.5.9's NVFP4 MoE method raises in its constructor off Blackwell, for every
    MoE runner; sm120 is Blackwell there (major in [10, 11, 12])."""
    for choice in ("triton", "flashinfer_mxfp4", "flashinfer_cutlass"):
        verdict = _verdict(analysis_059_modelopt_fp4, "--moe-runner-backend", choice, "sm90")
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert verdict.evidence[-1].path == MODELOPT, _show(verdict)
    # sm120: the gate lets it through; flashinfer_mxfp4 is what auto becomes on
    # Blackwell (server_args.py:1371), the others have no evidence either way.
    # source says unknown for flashinfer_mxfp4 here: that default is taken only
    # for a GPT-OSS checkpoint whose own quant_method is mxfp4
    # (sglang/srt/server_args.py:1364-1372), never under --quantization
    # modelopt_fp4, and flashinfer 0.6.3's kernel for it excludes sm120
    # (tests/golden/sglang-0.5.9/report.verbose.txt: unsupported)
    expected = {"triton": "unknown", "flashinfer_mxfp4": "supported",
                "flashinfer_cutlass": "unknown"}
    for choice, verdict_value in expected.items():
        sm120 = _verdict(analysis_059_modelopt_fp4, "--moe-runner-backend", choice, "sm120")
        assert sm120.verdict.value == verdict_value, _show(sm120)


_M3 = '''"""A method only a checkpoint selects (shaped like minimax_m3_nvfp4.py): its
MoE experts need SM100 unless the runner is Marlin, for every runner."""

from sglang.srt.layers.quantization.base_config import FusedMoEMethodBase, QuantizationConfig
from sglang.srt.utils import get_server_args, is_sm100_supported


class M3Fp4Config(QuantizationConfig):
    def get_quant_method(self, layer, prefix):
        return M3Fp4MoEMethod(self)


class M3Fp4MoEMethod(FusedMoEMethodBase):
    def __init__(self, quant_config):
        self.quant_config = quant_config
        self.use_marlin = get_server_args().moe_runner_backend == "marlin"
        if not self.use_marlin and not is_sm100_supported():
            raise ValueError("M3 FP4 experts need SM100 or the Marlin runner")
'''


def test_a_method_only_a_checkpoint_names_is_a_condition_of_its_own(tmp_path: Path) -> None:
    """fixtures/quant_method_paths with a third key in its method table,
    ``m3_fp4``, that is not a ``--quantization`` choice (SGLang selects it from
    the checkpoint's quant_method, as it does ``minimax_m3_nvfp4``). Its MoE
    method needs SM100 unless the runner is Marlin: without
    ``--quantization`` that is a condition worded for the checkpoint; under
    another method it is gone."""
    tree = tmp_path / "tree"
    shutil.copytree(fixture("quant_method_paths"), tree)
    quant = tree / "sglang/srt/layers/quantization"
    (quant / "m3_fp4.py").write_text(_M3)
    table = quant / "__init__.py"
    table.write_text("from sglang.srt.layers.quantization.m3_fp4 import M3Fp4Config\n" +
                     table.read_text().replace('    "mxfp4": Mxfp4Config,\n',
                                               '    "mxfp4": Mxfp4Config,\n'
                                               '    "m3_fp4": M3Fp4Config,\n'))
    assert "m3_fp4" in table.read_text()
    plain = run_scan(tree, archs=["sm90", "sm100"], option=[MOE])
    verdicts = {(b.choice, b.arch): b for b in plain.backends}
    assert verdicts[("cutlass", "sm90")].verdict.value == "unknown"
    assert verdicts[("cutlass", "sm90")].conditions == (
        "blocked with --quantization mxfp4", "blocked with a m3_fp4 checkpoint")
    assert verdicts[("cutlass", "sm100")].conditions == ()
    # Marlin is the method's own way out
    assert "blocked with a m3_fp4 checkpoint" not in verdicts[("marlin", "sm90")].conditions
    nvfp4 = run_scan(tree, archs=["sm90", "sm100"], option=[MOE], quantization="nvfp4")
    m3 = "sglang/srt/layers/quantization/m3_fp4.py"
    for verdict in nvfp4.backends:
        assert m3 not in {e.path for e in verdict.evidence}, verdict
        assert not any("m3_fp4" in c for c in verdict.conditions), verdict
