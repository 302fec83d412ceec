"""field reports beside the verdicts: attached as ``field`` evidence (context, never
deciding), shown in text, JSON, SARIF and Markdown, and flagging ``check`` and
``preflight`` on a crash or wrong-output report that holds exactly; on the fixture
tree ``fixtures/field_launch`` (sglang 0.5.9 pinning flashinfer 0.6.3) with the
made-up reports of ``fixtures/field_reports``, and on sglang 0.5.9 for the bundled
TRT-LLM-gen report."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import pytest
from fixturetree import FIXTURES, run_scan

import guardscan
from guardscan.cli import main
from guardscan.evidence import arg
from guardscan.field import (
    Outcome,
    attach_reports,
    bundled_reports,
    field_reports_of,
    load_file,
    load_reports,
)
from guardscan.field.flag import FieldMode, flags_launch, known_release, with_field
from guardscan.launch import judge_launch, parse_launch
from guardscan.report import render
from guardscan.results import ExitCode, PackageRef, ScanResult

TREE = FIXTURES / "field_launch"
REPORTS = FIXTURES / "field_reports" / "reports.json"
FIXTURE_REPORTS = load_file(REPORTS)
MOE = "--moe-runner-backend"
TRTLLM_CRASH = "nvfp4-moe-flashinfer-trtllm-sm12x-crash"

TEAM_TOML = '''\
schema_version = 1

[[reports]]
id = "team-cutedsl-nan"
sglang = ">=0.5.9,<0.5.10"
option = "--moe-runner-backend"
choice = "flashinfer_cutedsl"
archs = ["RTX PRO 6000"]
quantization = "modelopt_fp4"
outcome = "wrong-output"
symptom = "NaN output after the first decode step"
urls = ["https://tracker.example/INFRA-42"]
date = "2026-03-01"
'''


def scanned(kernel: str | None = "0.6.3", quantization: str | None = None) -> ScanResult:
    """The fixture on sm100 and sm120, SGLang only, as if FlashInfer ``kernel`` was read."""
    result = run_scan(TREE, ["sm100", "sm120"], quantization=quantization)
    if kernel is not None:
        result = dataclasses.replace(result, kernels=[PackageRef("flashinfer", kernel,
                                                                 "/x/flashinfer")])
    return result


def field_ids(result: ScanResult) -> dict[tuple[str, str, str], list[str]]:
    return {(b.option, b.choice, b.arch): [arg(ev.args, "id") for ev in field_reports_of(b)]
            for b in result.backends if field_reports_of(b)}


def joined(lines: list[str], start: int) -> str:
    """A wrapped line and its continuations (indented deeper), as one line."""
    depth = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > depth:
        end += 1
    return " ".join(line.strip() for line in lines[start:end])


def text_of(result: ScanResult, fmt: str = "text", **options: object) -> str:
    stream = io.StringIO()
    render(result, stream, fmt, dict(options))
    return stream.getvalue()


# -- beside, never deciding ------------------------------------------------------------------

def test_attached_where_each_report_holds() -> None:
    """sglang 0.5.9 with flashinfer 0.6.3: fx-slow needs FlashInfer >=0.7, fx-hang is
    on B200 only; without --quantization the reports that need one are kept."""
    result = attach_reports(scanned(), FIXTURE_REPORTS)
    assert field_ids(result) == {
        ("--attention-backend", "flashinfer", "sm100"): ["fx-hang"],
        (MOE, "flashinfer_cutlass", "sm120"): ["fx-works"],
        (MOE, "flashinfer_trtllm", "sm120"): ["fx-crash"],
        (MOE, "flashinfer_cutedsl", "sm120"): ["fx-wrong-output"],
    }
    assert field_ids(attach_reports(scanned("0.7.2"), FIXTURE_REPORTS))[
        ("--fp4-gemm-backend", "flashinfer_cutlass", "sm120")] == ["fx-slow"]
    assert (MOE, "flashinfer_trtllm", "sm120") not in field_ids(
        attach_reports(scanned(quantization="fp8"), FIXTURE_REPORTS))


def test_a_report_never_changes_a_verdict() -> None:
    before = scanned()
    after = attach_reports(before, FIXTURE_REPORTS)
    assert [(b.option, b.choice, b.arch, b.verdict, b.deciding, b.caveats, b.conditions)
            for b in after.backends] == [
        (b.option, b.choice, b.arch, b.verdict, b.deciding, b.caveats, b.conditions)
        for b in before.backends]
    assert not any(field_reports_of(b) for b in before.backends)  # the input is left alone
    trtllm = next(b for b in after.backends
                  if (b.option, b.choice, b.arch) == (MOE, "flashinfer_trtllm", "sm120"))
    assert trtllm.verdict.value == "blocked"
    ev = field_reports_of(trtllm)[0]
    assert (ev.kind, ev.role, ev.status, ev.tier) == ("field", "field", "context", "")
    assert (ev.path, ev.line, ev.text) == (str(REPORTS), 6, "killed while loading the MoE weights")
    assert ev.note == ("crash reported on sm120, sm121 with --quantization modelopt_fp4, sglang "
                       ">=0.5.5,<0.5.10, flashinfer-python >=0.6,<0.7: killed while loading the "
                       "MoE weights (https://example.invalid/threads/1)")


def test_bundled_reports_name_their_line() -> None:
    report = next(r for r in bundled_reports() if r.id == TRTLLM_CRASH)
    result = attach_reports(scanned(), [report])
    ev = field_reports_of(next(b for b in result.backends if b.choice == "flashinfer_trtllm"
                               and b.arch == "sm120"))[0]
    assert (ev.path, ev.line) == ("guardscan/data/field_reports.json", 28)


# -- one case per outcome: shown, and whether it flags ---------------------------------------

#: outcome -> (option, choice, arch, quantization of the launch, kernel read, flags it)
OUTCOMES: dict[Outcome, tuple[str, str, str, str | None, str | None, bool]] = {
    Outcome.CRASH: (MOE, "flashinfer_trtllm", "sm120", "modelopt_fp4", "0.6.3", True),
    # named for a model family (qwen3): the launch's model is not read, so shown only
    Outcome.WRONG_OUTPUT: (MOE, "flashinfer_cutedsl", "sm120", "modelopt_fp4", "0.6.3", False),
    Outcome.HANG: ("--attention-backend", "flashinfer", "sm100", None, "0.6.3", False),
    Outcome.SLOW: ("--fp4-gemm-backend", "flashinfer_cutlass", "sm120", None, "0.7.2", False),
    Outcome.WORKS: (MOE, "flashinfer_cutlass", "sm120", "modelopt_fp4", "0.6.3", False),
}


@pytest.mark.parametrize("outcome", list(Outcome), ids=str)
def test_each_outcome_beside_its_verdict(outcome: Outcome) -> None:
    option, choice, arch, quantization, kernel, flags = OUTCOMES[outcome]
    result = attach_reports(scanned(kernel, quantization), FIXTURE_REPORTS)
    assert field_ids(result)[(option, choice, arch)] == [f"fx-{outcome.value}"]
    report = next(r for r in FIXTURE_REPORTS if r.outcome is outcome)
    assert flags_launch(report, "0.5.9", kernel, quantization) is flags
    line = next(line for line in text_of(result).splitlines() if f"fx-{outcome.value}"
                in line or f"  field  {choice}: {outcome.value} reported on {arch}" in line)
    assert line.startswith(f"  field  {choice}: {outcome.value} reported on {arch} (")


def test_crash_flags_only_on_the_exact_release() -> None:
    crash = next(r for r in FIXTURE_REPORTS if r.outcome is Outcome.CRASH)
    assert flags_launch(crash, "0.5.9", "0.6.3", "modelopt_fp4") is True
    assert flags_launch(crash, "0.5.9", None, "modelopt_fp4") is False  # kernel not read
    assert flags_launch(crash, "0.5.9", "0.6.3", None) is False  # its quantization not given
    assert flags_launch(crash, "0.0.0.dev1+gabc", "0.6.3", "modelopt_fp4") is False
    assert flags_launch(crash, "0.5.10", "0.6.3", "modelopt_fp4") is False
    assert [known_release(v) for v in (None, "x", "0.0.0.dev0", "0.5.9")] == [
        False, False, False, True]


# -- the text report folds -------------------------------------------------------------------

def test_text_folds_past_three_per_option() -> None:
    many = [dataclasses.replace(FIXTURE_REPORTS[0], id=f"fx-crash-{n}", date=f"2026-01-1{n}")
            for n in range(5)]
    text = text_of(attach_reports(scanned(), many)).splitlines()
    field = [line for line in text if line.startswith("  field  ")]
    assert len(field) == 4 and field[-1] == "  field  2 more reports (--verbose)"
    verbose = text_of(attach_reports(scanned(), many), verbose=True).splitlines()
    assert sum(line.startswith("  field  flashinfer_trtllm: crash") for line in verbose) == 5


def test_text_gives_an_option_with_nothing_decided_its_own_block() -> None:
    text = text_of(attach_reports(scanned("0.7.2"), FIXTURE_REPORTS)).splitlines()
    start = text.index("--fp4-gemm-backend  (default: auto); every choice unknown (safe to try, "
                       "no promise)")
    assert joined(text, start + 1) == (
        "field  flashinfer_cutlass: slow reported on sm120 (sglang any, flashinfer-python >=0.7): "
        "half the bandwidth of the b12x GEMM, https://example.invalid/threads/5 (from "
        f"{REPORTS})")
    # so does --attention-backend (a hang on sm100); nothing is left to fold
    assert ("--attention-backend  (default: triton); every choice unknown (safe to try, no "
            "promise)") in text
    assert not any(line.startswith("nothing known") for line in text)


# -- JSON, SARIF, Markdown ---------------------------------------------------------------------

def test_json_sarif_and_markdown_carry_the_reports() -> None:
    result = attach_reports(scanned(), FIXTURE_REPORTS)
    data = json.loads(text_of(result, "json"))
    cell = next(b for b in data["backends"]
                if (b["option"], b["choice"], b["arch"]) == (MOE, "flashinfer_cutedsl", "sm120"))
    assert cell["verdict"] == "unknown"
    field = [e for e in cell["evidence"] if e["kind"] == "field"]
    assert [(e["status"], e["args"]["id"], e["args"]["outcome"], e["args"]["url"])
            for e in field] == [("context", "fx-wrong-output", "wrong-output",
                                 "https://example.invalid/threads/2")]

    sarif = json.loads(text_of(result, "sarif"))["runs"][0]
    assert [r["id"] for r in sarif["tool"]["driver"]["rules"]] == ["blocked", "field-report"]
    found = [(r["properties"]["choice"], r["level"], r["properties"]["report"])
             for r in sarif["results"] if r["ruleId"] == "field-report"]
    assert found == [("flashinfer_trtllm", "warning", "fx-crash"),
                     ("flashinfer_cutedsl", "warning", "fx-wrong-output"),
                     ("flashinfer_cutlass", "note", "fx-works"),
                     ("flashinfer", "note", "fx-hang")]
    blocked = next(r for r in sarif["results"] if r["ruleId"] == "blocked")
    assert all("example.invalid" not in json.dumps(loc)
               for loc in blocked.get("relatedLocations", []))

    markdown = text_of(result, "markdown").splitlines()
    start = markdown.index("## Field reports")
    assert markdown[start + 6] == (
        "| `--moe-runner-backend` | `flashinfer_trtllm` | sm120 | crash | sglang >=0.5.5,\\<0.5.10,"
        " flashinfer-python >=0.6,\\<0.7, with modelopt\\_fp4 | killed while loading the MoE "
        "weights | <https://example.invalid/threads/1> |")


# -- check and preflight ---------------------------------------------------------------------

def team_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "fork"
    shutil.copytree(TREE, tree)
    (tree / ".guardscan-reports.toml").write_text(TEAM_TOML, encoding="utf-8")
    return tree


LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "m",
          "--quantization", "modelopt_fp4", "--moe-runner-backend", "flashinfer_cutedsl"]


def test_check_fails_on_a_team_nan_report_and_warn_only_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The case that started the project, as a team records it: cutedsl prints NaN on
    its RTX PRO 6000 with modelopt_fp4; the source says nothing (unknown)."""
    tree = str(team_tree(tmp_path))
    code = main(["check", "--arch", "sm120", "--no-kernels", "--no-cache", tree, "--", *LAUNCH])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert (code, err) == (ExitCode.FOUND, "")
    assert lines[1].split()[:3] == [MOE, "flashinfer_cutedsl", "unknown"]
    assert joined(lines, 2) == (
        "field: wrong-output reported on sm120 (sglang >=0.5.9,<0.5.10, with modelopt_fp4): NaN "
        "output after the first decode step, https://tracker.example/INFRA-42 (from "
        ".guardscan-reports.toml)")
    assert lines[-2:] == ["not ok: 1 problem on sm120",
                          ("field: a crash or wrong-output report holds for this arch and release "
                           "(--field-warn-only: warn only)")]

    code = main(["check", "--arch", "sm120", "--no-kernels", "--no-cache", "--field-warn-only",
                 tree, "--", *LAUNCH])
    out, _ = capsys.readouterr()
    assert code == ExitCode.OK
    assert out.splitlines()[-1] == ("ok: every backend choice given is safe to try on sm120 "
                                    "(1 field report to look at above)")

    code = main(["check", "--arch", "sm120", "--no-kernels", "--no-cache", "--no-reports",
                 tree, "--", *LAUNCH])
    out, _ = capsys.readouterr()
    assert code == ExitCode.OK and "field" not in out


