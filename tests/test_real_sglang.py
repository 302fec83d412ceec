"""Verdicts and evidence on real SGLang releases (wheels downloaded once, cached).

Each expectation was checked by reading the release's source; the evidence
assertions pin the file and the line text that decides the verdict.
"""

from __future__ import annotations

from typing import Any

from guardscan.results import BackendVerdict


def _verdict(analysis: Any, flag: str, choice: str, arch: str) -> BackendVerdict:
    for verdict in analysis.result.backends:
        if (verdict.option, verdict.choice, verdict.arch) == (flag, choice, arch):
            return verdict
    raise AssertionError(f"no verdict for {flag} {choice} {arch}")


def _has(verdict: BackendVerdict, path_end: str, text_part: str, role: str | None = None,
         ) -> bool:
    return any(ev.path.endswith(path_end) and text_part in ev.text
               and (role is None or ev.role == role) for ev in verdict.evidence)


def _show(verdict: BackendVerdict) -> str:
    lines = [f"{verdict.option} {verdict.choice} {verdict.arch}: {verdict.verdict.value}"]
    lines += [f"  [{e.role}] {e.path}:{e.line} {e.text} -- {e.note}" for e in verdict.evidence]
    return "\n".join(lines)


# -- sglang 0.5.23 -------------------------------------------------------------------


def test_0523_options_catalog(analysis_0523: Any) -> None:
    flags = {o.flag for o in analysis_0523.result.options}
    assert {"--moe-runner-backend", "--moe-a2a-backend", "--fp4-gemm-backend",
            "--fp8-gemm-backend", "--attention-backend"} <= flags


def test_0523_hpc_ops_needs_sm90(analysis_0523: Any) -> None:
    for arch in ("sm100", "sm120", "sm80"):
        verdict = _verdict(analysis_0523, "--moe-runner-backend", "hpc_ops", arch)
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert not verdict.safe_to_try
        assert _has(verdict, "sglang/srt/layers/moe/moe_runner/runner.py", "if major != 9:",
                    "guard"), _show(verdict)
        assert _has(verdict, "sglang/srt/layers/moe/moe_runner/runner.py", "raise ValueError(",
                    "gate"), _show(verdict)
    sm90 = _verdict(analysis_0523, "--moe-runner-backend", "hpc_ops", "sm90")
    assert sm90.verdict.value == "supported", _show(sm90)  # the gate admits sm90
    assert sm90.evidence[-1].note.startswith("admits sm90"), _show(sm90)


def test_0523_flashinfer_megamoe_a2a_needs_sm100(analysis_0523: Any) -> None:
    for arch in ("sm120", "sm90"):
        verdict = _verdict(analysis_0523, "--moe-a2a-backend", "flashinfer_megamoe", arch)
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert _has(verdict, "sglang/srt/arg_groups/moe_hook.py",
                    "if not is_sm100_supported():", "guard"), _show(verdict)
        # the guard's meaning comes from the tree's own definition
        assert _has(verdict, "sglang/srt/utils/common.py", "is_sm100_supported = lru_cache",
                    "guard"), _show(verdict)
        gate = [e for e in verdict.evidence if e.role == "gate"
                and e.path.endswith("moe_hook.py")]
        assert gate and "capability major in [10]" in gate[0].note, _show(verdict)
    sm100 = _verdict(analysis_0523, "--moe-a2a-backend", "flashinfer_megamoe", "sm100")
    assert sm100.verdict.value == "supported", _show(sm100)  # the gate admits sm100


def test_0523_gate_lines_point_at_the_evidence(analysis_0523: Any) -> None:
    verdict = _verdict(analysis_0523, "--moe-a2a-backend", "flashinfer_megamoe", "sm120")
    root = analysis_0523.tree.root
    for ev in verdict.evidence:
        text = (root / ev.path).read_text().splitlines()[ev.line - 1].strip()
        assert text == ev.text, ev


def test_0523_modelopt_fp4_moe_gate(analysis_0523_modelopt_fp4: Any) -> None:
    """The NVFP4 MoE method raises for non-Marlin MoE backends unless Blackwell."""
    analysis = analysis_0523_modelopt_fp4
    for choice in ("triton", "flashinfer_trtllm"):
        verdict = _verdict(analysis, "--moe-runner-backend", choice, "sm90")
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert verdict.quantization == "modelopt_fp4"
        assert _has(verdict, "sglang/srt/layers/quantization/modelopt_quant.py",
                    "if not get_platform().is_blackwell and not use_marlin_fallback:"), \
            _show(verdict)
    # auto becomes marlin on (8, 0) <= capability < (10, 0) (modelopt_quant.py:3118)
    marlin = _verdict(analysis, "--moe-runner-backend", "marlin", "sm90")
    assert marlin.verdict.value == "supported", _show(marlin)
    # the gate lets Blackwell through, but the method's apply has no branch
    # for triton: it ends in raise NotImplementedError on every arch
    blackwell = _verdict(analysis, "--moe-runner-backend", "triton", "sm100")
    assert blackwell.verdict.value == "blocked", _show(blackwell)
    assert _has(blackwell, "sglang/srt/layers/quantization/modelopt_quant.py",
                "raise NotImplementedError("), _show(blackwell)


