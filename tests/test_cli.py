"""cli: ``main(argv)`` on the fixture trees: the table, the JSON contract's
top-level keys, one-line usage errors with exit 2, ``explain``, ``--fail-on``
and ``--help``. Never reads a kernel library or the user's cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixturetree import fixture, line_of

from guardscan.cli import main
from guardscan.results import ExitCode

GATE = str(fixture("roles_gate"))
RUNNER = "sglang/srt/layers/moe/runner.py"
TOP_LEVEL = {"schema", "guardscan", "target", "kernels", "archs", "quantization", "backends",
             "diagnostics"}
TOP_LEVEL_OPTIONAL = {"notes"}
VERDICT_KEYS = {"option", "choice", "arch", "quantization", "verdict", "safe_to_try",
                "evidence"}
VERDICT_OPTIONAL = {"platform", "conditions"}


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_cache: Path) -> None:
    """Every test gets an empty $GUARDSCAN_CACHE_DIR (see conftest.tmp_cache)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--no-kernels", "--offline", "-q"])
    out, err = capsys.readouterr()
    return int(code), out, err


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, GATE, "--arch", "sm90,sm100", "--option",
                         "--moe-runner-backend", "--verbose")
    assert code == ExitCode.OK == 0, err
    assert err == ""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip() == "--moe-runner-backend")
    assert lines[header + 1].split() == ["choice", "sm90", "sm100"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[header + 2:header + 7]}
    assert rows == {"auto": ["unknown", "unknown"], "triton": ["unknown", "unknown"],
                    "x": ["blocked", "supported"], "y": ["unknown", "unknown"],
                    "w": ["unknown", "unknown"]}
    assert "guardscan explain" in out


def test_table_every_option_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, GATE, "--arch", "H100", "--verbose")
    assert code == 0
    for flag in ("--moe-runner-backend", "--attention-backend", "--fp8-gemm-backend"):
        assert flag in out.splitlines()
    assert "--quantization" not in out.splitlines()


def test_summary_leads_with_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, GATE, "--arch", "sm100,sm90", "--option",
                         "--moe-runner-backend")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("guardscan ") and "on sm90 sm100" in lines[0]
    block = "\n".join(lines[lines.index(next(x for x in lines
                                              if x.startswith("--moe-runner-backend"))):])
    raise_line = line_of(fixture("roles_gate") / RUNNER, "raise ValueError")
    assert re.search(rf"^  sm90:\n    try .*\n    avoid  x \(blocked\): {RUNNER}:{raise_line}$",
                     block, re.MULTILINE), block
    assert re.search(r"^  sm100:\n    try    x \(supported\); auto, triton, y, w \(unknown\)$",
                     block, re.MULTILINE), block
    assert all(len(line) <= 100 for line in lines)
    assert "\033[" not in out  # not a terminal: no colour


def test_no_arch_uses_the_local_gpu(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import guardscan.arch

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nprintf '9.0\\n9.0\\n'\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", str(fake))
    code, out, _ = run(capsys, GATE, "--option", "--moe-runner-backend", "--format", "json")
    assert code == 0 and json.loads(out)["archs"] == ["sm90"]
    code, out, _ = run(capsys, GATE, "--option", "--moe-runner-backend")
    assert "on sm90 (H100, H200, ...) (the local GPU (nvidia-smi))" in out.splitlines()[0]


def test_no_arch_and_no_gpu_means_every_standard_arch(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, GATE, "--option", "--moe-runner-backend")
    assert code == 0
    header = " ".join(out.split("\n\n", 1)[0].split())
    assert "sm80 sm86 sm89 sm90 sm100 sm103 sm110 sm120 sm121" in header
    assert "no --arch, no nvidia-smi: every standard arch" in header


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, GATE, "--arch", "sm90", "--arch", "B200", "--format", "json",
                         "--option", "--moe-runner-backend")
    assert code == 0, err
    data = json.loads(out)
    assert TOP_LEVEL <= set(data) <= TOP_LEVEL | TOP_LEVEL_OPTIONAL
    assert data["archs"] == ["sm90", "sm100"]
    assert data["quantization"] is None
    assert data["kernels"] == []
    assert data["target"]["package"] == "sglang"
    assert Path(data["target"]["path"]).name == "sglang"
    assert len(data["backends"]) == 5 * 2
    for entry in data["backends"]:
        assert VERDICT_KEYS <= set(entry) <= VERDICT_KEYS | VERDICT_OPTIONAL
        assert entry["safe_to_try"] is (entry["verdict"] in ("supported", "unknown"))
        assert entry["evidence"][0]["role"] == "link"
    by_key = {(b["choice"], b["arch"]): b for b in data["backends"]}
    assert by_key[("x", "sm90")]["verdict"] == "blocked"
    assert by_key[("x", "sm100")]["verdict"] == "supported"
    gate = by_key[("x", "sm90")]["evidence"][-1]
    assert (gate["path"], gate["line"], gate["role"]) == (
        RUNNER, line_of(fixture("roles_gate") / RUNNER, "raise ValueError"), "gate")
    assert set(gate) == {"path", "line", "role", "text", "note", "kind", "status", "args"}
    assert (gate["kind"], gate["status"], gate["args"]["effect"]) == ("gate", "decides",
                                                                     "raises")


