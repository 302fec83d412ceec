"""field reports: the bundled data checked entry by entry (URLs, ranges, archs, no
duplicates, the schema, and each option and choice in a real release's catalog),
``matching`` once per outcome on the fixture ``fixtures/field_reports``, a tree's
own ``.guardscan-reports.toml`` (``fixtures/field_reports_tree``), the one-line
errors for bad files, and ``guardscan reports`` as text and JSON."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from fixturetree import FIXTURES

from guardscan.arch import Arch, parse_arch
from guardscan.cli import main
from guardscan.field import (
    BUNDLED,
    SCHEMA_VERSION,
    TREE_FILE,
    FieldReport,
    FieldReportError,
    Outcome,
    bundled_reports,
    in_range,
    load_file,
    load_reports,
    matching,
    parse_document,
    tree_reports,
)
from guardscan.field import load as field_load
from guardscan.results import ExitCode

REPORTS = FIXTURES / "field_reports" / "reports.json"
TREE = FIXTURES / "field_reports_tree"
MOE = "--moe-runner-backend"


def raw_data() -> dict[str, Any]:
    text = resources.files("guardscan").joinpath("data/field_reports.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def raw_schema() -> dict[str, Any]:
    text = resources.files("guardscan").joinpath("data/field_reports.schema.json") \
        .read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def ids(reports: list[FieldReport]) -> list[str]:
    return [r.id for r in reports]


# -- the bundled data -------------------------------------------------------------------------

def test_bundled_loads_and_is_versioned() -> None:
    data = raw_data()
    assert data["schema_version"] == SCHEMA_VERSION
    reports = bundled_reports()
    assert len(reports) == len(data["reports"]) >= 40
    assert {r.source for r in reports} == {BUNDLED}


@pytest.mark.parametrize("entry", raw_data()["reports"], ids=lambda e: e["id"])
def test_every_entry_cites_a_public_thread(entry: dict[str, Any]) -> None:
    assert entry["urls"], entry["id"]
    for url in entry["urls"]:
        assert re.match(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", url), url


@pytest.mark.parametrize("entry", raw_data()["reports"], ids=lambda e: e["id"])
def test_every_entry_parses(entry: dict[str, Any]) -> None:
    """Ranges are packaging specifiers, archs are guardscan archs, the outcome
    one of five, the symptom one line, the date ISO."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    SpecifierSet(entry["sglang"])
    assert entry["sglang"], f"{entry['id']}: bundled reports name their releases"
    if entry["kernel_library"] is not None:
        assert entry["kernel_library"]["name"] == "flashinfer-python"
        SpecifierSet(entry["kernel_library"]["specifier"])
    for arch in entry["archs"]:
        assert parse_arch(arch).name == arch, f"{entry['id']}: spell {arch!r} canonically"
    assert entry["outcome"] in {o.value for o in Outcome}
    assert "\n" not in entry["symptom"] and len(entry["symptom"]) <= 300
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", entry["date"])
    if entry["fixed_in"] is not None:
        Version(entry["fixed_in"])


def test_no_duplicate_reports() -> None:
    """No two reports say the same thing: option, choice, arch, version ranges, outcome."""
    keys = Counter(
        (r.option, r.choice, arch, r.sglang,
         r.kernel_library.specifier if r.kernel_library else None, r.outcome)
        for r in bundled_reports() for arch in r.archs)
    assert [key for key, n in keys.items() if n > 1] == []


def test_schema_validates_the_data() -> None:
    assert validate(raw_data(), raw_schema()) == []


def test_schema_validator_is_not_vacuous() -> None:
    """The tiny validator below finds what the schema forbids."""
    broken = copy.deepcopy(raw_data())
    entry = broken["reports"][0]
    entry["outcome"] = "exploded"
    entry["urls"] = []
    del entry["date"]
    entry["severity"] = "high"
    errors = validate(broken, raw_schema())
    assert sorted(e.split(":")[0] for e in errors) == [
        "$.reports[0]", "$.reports[0].outcome", "$.reports[0].severity", "$.reports[0].urls"]


def test_schema_and_loader_agree_on_the_fields() -> None:
    item = raw_schema()["properties"]["reports"]["items"]
    assert set(item["required"]) == set(field_load.REQUIRED)
    assert set(item["properties"]) == set(field_load.REQUIRED + field_load.OPTIONAL)
    assert item["properties"]["outcome"]["enum"] == [o.value for o in Outcome]


