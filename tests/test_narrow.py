"""A narrower question (``--option``, ``explain --option``) after a full scan of the same
target and archs is answered from the stored full result, with the output of a cold
narrowed scan (guardscan.memo.narrow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from guardscan.arch import parse_arch_list
from guardscan.cli import main
from guardscan.driver import ScanOptions, analyse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ARCHS = "sm100,sm120"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """gate_hook, with both options calling a FlashInfer function that does not
    exist: the MoE runner at runner.py:21, the FP4 GEMM at fp4.py:17."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gate_hook", root)
    for rel, flag in (("sglang/srt/layers/moe/runner.py", "moe_runner_backend"),
                      ("sglang/srt/layers/fp4.py", "fp4_gemm_runner_backend")):
        path = root / rel
        path.write_text(path.read_text() + (
            "\n\nimport flashinfer\n\n\ndef missing(server_args, x):\n"
            f"    if server_args.{flag} == \"flashinfer_trtllm\":\n"
            "        return flashinfer.not_there(x)\n"))
    return root


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _args(tree: Path, *more: str) -> list[str]:
    return [str(tree), "--flashinfer", str(tree), "--arch", ARCHS, "--offline", "-q", *more]


def _opts(tree: Path, cache: Path, options: list[str] | None = None) -> ScanOptions:
    return ScanOptions(target=str(tree), flashinfer=str(tree), archs=parse_arch_list([ARCHS]),
                       options=options, cache_dir=cache, offline=True)


def test_narrowed_scan_after_a_full_one_is_a_hit_with_the_cold_output(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    cold = {fmt: _cli(capsys, *_args(tree, "--option", "--fp4-gemm-backend", "--format", fmt,
                                     "--no-cache"))
            for fmt in ("json", "text")}
    full = json.loads(_cli(capsys, *_args(tree, "--format", "json", "--cache-dir", str(cache))))
    assert [(d["path"], d["line"]) for d in full["diagnostics"]
            if d["code"] == "unresolved-kernel"] == [("sglang/srt/layers/moe/runner.py", 21)]
    analysis = analyse(_opts(tree, cache, ["--fp4-gemm-backend"]))
    assert analysis.cache == "reused: nothing changed"
    assert {b.option for b in analysis.result.backends} == {"--fp4-gemm-backend"}
    for fmt in ("json", "text"):
        warm = _cli(capsys, *_args(tree, "--option", "--fp4-gemm-backend", "--format", fmt,
                                   "--cache-dir", str(cache)))
        assert warm == cold[fmt]
    narrowed = json.loads(cold["json"])
    assert [(d["path"], d["line"]) for d in narrowed["diagnostics"]
            if d["code"] == "unresolved-kernel"] == [("sglang/srt/layers/fp4.py", 17)]


def test_explain_after_a_full_scan_is_a_hit_with_the_cold_output(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    explain = ["explain", "flashinfer_trtllm", "--option", "--moe-runner-backend"]
    cold = _cli(capsys, *explain, *_args(tree, "--no-cache"))
    _cli(capsys, *_args(tree, "--cache-dir", str(cache)))
    assert analyse(_opts(tree, cache, ["--moe-runner-backend"])).cache == \
        "reused: nothing changed"
    assert _cli(capsys, *explain, *_args(tree, "--cache-dir", str(cache))) == cold


def test_full_scan_after_a_narrowed_one_is_a_hit(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    narrowed = analyse(_opts(tree, cache, ["--moe-runner-backend"]))
    assert narrowed.cache == "no stored result"
    full = analyse(_opts(tree, cache))
    assert full.cache == "reused: nothing changed"
    assert full.result.to_json() == analyse(
        ScanOptions(**{**_opts(tree, cache).__dict__, "use_cache": False})).result.to_json()


def test_an_option_the_tree_lacks_is_refused_from_the_stored_result(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    _cli(capsys, *_args(tree, "--cache-dir", str(cache)))
    assert main(_args(tree, "--option", "--nope-backend", "--cache-dir", str(cache))) == 2
    assert capsys.readouterr().err == (
        "guardscan: error: --nope-backend is not a backend option of sglang None; known: "
        "--fp4-gemm-backend, --moe-runner-backend\n")
