"""SARIF from a checkout: every URI relative to the repository root
(``SRCROOT``), so that code scanning finds the file in a fork laid out as
``python/sglang``; a tree from a wheel keeps ``PKGROOT``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture

from guardscan.cli import main


def artifacts(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node["artifactLocation"]] if "artifactLocation" in node else []
        return found + [a for value in node.values() for a in artifacts(value)]
    if isinstance(node, list):
        return [a for value in node for a in artifacts(value)]
    return []


def sarif(capsys: pytest.CaptureFixture[str], target: Path) -> dict[str, Any]:
    assert main([str(target), "--no-kernels", "--arch", "sm120", "-q", "--no-cache",
                 "--format", "sarif"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize("given", ["root", "package"])
def test_a_fork_laid_out_as_python_sglang(given: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(fixture("roles_gate") / "sglang", fork / "python" / "sglang")
    (fork / ".git").mkdir()
    data = sarif(capsys, fork if given == "root" else fork / "python" / "sglang")
    run = data["runs"][0]
    assert list(run["originalUriBaseIds"]) == ["SRCROOT"]
    assert run["originalUriBaseIds"]["SRCROOT"]["description"]["text"] == (
        "root of the repository holding the scanned sglang (fork)")
    found = artifacts(run)
    assert found and {a["uriBaseId"] for a in found} == {"SRCROOT"}
    assert {a["uri"] for a in found} == {
        "python/sglang/srt/layers/moe/runner.py", "python/sglang/srt/server_args.py",
        "python/sglang/srt/utils/common.py"}
    assert all((fork / a["uri"]).is_file() for a in found)


def test_a_tree_outside_a_checkout_keeps_pkgroot(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(fixture("roles_gate") / "sglang", tree / "sglang")
    (tree / "sglang-0.1.0.dist-info").mkdir()  # as a wheel unpacks, even inside a checkout
    (tmp_path / ".git").mkdir()
    run = sarif(capsys, tree)["runs"][0]
    assert list(run["originalUriBaseIds"]) == ["PKGROOT"]
    found = artifacts(run)
    assert found and all(a["uri"].startswith("sglang/") and a["uriBaseId"] == "PKGROOT"
                         for a in found)
