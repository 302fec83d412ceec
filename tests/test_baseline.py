"""commands.baseline: ``guardscan baseline`` on a copy of a fixture tree writes a
byte-stable lock; ``--check`` is quiet on no change and on code moving, fails with
path:line on a gate that blocks a choice, passes again once re-recorded; the
kernel library it pairs, and usage errors. Never reads the user's cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixturetree import FIXTURES, fixture, line_of

import guardscan.acquire.pairing
from guardscan.acquire import acquire
from guardscan.cli import main
from guardscan.results import ExitCode

RUNNER = "sglang/srt/layers/moe/runner.py"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo(tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of roles_gate (x passes its gate on sm100 only) as the working directory."""
    root = tmp_path / "repo"
    shutil.copytree(fixture("roles_gate"), root)
    monkeypatch.chdir(root)
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["baseline", *argv, "-q"])
    out, err = capsys.readouterr()
    return int(code), out, err


def flat(text: str) -> str:
    """The text with its line wrapping undone."""
    return " ".join(text.split())


def record(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """A baseline of --moe-runner-backend on sm100 and sm120, SGLang-only unless
    ``extra`` names a --flashinfer."""
    kernels = () if "--flashinfer" in extra else ("--no-kernels",)
    code, out, err = run(capsys, "--arch", "sm100,sm120", "--option", "--moe-runner-backend",
                         *kernels, *extra)
    assert (code, err) == (0, ""), (out, err)
    return out


def test_record_then_check_quiet(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = record(capsys)
    assert flat(out).startswith("guardscan: wrote .guardscan.json: sglang at sglang kernels: "
                                "none, SGLang-only verdicts (--no-kernels)")
    data = json.loads((repo / ".guardscan.json").read_text())
    assert data["settings"] == {"archs": ["sm100", "sm120"], "flashinfer": None,
                                "kernels": False, "options": ["--moe-runner-backend"],
                                "quantization": None, "target": {"kind": "path", "value": "."}}
    x = data["verdicts"]["--moe-runner-backend"]["x"]
    assert (x["sm100"]["verdict"], x["sm120"]["verdict"]) == ("supported", "blocked")
    assert x["sm120"]["deciding"]["path"] == RUNNER
    assert run(capsys, "--check") == (0, "", "")


def test_byte_identical_across_runs_and_hash_seeds(repo: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """In process, then twice more in fresh processes with other hash seeds and no cache."""
    record(capsys)
    first = (repo / ".guardscan.json").read_bytes()
    assert "unchanged .guardscan.json" in record(capsys)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for seed in ("0", "4242"):
        (repo / ".guardscan.json").unlink()
        subprocess.run([sys.executable, "-m", "guardscan", "baseline", "--arch", "sm100,sm120",
                        "--option", "--moe-runner-backend", "--no-kernels", "--no-cache",
                        "-q"], cwd=repo, env={**env, "PYTHONHASHSEED": seed}, check=True,
                       capture_output=True, timeout=120)
        assert (repo / ".guardscan.json").read_bytes() == first, seed


def test_a_gate_that_blocks_fails_with_its_line(repo: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    record(capsys)
    runner = repo / RUNNER
    # code moving (a comment above the gate) changes nothing
    runner.write_text("# moved\n" + runner.read_text())
    assert run(capsys, "--check") == (0, "", "")
    # x now passes its gate on sm120 only: worse on sm100, better on sm120
    runner.write_text(runner.read_text().replace("is_sm100_supported", "is_sm120_supported"))
    code, out, err = run(capsys, "--check")
    line = line_of(repo / RUNNER, "raise ValueError(")
    assert (code, err) == (ExitCode.FOUND, "")
    lines = out.splitlines()
    assert lines[0] == (f"{RUNNER}:{line}: --moe-runner-backend x on sm100: supported -> "
                        "blocked (raise ValueError(\"moe runner backend x needs an SM100 GPU "
                        "and CUDA 12.8\"))")
    assert "note: 1 verdict(s) better than the baseline: --moe-runner-backend x on sm120" \
        in lines
    assert lines[-1].startswith("to accept: run `guardscan baseline`")
    # -v: the change that fails nothing gets its own line, with where it is decided
    code, out, _ = run(capsys, "--check", "-v")
    assert code == ExitCode.FOUND
    assert any(text.endswith("--moe-runner-backend x on sm120: blocked -> supported (better "
                             "than the baseline)") for text in out.splitlines()), out
    # accepting: re-record with the lock's own settings, then the check passes
    code, out, _ = run(capsys)
    assert code == 0 and out.startswith("guardscan: wrote .guardscan.json")
    assert run(capsys, "--check") == (0, "", "")


def test_new_unresolved_guard_fails(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(capsys)
    runner = repo / RUNNER
    runner.write_text(runner.read_text().replace(
        "def create_moe_runner(server_args):\n",
        "def create_moe_runner(server_args):\n"
        "    device_capability = server_args.device_capability\n"
        "    if device_capability < 80:\n"
        "        raise ValueError('too old')\n"))
    code, out, _ = run(capsys, "--check")
    line = line_of(repo / RUNNER, "if device_capability < 80:")
    assert code == ExitCode.FOUND
    assert out.splitlines()[0].startswith(
        f"{RUNNER}:{line}: new arch guard guardscan cannot resolve: `device_capability < 80`")


def test_missing_lock_and_check_with_settings_are_usage_errors(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--check")
    assert (code, out) == (ExitCode.USAGE, "")
    assert err.startswith("guardscan: error: no lock file .guardscan.json: run "
                          "`guardscan baseline --arch ARCH [TARGET]` first")
    record(capsys)
    code, _, err = run(capsys, "--check", "--arch", "sm90")
    assert code == ExitCode.USAGE and "--check takes its settings from .guardscan.json" in err
    (repo / ".guardscan.json").write_text("<<<<<<< HEAD\n")
    code, _, err = run(capsys, "--check")
    assert code == ExitCode.USAGE and "is not JSON" in err and err.count("\n") == 1


def test_lock_elsewhere_records_paths_relative_to_it(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--file in another directory: the target is recorded relative to the lock file,
    so the check finds the tree from any working directory."""
    lock = tmp_path / "locks" / "sg.json"
    lock.parent.mkdir()
    record(capsys, "--file", str(lock), str(repo))
    data = json.loads(lock.read_text())
    assert data["settings"]["target"] == {"kind": "path", "value": "../repo"}
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--check", "--file", str(lock)) == (0, "", "")


def test_flashinfer_explicit_and_installed(repo: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree without a FlashInfer pin pairs with --flashinfer, else the installed one
    (recorded by version so the check pairs the same), else none; each says which."""
    kernels = tmp_path / "kernels"
    shutil.copytree(FIXTURES / "kernels_decorator", kernels)
    lib = kernels / "flashinfer"
    (lib / "version.py").write_text('__version__ = "0.6.3"\n')
    out = record(capsys, "--flashinfer", str(lib))
    assert "kernels: flashinfer 0.6.3, given by --flashinfer" in flat(out)
    data = json.loads((repo / ".guardscan.json").read_text())
    assert data["settings"]["flashinfer"] == {"kind": "path", "value": "../kernels/flashinfer"}
    assert data["kernels"] == {"package": "flashinfer", "paired": "--flashinfer",
                               "version": "0.6.3"}
    assert run(capsys, "--check") == (0, "", "")

    (repo / ".guardscan.json").unlink()
    monkeypatch.setattr(guardscan.acquire.pairing, "acquire_installed",
                        lambda package: acquire(str(lib), package))
    code, out, _ = run(capsys, "--arch", "sm100,sm120", "--option", "--moe-runner-backend")
    assert code == 0
    assert ("kernels: flashinfer 0.6.3, the installed flashinfer (the tree pins none), "
            "recorded by version") in flat(out)
    data = json.loads((repo / ".guardscan.json").read_text())
    assert data["settings"]["flashinfer"] == {"kind": "spec",
                                              "value": "flashinfer-python==0.6.3"}

    def none_installed(package: str) -> None:
        raise guardscan.acquire.AcquireError(f"no installed {package}")

    (repo / ".guardscan.json").unlink()
    monkeypatch.setattr(guardscan.acquire.pairing, "acquire_installed", none_installed)
    code, out, _ = run(capsys, "--arch", "sm100,sm120", "--option", "--moe-runner-backend")
    assert code == 0
    assert ("kernels: no FlashInfer paired (sglang (unknown version) declares no "
            "flashinfer-python requirement and no installed flashinfer was found): "
            "SGLang-only verdicts") in flat(out)
    assert json.loads((repo / ".guardscan.json").read_text())["settings"]["kernels"] is False


def test_hook_manifest() -> None:
    """What pre-commit reads: the whole tree, one run at a time, skipped when no
    Python, pyproject.toml or lock file is staged."""
    import re

    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    fields = dict(re.findall(r"^\s*-?\s*(\w+): (.+)$", text, re.MULTILINE))
    assert fields["id"] == "guardscan"
    assert fields["entry"] == "guardscan baseline --check"
    assert (fields["language"], fields["pass_filenames"], fields["require_serial"]) == \
        ("python", "false", "true")
    files = re.compile(fields["files"].strip("'"))
    for staged, runs in [("python/sglang/srt/server_args.py", True), (".guardscan.json", True),
                         ("python/pyproject.toml", True), ("README.md", False),
                         ("docs/x.pyc", False)]:
        assert bool(files.search(staged)) is runs, staged