def test_0523_without_quantization_the_method_gate_is_a_condition(analysis_0523: Any) -> None:
    verdict = _verdict(analysis_0523, "--moe-runner-backend", "triton", "sm90")
    assert verdict.verdict.value == "unknown", _show(verdict)
    assert "blocked with --quantization modelopt_fp4" in verdict.conditions, _show(verdict)


def test_0523_platform_labels(analysis_0523: Any) -> None:
    verdict = _verdict(analysis_0523, "--attention-backend", "aiter", "sm90")
    assert verdict.platform == "rocm"


# -- sglang 0.5.9 ------------------------------------------------------------------------


def test_059_options_from_argparse(analysis_059: Any) -> None:
    options = {o.flag: o for o in analysis_059.result.options}
    assert options["--fp4-gemm-backend"].dest == "fp4_gemm_runner_backend"
    assert options["--moe-runner-backend"].choices == (
        "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
        "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass")


def test_059_sm120_guard_in_trtllm_runner_is_select_not_support(analysis_059: Any) -> None:
    verdict = _verdict(analysis_059, "--moe-runner-backend", "flashinfer_trtllm", "sm120")
    assert verdict.verdict.value == "unknown", _show(verdict)  # SGLang-only: no kernel read
    selects = [e for e in verdict.evidence if e.role == "select"]
    assert any(e.path.endswith("sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py")
               and "is_sm120_supported()" in e.text for e in selects), _show(verdict)


def test_059_flashinfer_deepgemm_is_hopper_only(analysis_059: Any) -> None:
    for arch in ("sm100", "sm120"):
        verdict = _verdict(analysis_059, "--fp8-gemm-backend", "flashinfer_deepgemm", arch)
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert _has(verdict, "sglang/srt/layers/quantization/fp8_utils.py", "raise", "gate")
        assert any(e.role == "doc" and "Hopper SM90 only" in e.text for e in verdict.evidence)
    sm90 = _verdict(analysis_059, "--fp8-gemm-backend", "flashinfer_deepgemm", "sm90")
    # source says supported, errs to unknown: the gate admits sm90 once flashinfer
    # imports (is_flashinfer_available(), an environment fact; flashinfer is a
    # dependency of sglang): see sglang/srt/layers/quantization/fp8_utils.py:212
    assert sm90.verdict.value == "unknown", _show(sm90)


def test_059_modelopt_fp4_min_capability(analysis_059_modelopt_fp4: Any) -> None:
    """The loader rejects a method below its config's get_min_capability() (100)."""
    analysis = analysis_059_modelopt_fp4
    for choice in ("triton", "flashinfer_cutlass", "auto"):
        verdict = _verdict(analysis, "--moe-runner-backend", choice, "sm90")
        assert verdict.verdict.value == "blocked", _show(verdict)
        assert _has(verdict, "sglang/srt/model_loader/loader.py",
                    "if capability < quant_config.get_min_capability():", "gate")
        assert any("returns 100" in e.note for e in verdict.evidence), _show(verdict)
    sm100 = _verdict(analysis, "--moe-runner-backend", "triton", "sm100")
    assert sm100.verdict.value == "unknown", _show(sm100)  # admitted, no support claim


def test_059_notes_name_quantization_requirements(analysis_059: Any) -> None:
    notes = [n for n in analysis_059.result.notes if n.method == "modelopt_fp4"]
    assert [n.topic for n in notes] == ["quantization"]
    assert notes[0].text.startswith("--quantization modelopt_fp4 is rejected on sm80, sm86, "
                                    "sm89, sm90 whatever the backend"), notes[0].text


def test_json_contract_on_real_release(analysis_059: Any) -> None:
    data = analysis_059.result.to_json()
    assert set(data) >= {"guardscan", "target", "kernels", "archs", "backends", "diagnostics"}
    assert data["target"]["package"] == "sglang" and data["target"]["version"] == "0.5.9"
    assert data["archs"] == ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110",
                             "sm120", "sm121"]
    entry = data["backends"][0]
    assert set(entry) >= {"option", "choice", "arch", "quantization", "verdict", "safe_to_try",
                          "evidence"}
    for backend in data["backends"]:
        assert backend["safe_to_try"] == (backend["verdict"] in ("supported", "unknown"))
        for ev in backend["evidence"]:
            assert ev["path"].startswith("sglang/") and ev["line"] >= 1


def test_unresolved_guards_are_reported_with_location(analysis_0523: Any) -> None:
    diags = [d for d in analysis_0523.result.diagnostics if d.code == "unresolved-guard"]
    assert diags
    for diag in diags:
        assert diag.path.startswith("sglang/") and diag.line >= 1 and "`" in diag.message
