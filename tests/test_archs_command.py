"""``guardscan archs``: the list, as text and JSON, and what spellings mean."""

from __future__ import annotations

import json

import pytest

from guardscan.arch import known_archs, older_archs
from guardscan.cli import main


def test_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["archs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["arch", "cap", "family", "std", "CUDA", "GPU", "names",
                                "(aliases)"]
    assert lines[6].split()[:6] == ["sm90", "9.0", "Hopper", "yes", "11.8", "H100,"]
    assert all(len(line) <= 100 for line in lines)
    listed = [line.split()[0] for line in lines[1:] if line[:2] == "sm"]
    assert listed == [info.arch.name for info in known_archs()]


def test_listing_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["archs", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in data["architectures"]] == [i.arch.name for i in known_archs()]
    assert data["architectures"][-1] == {
        "name": "sm121", "capability": "12.1", "family": "Blackwell (GB10)", "standard": True,
        "min_cuda": "12.9", "gpus": ["GB10"], "aliases": ["DGX Spark"]}
    assert [o["name"] for o in data["older"]] == [o.name for o in older_archs()] == [
        "sm60", "sm61", "sm70", "sm75"]


def test_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["archs", "NVIDIA GeForce RTX 5090", "sm_90a", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"spelling": "NVIDIA GeForce RTX 5090", "arch": "sm120", "family": "Blackwell (RTX)"},
        {"spelling": "sm_90a", "arch": "sm90", "family": "Hopper"}]
    assert main(["archs", "sm12"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(
        "guardscan: error: not a known architecture 'sm12': did you mean sm120 or sm121?")
