"""lockfile: the lock's identity of a verdict (no line numbers), its byte-stable text,
and the comparison a pre-commit check makes, on hand-made results (no scan)."""

from __future__ import annotations

import json
import random

import pytest

from guardscan.lockfile import (
    FORMAT,
    Comparison,
    LockError,
    Ref,
    Settings,
    compare,
    describe,
    dumps,
    loads,
    lock_from_result,
)
from guardscan.messages import diagnostic
from guardscan.results import (
    BackendVerdict,
    Diagnostic,
    Evidence,
    PackageRef,
    ScanResult,
    Verdict,
)
from guardscan.verdict import mark_statuses

SETTINGS = Settings(target=Ref("path", "."), archs=("sm100", "sm120"),
                    options=("--moe-runner-backend",), kernels=False)
RUNNER = "sglang/srt/layers/moe/runner.py"
OPTION = Evidence("sglang/srt/server_args.py", 40, "link", "parser.add_argument(",
                  "--moe-runner-backend choices")


def gate(line: int, text: str = 'raise ValueError("x needs SM100")') -> Evidence:
    return Evidence(RUNNER, line, "gate", text, "raises on sm120: capability major in [10]")


def verdict(choice: str, arch: str, v: Verdict, *chain: Evidence) -> BackendVerdict:
    # the chain's statuses as the verdict stage sets them
    return BackendVerdict("--moe-runner-backend", choice, arch, None, v,
                          tuple(mark_statuses([OPTION, *chain], v)))


def unresolved(line: int, text: str, path: str = RUNNER) -> Diagnostic:
    return diagnostic(path, line, "unresolved-guard", text=text,
                      reason=f"cannot read `{text}`")


def result(backends: list[BackendVerdict],
           diagnostics: list[Diagnostic] | None = None) -> ScanResult:
    return ScanResult(guardscan="0.1.0", target=PackageRef("sglang", "0.5.9", "sglang"),
                      archs=["sm100", "sm120"], backends=backends,
                      diagnostics=diagnostics or [])


BASE = result(
    [verdict("x", "sm100", Verdict.SUPPORTED,
             Evidence(RUNNER, 3, "default", 'backend = "x"', "auto resolves to x")),
     verdict("x", "sm120", Verdict.BLOCKED, gate(7)),
     verdict("y", "sm100", Verdict.UNKNOWN),
     verdict("y", "sm120", Verdict.UNKNOWN)],
    [unresolved(12, "cap < 80")])


def lock_of(r: ScanResult = BASE):  # type: ignore[no-untyped-def]
    return lock_from_result(r, SETTINGS)


def test_nothing_changed_is_quiet() -> None:
    comparison = compare(lock_of(), BASE)
    assert comparison.quiet and not comparison.failed
    assert describe(comparison) == []


def test_code_moving_changes_nothing() -> None:
    """Every line number shifts (a new import at the top): the lock still holds."""
    moved = result(
        [verdict("x", "sm100", Verdict.SUPPORTED,
                 Evidence(RUNNER, 30, "default", 'backend = "x"', "auto resolves to x")),
         verdict("x", "sm120", Verdict.BLOCKED, gate(70)),
         verdict("y", "sm100", Verdict.UNKNOWN), verdict("y", "sm120", Verdict.UNKNOWN)],
        [unresolved(120, "cap < 80")])
    assert compare(lock_of(), moved).quiet
    assert dumps(lock_of(moved)) == dumps(lock_of())


@pytest.mark.parametrize(("before", "after", "kind"), [
    (Verdict.UNKNOWN, Verdict.BLOCKED, "regressions"),
    (Verdict.SUPPORTED, Verdict.UNSUPPORTED, "regressions"),
    (Verdict.UNKNOWN, Verdict.UNSUPPORTED, "regressions"),
    (Verdict.BLOCKED, Verdict.UNKNOWN, "better"),
    (Verdict.UNSUPPORTED, Verdict.SUPPORTED, "better"),
    (Verdict.SUPPORTED, Verdict.UNKNOWN, "changed"),
    (Verdict.BLOCKED, Verdict.UNSUPPORTED, "changed"),
])
def test_verdict_moves(before: Verdict, after: Verdict, kind: str) -> None:
    """Only safe -> unsafe fails; everything else is reported and passes."""
    chain = {Verdict.BLOCKED: (gate(7),), Verdict.UNSUPPORTED: (
        Evidence("flashinfer/gemm.py", 9, "kernel", "@supported_compute_capability([100])",
                 "decorator: capability in [100]"),),
        Verdict.SUPPORTED: (Evidence(RUNNER, 3, "default", 'backend = "x"'),),
        Verdict.UNKNOWN: ()}
    old = result([verdict("y", "sm120", before, *chain[before])])
    new = result([verdict("y", "sm120", after, *chain[after])])
    comparison = compare(lock_of(old), new)
    assert [(c.before, c.after) for c in getattr(comparison, kind)] == [(before, after)]
    assert comparison.failed is (kind == "regressions")