def test_preflight_field_modes(tmp_path: Path) -> None:
    tree = str(team_tree(tmp_path))
    common = {"kernels": False, "use_cache": False}
    fail = guardscan.preflight(LAUNCH, "sm120", tree, **common)  # type: ignore[arg-type]
    assert fail.ok is False
    assert [(p.code, p.option, p.choice, p.arch, p.where) for p in fail.problems] == [
        ("field-report", MOE, "flashinfer_cutedsl", "sm120", "https://tracker.example/INFRA-42")]
    assert fail.verdict(MOE, "flashinfer_cutedsl").verdict.value == "unknown"
    warn = guardscan.preflight(LAUNCH, "sm120", tree, field="warn", **common)  # type: ignore[arg-type]
    assert (warn.ok, [p.code for p in warn.warnings]) == (True, ["field-report"])
    off = guardscan.preflight(LAUNCH, "sm120", tree, field="off", **common)  # type: ignore[arg-type]
    assert (off.ok, off.field) == (True, ())
    with pytest.raises(ValueError, match="field='loud': expected one of fail, warn, off"):
        guardscan.preflight(LAUNCH, "sm120", tree, field="loud", **common)  # type: ignore[arg-type]
    data = fail.to_json()
    assert [f["code"] for f in data["field"]] == ["field-report"]  # type: ignore[index]


