"""Golden snapshots: the reports as users see them, kept in tests/golden/ and
reviewed like code, so that no change to what guardscan says goes unnoticed.

- every fixture tree (fixtures/guards_*, options_*, roles_*): the text and JSON
  reports, every option, every standard arch, SGLang only;
- one real release, sglang 0.5.9 with the FlashInfer it pins (0.6.3): the
  text, JSON, SARIF and Markdown reports for three options on sm90, sm100 and
  sm120, the full text table (``--verbose``) of the same, and the default text
  report of every option on sm120 (``guardscan sglang==0.5.9 --arch sm120``).

Absolute paths (the cache, the checkout) are replaced by ``<TREE>`` and
``<KERNELS>``. After a deliberate change, rewrite the snapshots and review the
diff before committing it:

    GUARDSCAN_UPDATE_GOLDEN=1 python3 -m pytest tests/test_golden.py
    git diff tests/golden/
"""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path

import pytest
import realtrees
from fixturetree import FIXTURES, run_scan

from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.report import render
from guardscan.results import ScanResult

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("GUARDSCAN_UPDATE_GOLDEN") == "1"
SGLANG_TREES = sorted(p.name for p in FIXTURES.iterdir()
                      if (p / "sglang" / "__init__.py").is_file())
REAL_OPTIONS = ["--moe-runner-backend", "--fp4-gemm-backend", "--attention-backend"]
REAL_ARCHS = "sm90,sm100,sm120"
SUFFIX = {"text": "txt", "json": "json", "sarif": "sarif", "markdown": "md"}


def rendered(result: ScanResult, fmt: str, options: dict[str, object] | None = None) -> str:
    stream = io.StringIO()
    render(result, stream, fmt, options)
    text = stream.getvalue()
    roots = [(k.path.rsplit("/", 1)[0], "<KERNELS>") for k in result.kernels]
    roots.append((result.target.path.rsplit("/", 1)[0], "<TREE>"))
    for root, placeholder in sorted(roots, key=lambda r: -len(r[0])):
        text = text.replace(root, placeholder)
    return text


def check_golden(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), (
        f"no snapshot {path.relative_to(GOLDEN.parent)}: run "
        "GUARDSCAN_UPDATE_GOLDEN=1 python3 -m pytest tests/test_golden.py")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"{path.name} (snapshot)", tofile=f"{path.name} (now)", n=2))
        pytest.fail(f"{path.relative_to(GOLDEN.parent)} changed; if that is intended, "
                    f"update the snapshots (see this module's docstring):\n{diff[:6000]}")


def test_every_sglang_fixture_tree_has_snapshots() -> None:
    assert SGLANG_TREES, "no fixture trees found"
    if not UPDATE:
        missing = [n for n in SGLANG_TREES for s in ("txt", "json")
                   if not (GOLDEN / "fixtures" / f"{n}.{s}").is_file()]
        assert not missing, missing


@pytest.mark.parametrize("name", SGLANG_TREES)
def test_fixture_reports(name: str) -> None:
    result = run_scan(FIXTURES / name)
    for fmt in ("text", "json"):
        check_golden(GOLDEN / "fixtures" / f"{name}.{SUFFIX[fmt]}", rendered(result, fmt))


@pytest.fixture(scope="module")
def real_pair(sglang_059: object, flashinfer_063: object) -> ScanResult:
    return analyse(ScanOptions(
        target="sglang==0.5.9", flashinfer="flashinfer-python==0.6.3", options=REAL_OPTIONS,
        archs=parse_arch_list([REAL_ARCHS]), cache_dir=realtrees.shared_cache_dir())).result


@pytest.mark.real
@pytest.mark.parametrize("fmt", sorted(SUFFIX))
def test_real_release_reports(real_pair: ScanResult, fmt: str) -> None:
    check_golden(GOLDEN / "sglang-0.5.9" / f"report.{SUFFIX[fmt]}", rendered(real_pair, fmt))


@pytest.mark.real
def test_real_release_full_table(real_pair: ScanResult) -> None:
    check_golden(GOLDEN / "sglang-0.5.9" / "report.verbose.txt",
                 rendered(real_pair, "text", {"verbose": True}))


@pytest.fixture(scope="module")
def real_sm120(sglang_059: object, flashinfer_063: object) -> ScanResult:
    return analyse(ScanOptions(
        target="sglang==0.5.9", flashinfer="flashinfer-python==0.6.3",
        archs=parse_arch_list(["sm120"]), cache_dir=realtrees.shared_cache_dir())).result


@pytest.mark.real
def test_real_release_default_report_on_sm120(real_sm120: ScanResult) -> None:
    """What an RTX PRO 6000 user sees first: the MoE runner and fp4 GEMM answers
    (what to try, what to avoid and where) within the first 25 lines."""
    text = rendered(real_sm120, "text")
    check_golden(GOLDEN / "sglang-0.5.9" / "report.sm120.txt", text)
    first = text.splitlines()[:25]
    for option in ("--moe-runner-backend", "--fp4-gemm-backend"):
        start = next(i for i, line in enumerate(first) if line.startswith(option + " "))
        block = first[start + 1:]
        block = block[:next((i for i, line in enumerate(block) if not line.strip()),
                            len(block))]
        assert block and block[0].startswith("  try    "), (option, first)
        verdicts = {b.choice: b.verdict for b in real_sm120.backends if b.option == option}
        avoided = [c for c, v in verdicts.items() if not v.safe_to_try]
        for choice in avoided:
            assert any(line.startswith(f"  avoid  {choice}") for line in block), (option, choice)
    assert all(len(line) <= 100 for line in text.splitlines())
