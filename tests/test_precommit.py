"""The pre-commit hook for real: a git repository holding the sglang 0.5.9 release's tree
(as upstream lays it out, python/sglang), a `.pre-commit-config.yaml` naming this
guardscan checkout at its HEAD commit, `pre-commit install`, then real `git commit`s.

pre-commit clones guardscan at that commit and installs it into its own virtualenv
(PRE_COMMIT_HOME under the shared test cache, so the environment is built once per
commit of guardscan), so what runs is the committed code: uncommitted changes in
this checkout are not under test (in CI the checkout is a clean clone). The scan is
kept cheap: one arch, one option, SGLang-only, its facts from the shared test cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import realtrees

from guardscan.acquire import SourceTree

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = "python/sglang/srt/layers/attention/attention_registry.py"
#: the test extra installs it beside this Python: a venv's bin/ (the README's
#: test command, .ci/run) is not on PATH unless the venv is activated
PRE_COMMIT = (shutil.which("pre-commit", path=str(Path(sys.executable).parent))
              or shutil.which("pre-commit"))
GIT = shutil.which("git")

pytestmark = [
    pytest.mark.skipif(PRE_COMMIT is None, reason="the pre-commit tool is not installed "
                       "(it is in the test extras: pip install '.[test]')"),
    pytest.mark.skipif(GIT is None, reason="git is not installed"),
]


def _git(repo: Path, *argv: str, env: dict[str, str], check: bool = True
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *argv], cwd=repo, env=env, capture_output=True, text=True,
                          check=check, timeout=600)


def _head(repo: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture
def fork(tmp_path: Path, sglang_059: SourceTree) -> tuple[Path, dict[str, str]]:
    """The repository, its baseline recorded and committed, the hook installed."""
    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout: pre-commit needs a commit to install")
    shared = realtrees.shared_cache_dir()
    env = {**os.environ,
           "GUARDSCAN_CACHE_DIR": str(shared),
           "PRE_COMMIT_HOME": str(shared / "pre-commit"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)  # the hook's guardscan is pre-commit's install, nothing else
    repo = tmp_path / "sglang-fork"
    shutil.copytree(sglang_059.root / sglang_059.package, repo / "python" / "sglang")
    (repo / "README.md").write_text("a fork\n")
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {ROOT}\n"
        f"    rev: {_head(ROOT)}\n"
        "    hooks:\n"
        "      - id: guardscan\n")
    # the baseline, recorded by the code under test (the same as the hook's at HEAD)
    record = subprocess.run(
        [sys.executable, "-m", "guardscan", "baseline", "--arch", "sm120",
         "--option", "--attention-backend", "--no-kernels", "-q"],
        cwd=repo, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=600, check=False)
    assert record.returncode == 0, record.stderr
    assert (repo / ".guardscan.json").is_file()
    _git(repo, "init", "-q", "-b", "main", env=env)
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-q", "-m", "sglang 0.5.9 and its guardscan baseline", env=env)
    install = subprocess.run([PRE_COMMIT or "pre-commit", "install"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=600, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    return repo, env


def test_hook_passes_unrelated_commits_and_fails_a_new_gate(
        fork: tuple[Path, dict[str, str]]) -> None:
    repo, env = fork
    registry = repo / REGISTRY

    # 1. an unrelated edit to Python: the hook runs, nothing got worse
    registry.write_text(registry.read_text() + "\n# a fork's note\n")
    _git(repo, "add", "-A", env=env)
    first = _git(repo, "commit", "-m", "a comment", env=env, check=False)
    out = first.stdout + first.stderr
    assert first.returncode == 0, out
    assert "guardscan" in out and "Passed" in out, out

    # 2. no file the hook looks at: skipped
    (repo / "README.md").write_text("a fork of sglang\n")
    _git(repo, "add", "-A", env=env)
    second = _git(repo, "commit", "-m", "readme", env=env, check=False)
    assert second.returncode == 0 and "Skipped" in second.stdout + second.stderr

    # 3. a gate that rejects --attention-backend flashinfer on sm120 (supported there)
    text = registry.read_text()
    head = "def create_flashinfer_backend(runner):\n    import torch\n"
    assert head in text
    registry.write_text(text.replace(head, head + (
        '\n    assert torch.cuda.get_device_capability()[0] != 12, "not on SM120"\n')))
    line = next(n for n, t in enumerate(registry.read_text().splitlines(), 1)
                if '"not on SM120"' in t)
    before = _head(repo)
    _git(repo, "add", "-A", env=env)
    third = _git(repo, "commit", "-m", "gate flashinfer away from sm120", env=env,
                 check=False)
    out = third.stdout + third.stderr
    assert third.returncode != 0, out
    assert "Failed" in out, out
    assert (f"{REGISTRY}:{line}: --attention-backend flashinfer on sm120: supported -> "
            'blocked (assert torch.cuda.get_device_capability()[0] != 12, "not on SM120")'
            ) in out, out
    assert "to accept: run `guardscan baseline`" in out, out
    assert _head(repo) == before  # the commit did not happen