@pytest.mark.real
def test_options_and_choices_exist_in_a_real_release() -> None:
    """Every report's option offers its choice in sglang 0.5.9 or 0.5.23."""
    from realtrees import sglang_tree

    from guardscan.index import Index
    from guardscan.options import build_catalog

    offered: set[tuple[str, str]] = set()
    for version in ("0.5.9", "0.5.23"):
        catalog = build_catalog(Index(sglang_tree(version)))
        offered |= {(o.flag, c) for o in catalog.options for c in o.choices}
    missing = sorted({(r.id, r.option, r.choice) for r in bundled_reports()
                      if (r.option, r.choice) not in offered})
    assert missing == []


# -- a tiny validator for the JSON Schema subset the schema file uses --------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "null": (type(None),),
    "integer": (int,), "boolean": (bool,)}


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Errors as ``path: problem``, for type, const, enum, pattern, minLength,
    minItems, items, required, properties and additionalProperties: false."""
    errors: list[str] = []
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(isinstance(value, _TYPES[k]) and not (k == "integer" and isinstance(
                value, bool)) for k in kinds):
            return [f"{path}: expected {' or '.join(kinds)}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: too short")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        for i, item in enumerate(value):
            errors += validate(item, schema.get("items", {}), f"{path}[{i}]")
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            errors.append(f"{path}: missing {', '.join(missing)}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                errors += validate(item, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}.{key}: not allowed")
    return errors


# -- matching, one case per outcome on the fixture --------------------------------------------

FIXTURE_REPORTS = load_file(REPORTS)

#: outcome -> (what matches it, what the fixture's own variations must not match)
OUTCOME_CASES: dict[Outcome, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    Outcome.CRASH: (
        {"sglang_version": "0.5.9", "kernel_version": "0.6.3", "option": MOE,
         "choice": "flashinfer_trtllm", "arch": "sm121", "quantization": "modelopt_fp4"},
        [{"sglang_version": "0.5.10"}, {"kernel_version": "0.7.2"}, {"arch": "sm100"},
         {"quantization": "fp8"}]),
    Outcome.WRONG_OUTPUT: (
        {"sglang_version": "0.5.23", "kernel_version": "0.7.2", "option": "moe-runner-backend",
         "choice": "flashinfer_cutedsl", "arch": "RTX PRO 6000", "quantization": None},
        [{"sglang_version": "0.5.8"}, {"arch": "GB10"}]),
    Outcome.HANG: (
        {"sglang_version": "0.5.9", "kernel_version": None, "option": "--attention-backend",
         "choice": "flashinfer", "arch": Arch(10, 0), "quantization": "fp8"},
        [{"sglang_version": "0.5.9.post1"}, {"arch": "sm120"}, {"choice": "triton"}]),
    Outcome.SLOW: (
        {"sglang_version": "0.4.0", "kernel_version": "0.7.2", "option": "--fp4-gemm-backend",
         "choice": "flashinfer_cutlass", "arch": "sm120", "quantization": None},
        [{"kernel_version": "0.6.3"}, {"option": "--fp8-gemm-backend"}]),
    Outcome.WORKS: (
        {"sglang_version": "0.5.6rc0", "kernel_version": "0.6.3", "option": MOE,
         "choice": "flashinfer_cutlass", "arch": "12.0", "quantization": "modelopt_fp4"},
        [{"sglang_version": "0.5.4"}, {"quantization": "mxfp4"}, {"arch": "sm90"}]),
}


def test_every_outcome_has_a_case() -> None:
    assert set(OUTCOME_CASES) == set(Outcome)
    assert sorted(r.outcome for r in FIXTURE_REPORTS) == sorted(Outcome)


@pytest.mark.parametrize("outcome", list(Outcome), ids=str)
def test_matching_each_outcome(outcome: Outcome) -> None:
    query, misses = OUTCOME_CASES[outcome]
    found = matching(FIXTURE_REPORTS, **query)
    assert ids(found) == [f"fx-{outcome.value}"], f"query {query}"
    assert found[0].outcome is outcome
    for change in misses:
        assert ids(matching(FIXTURE_REPORTS, **{**query, **change})) == [], \
            f"query {query} changed by {change}"


def test_matching_unknown_parts_do_not_filter() -> None:
    """No version, no kernel, no quantization: every report of the option on the arch,
    worst outcome first within each choice."""
    assert ids(matching(FIXTURE_REPORTS, option=MOE, arch="sm120")) == [
        "fx-wrong-output", "fx-works", "fx-crash"]
    assert ids(matching(FIXTURE_REPORTS, None, None, MOE, None, "sm120", None)) == \
        ids(matching(FIXTURE_REPORTS, "0.0.0.dev1+gabc1234", None, MOE, None, "sm120", None))
    assert len(matching(FIXTURE_REPORTS)) == len(FIXTURE_REPORTS)


def test_matching_at_a_release_with_its_pin() -> None:
    assert ids(matching(FIXTURE_REPORTS, "0.5.9", "0.6.3", arch="sm120",
                        quantization="modelopt_fp4")) == [
        "fx-wrong-output", "fx-works", "fx-crash"]
    assert ids(matching(FIXTURE_REPORTS, "0.5.23", "0.7.2", arch="sm120")) == [
        "fx-slow", "fx-wrong-output", "fx-works"]


@pytest.mark.parametrize(("version", "specifier", "expected"), [
    ("0.5.9", ">=0.5.5,<0.5.10", True),
    ("0.5.10", ">=0.5.5,<0.5.10", False),
    ("0.5.12.post1", ">=0.5.12,<0.5.13", True),
    ("0.5.12.post1", "==0.5.12", False),
    ("0.5.13rc0", ">=0.5.12", True),
    ("0.5.13rc0", ">=0.5.13", False),
    ("0.4.0", "", True),
    ("not a version", ">=0.5", True),
    ("0.0.0.dev0", ">=0.5", True),
])
def test_in_range(version: str, specifier: str, expected: bool) -> None:
    assert in_range(version, specifier) is expected


def test_bundled_origin_case_sm120() -> None:
    """On sm120 with NVFP4, sglang 0.5.9 with its pin: the TRT-LLM-gen MoE report."""
    found = matching(bundled_reports(), "0.5.9", "0.6.3", MOE, "flashinfer_trtllm", "sm120",
                     "modelopt_fp4")
    assert ids(found) == ["nvfp4-moe-flashinfer-trtllm-sm12x-crash"]
    assert found[0].outcome is Outcome.CRASH


# -- a tree's own reports ---------------------------------------------------------------------

def test_tree_file_is_read_in_the_same_schema() -> None:
    team = tree_reports(TREE)
    assert ids(list(team)) == ["team-cutedsl-nan", "team-triton-moe-works"]
    nan, works = team
    assert nan.archs == ("sm120",)          # 'RTX PRO 6000' spelled as guardscan spells it
    assert nan.kernel_library is None and nan.fixed_in is None  # TOML leaves null out
    assert works.kernel_library is not None
    assert works.kernel_library.name == "flashinfer-python"  # canonical name
    assert nan.source == str(TREE / TREE_FILE)


def test_tree_file_merges_after_bundled_and_files() -> None:
    merged = load_reports([REPORTS], [TREE, TREE.resolve()])
    assert len(merged) == len(bundled_reports()) + len(FIXTURE_REPORTS) + 2
    assert [r.source for r in merged[-7:]] == [str(REPORTS)] * 5 + [str(TREE / TREE_FILE)] * 2
    assert load_reports(roots=[FIXTURES / "diff_old"], bundled=False) == ()


def test_a_second_report_with_an_id_is_an_error(tmp_path: Path) -> None:
    again = tmp_path / "again.json"
    again.write_text(REPORTS.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(FieldReportError) as caught:
        load_reports([REPORTS, again], bundled=False)
    assert str(caught.value) == (f"{again}: id 'fx-crash' is already used by a report of "
                                 f"{REPORTS}")


def test_toml_without_a_reader_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.10 without tomli: the tree file is refused in one line, not skipped."""
    monkeypatch.setattr(field_load, "toml_reader", lambda: None)
    with pytest.raises(FieldReportError, match=r"needs Python 3\.11\+ \(tomllib\) or the "
                                               r"tomli package"):
        tree_reports(TREE)
    assert load_file(REPORTS) == FIXTURE_REPORTS  # JSON needs no reader


