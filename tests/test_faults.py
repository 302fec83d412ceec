"""Fault isolation: an exception inside one unit of work (an option definition,
a guard's meaning, a link unit, judging an option, a kernel question) becomes an
``internal-error`` diagnostic naming the scanned file:line and the exception,
and the rest of the scan stands. Each test injects one fault and compares the
scan with a clean one."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixturetree import fixture, line_of, run_scan, verdicts

import guardscan.driver as scan_stage
import guardscan.options.forms.argparse_calls as options_stage
from guardscan.acquire import SourceTree
from guardscan.arch import parse_arch
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.kernels.judge import LibraryJudge
from guardscan.link import KernelCall
from guardscan.link.gates import Gates
from guardscan.predicate import TRUE, Tri
from guardscan.results import Diagnostic, ScanResult

MOE = "--moe-runner-backend"
RUNNER = "sglang/srt/layers/moe/runner.py"
SERVER_ARGS = "sglang/srt/server_args.py"


class Injected(RuntimeError):
    """The fault the tests inject."""


def internal_errors(result: ScanResult) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.code == "internal-error"]


def only_internal_error(result: ScanResult) -> Diagnostic:
    found = internal_errors(result)
    assert len(found) == 1, found
    assert "Injected: injected" in found[0].message, found[0]
    assert "the rest of the scan stands" in found[0].message
    return found[0]


def test_clean_scans_report_no_internal_error() -> None:
    assert internal_errors(run_scan(fixture("roles_gate"))) == []


def test_a_guard_that_raises_is_unknown_and_reported_at_its_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clean = verdicts(run_scan(fixture("roles_gate"), option=MOE))
    original = Vocabulary._predicate

    def faulty(self, text, rel, scope, line):  # type: ignore[no-untyped-def]
        if "is_sm100_supported" in text:
            raise Injected("injected")
        return original(self, text, rel, scope, line)

    monkeypatch.setattr(Vocabulary, "_predicate", faulty)
    result = run_scan(fixture("roles_gate"), option=MOE)
    error = only_internal_error(result)
    assert (error.path, error.line) == (
        RUNNER, line_of(fixture("roles_gate") / RUNNER, "not is_sm100_supported()"))
    assert "guard `" in error.message and "is_sm100_supported" in error.message
    faulty_table = verdicts(result)
    # the guard is undecided now: the gate it stands in cannot block
    assert {faulty_table[("x", a)] for a in ("sm90", "sm100", "sm120")} == {"unknown"}
    assert {k: v for k, v in faulty_table.items() if k[0] != "x"} == {
        k: v for k, v in clean.items() if k[0] != "x"}


def test_a_link_unit_that_raises_loses_only_its_own_findings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = Gates.scan_file

    def faulty(self, rel):  # type: ignore[no-untyped-def]
        if rel == RUNNER:
            raise Injected("injected")
        return original(self, rel)

    monkeypatch.setattr(Gates, "scan_file", faulty)
    result = run_scan(fixture("roles_gate"), option=MOE)
    error = only_internal_error(result)
    assert error.path == RUNNER and "link unit `file`" in error.message
    assert set(verdicts(result).values()) == {"unknown"}


def test_an_option_definition_that_raises_leaves_the_other_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = options_stage.recognise_argparse_option

    def faulty(names, facts, call, *args, **kwargs):  # type: ignore[no-untyped-def]
        if any("--attention-backend" in a for a in call.args):
            raise Injected("injected")
        return original(names, facts, call, *args, **kwargs)

    monkeypatch.setattr(options_stage, "recognise_argparse_option", faulty)
    result = run_scan(fixture("roles_gate"))
    error = only_internal_error(result)
    assert (error.path, error.line) == (
        SERVER_ARGS, line_of(fixture("roles_gate") / SERVER_ARGS, '"--attention-backend"') - 1)
    flags = {b.option for b in result.backends}
    assert "--attention-backend" not in flags and MOE in flags
    assert verdicts(result, MOE)[("x", "sm90")] == "blocked"


def test_judging_an_option_that_raises_leaves_it_unknown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = scan_stage.judge

    def faulty(index, links, option, *args, **kwargs):  # type: ignore[no-untyped-def]
        if option.flag == MOE:
            raise Injected("injected")
        return original(index, links, option, *args, **kwargs)

    monkeypatch.setattr(scan_stage, "judge", faulty)
    result = run_scan(fixture("roles_gate"))
    error = only_internal_error(result)
    assert error.path == SERVER_ARGS and f"judging {MOE}" in error.message
    assert set(verdicts(result, MOE).values()) == {"unknown"}
    assert len(verdicts(result, MOE)) == 5 * 9  # every choice on every arch, none lost
    assert verdicts(result, "--attention-backend")  # the other options were judged


def test_a_kernel_question_that_raises_is_unknown_and_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).resolve().parent.parent / "fixtures" / "kernels_decorator"
    files = tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")))
    judge = LibraryJudge(Index(SourceTree(root, "flashinfer", "0.0.0", files, str(root))))
    good = KernelCall(MOE, TRUE, "flashinfer.gemm.mm_fp8", RUNNER, 7)
    bad = KernelCall(MOE, TRUE, "flashinfer.gemm.mm_fp4", RUNNER, 9)
    original = LibraryJudge._compute

    def faulty(self, target, backend, arch, args=None):  # type: ignore[no-untyped-def]
        if target == bad.target:
            raise Injected("injected")
        return original(self, target, backend, arch, args)

    monkeypatch.setattr(LibraryJudge, "_compute", faulty)
    sm90 = parse_arch("sm90")
    assert judge.support(bad, sm90) == (Tri.UNKNOWN, [])
    assert judge.support(good, sm90)[0] is Tri.TRUE
    [error] = judge.diagnostics()
    assert (error.path, error.line, error.code) == (RUNNER, 9, "internal-error")
    assert "flashinfer.gemm.mm_fp4" in error.message and "Injected: injected" in error.message