def test_regression_message_names_the_deciding_line_and_how_to_accept() -> None:
    new = result([*BASE.backends[:2], verdict("y", "sm100", Verdict.UNKNOWN),
                  verdict("y", "sm120", Verdict.BLOCKED, gate(21, "assert not is_sm120()"))],
                 BASE.diagnostics)
    comparison = compare(lock_of(), new)
    lines = describe(comparison, ".guardscan.json", lambda p: "python/" + p)
    assert lines[0] == (f"python/{RUNNER}:21: --moe-runner-backend y on sm120: "
                        "unknown -> blocked (assert not is_sm120())")
    assert lines[-2] == "guardscan: 1 verdict(s) worse than .guardscan.json."
    assert "`guardscan baseline`" in lines[-1] and "commit it" in lines[-1]


def test_same_verdict_another_deciding_line_is_a_change_that_passes() -> None:
    new = result([BASE.backends[0], verdict("x", "sm120", Verdict.BLOCKED,
                                            gate(7, "assert is_sm100()")), *BASE.backends[2:]],
                 BASE.diagnostics)
    comparison = compare(lock_of(), new)
    assert [c.choice for c in comparison.changed] == ["x"] and not comparison.failed


def test_new_unresolved_guard_fails_with_its_line() -> None:
    new = result(BASE.backends, [*BASE.diagnostics, unresolved(30, "dc < 90")])
    comparison = compare(lock_of(), new)
    assert [d.line for d in comparison.new_unresolved] == [30] and comparison.failed
    assert describe(comparison)[0] == (f"{RUNNER}:30: new arch guard guardscan cannot "
                                       "resolve: `dc < 90` (cannot read `dc < 90`)")


def test_unresolved_guards_count_as_a_multiset() -> None:
    """A second copy of a guard the lock already holds is new; one gone is reported."""
    twice = result(BASE.backends, [unresolved(12, "cap < 80"), unresolved(40, "cap < 80")])
    assert [d.line for d in compare(lock_of(), twice).new_unresolved] == [40]
    none = compare(lock_of(twice), result(BASE.backends, []))
    assert not none.failed and len(none.resolved) == 2


def test_new_and_gone_choices_pass() -> None:
    new = result([*BASE.backends[:2], verdict("z", "sm120", Verdict.BLOCKED, gate(9))],
                 BASE.diagnostics)
    comparison = compare(lock_of(), new)
    assert [c.choice for c in comparison.added] == ["z"]
    assert [(e.choice, e.arch) for e in comparison.gone] == [("y", "sm100"), ("y", "sm120")]
    assert not comparison.failed
    assert any(line.startswith("note: 1 verdict(s) new") for line in describe(comparison))


def test_text_is_byte_stable_and_ordered() -> None:
    """The order verdicts and diagnostics come in never reaches the file."""
    shuffled = list(BASE.backends)
    random.Random(7).shuffle(shuffled)
    text = dumps(lock_of())
    assert dumps(lock_of(result(shuffled, list(reversed(BASE.diagnostics))))) == text
    assert text.endswith("}\n") and "\r" not in text
    data = json.loads(text)
    assert data["format"] == FORMAT
    assert list(data["verdicts"]["--moe-runner-backend"]) == ["x", "y"]
    # one line per entry, none of them with a line number
    entry_lines = [line for line in text.splitlines() if '"verdict": ' in line]
    assert len(entry_lines) == 4
    assert '"line"' not in text


def test_round_trip() -> None:
    lock = lock_of()
    again = loads(dumps(lock))
    assert again == lock
    assert compare(again, BASE).quiet


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "is not JSON"),
    ('{"format": 99, "verdicts": {}}', "has format 99"),
    ('{"format": 2, "verdicts": {}}', "not a guardscan lock file"),
    ('{"format": 1, "verdicts": {}}', "has format 1"),
    ("[]", "not a guardscan lock file"),
])
def test_unreadable_lock_is_one_line(text: str, says: str) -> None:
    with pytest.raises(LockError) as info:
        loads(text, "x.json")
    assert says in str(info.value) and "\n" not in str(info.value)
    assert "guardscan baseline" in str(info.value)


def test_empty_comparison_is_quiet() -> None:
    assert Comparison().quiet