# -- bad files: one line each -------------------------------------------------------------------

def _entry(**change: Any) -> dict[str, Any]:
    entry = json.loads(REPORTS.read_text(encoding="utf-8"))["reports"][0]
    entry.update(change)
    return {key: value for key, value in entry.items() if value is not ...}


BAD_DOCUMENTS: list[tuple[str, object, str]] = [
    ("not a table", [], "expected a table with schema_version and reports, got list"),
    ("newer schema", {"schema_version": 2, "reports": []},
     "schema_version 2 is not 1 (written for a newer guardscan)"),
    ("no reports", {"schema_version": 1}, "reports must be a list, got null"),
    ("unknown top-level key", {"schema_version": 1, "reports": [], "extra": 1},
     "unknown top-level key(s) extra; expected schema_version, reports, description"),
    ("no url", {"schema_version": 1, "reports": [_entry(urls=[])]},
     "reports[0] (id 'fx-crash'): urls must list at least one public thread"),
    ("missing urls", {"schema_version": 1, "reports": [_entry(urls=...)]},
     "reports[0] (id 'fx-crash'): missing urls"),
    ("bad range", {"schema_version": 1, "reports": [_entry(sglang="=>0.5")]},
     ("reports[0] (id 'fx-crash'): sglang '=>0.5' is not a version specifier such as "
     "'>=0.5.5,<0.5.8'")),
    ("bad kernel range", {"schema_version": 1, "reports": [_entry(
        kernel_library={"name": "flashinfer-python", "specifier": "0.6"})]},
     ("reports[0] (id 'fx-crash'): kernel_library.specifier '0.6' is not a version "
     "specifier such as '>=0.5.5,<0.5.8'")),
    ("kernel without specifier", {"schema_version": 1, "reports": [_entry(
        kernel_library={"name": "flashinfer-python"})]},
     ("reports[0] (id 'fx-crash'): kernel_library must be null or a table with exactly name "
     "and specifier")),
    ("bad arch", {"schema_version": 1, "reports": [_entry(archs=["sm999"])]},
     "reports[0] (id 'fx-crash'): archs: not a known architecture 'sm999'"),
    ("bad outcome", {"schema_version": 1, "reports": [_entry(outcome="exploded")]},
     ("reports[0] (id 'fx-crash'): outcome 'exploded' is not one of crash, wrong-output, "
     "hang, slow, works")),
    ("bad date", {"schema_version": 1, "reports": [_entry(date="2026-13-01")]},
     "reports[0] (id 'fx-crash'): date '2026-13-01' must be an ISO date (YYYY-MM-DD)"),
    ("unknown key", {"schema_version": 1, "reports": [_entry(severity="high")]},
     "reports[0] (id 'fx-crash'): unknown key(s) severity"),
    ("two-line symptom", {"schema_version": 1, "reports": [_entry(symptom="a\nb")]},
     "reports[0] (id 'fx-crash'): symptom must be one line"),
    ("bad option", {"schema_version": 1, "reports": [_entry(option="moe-runner-backend")]},
     ("reports[0] (id 'fx-crash'): option 'moe-runner-backend' must be a flag such as "
     "--moe-runner-backend")),
    ("bad fixed_in", {"schema_version": 1, "reports": [_entry(fixed_in="soon")]},
     "reports[0] (id 'fx-crash'): fixed_in 'soon' is not a version"),
    ("id twice", {"schema_version": 1, "reports": [_entry(), _entry()]},
     "reports[1] (id 'fx-crash'): id 'fx-crash' appears twice"),
    ("entry not a table", {"schema_version": 1, "reports": ["fx-crash"]},
     "reports[0]: expected a table, got str"),
]


