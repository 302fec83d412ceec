"""Edit distance and "did you mean", for subcommands and options (the
architectures' own rules are in test_arch.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixturetree import fixture

from guardscan.cli import main
from guardscan.suggest import closest, did_you_mean, edit_distance, option_hint, split_flags

GATE = fixture("roles_gate")


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("", "", 0), ("explain", "explain", 0), ("Explain", "explain", 0), ("expalin", "explain", 1),
    ("chek", "check", 1), ("", "diff", 4), ("matrx", "matrix", 1), ("gate", "diff", 4),
    ("sm75", "sm87", 2), ("abc", "cab", 2), ("ca", "abc", 3),
])
def test_edit_distance(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance == edit_distance(b, a)


def test_closest_keeps_to_close_names() -> None:
    names = ["explain", "check", "baseline", "diff", "gate", "reports", "matrix", "archs"]
    assert closest("expalin", names) == ("explain",)
    assert closest("arch", names) == ("archs",)
    assert closest("banana", names) == ()
    assert closest("x", names) == ()


def test_did_you_mean() -> None:
    assert did_you_mean([]) == ""
    assert did_you_mean(["a"]) == "did you mean a?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean a, b or c?"


def test_option_hint_and_split_flags() -> None:
    known = ["--moe-runner-backend", "--attention-backend", "--fp8-gemm-backend"]
    assert option_hint(["--moe-runer-backend"], known) == "did you mean --moe-runner-backend?"
    assert option_hint(["--zzz"], ["--b", "--a"]) == "known: --a, --b"
    assert split_flags(None) is None
    assert split_flags(["moe-runner-backend,--attention-backend", " ,", "--attention-backend"]) \
        == ["--moe-runner-backend", "--attention-backend"]


@pytest.mark.parametrize(("word", "near"), [
    ("expalin", "explain"), ("chek", "check"), ("matrx", "matrix"), ("arch", "archs"),
    ("basline", "baseline"),
])
def test_a_misspelt_subcommand(word: str, near: str, capsys: pytest.CaptureFixture[str],
                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([word, "x"]) == 2
    expected = (f"guardscan: error: unknown command {word!r}: did you mean {near}? (a target "
                "is a checkout, a wheel or a spec such as sglang==0.5.9)\n")
    assert capsys.readouterr() == ("", expected)


def test_a_path_close_to_a_subcommand_is_a_target(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "chek").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["chek", "--no-kernels", "--arch", "sm90", "-q"]) == 2
    assert "unknown command" not in capsys.readouterr().err


def test_option_comma_list_and_did_you_mean(capsys: pytest.CaptureFixture[str],
                                            tmp_cache: Path) -> None:
    argv = [str(GATE), "--no-kernels", "--arch", "sm90", "-q", "--format", "json"]
    assert main([*argv, "--option", "moe-runner-backend,--attention-backend"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert sorted({b["option"] for b in data["backends"]}) == [
        "--attention-backend", "--moe-runner-backend"]
    assert main([*argv, "--option", "--moe-runer-backend"]) == 2
    assert capsys.readouterr().err == (
        "guardscan: error: --moe-runer-backend is not a backend option of sglang None; did you "
        "mean --moe-runner-backend?\n")
