"""C++/CUDA capability checks (``guardscan.cpp``, ``guardscan.kernels.cpp_checks``):
per-file facts from snippets, conditions as predicates, and the fixture tree
``fixtures/kernels_cpp/`` linked from Python through a JIT spec's exports."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from guardscan.acquire import SourceTree
from guardscan.arch import parse_arch, standard_archs
from guardscan.cpp import CppLibrary, condition_predicate, read_cpp
from guardscan.index import Index
from guardscan.kernels.judge import LibraryJudge
from guardscan.link import KernelCall
from guardscan.predicate import TRUE, Context

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "kernels_cpp"


def _row(text: str, sm: set[str] = frozenset(), major: set[str] = frozenset(),  # type: ignore[assignment]
         minor: set[str] = frozenset(), constants: dict[str, int] | None = None) -> str:
    pred = condition_predicate(text, set(sm), set(major), set(minor), constants or {})
    assert pred is not None, text
    return " ".join(pred.evaluate(Context(arch=a)).value[0].upper() for a in standard_archs())


#: condition, names, the row over sm80 sm86 sm89 sm90 sm100 sm103 sm110 sm120 sm121
CONDITIONS = [
    ("mSM == kSM_100 || mSM == kSM_103", {"sm": {"mSM"}}, "F F F F T T F F F"),
    ("sm_version >= 90", {"sm": {"sm_version"}}, "F F F T T T T T T"),
    ("90 <= sm_version", {"sm": {"sm_version"}}, "F F F T T T T T T"),
    ("getSMVersion() == 120", {}, "F F F F F F F T F"),
    ("major == 10 && (minor == 0 || minor == 3 || minor == 7)",
     {"major": {"major"}, "minor": {"minor"}}, "F F F F T T F F F"),
    ("prop.major >= 9", {}, "F F F T T T T T T"),
    ("!(mSM == kSM_100)", {"sm": {"mSM"}}, "T T T T F T T T T"),
    # a part not about the device stays unknown: FALSE only where the device part decides
    ("mSM == kSM_100 && dtype == 3", {"sm": {"mSM"}}, "F F F F U F F F F"),
    ("mSM == kSM_100 || use_fallback", {"sm": {"mSM"}}, "U U U U T U U U U"),
]


@pytest.mark.parametrize(("text", "names", "row"), CONDITIONS, ids=[c[0] for c in CONDITIONS])
def test_condition_truth(text: str, names: dict[str, set[str]], row: str) -> None:
    assert _row(text, constants={"kSM_100": 100, "kSM_103": 103}, **names) == row


@pytest.mark.parametrize("text", ["dtype == 3", "num_heads % 2 == 0", "mSM == kSM_999"])
def test_conditions_not_about_the_device(text: str) -> None:
    # kSM_999 is defined nowhere read: not a number, so not a device test
    assert condition_predicate(text, {"mSM"}, set(), set(), {}) is None


def test_file_facts_of_the_launcher() -> None:
    rel = "flashinfer/data/csrc/fmha_launcher.cu"
    facts = read_cpp(rel, (FIXTURE / rel).read_bytes())
    assert facts.failed == ""
    assert [(e.name, e.function, e.line) for e in facts.exports] == [
        ("fmha_paged_decode", "fmha_paged_decode", 34), ("fmha_plan", "fmha_plan", 35)]
    assert facts.includes == ("flashinfer/runner.cuh",)
    by_name = {f.name: f for f in facts.functions}
    # the cache lookup's miss branch builds what a hit returns: not conditional
    assert [(c.callee, c.conditional) for c in by_name["get"].calls
            if c.callee == "FmhaRunner"] == [("FmhaRunner", False)]
    [check] = by_name["fmha_plan"].checks
    assert (check.macro, check.condition, check.line) == ("TVM_FFI_ICHECK_GE", "major >= 9", 30)
    assert by_name["fmha_plan"].major_names == ("major",)


def test_file_facts_of_the_runner_header() -> None:
    rel = "flashinfer/data/include/flashinfer/runner.cuh"
    facts = read_cpp(rel, (FIXTURE / rel).read_bytes())
    ctor = next(f for f in facts.functions if f.name == "FmhaRunner")
    assert (ctor.owner, ctor.sm_names) == ("FmhaRunner", ("mSM",))
    assert [(c.condition, c.line, c.conditional) for c in ctor.checks] == [
        ("mSM == kSM_100 || mSM == kSM_103", 7, False), ("mDtype == 1", 8, False)]
    run = next(f for f in facts.functions if f.name == "run")
    assert [(c.line, c.conditional) for c in run.checks] == [(13, True)]


@pytest.mark.parametrize(("data", "reason"), [
    ((FIXTURE / "flashinfer/data/csrc/broken.cu").read_bytes(),
     "the C++ grammar cannot read most of it"),
    (b"\x7fELF\x00\x01\x02", "not text (a NUL byte)"),
])
def test_unreadable_files_give_no_facts(data: bytes, reason: str) -> None:
    facts = read_cpp("x.cu", data)
    assert (facts.failed, facts.functions, facts.exports) == (reason, (), ())


def test_truncated_file_keeps_what_it_can() -> None:
    rel = "flashinfer/data/csrc/fmha_launcher.cu"
    facts = read_cpp(rel, (FIXTURE / rel).read_bytes()[:700])
    assert facts.failed == "" and facts.exports == ()


def _judge(cache: Path | None = None) -> LibraryJudge:
    files = tuple(sorted(p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*.py")))
    tree = SourceTree(root=FIXTURE, package="flashinfer", version="0.0.0", files=files,
                      origin=str(FIXTURE))
    return LibraryJudge(Index(tree, cache))


def _support(judge: LibraryJudge, function: str) -> dict[str, str]:
    return {a: judge.library.support(function, parse_arch(a))[0].value
            for a in ("sm90", "sm100", "sm103", "sm120")}


def test_an_export_reached_through_a_cache_and_a_constructor() -> None:
    judge = _judge()
    function = "flashinfer.attention.fmha_decode"
    assert _support(judge, function) == {"sm90": "false", "sm100": "true", "sm103": "true",
                                         "sm120": "false"}
    _, chain = judge.library.support(function, parse_arch("sm120"))
    last = chain[-1]
    assert (last.path, last.line, last.kind, last.tier) == (
        "flashinfer/data/include/flashinfer/runner.cuh", 7, "cpp-check", "a")
    assert "fmha_paged_decode -> paged_launcher -> get -> FmhaRunner" in last.note


def test_a_deny_list_and_a_conditional_call_decide_nothing() -> None:
    judge = _judge()
    # TVM_FFI_ICHECK_GE(major, 9): rejects older archs, says nothing about newer ones
    assert _support(judge, "flashinfer.attention.plan_only") == {
        "sm90": "unknown", "sm100": "unknown", "sm103": "unknown", "sm120": "unknown"}
    # called only `if enabled`: the check holds only where that does
    assert set(_support(judge, "flashinfer.attention.sage_quant").values()) == {"unknown"}


def test_a_file_the_grammar_cannot_read_is_one_diagnostic() -> None:
    """Reported once an answer depends on it (the export table read it), on
    every arch asked, and once."""
    judge = _judge()
    assert judge.diagnostics() == []
    call = KernelCall("attention_backend", TRUE, "flashinfer.attention.fmha_decode",
                      "sglang/srt/layers/attention/x.py", 1)
    for arch in ("sm120", "sm90"):
        judge.support(call, parse_arch(arch))
        found = [(d.path, d.code) for d in judge.diagnostics()]
        assert found == [("flashinfer/data/csrc/broken.cu", "cpp-parse-failed")]


def test_facts_are_cached_per_file_content(tmp_path: Path) -> None:
    library = CppLibrary(FIXTURE, "flashinfer", tmp_path)
    rel = "flashinfer/data/csrc/other.cu"
    first = library.facts(rel)
    assert len(list((tmp_path / "cpp").rglob("*.json"))) == 1
    again = CppLibrary(FIXTURE, "flashinfer", tmp_path).facts(rel)
    assert again == first
    # nothing is written outside the cache
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpp"]


def test_a_source_outside_the_wheel_is_not_read() -> None:
    library = CppLibrary(FIXTURE, "flashinfer")
    assert library.source_rel("../../../etc/passwd") is None
    assert library.source_rel("fmha_launcher.cu") == "flashinfer/data/csrc/fmha_launcher.cu"


@pytest.mark.parametrize("module", ["arch_if", "sm_switch"])
def test_guard_form_examples(module: str) -> None:
    mod = importlib.import_module(f"guardscan.cpp.{module}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0


def test_file_facts_of_arch_stubs_launches_and_switches() -> None:
    rel = "flashinfer/data/csrc/fp4_quant.cu"
    facts = read_cpp(rel, (FIXTURE / rel).read_bytes())
    by_name = {f.name: f for f in facts.functions}
    # the trap stub is a check; the fallback is not
    assert [(c.macro, c.condition, c.line, c.conditional) for c in by_name["to_e2m1"].checks] == [
        ("#if __CUDA_ARCH__", "(defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000))", 3, False)]
    assert by_name["to_half"].checks == ()
    # a <<<>>> launch and cudaLaunchKernelEx both call the kernel
    assert "quantize_kernel" in [c.callee for c in by_name["fp4_quantize"].calls]
    assert "quantize_kernel" in [c.callee for c in by_name["fp4_quantize_ex"].calls]
    [switch] = by_name["sm_dispatch"].checks
    assert (switch.macro, switch.condition, switch.line) == ("switch", "sm == 90 || sm == 100", 40)


@pytest.mark.parametrize(("function", "row"), [
    # launch -> kernel -> device function whose code exists for sm100+ only
    ("flashinfer.attention.fp4_quantize",
     {"sm90": "false", "sm100": "unknown", "sm103": "unknown", "sm120": "unknown"}),
    ("flashinfer.attention.fp4_quantize_ex",
     {"sm90": "false", "sm100": "unknown", "sm103": "unknown", "sm120": "unknown"}),
    # the switch allows 90 and 100; the launch after it traps on 90
    ("flashinfer.attention.dispatch_by_sm",
     {"sm90": "false", "sm100": "true", "sm103": "false", "sm120": "false"}),
])
def test_arch_stubs_and_switches_decide_through_the_launch(function: str,
                                                           row: dict[str, str]) -> None:
    judge = _judge()
    assert _support(judge, function) == row
    _, chain = judge.library.support(function, parse_arch("sm90"))
    assert chain[-1].path == "flashinfer/data/csrc/fp4_quant.cu" and chain[-1].kind == "cpp-check"


def _preorder(node: object) -> list[tuple[str, int, int]]:
    """Every node under ``node``, parents first, children left to right,
    read through ``children`` (the walk's reference)."""
    out = [(node.type, node.start_byte, node.end_byte)]  # type: ignore[attr-defined]
    for child in node.children:  # type: ignore[attr-defined]
        out.extend(_preorder(child))
    return out


def test_the_walk_visits_every_node_in_source_order_and_stays_in_its_subtree() -> None:
    """``_walk`` moves a cursor (one node object at a time) and yields what a
    recursion over ``children`` yields; walking a function stops at its end."""
    from guardscan.cpp.facts import _parser, _walk

    data = (b"#include <x.h>\nint a[] = {1, 2, 3};\n"
            b"void f(int n) { if (n > 0) { g(n); } else { h(); } }\n"
            b"void k() { m(); }\n")
    root = _parser().parse(data).root_node
    walked = [(n.type, n.start_byte, n.end_byte) for n in _walk(root)]
    assert walked == _preorder(root)
    assert len(walked) > 40
    function = next(n for n in root.children if n.type == "function_definition")
    inside = [(n.type, n.start_byte, n.end_byte) for n in _walk(function)]
    assert inside == _preorder(function)
    assert inside[0] == ("function_definition", function.start_byte, function.end_byte)
    assert all(function.start_byte <= start and end <= function.end_byte
               for _, start, end in inside)
    leaf = next(n for n in _walk(root) if n.type == "number_literal")
    assert [n.type for n in _walk(leaf)] == ["number_literal"]
