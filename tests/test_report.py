"""Renderers on a small hand-built ScanResult: SARIF structure, Markdown content,
and the JSON contract of docs/json.md."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture, run_scan

from guardscan.evidence import FactKind, Status, args_of
from guardscan.report import formats, render
from guardscan.report.explain import explain
from guardscan.report.sarif import deciding_evidence, sarif_log
from guardscan.results import (
    BackendVerdict,
    Diagnostic,
    Evidence,
    OptionInfo,
    PackageRef,
    Role,
    ScanNote,
    ScanResult,
    Verdict,
)
from guardscan.verdict import mark_statuses

DOCS = Path(__file__).resolve().parent.parent / "docs"

OPTION = "--moe-runner-backend"
DEFINITION = Evidence.of("sglang/srt/server_args.py", 3901, "link", "parser.add_argument(",
                         FactKind.OPTION, args_of(flag=OPTION))
GUARD = Evidence.of("sglang/srt/server_args.py", 1200, "guard", "if not is_sm100_supported():",
                    FactKind.GUARD, args_of(text="not (capability major in [10])"))
GATE = Evidence.of("sglang/srt/server_args.py", 1201, "gate", 'raise ValueError("needs sm100")',
                   FactKind.GATE, args_of(effect="raises", arch="sm120", condition=(
                       "moe_runner_backend == flashinfer_trtllm and not sm100")))
CAVEAT = Evidence.of("sglang/srt/layers/moe/x.py", 55, "gate", "assert cfg | other",
                     FactKind.GATE, args_of(effect="could-raise", arch="sm120",
                                            undecided="? cfg"))
KERNEL_CALL = Evidence.of("sglang/srt/layers/moe/cutlass.py", 80, "link",
                          "flashinfer.cutlass_fused_moe(x)", FactKind.CALL,
                          args_of(text="calls the kernel library"))
KERNEL_FACT = Evidence.of("flashinfer/fused_moe/core.py", 40, "kernel",
                          "@supported_compute_capability([100, 103])", FactKind.DECORATOR,
                          args_of(fact="decorator", predicate="SM in [100, 103]",
                                  value="false"))


def decided(option: str, choice: str, arch: str, verdict: Verdict,
            chain: tuple[Evidence, ...], **kwargs: object) -> BackendVerdict:
    """A hand-built verdict, its chain's statuses set as the verdict stage sets them."""
    return BackendVerdict(option, choice, arch, None, verdict,
                          tuple(mark_statuses(list(chain), verdict)), **kwargs)  # type: ignore[arg-type]


def small_result() -> ScanResult:
    option = OptionInfo(OPTION, "moe_runner_backend", ("auto", "flashinfer_trtllm", "cutlass"),
                        DEFINITION.path, DEFINITION.line, help="MoE runner", default="auto")
    backends = [
        decided(OPTION, "auto", arch, Verdict.UNKNOWN, (DEFINITION,))
        for arch in ("sm90", "sm120")
    ]
    backends += [
        decided(OPTION, "flashinfer_trtllm", "sm90", Verdict.BLOCKED, (DEFINITION, GUARD, GATE)),
        decided(OPTION, "flashinfer_trtllm", "sm120", Verdict.BLOCKED,
                (DEFINITION, GUARD, GATE, CAVEAT),
                conditions=("blocked with --quantization fp8",)),
        decided(OPTION, "cutlass", "sm90", Verdict.UNSUPPORTED,
                (DEFINITION, KERNEL_CALL, KERNEL_FACT)),
        decided(OPTION, "cutlass", "sm120", Verdict.SUPPORTED,
                (DEFINITION, KERNEL_CALL, KERNEL_FACT), platform=None),
    ]
    return ScanResult(
        guardscan="0.1.0",
        target=PackageRef("sglang", "0.5.9", "/cache/trees/sglang-0.5.9/sglang"),
        kernels=[PackageRef("flashinfer", "0.6.3", "/cache/trees/flashinfer-0.6.3/flashinfer")],
        archs=["sm90", "sm120"],
        options=[option],
        backends=backends,
        diagnostics=[
            Diagnostic("sglang/srt/a.py", 7, "unresolved-guard", "cannot resolve guard `x`"),
            Diagnostic("sglang/srt/b.py", 0, "file-failed", "syntax error at 3:1"),
            Diagnostic("sglang/srt/c.py", 0, "file-skipped", "too large"),
            Diagnostic("sglang/srt/a.py", 9, "unresolved-guard", "cannot resolve guard `y`"),
        ],
        notes=[ScanNote("kernels", "kernel facts not available in this build",
                        reason="not available in this build")],
    )


