"""Guard FORMS end to end: one fixture tree per form the vocabulary resolves
(fixtures/guards_<form>/), each defining its guard helper the way SGLang does and
a --moe-runner-backend choice whose code raises under it. Each case checks the
exact verdict on every standard architecture and that the evidence chain holds
the guard line and the line(s) that define what the guard means."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pytest
from fixturetree import describe_chain, fixture, line_of, run_scan, verdict_of, verdicts

from guardscan.results import ScanResult

ARCHS = ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"]
WORDS = {"B": "blocked", "S": "supported", "U": "unknown", "X": "unsupported"}
RUNNER = "sglang/srt/layers/moe/runner.py"
COMMON = "sglang/srt/utils/common.py"


@cache
def scan(name: str) -> ScanResult:
    return run_scan(fixture(name), option="--moe-runner-backend")


def expected_row(text: str) -> dict[str, str]:
    assert len(text) == len(ARCHS), text
    return {arch: WORDS[c] for arch, c in zip(ARCHS, text)}


def actual_row(result: ScanResult, choice: str) -> dict[str, str]:
    table = verdicts(result)
    return {arch: table[(choice, arch)] for arch in ARCHS}


def site(name: str, rel: str, needle: str) -> tuple[str, int]:
    return rel, line_of(fixture(name) / rel, needle)


@dataclass(frozen=True)
class Form:
    id: str
    fixture: str
    choice: str
    row: str  # 80 86 89 90 100 103 110 120 121, B/S/U
    guard: tuple[str, str]  # (file, text on the guard line)
    definitions: tuple[tuple[str, str], ...]  # (file, text on a defining line)
    probe_arch: str = "sm80"  # where the full (blocking) chain is inspected


FORMS = [
    Form("partial-lru-cache-factory", "guards_partial", "y", "BBBBSSBBB",
         (RUNNER, 'moe_runner_backend == "y"'),
         ((COMMON, "is_blackwell_dc_supported = lru_cache(maxsize=1)("),
          (COMMON, "def _check_cuda_device_version("))),
    Form("def-capability-tuple", "guards_def_capability", "x", "BBBBBBBSB",
         (RUNNER, 'moe_runner_backend == "x"'),
         ((COMMON, "def is_sm120():"), (COMMON, "def is_cuda():"))),
    Form("platform-probe-map", "guards_probe_map", "x", "BBBBSSBBB",
         (RUNNER, "get_platform().is_sm100"),
         (("sglang/srt/platforms/__init__.py", '"is_sm100": "is_sm100_supported"'),
          (COMMON, "def is_sm100_supported():"))),
    Form("platform-probe-map-sm90", "guards_probe_map", "y", "BBBSBBBBB",
         (RUNNER, "get_platform().is_sm90"),
         (("sglang/srt/platforms/__init__.py", '"is_sm90": "is_sm90_supported"'),
          (COMMON, "def is_sm90_supported():"))),
    Form("module-cached-alias", "guards_alias", "x", "BBBBBBBSS",
         (RUNNER, "not _is_sm120:"),
         ((RUNNER, "_is_sm120 = is_sm120_supported()"),
          (COMMON, "is_sm120_supported = lru_cache(maxsize=1)("))),
    Form("imported-alias", "guards_alias", "y", "BBBBSSBBB",
         (RUNNER, "not _sm100():"),
         ((COMMON, "is_sm100_supported = lru_cache(maxsize=1)("),
          (COMMON, "def _check_cuda_device_version("))),
    Form("device-sm-raise", "guards_device_sm", "y", "SSSBBBBBB",
         (RUNNER, "get_device_sm() >= 90"),
         ((COMMON, "def get_device_sm():"), (COMMON, "major, minor = torch.cuda"))),
    Form("capability-index-helper", "guards_capability_index", "x", "BBBSBBBBB",
         (RUNNER, "not is_hopper()"),
         ((COMMON, "def is_hopper():"),)),
    Form("capability-index-inline", "guards_capability_index", "y", "BBBSBBBBB",
         (RUNNER, "get_device_capability()[0] == 9"), ()),
    Form("unpacked-major", "guards_unpack", "x", "BBBSBBBBB",
         (RUNNER, "if major != 9:"),
         ((RUNNER, "major, minor = torch.cuda.get_device_capability()"),)),
    Form("has-device-capability", "guards_has_capability", "x", "BBBSSSSSS",
         (RUNNER, "not has_device_capability(90)"),
         ((COMMON, "def has_device_capability(capability):"),
          (COMMON, "cap = get_device_capability()"),
          (COMMON, "def get_device_capability():"))),
]


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_form_verdicts(form: Form) -> None:
    result = scan(form.fixture)
    actual = actual_row(result, form.choice)
    assert actual == expected_row(form.row), (
        f"{form.fixture} choice {form.choice}\nexpected {expected_row(form.row)}\n"
        f"actual   {actual}")


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_form_evidence_chain(form: Form) -> None:
    result = scan(form.fixture)
    blocked = verdict_of(result, form.choice, form.probe_arch)
    chain = [(e.path, e.line) for e in blocked.evidence]
    shown = describe_chain(blocked.evidence)
    guard = site(form.fixture, *form.guard)
    assert guard in chain, f"guard line {guard} missing from\n{shown}"
    for definition in form.definitions:
        where = site(form.fixture, *definition)
        assert where in chain, f"definition line {where} missing from\n{shown}"
    roles = [e.role for e in blocked.evidence]
    assert roles[0] == "link" and roles[-1] == "gate", shown
    assert blocked.evidence[0].path == "sglang/srt/server_args.py"


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_form_supported_arch_cites_the_gate(form: Form) -> None:
    """Where the gate admits the arch, the admitting gate is the evidence."""
    result = scan(form.fixture)
    arch = next(a for a, c in zip(ARCHS, form.row) if c == "S")
    verdict = verdict_of(result, form.choice, arch)
    gates = [e for e in verdict.evidence if e.role == "gate"]
    assert gates and all(e.note.startswith(f"admits {arch}") for e in gates), describe_chain(
        verdict.evidence)


#: choices gated in a fixture but checked by the tests below the table
EXTRA_GATED = {"guards_partial": {"x", "w"}, "guards_device_sm": {"x"}, "guards_unresolved": {"x"}}


@pytest.mark.parametrize("name", sorted({f.fixture for f in FORMS} | {"guards_unresolved"}))
def test_ungated_choices_stay_unknown(name: str) -> None:
    result = scan(name)
    gated = {f.choice for f in FORMS if f.fixture == name} | EXTRA_GATED.get(name, set())
    for choice in ("auto", "triton", "x", "y", "w"):
        if choice in gated:
            continue
        assert set(actual_row(result, choice).values()) == {"unknown"}, (name, choice)


@pytest.mark.parametrize("name", sorted({f.fixture for f in FORMS}))
def test_resolved_forms_leave_no_unresolved_guard(name: str) -> None:
    codes = [(d.path, d.line, d.code) for d in scan(name).diagnostics]
    assert not [c for c in codes if c[2] == "unresolved-guard"], codes


# --------------------------------------------------------------------------
# the cases the table cannot say


def test_partial_applied_directly_to_lru_cache() -> None:
    result = scan("guards_partial")
    assert actual_row(result, "x") == expected_row("BBBBSSBBB")


def test_partial_with_cuda_bound_no_toolkit_decides() -> None:
    """w needs CUDA >= 12.3 on SM90: sm90's first toolkit is 11.8, so the gate
    can neither block nor admit there; it is shown as a caveat."""
    result = scan("guards_partial")
    assert actual_row(result, "w") == expected_row("BBBUBBBBB")
    sm90 = verdict_of(result, "w", "sm90")
    caveats = [e for e in sm90.evidence if e.role == "gate"]
    assert caveats and caveats[0].note.startswith("could raise on sm90"), describe_chain(
        sm90.evidence)


def test_cuda_caveat_names_the_cuda_condition() -> None:
    sm90 = verdict_of(scan("guards_partial"), "w", "sm90")
    note = next(e.note for e in sm90.evidence if e.role == "gate")
    assert "CUDA >= 12.3" in note, note


def test_assert_gate_verdicts() -> None:
    """``if backend == "x": assert get_device_sm() >= 100``."""
    result = scan("guards_device_sm")
    assert actual_row(result, "x") == expected_row("BBBBSSSSS")
    chain = [(e.path, e.line, e.role) for e in verdict_of(result, "x", "sm90").evidence]
    assert (*site("guards_device_sm", RUNNER, "assert get_device_sm() >= 100"), "gate") in chain


def test_assert_gate_chain_has_definition() -> None:
    result = scan("guards_device_sm")
    chain = [(e.path, e.line) for e in verdict_of(result, "x", "sm90").evidence]
    assert site("guards_device_sm", COMMON, "def get_device_sm():") in chain


def test_unresolved_guard() -> None:
    """A guard calling into a package outside the tree: the verdict stays unknown
    (never guessed), and a diagnostic says where."""
    result = scan("guards_unresolved")
    assert set(actual_row(result, "x").values()) == {"unknown"}
    guard_line = line_of(fixture("guards_unresolved") / RUNNER, "some_ext.is_blackwell_gpu()")
    found = [d for d in result.diagnostics if d.code == "unresolved-guard"]
    assert [(d.path, d.line) for d in found] == [(RUNNER, guard_line)]
    assert "some_ext.is_blackwell_gpu()" in found[0].message
    # no gate was invented: x has no architecture evidence on any arch
    for arch in ARCHS:
        assert [e.role for e in verdict_of(result, "x", arch).evidence] == ["link"]
