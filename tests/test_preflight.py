"""guardscan.preflight: a launch command's backend flags judged on one architecture.

The judging (``judge_launch``) runs on the fixture tree ``fixtures/preflight_launch``:
``--moe-runner-backend`` (auto -> flashinfer_trtllm on SM100, else triton;
flashinfer_trtllm rejected off SM100), ``--attention-backend`` (default fa3,
rejected off SM90), ``--fp8-gemm-backend`` (auto can become cutlass or z),
``--quantization`` (fp8, modelopt_fp4) and a free-form
``--speculative-draft-attention-backend``.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture, line_of, run_scan

import guardscan
import guardscan.gpu
import guardscan.launch as preflight_module
from guardscan.arch import parse_arch
from guardscan.launch import (
    Launch,
    LocalGPUError,
    judge_launch,
    parse_launch,
    preflight,
)
from guardscan.results import ScanResult, Verdict

TREE = "preflight_launch"
RUNNER = fixture(TREE) / "sglang/srt/layers/moe/runner.py"
TRTLLM_GATE = "sglang/srt/layers/moe/runner.py:" + str(
    line_of(RUNNER, 'raise ValueError("moe runner backend flashinfer_trtllm'))


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return run_scan(fixture(TREE), archs=["sm100", "sm120"])


def judged(result: ScanResult, *argv: str, arch: str = "sm120",
           defined: Any = None) -> guardscan.Preflight:
    one = ScanResult(result.guardscan, result.target, result.kernels, [arch], result.options,
                     [b for b in result.backends if b.arch == arch], result.diagnostics,
                     result.quantization, result.notes)
    return judge_launch(one, parse_launch(list(argv)), defined=defined,
                        quantization_choices=("fp8", "modelopt_fp4"))


# -- the launch command -------------------------------------------------------------------
@pytest.mark.parametrize("program", [
    ["python", "-m", "sglang.launch_server"],
    ["python3", "-m", "sglang.launch_server"],
    ["sglang", "serve"],
    ["/usr/local/bin/sglang", "serve"],
    ["python3", "/opt/sglang/python/sglang/launch_server.py"],
    ["CUDA_VISIBLE_DEVICES=0,1", "SGLANG_X=1", "python", "-u", "-m", "sglang.launch_server"],
    ["env", "CUDA_VISIBLE_DEVICES=0", "uv", "run", "python", "-m", "sglang.launch_server"],
    [],
])
def test_program_part_is_skipped(program: list[str]) -> None:
    launch = parse_launch([*program, "--model-path", "m", "--moe-runner-backend", "triton"])
    assert launch.program == tuple(program)
    assert [(f.flag, f.value) for f in launch.flags] == [("--model-path", "m"),
                                                         ("--moe-runner-backend", "triton")]


def test_flag_forms() -> None:
    launch = parse_launch(["sglang", "serve", "--trust-remote-code", "--tp", "8",
                           "--moe-runner-backend=flashinfer_trtllm", "--offset", "-1",
                           "--enable-x", "--quantization", "fp8", "--disable-y"])
    assert [(f.flag, f.value, f.inline) for f in launch.flags] == [
        ("--trust-remote-code", None, False), ("--tp", "8", False),
        ("--moe-runner-backend", "flashinfer_trtllm", True), ("--offset", "-1", False),
        ("--enable-x", None, False), ("--quantization", "fp8", False),
        ("--disable-y", None, False)]


def test_one_argument_holding_the_whole_command_is_split() -> None:
    launch = parse_launch(["python -m sglang.launch_server --model-path 'a b' --tp 8"])
    assert launch.program == ("python", "-m", "sglang.launch_server")
    assert launch.last("--model-path") is not None
    assert launch.last("--model-path").value == "a b"  # type: ignore[union-attr]


def test_last_occurrence_counts(result: ScanResult) -> None:
    answer = judged(result, "--moe-runner-backend", "flashinfer_trtllm",
                    "--moe-runner-backend", "triton")
    assert answer.ok
    assert [c.value for c in answer.given()] == ["triton"]


# -- verdicts ------------------------------------------------------------------------------
def test_a_rejected_choice_is_a_problem_with_its_deciding_line(result: ScanResult) -> None:
    answer = judged(result, "python", "-m", "sglang.launch_server", "--model-path", "m",
                    "--tp", "8", "--moe-runner-backend", "flashinfer_trtllm")
    assert not answer.ok
    [problem] = answer.problems
    assert (problem.code, problem.option, problem.choice, problem.arch, problem.verdict) == (
        "not-safe", "--moe-runner-backend", "flashinfer_trtllm", "sm120", Verdict.BLOCKED)
    assert problem.where == TRTLLM_GATE
    assert str(problem) == problem.message
    assert problem.message.startswith("--moe-runner-backend flashinfer_trtllm is blocked on "
                                      "sm120: ")
    assert answer.ignored == ("--model-path", "--tp")
    [check] = answer.given()
    assert check.entry is answer.verdict("--moe-runner-backend", "flashinfer_trtllm")
    assert check.entry is not None and check.entry.evidence


def test_the_same_choice_is_fine_where_the_gate_admits_it(result: ScanResult) -> None:
    answer = judged(result, "--moe-runner-backend", "flashinfer_trtllm", arch="sm100")
    assert answer.ok
    [check] = answer.given()
    # the gate admits sm100; SGLang's own default line for sm100 is the stronger word
    default = line_of(fixture(TREE) / "sglang/srt/server_args.py",
                      'self.moe_runner_backend = "flashinfer_trtllm"')
    assert (check.verdict, check.where) == (Verdict.SUPPORTED,
                                            f"sglang/srt/server_args.py:{default}")


@pytest.mark.parametrize(("arch", "becomes", "verdict"), [
    ("sm100", "flashinfer_trtllm", Verdict.SUPPORTED),
    # the fallback for every arch but SM100: what auto becomes, but no claim
    ("sm120", "triton", Verdict.UNKNOWN),
])
def test_auto_is_judged_as_what_it_becomes(result: ScanResult, arch: str, becomes: str,
                                           verdict: Verdict) -> None:
    answer = judged(result, "--moe-runner-backend", "auto", arch=arch)
    [check] = answer.given()
    assert (check.value, check.judged, check.verdict, check.auto) == (
        "auto", becomes, verdict, (becomes,))
    assert check.shown == f"auto -> {becomes}"
    server_args = fixture(TREE) / "sglang/srt/server_args.py"
    line = line_of(server_args, f'self.moe_runner_backend = "{becomes}"')
    if verdict is Verdict.SUPPORTED:
        assert check.where == f"sglang/srt/server_args.py:{line}"
    else:
        assert check.where is None


def test_auto_with_several_candidates_is_not_guessed(result: ScanResult) -> None:
    answer = judged(result, "--fp8-gemm-backend", "auto")
    [check] = answer.given()
    assert (check.judged, check.verdict, check.where) == ("auto", Verdict.UNKNOWN, None)
    assert set(check.auto) == {"cutlass", "z"}
    assert "auto can become" in check.reason
    assert answer.ok


def test_an_unsafe_default_is_a_warning_not_a_failure(result: ScanResult) -> None:
    answer = judged(result, "--moe-runner-backend", "triton")
    assert answer.ok
    [warning] = answer.warnings
    assert (warning.code, warning.option, warning.choice, warning.verdict) == (
        "default-not-safe", "--attention-backend", "fa3", Verdict.BLOCKED)
    assert "is not given; its default fa3 is blocked on sm120" in warning.message
    # a default that is safe has a check and no line
    assert any(c.option == "--fp8-gemm-backend" and not c.given for c in answer.checks)
    assert judged(result, "--attention-backend", "fa3").problems[0].code == "not-safe"


# -- what is not a choice or an option -----------------------------------------------------
def test_misspelt_choice_names_the_close_match(result: ScanResult) -> None:
    answer = judged(result, "--moe-runner-backend", "flashinfer_cutlas")
    [problem] = answer.problems
    assert (problem.code, problem.option, problem.choice) == (
        "unknown-choice", "--moe-runner-backend", "flashinfer_cutlas")
    assert problem.suggestions[0] == "flashinfer_cutlass"
    assert "did you mean flashinfer_cutlass" in problem.message


def test_misspelt_option_names_the_close_match(result: ScanResult) -> None:
    answer = judged(result, "--moe-runer-backend", "triton", defined=lambda flag: False)
    [problem] = answer.problems
    assert (problem.code, problem.option, problem.choice) == (
        "unknown-option", "--moe-runer-backend", "triton")
    assert problem.suggestions[0] == "--moe-runner-backend"


def test_a_free_form_option_the_tree_defines_is_ignored(result: ScanResult) -> None:
    root = fixture(TREE)
    flag = "--speculative-draft-attention-backend"
    assert preflight_module.tree_defines(root, "sglang", flag)
    assert not preflight_module.tree_defines(root, "sglang", "--speculative-draft-backend")
    answer = judged(result, flag, "fa3", "--tp", "2",
                    defined=lambda f: preflight_module.tree_defines(root, "sglang", f))
    assert answer.ok and answer.ignored == (flag, "--tp")
    # with nothing to ask, a backend-looking flag the catalog lacks is a problem
    assert judged(result, flag, "fa3").problems[0].code == "unknown-option"


def test_an_abbreviation_is_a_problem(result: ScanResult) -> None:
    [problem] = judged(result, "--moe-runner", "triton", defined=lambda f: False).problems
    assert (problem.code, problem.suggestions) == ("abbreviated-option",
                                                    ("--moe-runner-backend",))


def test_a_flag_without_its_value_is_a_problem(result: ScanResult) -> None:
    [problem] = judged(result, "--moe-runner-backend", "--tp", "8").problems
    assert problem.code == "missing-value" and "choices: auto, triton" in problem.message


def test_an_unknown_quantization_is_a_problem(result: ScanResult) -> None:
    [problem] = judged(result, "--quantization", "modelopt_fp").problems
    assert (problem.code, problem.option, problem.suggestions[0]) == (
        "unknown-choice", "--quantization", "modelopt_fp4")


def test_a_choice_for_another_platform_is_a_problem(result: ScanResult) -> None:
    [problem] = judged(result, "--attention-backend", "ascend").problems
    assert (problem.code, problem.choice, problem.arch) == ("other-platform", "ascend", "sm120")
    assert "documented for npu only" in problem.message
    assert problem.where is not None and problem.where.startswith("sglang/srt/server_args.py:")


def test_other_flags_and_config_are_listed(result: ScanResult) -> None:
    answer = judged(result, "--model-path", "m", "--config", "c.yaml", "--enable-x")
    assert answer.ok
    assert answer.ignored == ("--model-path", "--config", "--enable-x")
    assert answer.notes == ("the flags inside --config c.yaml are not read",)


def test_order_follows_the_command(result: ScanResult) -> None:
    answer = judged(result, "--fp8-gemm-backend", "z", "--moe-runner-backend", "triton")
    assert [c.option for c in answer.given()] == ["--fp8-gemm-backend", "--moe-runner-backend"]


def test_to_json(result: ScanResult) -> None:
    data = judged(result, "--moe-runner-backend", "flashinfer_trtllm").to_json()
    assert data["ok"] is False and data["archs"] == ["sm120"]
    [problem] = data["problems"]  # type: ignore[misc]
    assert problem["verdict"] == "blocked" and problem["where"] == TRTLLM_GATE


# -- the entry point -----------------------------------------------------------------------
@pytest.fixture
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    import guardscan.memo.process

    monkeypatch.setattr(guardscan.memo.process, "SCANS", {})


def test_preflight_scans_once_per_process(fresh_memo: None, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import guardscan.driver

    calls: list[object] = []
    real = guardscan.driver.analyse

    def counting(opts: guardscan.driver.ScanOptions) -> guardscan.driver.Analysis:
        calls.append(opts)
        return real(opts)

    monkeypatch.setattr(guardscan.driver, "analyse", counting)
    target = str(fixture(TREE))
    first = guardscan.preflight(["--moe-runner-backend", "flashinfer_trtllm"], arch="sm120",
                                target=target, kernels=False, cache_dir=tmp_path)
    second = guardscan.preflight(["sglang", "serve", "--moe-runner-backend=triton"],
                                 arch=parse_arch("RTX PRO 6000"), target=target,
                                 kernels=False, cache_dir=tmp_path)
    assert (first.ok, second.ok) == (False, True)
    assert len(calls) == 1
    # the scan is the whole-tree one (every backend option), so the result cache
    # shared with `guardscan TARGET --arch sm120` answers it
    assert calls[0].options is None  # type: ignore[attr-defined]
    assert first.result is second.result


def test_preflight_with_an_unknown_quantization_judges_without_it(
        fresh_memo: None, tmp_path: Path) -> None:
    answer = preflight(["--quantization", "modelopt_fp", "--moe-runner-backend", "triton"],
                       "sm120", str(fixture(TREE)), kernels=False, cache_dir=tmp_path)
    [problem] = answer.problems
    assert (problem.code, problem.suggestions[0]) == ("unknown-choice", "modelopt_fp4")
    assert answer.quantization == "modelopt_fp" and answer.result.quantization is None
    assert [(c.judged, c.verdict) for c in answer.given()] == [("triton", Verdict.UNKNOWN)]


def test_preflight_under_a_quantization(fresh_memo: None, tmp_path: Path) -> None:
    answer = preflight(["--quantization", "fp8"], "sm120", str(fixture(TREE)),
                       kernels=False, cache_dir=tmp_path)
    assert answer.ok and answer.result.quantization == "fp8" and answer.quantization == "fp8"


def test_preflight_bad_arch_raises(fresh_memo: None) -> None:
    with pytest.raises(guardscan.ArchError):
        preflight(["--tp", "1"], "sm12", str(fixture(TREE)), kernels=False)


# -- --arch auto: NVML, then nvidia-smi ----------------------------------------------------
@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guardscan.gpu, "NVML_LIBRARY", "libguardscan-tests-no-nvml.so.1")


class FakeNVML:
    """Stands in for libnvidia-ml.so.1: the four calls guardscan makes."""

    def __init__(self, capabilities: list[tuple[int, int]], init: int = 0) -> None:
        self.capabilities = capabilities
        self.init = init
        self.shut = False

    def nvmlInit_v2(self) -> int:
        return self.init

    def nvmlShutdown(self) -> int:
        self.shut = True
        return 0

    def nvmlDeviceGetCount_v2(self, count: Any) -> int:
        count._obj.value = len(self.capabilities)
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index: ctypes.c_uint, handle: Any) -> int:
        handle._obj.value = index.value + 1
        return 0

    def nvmlDeviceGetCudaComputeCapability(self, handle: ctypes.c_void_p, major: Any,
                                           minor: Any) -> int:
        major._obj.value, minor._obj.value = self.capabilities[(handle.value or 1) - 1]
        return 0


def test_auto_without_nvml_or_nvidia_smi_is_a_clear_error(fresh_memo: None,
                                                          no_nvml: None) -> None:
    assert guardscan.gpu.detect_archs() == (
        [], "no NVML (libguardscan-tests-no-nvml.so.1); no nvidia-smi")
    with pytest.raises(LocalGPUError, match=r"no local GPU found \(no NVML .*no nvidia-smi\)"):
        preflight(["--tp", "1"], "auto", str(fixture(TREE)), kernels=False)


def test_auto_reads_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNVML([(12, 0), (12, 0), (9, 0)])
    monkeypatch.setattr(guardscan.gpu, "_load_nvml", lambda: fake)
    archs, how = guardscan.gpu.detect_archs()
    assert ([a.name for a in archs], how) == (["sm90", "sm120"], "the local GPUs (NVML)")
    assert fake.shut


def test_nvml_without_a_driver_or_with_an_unknown_gpu_gives_no_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guardscan.gpu, "_load_nvml", lambda: FakeNVML([], init=9))
    assert guardscan.gpu.nvml_archs() == ([], "NVML found no driver")
    monkeypatch.setattr(guardscan.gpu, "_load_nvml", lambda: FakeNVML([(42, 0)]))
    assert guardscan.gpu.nvml_archs() == ([], "NVML reports compute capability 42.0, not known")
    monkeypatch.setattr(guardscan.gpu, "_load_nvml", lambda: object())
    assert guardscan.gpu.nvml_archs()[0] == []


def test_auto_falls_back_on_nvidia_smi(no_nvml: None, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import guardscan.arch

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 12.0\n", encoding="utf-8")
    smi.chmod(0o755)
    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", str(smi))
    archs, how = guardscan.gpu.detect_archs()
    assert ([a.name for a in archs], how) == (["sm120"], "the local GPU (nvidia-smi)")


def test_exports() -> None:
    for name in ("preflight", "Preflight", "Problem", "Check", "LocalGPUError"):
        assert name in guardscan.__all__
    assert guardscan.preflight is preflight
    assert isinstance(parse_launch([]), Launch)