def test_json_lists_diagnostics(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(fixture("guards_unresolved")), "--arch", "sm90",
                       "--format", "json")
    assert code == 0
    diagnostics = json.loads(out)["diagnostics"]
    assert {"path": RUNNER, "line": 7, "code": "unresolved-guard"}.items() <= \
        diagnostics[0].items()


def test_output_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    code, out, _ = run(capsys, GATE, "--arch", "sm90", "--format", "json", "-o", str(target))
    assert code == 0 and out == ""
    assert TOP_LEVEL <= set(json.loads(target.read_text(encoding="utf-8")))


def test_a_report_that_fails_midway_leaves_no_partial_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An internal error while rendering: exit 3, one line, and the file at
    ``-o`` is what it was (absent, or the earlier report), with no temporary
    file left beside it."""
    from guardscan import report

    report._load()

    def broken(result: object, stream: object, options: object) -> None:
        stream.write('{"schema": ' + "x" * 200_000)  # type: ignore[attr-defined]
        raise RuntimeError("renderer bug")

    monkeypatch.setitem(report.RENDERERS, "json", broken)
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "report.json"
    code, _, err = run(capsys, GATE, "--arch", "sm90", "--format", "json", "-o", str(target))
    assert code == ExitCode.INTERNAL and "renderer bug" in err and len(err.splitlines()) == 1
    assert list(folder.iterdir()) == []
    target.write_text("earlier report\n", encoding="utf-8")
    target.chmod(0o644)
    code, _, _ = run(capsys, GATE, "--arch", "sm90", "--format", "json", "-o", str(target))
    assert code == ExitCode.INTERNAL
    assert target.read_text(encoding="utf-8") == "earlier report\n"
    assert [p.name for p in folder.iterdir()] == ["report.json"]


def test_a_report_file_is_made_as_open_would_make_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import os

    target = tmp_path / "report.txt"
    umask = os.umask(0o022)
    try:
        code, _, _ = run(capsys, GATE, "--arch", "sm90", "-o", str(target))
    finally:
        os.umask(umask)
    assert code == 0 and target.stat().st_mode & 0o777 == 0o644
    assert "--moe-runner-backend" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ([GATE, "--arch", "banana"], "banana"),
        ([GATE, "--arch", "sm12"], "did you mean sm120 or sm121?"),
        ([GATE, "--arch", "sm210"], "sm210"),
        ([GATE, "--arch", "sm90,banana"], "banana"),
        (["/nonexistent/guardscan/target"], "/nonexistent/guardscan/target"),
        ([GATE, "--option", "--no-such-backend"], "--no-such-backend"),
        ([GATE, "--quantization", "nope"], "nope"),
        (["explain", "x", "--arch", "banana", GATE], "banana"),
        (["explain", "x", "/nonexistent/guardscan/target"], "/nonexistent/guardscan/target"),
    ],
    ids=["bad-arch", "arch-typo", "arch-unknown-number", "bad-arch-in-list", "no-such-path", "unknown-option",
         "unknown-quantization", "explain-bad-arch", "explain-no-such-path"],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("guardscan: error:") and needle in err
    assert "Traceback" not in err


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                         "--arch", "sm90", GATE)
    assert code == 0, err
    assert "--moe-runner-backend x on sm90: blocked (safe to try: no)" in out
    hops = re.findall(r"^\s*(\d+)\. \[(\w+)\] (\S+):(\d+)\s", out, re.MULTILINE)
    assert [int(n) for n, _, _, _ in hops] == list(range(1, len(hops) + 1))
    assert len(hops) >= 3
    assert (hops[0][1], hops[0][2]) == ("link", "sglang/srt/server_args.py")
    raise_line = line_of(fixture("roles_gate") / RUNNER, "raise ValueError")
    assert ("gate", RUNNER, str(raise_line)) == hops[-1][1:]
    assert any(role == "guard" and path == "sglang/srt/utils/common.py"
               for _, role, path, _ in hops)


def test_explain_several_archs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                       "--arch", "sm90,sm100", GATE)
    assert code == 0
    assert "x on sm90: blocked" in out and "x on sm100: supported (safe to try: yes)" in out


def test_explain_unknown_choice(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "nonesuch", "--arch", "sm90", GATE)
    assert code == 2
    assert out == ""
    assert err.startswith("guardscan: error: no choice 'nonesuch'") and len(err.splitlines()) == 1
    assert "Traceback" not in out + err


def test_explain_unknown_choice_names_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "tritn", "--option", "--moe-runner-backend",
                         "--arch", "sm90", GATE)
    assert (code, out) == (2, "")
    assert "did you mean triton?" in err and len(err.splitlines()) == 1


def test_explain_json_and_fail_on(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                         "--arch", "sm90,sm100", "--format", "json", GATE)
    assert code == 0, err
    data = json.loads(out)
    assert [(b["arch"], b["verdict"]) for b in data["backends"]] == [
        ("sm90", "blocked"), ("sm100", "supported")]
    blocked = data["backends"][0]
    deciding = blocked["deciding"]
    assert blocked["evidence"][deciding["index"]]["role"] == "gate"
    assert deciding["kind"] and deciding["strength"].startswith("strong")
    assert data["target"]["path"] == "sglang"
    code, _, _ = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                     "--arch", "sm90", "--fail-on", "blocked", GATE)
    assert code == ExitCode.FOUND
    code, _, _ = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                     "--arch", "sm100", "--fail-on", "blocked", GATE)
    assert code == ExitCode.OK


def test_explain_names_the_deciding_fact(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "x", "--option", "--moe-runner-backend",
                       "--arch", "sm90", GATE)
    assert code == 0
    assert ("=> deciding fact: a check in SGLang that raises (raise / assert); strong: "
            "SGLang itself refuses it there") in " ".join(out.split())
    assert all(len(line) <= 100 for line in out.splitlines() if not line.lstrip()[:1].isdigit())


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [(["blocked"], 1), (["unsupported"], 0), (["supported"], 1),
     (["unsupported", "blocked"], 1)],
)
def test_fail_on(capsys: pytest.CaptureFixture[str], fail_on: list[str], expected: int) -> None:
    flags = [part for verdict in fail_on for part in ("--fail-on", verdict)]
    code, out, _ = run(capsys, GATE, "--arch", "sm90,sm100", "--option", "--moe-runner-backend",
                       *flags)
    assert code == expected
    assert "--moe-runner-backend" in out  # the report is still written


def test_fail_on_nothing_blocked(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, GATE, "--arch", "sm100", "--option", "--moe-runner-backend",
                     "--fail-on", "blocked")
    assert code == 0


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    for verdict in ("blocked", "unsupported", "supported", "unknown"):
        assert re.search(rf"^\s+{verdict}\s", out, re.MULTILINE), verdict
    assert "exit codes" in out
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"\b{code} ", out.split("exit codes", 1)[1]), code


def test_explain_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["explain", "--help"])
    assert info.value.code == 0
    assert "path:line" in capsys.readouterr().out
