"""Golden snapshots: the reports as users see them, kept in tests/golden/ and
reviewed like code, so that no change to what guardscan says goes unnoticed.

- every fixture tree (fixtures/guards_*, options_*, roles_*, ...), every
  option, every standard arch, SGLang only, as two small text files: the text
  report (``NAME.txt``) and its verdicts with their evidence chains, one line
  per link, path, line and role, no prose (``NAME.chains.txt``: it changes
  when a verdict or a chain does, not when a note is reworded);
- the JSON contract, once: one small fixture scanned with its kernel library
  (``contract.json``: the shape outside tools read, every field it carries);
- one real release, sglang 0.5.9 with the FlashInfer it pins (0.6.3): the
  text, JSON, SARIF and Markdown reports for three options on sm90, sm100 and
  sm120, the full text table (``--verbose``) of the same, and the default text
  report of every option on sm120 (``guardscan sglang==0.5.9 --arch sm120``, with
  the bundled field reports beside the verdicts, as the command line shows it).

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
import tempfile
from pathlib import Path

import pytest
import realtrees
from fixturetree import FIXTURES, run_scan

from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.field import attach_reports, bundled_reports
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


#: one arch's answer: verdict, platform, conditions, and the chain as
#: (role, path:line, source line)
Answer = tuple[str, "str | None", tuple[str, ...], tuple[tuple[str, str, str], ...]]


def chains(result: ScanResult) -> str:
    """Each choice's verdict per arch and the evidence chain that led to it, as
    ``role path:line  source line``; archs with the same answer share a block."""
    grouped: dict[tuple[str, str], dict[Answer, list[str]]] = {}
    for b in result.backends:
        chain = tuple((e.role, f"{e.path}:{e.line}", e.text) for e in b.evidence)
        answer: Answer = (b.verdict.value, b.platform, b.conditions, chain)
        grouped.setdefault((b.option, b.choice), {}).setdefault(answer, []).append(b.arch)
    lines: list[str] = []
    option = None
    for (flag, choice), answers in grouped.items():
        if flag != option:
            lines += ["", flag] if lines else [flag]
            option = flag
        lines.append(f"  {choice}")
        for (verdict, platform, conditions, chain), archs in answers.items():
            only = f" ({platform} only)" if platform else ""
            lines.append(f"    {' '.join(archs)}: {verdict}{only}")
            lines += [f"      condition {condition}" for condition in conditions]
            for role, where, text in chain:
                text = text if len(text) <= 60 else text[:57] + "..."
                lines.append(f"      {role:<8} {where}  {text}".rstrip())
    if result.diagnostics:
        lines += ["", "diagnostics"]
        lines += [f"  {d.code} {d.path}:{d.line}" for d in sorted(result.diagnostics)]
    return "\n".join(lines) + "\n"


def test_every_sglang_fixture_tree_has_snapshots() -> None:
    assert SGLANG_TREES, "no fixture trees found"
    if not UPDATE:
        wanted = {f"{n}{s}" for n in SGLANG_TREES for s in (".txt", ".chains.txt")}
        there = {p.name for p in (GOLDEN / "fixtures").iterdir()}
        assert not wanted - there, sorted(wanted - there)
        # a fixture gone, or a per-fixture JSON twin back: the snapshots are these two
        assert not there - wanted, sorted(there - wanted)


@pytest.mark.parametrize("name", SGLANG_TREES)
def test_fixture_reports(name: str) -> None:
    result = run_scan(FIXTURES / name)
    check_golden(GOLDEN / "fixtures" / f"{name}.txt", rendered(result, "text"))
    check_golden(GOLDEN / "fixtures" / f"{name}.chains.txt", chains(result))


#: small, with its own kernel library: supported, unsupported and unknown
#: verdicts, a kernel entry and a diagnostic (``platform`` and ``notes`` show in
#: the real release's report.json; each fixture's conditions in its chains)
CONTRACT_FIXTURE = "gate_hook"


def test_json_contract() -> None:
    tree = FIXTURES / CONTRACT_FIXTURE
    with tempfile.TemporaryDirectory(prefix="guardscan-test-cache-") as cache:
        result = analyse(ScanOptions(
            target=str(tree), flashinfer=str(tree), options=["--moe-runner-backend"],
            archs=parse_arch_list(["sm100,sm120"]), use_cache=False, offline=True,
            cache_dir=Path(cache))).result
    check_golden(GOLDEN / "contract.json", rendered(result, "json"))


@pytest.fixture(scope="module")
def real_pair(sglang_059: object, flashinfer_063: object) -> ScanResult:
    with realtrees.one_at_a_time("golden", REAL_OPTIONS, REAL_ARCHS):
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
    with realtrees.one_at_a_time("golden", "sm120"):
        return analyse(ScanOptions(
            target="sglang==0.5.9", flashinfer="flashinfer-python==0.6.3",
            archs=parse_arch_list(["sm120"]), cache_dir=realtrees.shared_cache_dir())).result


@pytest.mark.real
def test_real_release_default_report_on_sm120(real_sm120: ScanResult) -> None:
    """What an RTX PRO 6000 user sees first: the MoE runner and fp4 GEMM answers
    (what to try, what to avoid and where) within the first 25 lines, with the field
    reports guardscan ships beside them, as the command line shows them."""
    text = rendered(attach_reports(real_sm120, bundled_reports()), "text")
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
            # choices decided by the same fact share a line: ``avoid  a, b (unsupported): ...``
            assert any(line.startswith("  avoid  ") and choice in [
                name.rstrip("*") for name in line[len("  avoid  "):].split(" (", 1)[0].split(", ")]
                for line in block), (option, choice)
    assert all(len(line) <= 100 for line in text.splitlines())
