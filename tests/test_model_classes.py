"""A gate that tests the model's config class (fixtures/flow_model_classes/):
``hybrid_gdn_config(runner.model_config) is not None``, a helper returning the
config where ``isinstance(config, Qwen3NextConfig | Qwen3_5Config)`` holds, is
``text_model_type in {...}`` over those classes and the tree's subclasses of
them: false for the common model, named in the conditions, and decided by a
``--model-config`` file (``guards.forms.model_config_classes``). The gate's
other half, ``is_minimax_sparse(config)`` reading ``(config.architectures or
[None])[0]``, is decided by the same file (``guards.forms.model_properties``)."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from fixturetree import fixture, line_of, verdict_of, verdicts

from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.model_facts import read_model
from guardscan.results import ScanResult

NAME = "flow_model_classes"
REGISTRY = "sglang/srt/layers/attention/attention_registry.py"
ARCHS = ("sm90", "sm100", "sm120")
CHOICES = ("triton", "flashinfer", "fa4")


@cache
def scan(model: str | None = None) -> ScanResult:
    tree = fixture(NAME)
    config = tree / "models" / model / "config.json" if model else None
    with tempfile.TemporaryDirectory(prefix="guardscan-test-cache-") as cache_dir:
        return analyse(ScanOptions(
            target=str(tree), kernels=False, archs=parse_arch_list([",".join(ARCHS)]),
            use_cache=False, offline=True, cache_dir=Path(cache_dir),
            model_config=config)).result


def test_the_common_model_is_not_hybrid_and_the_family_is_named() -> None:
    result = scan()
    assert verdicts(result) == {(c, a): "unknown" for c in CHOICES for a in ARCHS}
    for arch in ("sm100", "sm120"):
        assert verdict_of(result, "fa4", arch).conditions == (
            "blocked with a model of 3 text model_types (qwen3_5, qwen3_5_text, ...)",)
        assert verdict_of(result, "flashinfer", arch).conditions == ()
    # not Blackwell: the wrapper's assert is never reached
    assert verdict_of(result, "fa4", "sm90").conditions == ()


def test_a_hybrid_checkpoint_decides_the_gate() -> None:
    line = line_of(fixture(NAME) / REGISTRY, "assert runner.server_args.attention_backend")
    # qwen3_next by its own class; qwen3_5's text part by a subclass of it
    for model in ("qwen3_next", "qwen3_5"):
        result = scan(model)
        assert verdicts(result) == {
            **{(c, a): "unknown" for c in CHOICES for a in ARCHS},
            ("fa4", "sm100"): "blocked", ("fa4", "sm120"): "blocked"}, model
        last = verdict_of(result, "fa4", "sm120").evidence[-1]
        assert (last.path, last.line) == (REGISTRY, line)


def test_another_model_passes_the_gate() -> None:
    result = scan("llama")
    assert verdicts(result) == {(c, a): "unknown" for c in CHOICES for a in ARCHS}
    assert verdict_of(result, "fa4", "sm100").conditions == ()


def test_text_model_type_read_from_the_text_config() -> None:
    models = fixture(NAME) / "models"
    qwen = read_model(models / "qwen3_5" / "config.json", None)
    llama = read_model(models / "llama" / "config.json", None)
    assert not isinstance(qwen, str) and not isinstance(llama, str)
    assert (qwen.model_type, qwen.text_model_type) == ("qwen3_5", "qwen3_5_text")
    # no text part: the top level's
    assert (llama.model_type, llama.text_model_type) == ("llama", "llama")
