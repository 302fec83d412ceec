"""Progress: shown on stderr only when stderr is a terminal and ``--quiet`` is
not given, rewritten in place on one line and cleared before anything else is
written; silent in pipes and files, so stderr carries nothing but errors."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixturetree import fixture

from guardscan.cli import main

GATE = fixture("roles_gate")
MAIN_DIR = Path(__file__).resolve().parent.parent
CLEAR = "\r\033[K"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_cache: Path) -> None:
    """An empty $GUARDSCAN_CACHE_DIR for every test (conftest.tmp_cache)."""


def run_on_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                    *argv: str) -> tuple[int, str, str]:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main([*argv, "--no-kernels", "--offline", "--no-cache"])
    monkeypatch.undo()
    return int(code), capsys.readouterr().out, terminal.getvalue()


def progress_messages(err: str) -> list[str]:
    return [part.removesuffix("\033[K") for part in err.split("\r") if part.startswith(
        "guardscan: ") and part.endswith("...\033[K")]


@pytest.mark.parametrize("command", [[str(GATE)], ["explain", "x", str(GATE)]],
                         ids=["scan", "explain"])
def test_progress_on_a_terminal(command: list[str], monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_on_terminal(monkeypatch, capsys, *command)
    assert code == 0
    messages = progress_messages(err)
    assert len(messages) >= 3, repr(err)
    assert any("acquiring" in m for m in messages) and any("judging" in m for m in messages)
    # One line rewritten in place, then cleared: no newline, nothing left over.
    assert "\n" not in err
    assert err.endswith(CLEAR)
    # The report is the same as without progress.
    quiet_code, quiet_out, quiet_err = run_on_terminal(monkeypatch, capsys, *command, "--quiet")
    assert (quiet_code, quiet_out, quiet_err) == (code, out, "")


def test_quiet_on_a_terminal(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("-q", "--quiet"):
        code, out, err = run_on_terminal(monkeypatch, capsys, str(GATE), flag)
        assert code == 0 and out and err == ""


def test_progress_is_cleared_before_an_error(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    """An error line starts at the left margin, not after a progress message."""
    for argv in ([str(tmp_path / "no-such-dir")], [str(GATE), "--option", "--no-such-backend"],
                 ["explain", "x", str(tmp_path)]):
        code, out, err = run_on_terminal(monkeypatch, capsys, *argv)
        assert code == 2 and out == ""
        assert progress_messages(err), repr(err)
        visible = err.rsplit(CLEAR, 1)[-1]
        assert visible.startswith("guardscan: error: ") and visible.count("\n") == 1, repr(err)
        assert "Traceback" not in err


def test_report_file_holds_no_progress(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    code, out, err = run_on_terminal(monkeypatch, capsys, str(GATE), "-o", str(report))
    assert code == 0 and out == "" and progress_messages(err)
    text = report.read_text(encoding="utf-8")
    assert "\r" not in text and "\033" not in text and "acquiring" not in text


class NoIsatty:
    """A stand-in stream some IDEs and test runners install: no isatty()."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass


class ClosedTerminal(FakeTerminal):
    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")


@pytest.mark.parametrize("stream", [NoIsatty, ClosedTerminal, lambda: None],
                         ids=["no-isatty", "closed-terminal", "none"])
def test_odd_stderr_never_fails_the_scan(stream: object, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stderr", stream())  # type: ignore[operator]
    code = main([str(GATE), "--no-kernels", "--offline", "--no-cache"])
    monkeypatch.undo()
    assert code == 0, capsys.readouterr()
    assert "--moe-runner-backend" in capsys.readouterr().out


def test_silent_in_a_pipe(tmp_path: Path) -> None:
    """A real pipe (a fresh process): success leaves stderr empty, with or
    without --quiet, for every command."""
    env = {**os.environ, "GUARDSCAN_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(MAIN_DIR),
                                                       os.environ.get("PYTHONPATH")]))}
    commands = [[str(GATE)], [str(GATE), "--format", "json"], ["explain", "x", str(GATE)],
                [str(GATE), "--quiet"]]
    jobs = [(argv, subprocess.Popen([sys.executable, "-m", "guardscan", *argv, "--no-kernels"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            for argv in commands]
    for argv, job in jobs:
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0, (argv, err)
        assert err == b"", (argv, err)
        assert out and b"\r" not in out and b"\033" not in out


def test_errors_in_a_pipe_are_one_plain_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "guardscan", str(tmp_path / "missing"), "--no-kernels"],
        capture_output=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(MAIN_DIR),
             "GUARDSCAN_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert result.stderr.startswith(b"guardscan: error: ") and result.stderr.count(b"\n") == 1
    assert b"\r" not in result.stderr and b"\033" not in result.stderr