def rendered(fmt: str, result: ScanResult | None = None) -> str:
    stream = io.StringIO()
    render(result or small_result(), stream, fmt)
    return stream.getvalue()


def test_every_format_is_registered() -> None:
    assert {"text", "json", "sarif", "markdown"} <= set(formats())


# -- SARIF -----------------------------------------------------------------------------------
@pytest.fixture
def sarif() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(rendered("sarif"))
    return data


def test_sarif_top_level(sarif: dict[str, Any]) -> None:
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    assert len(sarif["runs"]) == 1
    run = sarif["runs"][0]
    assert {"tool", "results", "invocations", "originalUriBaseIds"} <= run.keys()
    driver = run["tool"]["driver"]
    assert driver["name"] == "guardscan" and driver["version"] == "0.1.0"


def test_sarif_one_result_per_blocked_or_unsupported_cell(sarif: dict[str, Any]) -> None:
    results = sarif["runs"][0]["results"]
    cells = [(r["properties"]["choice"], r["properties"]["arch"], r["level"])
             for r in results if "properties" in r]
    assert cells == [
        ("cutlass", "sm90", "warning"),
        ("flashinfer_trtllm", "sm90", "error"),
        ("flashinfer_trtllm", "sm120", "error"),
    ]


def test_sarif_rules_listed_once_and_referenced_by_index(sarif: dict[str, Any]) -> None:
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert len(ids) == len(set(ids))
    assert ids == ["blocked", "unsupported", "unresolved-guard"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    notes = [r for r in run["results"] if r["level"] == "note"]
    assert [r["ruleId"] for r in notes] == ["unresolved-guard", "unresolved-guard"]


def _regions(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if "startLine" in node:
            found.append(node)
        for value in node.values():
            found.extend(_regions(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_regions(value))
    return found


def test_sarif_regions_are_one_based(sarif: dict[str, Any]) -> None:
    regions = _regions(sarif)
    assert regions
    for region in regions:
        assert region["startLine"] >= 1
        assert region["startColumn"] == 1


def test_sarif_location_is_the_deciding_line(sarif: dict[str, Any]) -> None:
    results = {(r["ruleId"], r["properties"]["arch"], r["properties"]["choice"]): r
               for r in sarif["runs"][0]["results"] if "properties" in r}
    blocked = results[("blocked", "sm120", "flashinfer_trtllm")]
    location = blocked["locations"][0]["physicalLocation"]
    assert location["region"]["startLine"] == GATE.line  # not the later caveat gate
    related = [loc["physicalLocation"]["region"]["startLine"]
               for loc in blocked["relatedLocations"]]
    assert related == [DEFINITION.line, GUARD.line, CAVEAT.line]
    assert [loc["id"] for loc in blocked["relatedLocations"]] == [1, 2, 3]
    unsupported = results[("unsupported", "sm90", "cutlass")]
    assert unsupported["locations"][0]["physicalLocation"]["region"]["startLine"] == 40


def test_deciding_evidence_falls_back_to_last_line() -> None:
    verdict = decided(OPTION, "x", "sm90", Verdict.BLOCKED, (DEFINITION, GUARD))
    assert deciding_evidence(verdict) == GUARD.with_status(Status.DECIDES)
    # the status is the verdict stage's: a chain nobody judged decides nothing
    assert deciding_evidence(BackendVerdict(OPTION, "x", "sm90", None, Verdict.BLOCKED,
                                            (DEFINITION, GUARD))) is None
    assert deciding_evidence(BackendVerdict(OPTION, "x", "sm90", None, Verdict.BLOCKED)) is None


def test_sarif_uris_are_relative_to_base_ids(sarif: dict[str, Any]) -> None:
    run = sarif["runs"][0]
    bases = run["originalUriBaseIds"]
    # the bases are local directories: described, never given (no local paths)
    assert set(bases) == {"PKGROOT", "KERNELROOT"}
    assert all("uri" not in base and base["description"]["text"] for base in bases.values())
    artifacts: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "artifactLocation" in node:
                artifacts.append(node["artifactLocation"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(run)
    assert artifacts
    for artifact in artifacts:
        assert not artifact["uri"].startswith(("/", "file:"))
        assert artifact["uriBaseId"] in bases
        expected = "KERNELROOT" if artifact["uri"].startswith("flashinfer/") else "PKGROOT"
        assert artifact["uriBaseId"] == expected


def test_sarif_file_diagnostics_are_notifications(sarif: dict[str, Any]) -> None:
    run = sarif["runs"][0]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is True
    notifications = invocation["toolExecutionNotifications"]
    assert [n["descriptor"]["id"] for n in notifications] == ["file-failed", "file-skipped"]
    assert notifications[0]["level"] == "warning"
    assert "syntax error" in notifications[0]["message"]["text"]
    uri = notifications[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "sglang/srt/b.py"
    assert "region" not in notifications[0]["locations"][0]["physicalLocation"]  # line 0
    assert not any(r["ruleId"].startswith("file-") for r in run["results"])


def test_sarif_is_deterministic() -> None:
    result = small_result()
    shuffled = small_result()
    shuffled.backends.reverse()
    shuffled.diagnostics.reverse()
    assert rendered("sarif", result) == rendered("sarif", shuffled)
    assert "Utc" not in rendered("sarif")  # no startTimeUtc / endTimeUtc
    assert sarif_log(result) == json.loads(rendered("sarif", result))


def test_sarif_without_findings_is_still_valid() -> None:
    result = ScanResult(guardscan="0.1.0", target=PackageRef("sglang", None, "/x/sglang"))
    run = json.loads(rendered("sarif", result))["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    assert "toolExecutionNotifications" not in run["invocations"][0]


# -- Markdown --------------------------------------------------------------------------------
def test_markdown_header_and_tables() -> None:
    text = rendered("markdown")
    assert text.startswith("# guardscan report: sglang 0.5.9\n")
    assert "- kernels: `flashinfer` 0.6.3" in text
    assert "- note: kernel facts not available in this build" in text
    assert f"### `{OPTION}`" in text
    assert "| choice | sm90 | sm120 |" in text
    assert "| `auto` | unknown | unknown |" in text
    assert "| `flashinfer_trtllm` | **blocked** | **blocked**\\* |" in text
    assert "| `cutlass` | **unsupported** | supported |" in text


def test_markdown_why_lists_each_blocked_or_unsupported_chain() -> None:
    text = rendered("markdown")
    why = text.split("## Why", 1)[1].split("## Diagnostics", 1)[0]
    headings = re.findall(r"^### (.*)$", why, re.MULTILINE)
    assert headings == [
        f"`{OPTION}` `flashinfer_trtllm` on sm90: blocked",
        f"`{OPTION}` `flashinfer_trtllm` on sm120: blocked",
        f"`{OPTION}` `cutlass` on sm90: unsupported",
    ]
    assert ("3. `sglang/srt/server_args.py:1201` — gate — "
            "`raise ValueError(\"needs sm100\")` — raises on sm120") in why
    assert "- note: blocked with --quantization fp8" in why
    assert "flashinfer/fused_moe/core.py:40` — kernel" in why
    assert "`auto`" not in why  # unknown cells are not explained


def test_markdown_escapes_pipes_in_code_and_notes() -> None:
    text = rendered("markdown")
    assert "`assert cfg | other`" in text  # code span outside a table keeps its pipe
    diagnostics = text.split("## Diagnostics", 1)[1]
    assert "| `unresolved-guard` | 2 |" in diagnostics
    assert "| `file-failed` | 1 |" in diagnostics


def test_markdown_is_deterministic() -> None:
    assert rendered("markdown") == rendered("markdown")


# -- JSON contract -----------------------------------------------------------------------------
TOP_KEYS = {"schema", "guardscan", "target", "kernels", "archs", "quantization", "backends",
            "diagnostics"}
BACKEND_KEYS = {"option", "choice", "arch", "quantization", "verdict", "safe_to_try",
                "evidence"}
EVIDENCE_KEYS = {"path", "line", "role", "text", "kind", "status"}


def test_json_round_trips_with_documented_keys() -> None:
    data = json.loads(rendered("json"))
    assert set(data) == TOP_KEYS | {"notes"}
    assert set(data["target"]) == {"package", "version", "path"}
    for kernel in data["kernels"]:
        assert set(kernel) == {"package", "version", "path"}
    for backend in data["backends"]:
        assert BACKEND_KEYS <= set(backend) <= BACKEND_KEYS | {"platform", "conditions"}
        assert backend["verdict"] in {v.value for v in Verdict}
        assert backend["safe_to_try"] is (backend["verdict"] in ("supported", "unknown"))
        for ev in backend["evidence"]:
            assert EVIDENCE_KEYS <= set(ev) <= EVIDENCE_KEYS | {"note", "tier", "args"}
            assert ev["line"] >= 1
            assert ev["status"] in {"decides", "caveat", "context"}
        deciding = [ev for ev in backend["evidence"] if ev["status"] == "decides"]
        assert len(deciding) == (0 if backend["verdict"] == "unknown" else 1), backend
    for diag in data["diagnostics"]:
        assert set(diag) == {"path", "line", "code", "message"}
    assert data["diagnostics"] == sorted(data["diagnostics"],
                                         key=lambda d: (d["path"], d["line"], d["code"],
                                                        d["message"]))


def test_json_optional_keys_left_out_when_empty() -> None:
    result = small_result()
    result.notes = []
    data = json.loads(rendered("json", result))
    assert "notes" not in data
    auto = data["backends"][0]
    assert "platform" not in auto and "conditions" not in auto
    assert "note" in auto["evidence"][0]


def test_docs_json_lists_every_emitted_key() -> None:
    """docs/json.md is the contract: every key the code writes must be on it."""
    page = (DOCS / "json.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", page, re.MULTILINE))
    data = json.loads(rendered("json"))
    emitted = set(data) | set(data["target"])
    for backend in data["backends"]:
        emitted |= set(backend)
        for ev in backend["evidence"]:
            emitted |= set(ev)
    for diag in data["diagnostics"]:
        emitted |= set(diag)
    assert emitted - documented == set()
    assert {r.value for r in Role} <= documented
    assert {v.value for v in Verdict} <= documented


def test_explain_says_what_an_undecided_chain_waits_on() -> None:
    """An ``unknown`` chain with caveats (a gate that may raise under a model
    property) ends saying the caveats decide it at launch; one with nothing on
    its path says there is no evidence."""
    out = io.StringIO()
    explain(run_scan(fixture("guards_partial"), ["sm90"]), "w", "--moe-runner-backend", out)
    assert out.getvalue().rstrip().endswith(
        "nothing decides this arch; the caveats above depend on the launch: unknown")
    out = io.StringIO()
    explain(run_scan(fixture("guards_partial"), ["sm90"]), "triton", "--moe-runner-backend", out)
    assert out.getvalue().rstrip().endswith(
        "no architecture evidence on this choice's path: unknown")


def test_explain_of_auto_says_what_it_becomes_on_each_arch() -> None:
    """``auto`` is judged as itself, and its chain ends saying which choice
    SGLang's default lines make it on the arch, with that choice's own
    verdict and the line that sets it; JSON carries the same as ``becomes``."""
    result = run_scan(fixture("roles_default"), ["sm90", "sm100"])
    out = io.StringIO()
    explain(result, "auto", "--moe-runner-backend", out)
    text = out.getvalue()
    assert "=> auto becomes x (sglang/srt/server_args.py:55): supported" in text
    assert "=> auto becomes triton (sglang/srt/server_args.py:57): unknown" in text
    out = io.StringIO()
    explain(result, "auto", "--moe-runner-backend", out, "json")
    entries = {e["arch"]: e for e in json.loads(out.getvalue())["backends"]}
    assert entries["sm100"]["becomes"] == [
        {"choice": "x", "verdict": "supported", "path": "sglang/srt/server_args.py",
         "line": 55}]
    out = io.StringIO()
    explain(result, "x", "--moe-runner-backend", out, "json")
    assert all("becomes" not in e for e in json.loads(out.getvalue())["backends"])
