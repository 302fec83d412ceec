"""diff: ``compare.compare`` on hand-built results (what counts as a change,
what does not), its text and JSON, ``guardscan diff`` on the fixture pair
``diff_old`` / ``diff_new``, and sglang 0.5.9 against 0.5.23 on sm120."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from fixturetree import fixture, line_of

from guardscan.cli import main
from guardscan.compare import compare, direction, fact_key
from guardscan.report.diff import diff_json, render_diff_text
from guardscan.results import (
    BackendVerdict,
    Evidence,
    ExitCode,
    OptionInfo,
    PackageRef,
    ScanResult,
    Verdict,
)
from guardscan.verdict import mark_statuses

OLD = str(fixture("diff_old"))
NEW = str(fixture("diff_new"))
MOE = "--moe-runner-backend"
B, U, S, K = Verdict.BLOCKED, Verdict.UNSUPPORTED, Verdict.SUPPORTED, Verdict.UNKNOWN


# -- hand-built results -----------------------------------------------------------------------
def gate(line: int, text: str = "raise ValueError(", note: str = "raises on sm120: x") -> Evidence:
    return Evidence("sglang/srt/layers/moe/runner.py", line, "gate", text, note)


def cell(choice: str, arch: str, verdict: Verdict, *evidence: Evidence,
         option: str = MOE) -> BackendVerdict:
    # the chain's statuses as the verdict stage sets them
    return BackendVerdict(option, choice, arch, None, verdict,
                          tuple(mark_statuses(list(evidence), verdict)))


def result(version: str, cells: list[BackendVerdict], archs: tuple[str, ...] = ("sm120",),
           choices: dict[str, tuple[str, ...]] | None = None) -> ScanResult:
    if choices is None:
        choices = {}
        for c in cells:
            choices.setdefault(c.option, ())
            if c.choice not in choices[c.option]:
                choices[c.option] += (c.choice,)
    options = [OptionInfo(flag, flag[2:].replace("-", "_"), names, "sglang/srt/server_args.py", 1)
               for flag, names in choices.items()]
    return ScanResult("0.1.0", PackageRef("sglang", version, "sglang"),
                      [PackageRef("flashinfer", "0.6.3" if version == "1" else "0.7.2",
                                  "flashinfer")],
                      list(archs), options, cells)


@pytest.mark.parametrize(("old", "new", "expected"), [
    (S, B, "worse"), (K, U, "worse"), (B, S, "better"), (U, K, "better"),
    (S, K, "other"), (K, S, "other"), (B, U, "other"), (U, B, "other"),
])
def test_direction(old: Verdict, new: Verdict, expected: str) -> None:
    assert direction(old, new) == expected


def test_a_verdict_change_carries_both_deciding_lines() -> None:
    old = result("1", [cell("x", "sm120", B, gate(10))])
    new = result("2", [cell("x", "sm120", S, gate(30, note="admits sm120: raises only when y"))])
    diff = compare(old, new)
    (change,) = diff.cells("changed")
    assert (change.choice, change.arch, change.old.verdict, change.new.verdict) == \
        ("x", "sm120", B, S)
    assert change.direction == "better"
    assert change.old_deciding is not None and change.old_deciding.line == 10
    assert change.new_deciding is not None and change.new_deciding.line == 30
    assert diff.summary()["better"] == 1 and diff.summary()["unchanged"] == 0


def test_moved_evidence_is_not_a_change() -> None:
    """Lines move between releases: same verdict, same fact elsewhere is nothing."""
    note = "raises on sm120: (a) (see flashinfer/jit/core.py:160, raises at line 31)"
    moved = "raises on sm120: (a) (see flashinfer/jit/core.py:170, raises at line 39)"
    old = result("1", [cell("x", "sm120", B, Evidence("sglang/a.py", 3, "link", "f("), gate(10,
                                                                                      note=note))])
    new = result("2", [cell("x", "sm120", B, Evidence("sglang/a.py", 9, "link", "f("), gate(90,
                                                                                      note=moved))])
    diff = compare(old, new)
    assert diff.cells("changed") == [] and diff.cells("new_reasons") == []
    assert diff.summary()["unchanged"] == 1
    assert fact_key(gate(10, note=note)) == fact_key(gate(90, note=moved))
    out = io.StringIO()
    render_diff_text(diff, out, verbose=True)
    assert "No differences." in out.getvalue()


def test_same_verdict_another_deciding_fact_is_a_new_reason() -> None:
    old = result("1", [cell("x", "sm120", B, gate(10, "raise ValueError('old')"))])
    new = result("2", [cell("x", "sm120", B, gate(10, "assert is_sm100()"))])
    diff = compare(old, new)
    assert diff.cells("changed") == []
    (reason,) = diff.cells("new_reasons")
    assert reason.old_deciding is not None and reason.old_deciding.text.startswith("raise")
    quiet, verbose = io.StringIO(), io.StringIO()
    render_diff_text(diff, quiet)
    render_diff_text(diff, verbose, verbose=True)
    assert "still blocked" not in quiet.getvalue()
    assert "1 of them decided by another fact" in quiet.getvalue()
    assert "x  sm120: still blocked, decided by another fact" in verbose.getvalue()


def test_unknown_to_unknown_is_never_a_new_reason() -> None:
    old = result("1", [cell("x", "sm120", K, gate(10, note="could raise on sm120: q"))])
    new = result("2", [cell("x", "sm120", K)])
    assert compare(old, new).cells("new_reasons") == []


def test_choices_and_options_added_and_removed() -> None:
    old = result("1", [cell("a", "sm120", K), cell("w", "sm120", B, gate(4)),
                       cell("p", "sm120", K, option="--old-backend")])
    new = result("2", [cell("a", "sm120", K), cell("v", "sm120", S, gate(5)),
                       cell("q", "sm120", K, option="--new-backend")])
    diff = compare(old, new)
    by_option = {o.option: o for o in diff.options}
    assert by_option[MOE].status == "both"
    assert [c.choice for c in by_option[MOE].added] == ["v"]
    assert [(c.choice, c.verdicts[0].verdict) for c in by_option[MOE].removed] == [("w", B)]
    assert by_option["--new-backend"].status == "added"
    assert by_option["--old-backend"].status == "removed"
    summary = diff.summary()
    assert (summary["choices_added"], summary["choices_removed"]) == (1, 1)
    assert (summary["options_added"], summary["options_removed"]) == (1, 1)
    assert compare(old, new, options=["new-backend"]).options[0].option == "--new-backend"
    assert len(compare(old, new, options=[MOE]).options) == 1


def test_choice_order_follows_each_side() -> None:
    old = result("1", [cell("a", "sm120", K)], choices={MOE: ("a",)})
    new = result("2", [cell(c, "sm120", K) for c in ("c", "a", "b")], choices={MOE: ("a", "b", "c")})
    assert [c.choice for c in compare(old, new).options[0].added] == ["b", "c"]


def test_only_common_archs_are_compared() -> None:
    old = result("1", [cell("x", "sm90", S, gate(1)), cell("x", "sm120", B, gate(1))],
                 archs=("sm90", "sm120"))
    new = result("2", [cell("x", "sm100", B, gate(1)), cell("x", "sm120", S, gate(2))],
                 archs=("sm100", "sm120"))
    diff = compare(old, new)
    assert diff.archs == ["sm120"]
    assert [(c.arch, c.direction) for c in diff.cells("changed")] == [("sm120", "better")]
    assert compare(old, new, archs=["sm90"]).archs == []


def _several_archs() -> tuple[ScanResult, ScanResult]:
    archs = ("sm90", "sm100", "sm120")
    old = result("1", [cell("x", a, K) for a in archs] + [cell("y", a, S, gate(3)) for a in archs],
                 archs=archs)
    new = result("2", [cell("x", "sm90", S, gate(7, note="admits sm90: raises only when z")),
                       cell("x", "sm100", S, gate(7, note="admits sm100: raises only when z")),
                       cell("x", "sm120", B, gate(7, note="raises on sm120: z"))]
                 + [cell("y", a, S, gate(3)) for a in archs], archs=archs)
    return old, new


def test_text_groups_archs_with_the_same_change() -> None:
    out = io.StringIO()
    render_diff_text(compare(*_several_archs()), out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "guardscan 0.1.0 diff, on sm90 sm100 sm120"
    assert lines[1] == "  old: sglang 1 with flashinfer 0.6.3"
    assert lines[2] == "  new: sglang 2 with flashinfer 0.7.2"
    changed = [line for line in lines if line.startswith("  changed")]
    # the worse change first, the two better-evidenced archs in one entry
    assert changed == ["  changed  x  sm120: unknown -> blocked  (worse)",
                       "  changed  x  sm90, sm100: unknown -> supported"]
    assert "      new  blocked: sglang/srt/layers/moe/runner.py:7  raise ValueError(" in lines
    assert "      old  unknown: no architecture evidence on its path" in lines
    assert "summary: 3 verdict(s) changed (1 worse, 0 better, 2 other)" in text
    assert all(len(line) <= 100 for line in lines)


def test_json_holds_everything() -> None:
    data = diff_json(compare(*_several_archs()))
    assert set(data) == {"guardscan", "schema", "old", "new", "archs", "quantization",
                         "summary", "options"}
    assert data["old"] == {"target": {"package": "sglang", "version": "1", "path": "sglang"},
                           "kernels": [{"package": "flashinfer", "version": "0.6.3",
                                        "path": "flashinfer"}], "notes": []}
    (option,) = data["options"]  # type: ignore[misc]
    assert option["option"] == MOE and option["status"] == "both"
    assert option["unchanged"] == 3
    first = option["changed"][0]
    assert set(first) == {"choice", "arch", "direction", "old", "new"}
    assert first["new"]["deciding"]["line"] == 7
    assert first["old"]["deciding"] is None and first["old"]["evidence"] == []
    assert json.loads(json.dumps(data)) == data


# -- the command, on the fixture pair ---------------------------------------------------------
@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], tmp_cache: Path):  # type: ignore[no-untyped-def]
    def go(*argv: str) -> tuple[int, str, str]:
        code = main(["diff", *argv, "--no-kernels", "--offline", "-q"])
        out, err = capsys.readouterr()
        return int(code), out, err
    return go


def test_cli_text(run) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(OLD, NEW, "--arch", "sm90,sm100,sm120")
    assert (code, err) == (ExitCode.OK, "")
    lines = out.splitlines()
    assert "  old: sglang 0.1.0 (SGLang-only)" in lines
    assert "  new: sglang 0.2.0 (SGLang-only)" in lines
    runner = "sglang/srt/layers/moe/runner.py"
    x_old = line_of(Path(OLD) / runner, 'raise ValueError("moe runner backend x')
    x_new = line_of(Path(NEW) / runner, 'raise ValueError("moe runner backend x')
    moe = lines.index("--moe-runner-backend")
    assert lines[moe + 1] == "  changed  x  sm120: blocked -> supported  (better)"
    assert lines[moe + 2].startswith(f"      old  blocked: {runner}:{x_old}")
    assert lines[moe + 5].startswith(f"      new  supported: {runner}:{x_new}")
    assert "  added    v (supported on sm100, blocked on sm90 sm120)" in lines
    assert "  removed  w (unknown)" in lines
    # y's gate moved down three lines in diff_new, and says the same: no change
    assert not any(" y " in line for line in lines)
    att = lines.index("--attention-backend")
    assert lines[att + 1] == "  changed  triton  sm120: unknown -> blocked  (worse)"
    assert "  changed  triton  sm90, sm100: unknown -> supported" in lines
    assert lines.index("--attention-backend") < moe  # worse changes first
    assert any(line.startswith("options added (1") and "--new-only-backend (2)" in line
               for line in lines)
    assert any(line.startswith("options removed (1") and "--old-only-backend (2)" in line
               for line in lines)
    assert any(line.startswith("summary: 4 verdict(s) changed (1 worse, 1 better, 2 other)")
               for line in lines)


def test_cli_verbose_shows_new_reasons(run) -> None:  # type: ignore[no-untyped-def]
    _, quiet, _ = run(OLD, NEW, "--arch", "sm120")
    code, out, _ = run(OLD, NEW, "--arch", "sm120", "--verbose")
    assert code == 0
    # fa3 is blocked on both sides, by a raise in OLD and an assert in NEW
    assert "fa3" not in quiet
    assert "  reason   fa3  sm120: still blocked, decided by another fact" in out
    assert "  --new-only-backend  p, q (unknown)" in out


def test_cli_json(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(OLD, NEW, "--arch", "sm120", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["archs"] == ["sm120"]
    assert data["old"]["target"] == {"package": "sglang", "version": "0.1.0", "path": "sglang"}
    assert data["new"]["target"] == {"package": "sglang", "version": "0.2.0", "path": "sglang"}
    assert OLD not in out and NEW not in out  # no local path in the report
    changed = {(o["option"], c["choice"], c["arch"]): (c["old"]["verdict"], c["new"]["verdict"],
                                                       c["direction"])
               for o in data["options"] for c in o["changed"]}
    assert changed == {
        ("--moe-runner-backend", "x", "sm120"): ("blocked", "supported", "better"),
        ("--attention-backend", "triton", "sm120"): ("unknown", "blocked", "worse"),
    }
    status = {o["option"]: o["status"] for o in data["options"]}
    assert status["--new-only-backend"] == "added"
    assert status["--old-only-backend"] == "removed"
    assert data["summary"]["new_reasons"] == 1


def test_cli_option_filter(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(OLD, NEW, "--arch", "sm120", "--option", "--moe-runner-backend")
    assert code == 0
    assert "--moe-runner-backend" in out.splitlines()
    assert "--attention-backend" not in out
    assert "options added" not in out


@pytest.mark.parametrize(("fail_on", "expected"), [
    ([], 0), (["worse"], 1), (["removed"], 1), (["changed"], 1)])
def test_cli_fail_on(run, fail_on: list[str], expected: int) -> None:  # type: ignore[no-untyped-def]
    argv = [a for what in fail_on for a in ("--fail-on", what)]
    assert run(OLD, NEW, "--arch", "sm120", *argv)[0] == expected


def test_cli_fail_on_nothing_changed(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(OLD, OLD, "--arch", "sm120", "--fail-on", "changed")
    assert code == 0
    assert "No differences." in out


@pytest.mark.parametrize(("argv", "needle"), [
    ([OLD], "the following arguments are required: NEW"),
    ([OLD, "/nonexistent/sglang"], "new (/nonexistent/sglang): "),
    ([OLD, NEW, "--arch", "sm12"], "did you mean"),
    ([OLD, NEW, "--option", "--nope-backend"], "--nope-backend is a backend option of neither"),
    ([OLD, NEW, "--fail-on", "blocked"], "invalid choice"),
])
def test_cli_usage_errors(run, capsys: pytest.CaptureFixture[str], argv: list[str],  # type: ignore[no-untyped-def]
                          needle: str) -> None:
    try:
        code, _, err = run(*argv)
    except SystemExit as exc:  # argparse's own errors
        code, err = int(exc.code or 0), capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert needle in err
    assert "Traceback" not in err


# -- the real releases ------------------------------------------------------------------------
def test_sglang_059_to_0523_on_sm120(analysis_059, analysis_0523) -> None:  # type: ignore[no-untyped-def]
    """SGLang-only, the conftest results (every standard arch) cut to sm120."""
    diff = compare(analysis_059.result, analysis_0523.result, archs=["sm120"])
    assert diff.archs == ["sm120"]
    by_option = {o.option: o for o in diff.options}
    moe = by_option["--moe-runner-backend"]
    added = {c.choice: c.verdicts[0].verdict for c in moe.added}
    # new in 0.5.23: the marlin runners run on sm120, hpc_ops and megamoe are gated off it
    assert added["marlin"] is S and added["experimental_sgl_marlin"] is S
    assert added["hpc_ops"] is B and added["megamoe"] is B
    assert {"flashinfer_trtllm_routed", "flashinfer_megamoe", "lora_triton"} <= set(added)
    assert moe.removed == []
    changes = {(c.option, c.choice): c for c in diff.cells("changed")}
    cutlass = changes[("--moe-runner-backend", "cutlass")]
    assert (cutlass.old.verdict, cutlass.new.verdict) == (B, S)
    assert cutlass.old_deciding is not None
    assert cutlass.old_deciding.path == "sglang/srt/layers/quantization/fp8.py"
    trtllm = changes[("--fp8-gemm-backend", "flashinfer_trtllm")]
    assert trtllm.direction == "worse" and trtllm.new.verdict is B
    for option in ("--attention-backend", "--decode-attention-backend",
                   "--prefill-attention-backend"):
        mha = changes[(option, "trtllm_mha")]
        assert (mha.old.verdict, mha.new.verdict) == (B, S)
        assert {c.choice for c in by_option[option].removed} == {"cutlass_mla",
                                                                  "dual_chunk_flash_attn"}
    assert by_option["--nsa-prefill-backend"].status == "removed"
    assert by_option["--dsa-prefill-backend"].status == "added"
    out = io.StringIO()
    render_diff_text(diff, out)
    assert "  changed  cutlass  sm120: blocked -> supported  (better)" in out.getvalue()
