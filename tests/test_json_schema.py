"""``guardscan/data/scan.schema.json``, the JSON contract as a JSON Schema, checked
against real output: fixture trees (with and without a kernel library, under a
quantization, with diagnostics and notes) and sglang 0.5.9 with FlashInfer
0.6.3; strictly, so a key the code writes and the schema lacks fails here."""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture
from schemacheck import errors

from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.report import render
from guardscan.results import ScanResult


def schema() -> dict[str, Any]:
    text = resources.files("guardscan").joinpath("data/scan.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def run_scan(path: Path, archs: list[str], *, cache: Path, **options: Any) -> ScanResult:
    options.setdefault("kernels", False)
    return analyse(ScanOptions(target=str(path), archs=parse_arch_list(archs), use_cache=False,
                               offline=True, cache_dir=cache, **options)).result


def as_json(result: ScanResult) -> dict[str, Any]:
    stream = io.StringIO()
    render(result, stream, "json")
    loaded: dict[str, Any] = json.loads(stream.getvalue())
    return loaded


def test_the_schema_is_the_contracts_version() -> None:
    from guardscan.results import JSON_SCHEMA

    assert schema()["properties"]["schema"] == {
        "const": JSON_SCHEMA, "description": "the version of this contract"}


@pytest.mark.parametrize(("name", "kwargs"), [
    ("gate_server_args", {"flashinfer": str(fixture("gate_server_args") / "flashinfer")}),
    ("roles_gate", {}),
    ("quant_method_paths", {"quantization": "nvfp4"}),
    ("guards_unresolved", {}),
    ("options_odd", {}),
])
def test_fixture_output_matches_the_schema(name: str, kwargs: dict[str, Any],
                                           tmp_path: Path) -> None:
    if "flashinfer" in kwargs:
        kwargs["kernels"] = True
    data = as_json(run_scan(fixture(name), ["sm90", "sm120"], cache=tmp_path, **kwargs))
    assert data["backends"], name
    assert errors(data, schema(), strict=True) == []


def test_real_release_output_matches_the_schema(pair_059_063: Any) -> None:
    data = as_json(pair_059_063.result)
    assert len(data["backends"]) > 100
    assert {e["status"] for b in data["backends"] for e in b["evidence"]} == {
        "decides", "caveat", "context"}
    assert errors(data, schema(), strict=True) == []


def test_the_checker_catches_breaks(tmp_path: Path) -> None:
    data = as_json(run_scan(fixture("roles_gate"), ["sm90"], cache=tmp_path))
    broken = json.loads(json.dumps(data))
    broken["backends"][0]["verdict"] = "fine"
    del broken["backends"][1]["evidence"]
    broken["archs"] = ["hopper"]
    broken["backends"][2]["new_key"] = 1
    assert errors(broken, schema()) == [
        "$.archs[0]: 'hopper' does not match ^sm[0-9]+$",
        ("$.backends[0].verdict: 'fine' is not one of "
         "['blocked', 'unsupported', 'supported', 'unknown']"),
        "$.backends[1]: missing 'evidence'",
    ]
    assert errors(broken, schema(), strict=True)[-1] == (
        "$.backends[2]: key 'new_key' is not in the schema")
