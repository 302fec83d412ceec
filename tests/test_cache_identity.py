"""Speed changes no verdict. On both real SGLang releases:

- the verdict JSON is byte-identical with the caches warm (per-file facts, the
  whole result) and off (``--no-cache``), and judged on one process or split
  over two (``verdict.split``);
- without the text pre-filter (every file parsed and read as a candidate: the
  slow way the pre-filter exists to avoid) every verdict is the same, with
  the same conditions and the same evidence, line for line (the guard
  interpreter's memos keep the definition lines they went through, so the
  order in which guards are first read changes nothing). Only the
  diagnostics differ: the full scan reports more unresolved guards, since it
  reads guards the pre-filtered scan never needs, and every diagnostic of the
  pre-filtered scan is among them. On 0.5.23 this one is behind the
  ``exhaustive`` marker (it reads every file as a candidate).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import realtrees

from guardscan.driver import ScanOptions, analyse
from guardscan.results import ScanResult


def _scan(tree: Any, **options: Any) -> ScanResult:
    return analyse(ScanOptions(target=str(tree.root / tree.package), kernels=False,
                               offline=True, **options)).result


def _json(result: ScanResult) -> str:
    return json.dumps(result.to_json(), indent=2, sort_keys=True)


def _decisions(result: ScanResult) -> dict[tuple[str, str, str], object]:
    """Each cell's verdict, conditions, deciding fact and non-definition evidence."""
    return {(v.option, v.choice, v.arch): (
        v.verdict, v.conditions, v.platform,
        (v.evidence[-1].path, v.evidence[-1].line, v.evidence[-1].role) if v.evidence else None,
        [(e.path, e.line, e.role) for e in v.evidence if e.role != "guard"])
        for v in result.backends}


@pytest.mark.parametrize("fixture", ["sglang_059", "sglang_0523"])
def test_same_verdicts_with_and_without_cache(
        fixture: str, tmp_path: Path, request: pytest.FixtureRequest,
        judged_here: list[str]) -> None:
    tree = request.getfixturevalue(fixture)
    shared = realtrees.shared_cache_dir()
    # no cache at all (--no-cache): every file parsed and analysed in this run,
    # judged in one process (the scans below may judge on two: ``verdict.split``)
    reference = _scan(tree, cache_dir=tmp_path / "unused", use_cache=False, split=False)
    assert not (tmp_path / "unused").exists()
    text = _json(reference)
    assert '"verdict": "blocked"' in text  # a scan that found something
    # with the cache: facts from it (the result stored), then the whole result
    assert _json(_scan(tree, cache_dir=shared)) == text
    assert _json(_scan(tree, cache_dir=shared)) == text
    # every stage again from the cached facts, judged in forked processes
    judged_here.clear()
    assert _json(_scan(tree, cache_dir=shared, full=True, split=True)) == text
    assert judged_here == []  # the children judged every option


#: without the pre-filter, 0.5.23's scan reads every file as a candidate (about
#: a minute on two cores): run with --exhaustive
@pytest.mark.parametrize("fixture", [
    "sglang_059", pytest.param("sglang_0523", marks=pytest.mark.exhaustive)])
def test_same_verdicts_without_the_prefilter(fixture: str,
                                             request: pytest.FixtureRequest) -> None:
    tree = request.getfixturevalue(fixture)
    shared = realtrees.shared_cache_dir()
    # the reference: the stored result, which the test above holds equal to
    # a scan with no cache at all
    reference = _scan(tree, cache_dir=shared)
    # no text pre-filter: every file is a candidate (facts from the shared cache)
    full = _scan(tree, cache_dir=shared, full=True, prefilter=False)
    assert _decisions(full) == _decisions(reference)
    assert [b.to_json() for b in full.backends] == [b.to_json() for b in reference.backends]
    assert full.notes == reference.notes
    assert set(reference.diagnostics) <= set(full.diagnostics)
