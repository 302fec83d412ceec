"""No architecture, no answer: an empty, blank or missing arch fails closed in
``preflight``, ``scan``, ``check`` and the main scan (exit 2, one line), never a
"safe to try on " with nothing judged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import guardscan
from guardscan.arch import ArchError, NoArchError, parse_arch_list
from guardscan.results import ExitCode

FIXTURE = str(Path(__file__).resolve().parent.parent / "fixtures" / "preflight_launch")
BLANKS = ["", " ", ",", " , ", []]


@pytest.mark.parametrize("arch", [*BLANKS, None])
def test_preflight_refuses_no_arch(arch: object) -> None:
    with pytest.raises(NoArchError, match="no architecture given"):
        guardscan.preflight(["--moe-runner-backend", "flashinfer_trtllm"], arch=arch,  # type: ignore[arg-type]
                            target=FIXTURE)


@pytest.mark.parametrize("archs", ["", [], [""], None])
def test_scan_refuses_no_arch(archs: object) -> None:
    from guardscan.driver import scan

    with pytest.raises(NoArchError):
        scan(FIXTURE, archs=archs)


def test_no_arch_is_an_arch_error() -> None:
    """Callers that catch ``ArchError`` catch this one too."""
    assert issubclass(NoArchError, ArchError)
    with pytest.raises(NoArchError):
        parse_arch_list([" , "])
    assert parse_arch_list(None)  # no --arch at all: the standard set, as documented


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "guardscan", *args], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize("arch", ["", " ", ","])
def test_check_refuses_blank_arch(arch: str) -> None:
    done = _cli("check", "--arch", arch, FIXTURE, "--", "python", "-m",
                "sglang.launch_server", "--moe-runner-backend", "flashinfer_trtllm")
    assert done.returncode == ExitCode.USAGE, done
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "no architecture given" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["--arch", ""], ["explain", "triton", "--arch", ""]])
def test_scan_and_explain_refuse_blank_arch(command: list[str]) -> None:
    done = _cli(*command, FIXTURE)
    assert done.returncode == ExitCode.USAGE, done
    assert done.stdout == ""
    assert done.stderr.strip().endswith("'auto' for the local GPU"), done.stderr
    assert done.stderr.count("\n") == 1
