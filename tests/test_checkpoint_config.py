"""A launch without --quantization judged under the method its local
checkpoint's config.json names (guardscan/checkpoint_config.py), in
``preflight`` and ``check``; a hub id, an unquantized checkpoint and a
method the release does not offer are judged without one, and say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixturetree import fixture

from guardscan.checkpoint_config import model_path, read_checkpoint
from guardscan.cli import main
from guardscan.launch import preflight
from guardscan.results import ExitCode

TREE = "quant_checkpoint_decides"
MOE = "--moe-runner-backend"


def checkpoint(tmp_path: Path, config: object, name: str = "model") -> str:
    model = tmp_path / name
    model.mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (model / "config.json").write_text(text, encoding="utf-8")
    return str(model)


def quantized(method: str) -> dict[str, object]:
    return {"architectures": ["GptOssForCausalLM"],
            "quantization_config": {"quant_method": method}}


@pytest.mark.parametrize(("config", "method", "problem"), [
    (quantized("mxfp4"), "mxfp4", None),
    (quantized("FP8 "), "fp8", None),  # as SGLang reads it: lower case, stripped
    ({"architectures": ["LlamaForCausalLM"]}, None, None),
    ('{"quantization_config": ', None, "is not JSON (line 1)"),
    ("[1, 2]", None, "is not a JSON object"),
    ({"quantization_config": {"bits": 4}}, None,
     "has a quantization_config without a quant_method"),
])
def test_what_a_config_json_names(tmp_path: Path, config: object, method: str | None,
                                  problem: str | None) -> None:
    found = read_checkpoint(checkpoint(tmp_path, config))
    assert found is not None
    assert (found.method, found.problem) == (method, problem)


def test_no_local_config_is_no_checkpoint(tmp_path: Path) -> None:
    assert read_checkpoint("openai/gpt-oss-120b") is None  # a hub id is never fetched
    assert read_checkpoint(str(tmp_path)) is None  # a directory without config.json
    assert read_checkpoint(None) is None


def test_the_model_is_the_last_model_flag() -> None:
    assert model_path([("--model-path", "a"), ("--tp", "8"), ("--model", "b")]) == "b"
    assert model_path([("--tp", "8")]) is None


@pytest.mark.parametrize(("method", "verdict", "ok"), [
    ("mxfp4", "blocked", False),  # mxfp4's Marlin gate, exactly
    ("nvfp4", "unknown", True),   # nvfp4 runs Marlin off Blackwell
])
def test_preflight_judges_under_the_checkpoints_method(tmp_path: Path, method: str,
                                                       verdict: str, ok: bool) -> None:
    model = checkpoint(tmp_path, quantized(method))
    answer = preflight(["--model-path", model, MOE, "marlin"], "sm80", str(fixture(TREE)),
                       kernels=False)
    assert answer.result.quantization == method
    assert answer.quantization is None  # the command gave none
    assert answer.checkpoint == (f"judged with --quantization {method}, the quant_method of "
                                 f"{model}/config.json")
    assert (answer.given()[0].verdict.value, answer.ok) == (verdict, ok)
    assert "--model-path" not in answer.ignored  # its config.json was read


def test_a_hub_model_is_ignored(tmp_path: Path) -> None:
    answer = preflight(["--model-path", "org/model", "--tp", "8", MOE, "marlin"], "sm80",
                       str(fixture(TREE)), kernels=False)
    assert answer.ignored == ("--model-path", "--tp")


def test_without_a_method_the_checkpoint_decides_nothing(tmp_path: Path) -> None:
    """No --quantization and no checkpoint: mxfp4's gate is a condition."""
    answer = preflight([MOE, "marlin"], "sm80", str(fixture(TREE)), kernels=False)
    assert (answer.result.quantization, answer.checkpoint) == (None, None)
    assert answer.given()[0].verdict.value == "unknown"


def test_a_method_the_release_does_not_offer_is_a_note(tmp_path: Path) -> None:
    model = checkpoint(tmp_path, quantized("gptq"))
    answer = preflight(["--model-path", model, MOE, "marlin"], "sm80", str(fixture(TREE)),
                       kernels=False)
    assert answer.result.quantization is None
    assert answer.ok and not answer.problems
    assert answer.checkpoint == (f"{model}/config.json names quant_method 'gptq', not a "
                                 "--quantization method of this release (methods: nvfp4, "
                                 "mxfp4); judged without --quantization")


def test_the_command_line_wins_over_the_checkpoint(tmp_path: Path) -> None:
    model = checkpoint(tmp_path, quantized("mxfp4"))
    answer = preflight(["--model-path", model, "--quantization", "nvfp4", MOE, "marlin"],
                       "sm80", str(fixture(TREE)), kernels=False)
    assert (answer.result.quantization, answer.checkpoint) == ("nvfp4", None)


def test_check_says_where_the_method_came_from(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    model = checkpoint(tmp_path, quantized("mxfp4"))
    code = main(["check", "--arch", "sm80", "--no-kernels", str(fixture(TREE)), "--",
                 "python", "-m", "sglang.launch_server", "--model-path", model, MOE, "marlin"])
    out = capsys.readouterr().out.splitlines()
    assert code == ExitCode.FOUND
    assert out[0].endswith(", --quantization mxfp4 (the checkpoint's)")
    assert out[1] == (f"  note: judged with --quantization mxfp4, the quant_method of "
                      f"{model}/config.json")
    assert out[-1].startswith("why: guardscan explain marlin --option --moe-runner-backend "
                              "--arch sm80 --quantization mxfp4 ")


def test_model_config_sets_the_method_of_a_scan(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(checkpoint(tmp_path, quantized("mxfp4"))) / "config.json"
    code = main([str(fixture(TREE)), "--no-kernels", "--arch", "sm80", "--option", MOE,
                 "--model-config", str(config), "--format", "json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == ExitCode.OK
    assert data["quantization"] == "mxfp4"
    assert {b["choice"]: b["verdict"] for b in data["backends"]}["marlin"] == "blocked"
    assert captured.err == (f"guardscan: judged with --quantization mxfp4, the quant_method of "
                            f"{config}\n")


def test_explain_reads_the_model_config_too(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(checkpoint(tmp_path, {"architectures": ["X"]})) / "config.json"
    code = main(["explain", "marlin", "--option", MOE, "--arch", "sm80", "--no-kernels", "-q",
                 "--model-config", str(config), str(fixture(TREE))])
    out = capsys.readouterr().out
    assert code == ExitCode.OK
    # an unquantized checkpoint names no method: judged without one
    assert "--moe-runner-backend marlin on sm80: unknown" in out


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file"),
    ('{"quantization_config": ', "is not JSON (line 1)"),
])
def test_an_unusable_model_config_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
        message: str) -> None:
    config = tmp_path / "config.json"
    if content is not None:
        config.write_text(content, encoding="utf-8")
    code = main([str(fixture(TREE)), "--no-kernels", "--arch", "sm80",
                 "--model-config", str(config)])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert err == f"guardscan: error: --model-config {config}: {message}\n"