@pytest.mark.parametrize(("data", "message"), [(d, m) for _, d, m in BAD_DOCUMENTS],
                         ids=[name for name, _, _ in BAD_DOCUMENTS])
def test_bad_document_is_one_line(data: object, message: str) -> None:
    with pytest.raises(FieldReportError) as caught:
        parse_document(data, "team.json")
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"team.json: {message}"), text


@pytest.mark.parametrize(("name", "content", "message"), [
    ("broken.json", "{", "not valid JSON: Expecting property name enclosed in double quotes"),
    ("broken.toml", "schema_version = [", "not valid TOML:"),
    ("missing.json", None, "no such file"),
])
def test_bad_file_is_one_line(tmp_path: Path, name: str, content: str | None,
                              message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(FieldReportError) as caught:
        load_file(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_bad_file_on_the_command_line_exits_2_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "team.toml"
    path.write_text("schema_version = 1\n[[reports]]\nid = 'x'\n", encoding="utf-8")
    assert main(["reports", "--reports", str(path)]) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"guardscan: error: field reports: {path}: reports[0] (id 'x'): missing "
                   "sglang, option, choice, archs, outcome, symptom, urls, date\n")


# -- guardscan reports ----------------------------------------------------------------------------

def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["reports", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_reports_text_on_the_fixture(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    code, out, err = run(capsys, "--no-bundled", "--reports", "field_reports/reports.json",
                         "--arch", "sm120", "--option", MOE)
    assert (code, err) == (ExitCode.OK, "")
    src = "  (from field_reports/reports.json)"
    assert out == (
        "field reports for every release, sm120: 3 of 5 reports\n"
        "  wrong-output  --moe-runner-backend flashinfer_cutedsl  sm120  sglang >=0.5.9  "
        "prints NaN from the first token  https://example.invalid/threads/2" + src + "\n"
        "  works         --moe-runner-backend flashinfer_cutlass  sm120  sglang >=0.5.5  "
        "serves with GSM8K 0.95  https://example.invalid/threads/6" + src + "\n"
        "  crash         --moe-runner-backend flashinfer_trtllm  sm120,sm121  "
        "sglang >=0.5.5,<0.5.10, flashinfer-python >=0.6,<0.7  "
        "killed while loading the MoE weights  https://example.invalid/threads/1" + src + "\n")


def test_reports_text_when_nothing_applies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--no-bundled", "--reports", str(REPORTS), "--arch", "sm80")
    assert code == ExitCode.OK
    assert out == "field reports for every release, sm80: 0 of 5 reports\n  none apply\n"


def test_reports_json_on_a_checkout_with_its_own_file(
        capsys: pytest.CaptureFixture[str], tmp_cache: Path) -> None:
    """TARGET is read for its version (0.5.9) and its FlashInfer pin (0.6.3), not
    scanned; its .guardscan-reports.toml joins the --reports file."""
    code, out, err = run(capsys, str(TREE), "--no-bundled", "--reports", str(REPORTS),
                         "--arch", "RTX PRO 6000", "--format", "json")
    assert (code, err) == (ExitCode.OK, "")
    data = json.loads(out)
    assert data["format"] == "guardscan-field-reports" and data["format_version"] == 1
    assert data["target"]["version"] == "0.5.9"
    assert data["target"]["kernel"] == {"name": "flashinfer-python",
                                        "requirement": "flashinfer-python==0.6.3",
                                        "version": "0.6.3"}
    assert data["filters"] == {"archs": ["sm120"], "options": [], "choices": [],
                               "quantization": None}
    assert data["total"] == 7
    assert [r["id"] for r in data["reports"]] == [
        "team-cutedsl-nan", "fx-wrong-output", "fx-works", "fx-crash", "team-triton-moe-works"]
    first = data["reports"][0]
    assert first["source"] == str(TREE / TREE_FILE)
    assert first["kernel_library"] is None and first["outcome"] == "wrong-output"
    assert set(first) == set(field_load.REQUIRED + field_load.OPTIONAL) - {"notes"} | {
        "source"}


def test_reports_json_matches_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    """--format json lists the same reports, in the same order, as the text."""
    argv = ("--no-bundled", "--reports", str(REPORTS), "--choice", "flashinfer_cutlass")
    _, text, _ = run(capsys, *argv)
    _, out, _ = run(capsys, *argv, "--format", "json")
    urls = [re.findall(r"https://\S+", line)[-1] for line in text.splitlines()[1:]]
    assert urls == [r["urls"][0] for r in json.loads(out)["reports"]]
    assert [r["id"] for r in json.loads(out)["reports"]] == ["fx-slow", "fx-works"]


def test_reports_bundled_by_arch(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--arch", "sm120", "--option", MOE, "--choice",
                       "flashinfer_trtllm")
    assert code == ExitCode.OK
    lines = out.splitlines()
    assert lines[0] == f"field reports for every release, sm120: 1 of {len(bundled_reports())} " \
                       "reports"
    assert "https://github.com/flashinfer-ai/flashinfer/issues/2045" in lines[1]


def test_reports_bad_arch_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--arch", "sm999")
    assert code == ExitCode.USAGE and out == ""
    assert err.startswith("guardscan: error: not a known architecture 'sm999'")
