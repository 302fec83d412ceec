"""Judging split over two forked processes (``verdict.split``) gives what one
process gives: the same verdicts in the same order, the same memo of judged
choices, faults, kernel questions (asked again here, in option order) and
reads; and where a child fails or got another answer, its options are judged
here."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from guardscan.acquire import SourceTree
from guardscan.arch import Arch, parse_arch, parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.index import Index
from guardscan.link import KernelCall
from guardscan.messages import internal_error
from guardscan.predicate import TRUE, Tri
from guardscan.results import BackendVerdict, Evidence, OptionInfo, Verdict
from guardscan.verdict.model import Judged, KernelJudge
from guardscan.verdict.split import can_fork, judge_options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SM90 = parse_arch("sm90")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")


class _Judge(KernelJudge):
    """Answers each question with ``answer(target)``; records every question
    asked in this process, in order."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer or (lambda target: Tri.TRUE)
        self.asked: list[tuple[str, str, str]] = []
        self.option = ""

    def covers(self, call: KernelCall) -> bool:
        return True

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        self.asked.append((self.option, call.target, arch.name))
        return self.answer(call.target), []


class _Memo:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    def reuse(self, dest: str, choice: str) -> Judged | None:
        return None

    def keep(self, dest: str, choice: str, judged: Judged) -> None:
        self.log.append(("keep", dest, choice, judged.verdicts[0].verdict.value))

    def forget(self, dest: str) -> None:
        self.log.append(("forget", dest))


OPTIONS = [OptionInfo(f"--o{n}-backend", f"o{n}_backend", ("a", "b"), "sglang/x.py", n)
           for n in range(6)]


def _judge_one(option: OptionInfo, kernels: KernelJudge | None, memo: Any,
               faults: list[Any]) -> list[BackendVerdict]:
    out = []
    for choice in option.choices:
        call = KernelCall(option.dest, TRUE, f"flashinfer.{option.dest}_{choice}", "x.py", 1)
        answer, _ = kernels.support(call, SM90) if kernels is not None else (Tri.UNKNOWN, [])
        verdict = BackendVerdict(option.flag, choice, "sm90", None,
                                 Verdict.SUPPORTED if answer is Tri.TRUE else Verdict.UNKNOWN)
        if memo is not None:
            memo.keep(option.dest, choice, Judged((), (), [verdict]))
        out.append(verdict)
    if option.line == 3:
        faults.append((option.flag, internal_error("sglang/x.py", 3, "judging", ValueError())))
    return out


def _run(split: bool, judge_one: Any = _judge_one, answer: Any = None,
         ) -> tuple[list[BackendVerdict], list[Any], list[Any], list[Any]]:
    judge, memo, faults = _Judge(answer), _Memo(), []  # type: ignore[var-annotated]

    def named(option: OptionInfo) -> None:
        judge.option = option.flag

    index = Index(SourceTree(Path("."), "sglang", None, (), "test"))
    out = judge_options(OPTIONS, judge_one, lambda: [1, 5, 1, 9, 2, 3], index, judge, memo, faults,
                        named, split=split)
    return out, memo.log, faults, judge.asked


def test_split_gives_the_serial_verdicts_memo_faults_and_questions(
        judged_here: list[str]) -> None:
    serial = _run(split=False)
    assert len(serial[0]) == 12 and len(serial[2]) == 1
    judged_here.clear()
    assert _run(split=True) == serial
    assert judged_here == []


def test_a_child_that_dies_leaves_its_options_to_this_process() -> None:
    me = os.getpid()

    def dies_in_a_child(option: OptionInfo, *rest: Any) -> list[BackendVerdict]:
        if os.getpid() != me and option.line == 1:
            os._exit(3)
        return _judge_one(option, *rest)

    assert _run(split=True, judge_one=dies_in_a_child) == _run(split=False)


def test_an_answer_that_differs_here_judges_that_option_and_later_ones_here() -> None:
    me = os.getpid()

    def answer(target: str) -> Tri:
        # a child sees another answer for o2's questions than this process
        return Tri.UNKNOWN if target.startswith("flashinfer.o2") and os.getpid() != me \
            else Tri.TRUE

    out, _, _, asked = _run(split=True, answer=answer)
    assert out == _run(split=False, answer=answer)[0]
    assert all(v.verdict is Verdict.SUPPORTED for v in out)
    # o2's first question is asked once again by the judging here
    assert asked.count(("--o2-backend", "flashinfer.o2_backend_a", "sm90")) == 2


def test_what_a_child_read_is_recorded_here(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "x.py").write_text("a = 1\nb = 2\n")
    index = Index(SourceTree(root, "sglang", None, ("sglang/x.py",), "test"))
    me = os.getpid()

    def reads(option: OptionInfo, *rest: Any) -> list[BackendVerdict]:
        if os.getpid() != me:
            index.line_text("sglang/x.py", 2)
        return _judge_one(option, *rest)

    judge_options(OPTIONS, reads, lambda: [1] * 6, index, _Judge(), None, [], lambda o: None,
                  split=True)
    assert index.lines_read == {"sglang/x.py": {2: "b = 2"}}


def _scan(tree: Path, cache: Path, split: bool, options: list[str] | None = None) -> str:
    result = analyse(ScanOptions(target=str(tree), flashinfer=str(tree), options=options,
                                 archs=parse_arch_list(["sm90,sm100,sm120"]), cache_dir=cache,
                                 offline=True, split=split)).result
    return json.dumps(result.to_json(), sort_keys=True)


@pytest.mark.skipif(not can_fork(), reason="cannot fork here")
def test_a_split_scan_is_the_serial_scan(tmp_path: Path, judged_here: list[str]) -> None:
    """gate_hook with its own kernel library: the report, each option's
    narrowed report from the stored result (who owns each diagnostic: the
    kernel questions asked again here), and the scan after an edit (judged
    choices taken from the stored record)."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gate_hook", tree)
    runs = {}
    for split in (False, True):
        cache = tmp_path / f"cache-{split}"
        judged_here.clear()
        full = _scan(tree, cache, split)
        flags = sorted({b["option"] for b in json.loads(full)["backends"]})
        assert bool(judged_here) is not split
        runs[split] = (full, [_scan(tree, cache, split, [flag]) for flag in flags])
    assert runs[True] == runs[False]
    assert '"verdict": "unsupported"' in runs[True][0] and len(runs[True][1]) > 1
    # an edit: judged again where it can change a verdict, the rest from the record
    moe = tree / "sglang/srt/layers/moe/runner.py"
    moe.write_text(moe.read_text() + "\n\ndef unused():\n    return 1\n")
    again = {split: _scan(tree, tmp_path / f"cache-{split}", split) for split in (False, True)}
    assert again[True] == again[False] == runs[False][0]