def test_with_field_on_a_judged_launch() -> None:
    """The crash report flags a given choice; on a default it is a warning."""
    result = scanned("0.6.3", "modelopt_fp4")
    given = judge_launch(result, parse_launch(["--quantization", "modelopt_fp4",
                                               MOE, "flashinfer_trtllm"]))
    answer = with_field(given, FIXTURE_REPORTS, FieldMode.FAIL)
    assert [(p.code, p.arch) for p in answer.problems] == [
        ("not-safe", "sm120"), ("field-report", "sm120")]
    assert [p.code for p in answer.field] == ["field-report"]
    left = judge_launch(result, parse_launch(["--quantization", "modelopt_fp4"]))
    assert with_field(left, FIXTURE_REPORTS).problems == ()


# -- a team's files ----------------------------------------------------------------------------

def test_scan_reads_the_tree_file_and_reports_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = str(team_tree(tmp_path))
    code = main([tree, "--arch", "sm120", "--no-kernels", "--no-cache", "--format", "json",
                 "--reports", str(REPORTS)])
    out, err = capsys.readouterr()
    assert (code, err) == (ExitCode.OK, "")
    cell = next(b for b in json.loads(out)["backends"]
                if (b["choice"], b["arch"]) == ("flashinfer_cutedsl", "sm120"))
    assert [(e["path"], e["args"]["id"]) for e in cell["evidence"] if e["kind"] == "field"] == [
        (".guardscan-reports.toml", "team-cutedsl-nan"), (str(REPORTS), "fx-wrong-output")]
    assert [r.id for r in load_reports(roots=[Path(tree)], bundled=False)] == [
        "team-cutedsl-nan"]


