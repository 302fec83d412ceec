"""Gates that test the model (fixtures/flow_model_gates/): judged for the common
model with what another model does in the conditions, for the models a
choice is for, or exactly for the model ``--model-config`` names."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

import pytest
from fixturetree import fixture, line_of, verdict_of, verdicts

from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.model_facts import attention_archs, read_model
from guardscan.results import ScanResult

NAME = "flow_model_gates"
REGISTRY = "sglang/srt/layers/attention/attention_registry.py"
OPTION = "--attention-backend"
ARCHS = ("sm80", "sm90", "sm100", "sm120")


@cache
def scan(model: str | None = None) -> ScanResult:
    tree = fixture(NAME)
    config = tree / "models" / model / "config.json" if model else None
    with tempfile.TemporaryDirectory(prefix="guardscan-test-cache-") as cache_dir:
        return analyse(ScanOptions(
            target=str(tree), kernels=False, archs=parse_arch_list([",".join(ARCHS)]),
            use_cache=False, offline=True, cache_dir=Path(cache_dir),
            model_config=config)).result


def at(needle: str) -> int:
    return line_of(fixture(NAME) / REGISTRY, needle)


def deciding(result: ScanResult, choice: str, arch: str) -> tuple[str, int]:
    last = verdict_of(result, choice, arch).evidence[-1]
    return last.path, last.line


def test_the_common_model_with_what_an_mla_model_does() -> None:
    result = scan()
    assert verdicts(result) == {
        **{("triton", a): "unknown" for a in ARCHS},
        ("fa3", "sm80"): "supported", ("fa3", "sm90"): "supported",
        ("fa3", "sm100"): "blocked", ("fa3", "sm120"): "blocked",
        ("mla_only", "sm80"): "blocked", ("mla_only", "sm90"): "blocked",
        ("mla_only", "sm100"): "supported", ("mla_only", "sm120"): "blocked",
        **{("mha_only", a): "unknown" for a in ARCHS},
        **{("v41_only", a): "unknown" for a in ARCHS},
    }
    fa3 = verdict_of(result, "fa3", "sm80")
    assert fa3.conditions == ("blocked with an MLA model",)
    assert deciding(result, "fa3", "sm80") == (REGISTRY, at("assert (major == 8"))
    # on sm90 the assert holds for every model: nothing to say of MLA
    assert verdict_of(result, "fa3", "sm90").conditions == ()
    assert verdict_of(result, "mha_only", "sm100").conditions == ("blocked with an MLA model",)


def test_a_choice_for_some_models_is_judged_for_them() -> None:
    result = scan()
    need = "blocked without an MLA model (judged with one)"
    for arch in ARCHS:
        assert verdict_of(result, "mla_only", arch).conditions == (need,)
    assert deciding(result, "mla_only", "sm120") == (REGISTRY, at('"mla_only needs SM100."'))
    assert verdict_of(result, "v41_only", "sm100").conditions == (
        "blocked without a model of model_type deepseek_v41 (judged with one)",)


def test_a_flag_validator_testing_the_model_is_no_backend_gate() -> None:
    """``validate_sharding`` refuses a model without MLA for every backend but
    fa3, but runs only for its own flag: triton is not blocked for Llama."""
    assert verdict_of(scan("llama"), "triton", "sm100").verdict == "unknown"


@pytest.mark.parametrize(("model", "expected"), [
    ("deepseek", {"fa3": "blocked", "mla_only": "supported", "mha_only": "blocked",
                  "v41_only": "blocked"}),
    ("llama", {"fa3": "supported", "mla_only": "blocked", "mha_only": "unknown",
               "v41_only": "blocked"}),
])
def test_the_named_model_decides(model: str, expected: dict[str, str]) -> None:
    result = scan(model)
    got = {choice: verdict_of(result, choice, "sm80" if choice == "fa3" else "sm100").verdict
           for choice in expected}
    assert got == expected
    for choice in expected:
        assert not verdict_of(result, choice, "sm100").conditions
    attention = "MLA" if model == "deepseek" else "MHA"
    [note] = [n for n in result.notes if n.topic == "model"]
    assert note.text.endswith(f"attention {attention})")
    if model == "llama":
        assert deciding(result, "mla_only", "sm100") == (REGISTRY, at('"mla_only backend can'))
    else:
        assert deciding(result, "mha_only", "sm100") == (REGISTRY, at('"mha_only backend can'))


def test_attention_is_derived_from_the_release_and_the_file(tmp_path: Path) -> None:
    package = fixture(NAME) / "sglang"
    source = (package / "srt/configs/model_config.py").read_text()
    assert attention_archs(source, {"architectures": ["Qwen2ForCausalLM"]}) == {"MHA"}
    assert attention_archs(source, {"architectures": ["X"], "kv_lora_rank": 8}) == {"MLA"}
    # a multimodal checkpoint keeps its language model's config apart
    assert attention_archs(source, {"architectures": ["X"],
                                    "text_config": {"kv_lora_rank": 8}}) == {"MLA"}
    # no architectures: the test cannot be evaluated, both ways stay possible
    assert attention_archs(source, {}) == {"MLA", "MHA"}
    assert attention_archs("def broken(:", {}) is None
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    assert read_model(bad, package) == "is not JSON (line 1)"
    bad.write_text(json.dumps([1]))
    assert read_model(bad, package) == "is not a JSON object"
    facts = read_model(fixture(NAME) / "models/llama/config.json", None)
    assert not isinstance(facts, str) and facts.attention_arch is None


# -- sglang 0.5.23 ---------------------------------------------------------------

REAL_REGISTRY = "sglang/srt/layers/attention/attention_registry.py"
DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
            "kv_lora_rank": 512, "q_lora_rank": 1536}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


def real_scan(tmp_path: Path, model: dict[str, object] | None) -> ScanResult:
    from realtrees import one_at_a_time, shared_cache_dir

    config = None
    if model is not None:
        config = tmp_path / "config.json"
        config.write_text(json.dumps(model))
    with one_at_a_time("model-gates", "0.5.23", str(sorted(model or {}))):
        return analyse(ScanOptions(
            target="sglang==0.5.23", kernels=False, options=[OPTION],
            archs=parse_arch_list(["sm80,sm100"]), cache_dir=shared_cache_dir(),
            model_config=config)).result


def real_line(tree: object, needle: str) -> int:
    return line_of(tree.root / REAL_REGISTRY, needle)  # type: ignore[attr-defined]


def test_0523_attention_gates_that_test_the_model(sglang_0523: object, tmp_path: Path) -> None:
    result = real_scan(tmp_path, None)
    fa3 = verdict_of(result, "fa3", "sm80")
    assert (fa3.verdict, fa3.conditions) == ("supported", ("blocked with an MLA model",))
    mha = verdict_of(result, "trtllm_mha", "sm100")
    assert (mha.verdict, mha.conditions) == ("supported", ("blocked with an MLA model",))
    mla = verdict_of(result, "trtllm_mla", "sm100")
    assert (mla.verdict, mla.conditions) == (
        "supported", ("blocked without an MLA model (judged with one)",))
    assert verdict_of(result, "triton", "sm80").conditions == ()


def test_0523_a_deepseek_config_decides(sglang_0523: object, tmp_path: Path) -> None:
    result = real_scan(tmp_path, DEEPSEEK)
    mha = verdict_of(result, "trtllm_mha", "sm100")
    assert mha.verdict == "blocked" and mha.conditions == ()
    assert (mha.evidence[-1].path, mha.evidence[-1].line) == (REAL_REGISTRY, real_line(
        sglang_0523, "trtllm_mha backend can only be used with non-MLA models"))
    assert verdict_of(result, "fa3", "sm80").verdict == "blocked"
    assert verdict_of(result, "trtllm_mla", "sm100").verdict == "supported"


def test_0523_a_llama_config_decides(sglang_0523: object, tmp_path: Path) -> None:
    result = real_scan(tmp_path, LLAMA)
    mla = verdict_of(result, "trtllm_mla", "sm100")
    assert mla.verdict == "blocked"
    assert (mla.evidence[-1].path, mla.evidence[-1].line) == (REAL_REGISTRY, real_line(
        sglang_0523, "trtllm_mla backend can only be used with MLA models"))
    assert verdict_of(result, "fa3", "sm80").verdict == "supported"
    assert verdict_of(result, "trtllm_mha", "sm100").verdict == "supported"
    assert verdict_of(result, "triton", "sm80").verdict == "unknown"