@pytest.mark.parametrize("command", [[], ["check"]], ids=["scan", "check"])
def test_a_bad_report_file_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('schema_version = 1\n[[reports]]\nid = "x"\n', encoding="utf-8")
    tail = ["--", "--moe-runner-backend", "triton"] if command else []
    code = main([*command, "--arch", "sm120", "--no-kernels", "--no-cache", str(TREE),
                 "--reports", str(bad), *tail])
    out, err = capsys.readouterr()
    assert (code, out) == (ExitCode.USAGE, "")
    assert err == (f"guardscan: error: field reports: {bad}: reports[0] (id 'x'): missing sglang, "
                   "option, choice, archs, outcome, symptom, urls, date\n")


# -- a real release ----------------------------------------------------------------------------

def test_bundled_trtllm_report_flags_0_5_9_on_sm120(sglang_059: object,
                                                    flashinfer_063: object) -> None:
    import realtrees

    answer = guardscan.preflight(["--quantization", "modelopt_fp4", MOE, "flashinfer_trtllm"],
                                 "sm120", "sglang==0.5.9",
                                 cache_dir=realtrees.shared_cache_dir())
    assert [(p.code, p.where) for p in answer.problems] == [
        ("not-safe", answer.problems[0].where),
        ("field-report", "https://github.com/flashinfer-ai/flashinfer/issues/2045")]
    assert answer.verdict(MOE, "flashinfer_trtllm", "sm120").verdict.value == "unsupported"


def test_a_tree_naming_no_release_shows_only_reports_it_can_hold() -> None:
    """No version (a stand-in tree, a source build): guardscan's own reports for a
    release range are left out; a team's file and reports for every release stay."""
    result = run_scan(FIXTURES / "preflight_launch", ["sm120"])
    assert result.target.version is None
    assert field_ids(attach_reports(result, bundled_reports())) == {}
    # not guardscan's own: kept, every range holding an unknown version (fx-hang is on B200)
    assert field_ids(attach_reports(result, FIXTURE_REPORTS)) == {
        (MOE, "flashinfer_cutlass", "sm120"): ["fx-works"],
        (MOE, "flashinfer_trtllm", "sm120"): ["fx-crash"],
    }
