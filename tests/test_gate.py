"""``guardscan gate``: fail-fast checks for the choices a kernel excludes.

On the fixture tree ``gate_server_args`` (an SGLang-shaped ServerArgs and a
FlashInfer stand-in) and on a copy of the real sglang 0.5.9 with FlashInfer
0.6.3: the diff is printed and nothing written, ``--write`` only inserts
lines, and a fresh scan shows the gated choices ``blocked`` at the new line
while the archs where they run keep their verdicts.
"""

from __future__ import annotations

import difflib
import shutil
import sys
from pathlib import Path

import pytest
import realtrees
from fixturetree import fixture, line_of

from guardscan.acquire import SourceTree
from guardscan.arch import standard_archs
from guardscan.cli import main
from guardscan.driver import ScanOptions, analyse
from guardscan.gate.guards import GuardFunction, choose_guard
from guardscan.gate.placement import Placement
from guardscan.gate.plan import MARK, Check
from guardscan.gate.write import apply_checks, check_source
from guardscan.predicate import Tri
from guardscan.report.answer import deciding_evidence
from guardscan.results import BackendVerdict, Evidence, ScanResult

ARGS = "sglang/srt/server_args.py"


def _copy_fixture(tmp_path: Path) -> Path:
    copy = tmp_path / "gate_server_args"
    shutil.copytree(fixture("gate_server_args"), copy)
    return copy


def _fixture_args(copy: Path, *more: str) -> list[str]:
    return ["gate", str(copy), "--flashinfer", str(copy / "flashinfer"), "--no-cache",
            "--offline", *more]


def _only_inserted(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails if it changes or drops any."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        assert tag in ("equal", "insert"), (
            f"{tag} of {old[i1:i2]!r} -> {new[j1:j2]!r}: only insertions expected")
        if tag == "insert":
            added.extend(new[j1:j2])
    return added


def _verdict(result: ScanResult, option: str, choice: str, arch: str) -> BackendVerdict:
    [found] = [b for b in result.backends
               if (b.option, b.choice, b.arch) == (option, choice, arch)]
    return found


# -- the fixture tree ------------------------------------------------------------


def test_without_write_the_diff_is_printed_and_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_fixture(tmp_path)
    before = (copy / ARGS).read_bytes()
    code = main(_fixture_args(copy, "--arch", "sm120"))
    out = capsys.readouterr().out
    assert code == 0
    assert (copy / ARGS).read_bytes() == before
    assert out.startswith(f"--- a/{ARGS}\n+++ b/{ARGS}\n"), out
    assert '+        if self.moe_runner_backend == "flashinfer_trtllm" and ' \
           'is_sm120_supported():\n' in out
    assert '+        if self.fp4_gemm_runner_backend == "flashinfer_trtllm" and ' \
           'is_sm120_supported():\n' in out
    # the guard is not imported yet: it joins the file's own import of its module
    assert "     is_sm100_supported,\n+    is_sm120_supported,\n )\n" in out
    # the choices that run on sm120 get no check
    assert "flashinfer_cutlass\" and" not in out and "sm120_only\" and" not in out


def test_write_inserts_checks_keeps_the_rest_and_a_rescan_says_blocked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_fixture(tmp_path)
    before = (copy / ARGS).read_text(encoding="utf-8")
    assert main(_fixture_args(copy, "--arch", "sm120", "--write")) == 0
    assert capsys.readouterr().out == f"{ARGS}: 2 check(s) added\n"
    after = (copy / ARGS).read_text(encoding="utf-8")
    added = "".join(_only_inserted(before, after))
    assert added.count("raise ValueError(") == 2 and added.count(MARK) == 2
    assert "    is_sm120_supported,\n" in added
    # where: before the method's first check on the option, and at the top of
    # the validation method for the option no method checks
    trtllm_if = line_of(copy / ARGS, 'self.moe_runner_backend == "flashinfer_trtllm" and')
    assert trtllm_if < line_of(copy / ARGS, 'if self.moe_runner_backend == "flashinfer_cutlass"')
    assert line_of(copy / ARGS, "def check_server_args") + 2 == \
        line_of(copy / ARGS, 'self.fp4_gemm_runner_backend == "flashinfer_trtllm" and')

    result = analyse(ScanOptions(target=str(copy), flashinfer=str(copy / "flashinfer"),
                                 use_cache=False, offline=True, cache_dir=tmp_path / "c")).result
    for arch in ("sm120", "sm121"):
        verdict = _verdict(result, "--moe-runner-backend", "flashinfer_trtllm", arch)
        assert verdict.verdict.value == "blocked", verdict
        deciding = deciding_evidence(verdict)
        assert deciding is not None and (deciding.path, deciding.line) == (ARGS, trtllm_if + 1)
        fp4 = _verdict(result, "--fp4-gemm-backend", "flashinfer_trtllm", arch)
        assert fp4.verdict.value == "blocked"
    for arch in ("sm100", "sm103"):
        assert _verdict(result, "--moe-runner-backend", "flashinfer_trtllm",
                        arch).verdict.value == "supported"
    assert _verdict(result, "--moe-runner-backend", "sm120_only",
                    "sm120").verdict.value == "supported"

    # gated once: a second run finds nothing left to gate and writes nothing
    assert main(_fixture_args(copy, "--arch", "sm120", "--write")) == 0
    assert capsys.readouterr().out.startswith("nothing to gate: ")
    assert (copy / ARGS).read_text(encoding="utf-8") == after


def test_a_choice_no_guard_expresses_is_named_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sm120_only runs on sm120 alone: on sm121 no guard of the tree is true
    there and false on sm120, so it is not gated; the others still are."""
    copy = _copy_fixture(tmp_path)
    code = main(_fixture_args(copy, "--arch", "sm121"))
    captured = capsys.readouterr()
    assert code == 1
    assert "not gated: --moe-runner-backend sm120_only: no guard function" in captured.err
    assert "is_sm120_supported() is also true on sm120" in captured.err
    assert '"flashinfer_trtllm" and is_sm120_supported()' in captured.out


def test_nothing_unsupported_is_nothing_to_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_fixture(tmp_path)
    code = main(_fixture_args(copy, "--arch", "sm100", "--option", "--fp4-gemm-backend"))
    out = capsys.readouterr().out
    assert code == 0
    assert out == "nothing to gate: no choice is unsupported on sm100 (sglang with flashinfer)\n"


def test_write_on_a_spec_is_refused_before_anything_is_fetched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["gate", "--arch", "sm120", "--write", "sglang==0.5.9", "--offline",
                 "--cache-dir", str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--write edits a checkout directory only" in err
    assert not (tmp_path / "empty").exists()


def test_without_libcst_one_line_and_exit_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "libcst", None)  # import libcst raises ImportError
    code = main(["gate", "--arch", "sm120", "sglang==0.5.9", "--offline"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "guardscan: error: guardscan gate needs libcst (a dependency of " \
                  "guardscan, missing here): pip install libcst\n"


def test_libcst_comes_with_guardscan() -> None:
    """``pip install .`` gives every command: libcst is required, not an extra."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    required = {Requirement(r).name for r in requires("guardscan") or []
                if Requirement(r).marker is None}
    assert "libcst" in required


@pytest.mark.parametrize("arch", ["all", "sm100,sm120", "sm12"])
def test_gate_takes_one_known_arch(arch: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "--arch", arch, str(fixture("gate_server_args"))]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# -- the guard choice and the writer ----------------------------------------------


def _guard(name: str, true_on: set[str], unknown_on: frozenset[str] = frozenset(),
           far: Tri = Tri.FALSE, module: str = "") -> GuardFunction:
    truth = tuple((a.name, Tri.UNKNOWN if a.name in unknown_on else Tri.of(a.name in true_on))
                  for a in standard_archs())
    return GuardFunction(name, module, "test", truth, far)


def test_the_guard_is_true_on_the_arch_and_only_where_the_choice_is_excluded() -> None:
    excluded = {"sm80", "sm86", "sm89", "sm90", "sm110", "sm120", "sm121"}
    sm120 = _guard("is_sm120_supported", {"sm120", "sm121"}, module="utils")
    narrow = _guard("is_sm120", {"sm120"})
    blackwell = _guard("is_blackwell_supported", {"sm100", "sm103", "sm110", "sm120", "sm121"})
    newer = _guard("sm_at_least_120", {"sm120", "sm121"}, far=Tri.TRUE)
    undecided = _guard("is_sm120_with_cuda", set(), unknown_on=frozenset({"sm120"}))
    guard, _ = choose_guard([narrow, sm120, blackwell, newer, undecided], "sm120", excluded)
    assert guard is sm120  # true on most excluded archs, never where the choice runs
    guard, near = choose_guard([blackwell, newer, undecided], "sm120", excluded)
    assert guard is None
    assert [n.split("()")[0] for n in near] == ["is_blackwell_supported", "sm_at_least_120",
                                                 "is_sm120_with_cuda"]
    # with two that fit equally, one the file imports already wins
    guard, _ = choose_guard([sm120, _guard("is_sm12x", {"sm120", "sm121"})], "sm120", excluded)
    assert guard is not None and guard.name == "is_sm12x"


def _check(guard: GuardFunction, line: int, dest: str = "moe_runner_backend",
           choice: str = "flashinfer_trtllm") -> Check:
    placement = Placement("m.py", "ServerArgs", "validate", line, "self", "test")
    evidence = Evidence("flashinfer/x.py", 3, "kernel", "@x", "decorator: SM in [100] -> false")
    return Check("--" + dest.replace("_", "-"), dest, choice, guard, placement, evidence,
                 f"--x {choice} does not run on sm120: flashinfer/x.py:3 decorator {MARK}")


SOURCE = '''\
from sglang.srt.utils.common import is_sm100_supported  # keep this comment
import os


class ServerArgs:
    moe_runner_backend: str = "auto"

    def validate(self):
        """Check the arguments."""
        x = 1  # odd   spacing, kept
        if self.moe_runner_backend == "triton":
            assert x, "no"
'''


def test_apply_checks_inserts_and_imports_on_a_new_line() -> None:
    guard = _guard("is_sm120_supported", {"sm120"}, module="sglang.srt.utils.common")
    after = apply_checks(SOURCE, [_check(guard, 11), _check(guard, 10, choice="other")])
    added = "".join(_only_inserted(SOURCE, after))
    assert "from sglang.srt.utils.common import is_sm120_supported\n" in added
    # a check at the docstring's successor and one before the option's check
    assert after.index('== "other"') < after.index("x = 1") < after.index(
        '== "flashinfer_trtllm"') < after.index('== "triton"')
    assert added.count("# guardscan gate: fail fast") == 2


def test_apply_checks_refuses_a_place_that_moved() -> None:
    guard = _guard("is_sm100_supported", {"sm100"})
    with pytest.raises(ValueError, match="no statement at line 12"):
        apply_checks(SOURCE, [_check(guard, 12)])


def test_check_source_wraps_to_the_line_length() -> None:
    guard = _guard("is_sm120_supported", {"sm120"})
    text = check_source(_check(guard, 1, dest="speculative_moe_runner_backend"), "    ", 2)
    assert all(len(line) + 8 <= 88 for line in text.splitlines()), text
    assert text.startswith("if (\n    self.speculative_moe_runner_backend ==")


# -- the real release -------------------------------------------------------------

REAL_OPTIONS = ["--moe-runner-backend", "--fp4-gemm-backend"]


def test_real_059_gate_write_and_rescan(sglang_059: SourceTree, flashinfer_063: SourceTree,
                                        tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """sglang 0.5.9 with FlashInfer 0.6.3 on sm120: flashinfer_trtllm and
    flashinfer_mxfp4 (MoE, a JIT spec for major 10) and flashinfer_trtllm (FP4
    GEMM, a capability declaration [100, 103]) get checks; after --write a
    fresh scan says blocked on sm120 at the new lines, still supported on
    sm100."""
    copy = tmp_path / "sglang-0.5.9"
    shutil.copytree(sglang_059.root / "sglang", copy / "sglang")
    path = copy / ARGS
    before = path.read_text(encoding="utf-8")
    # parsed facts and kernel answers from the shared test cache (keyed by
    # content and by the kernel tree); this copy's results stay in tmp_path
    cache = tmp_path / "cache"
    cache.mkdir()
    for part in ("facts", "kernels"):
        (realtrees.shared_cache_dir() / part).mkdir(parents=True, exist_ok=True)
        (cache / part).symlink_to(realtrees.shared_cache_dir() / part,
                                  target_is_directory=True)
    kernels = str(flashinfer_063.root / "flashinfer")
    common = ["gate", str(copy), "--arch", "sm120", "--flashinfer", kernels, "--offline",
              "--cache-dir", str(cache), *(f"--option={o}" for o in REAL_OPTIONS)]
    assert main(common) == 0
    diff = capsys.readouterr().out
    assert path.read_text(encoding="utf-8") == before
    assert diff.count("+            raise ValueError(") == 3, diff
    assert main([*common, "--write"]) == 0
    capsys.readouterr()
    after = path.read_text(encoding="utf-8")
    added = "".join(_only_inserted(before, after))
    assert diff == "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        f"a/{ARGS}", f"b/{ARGS}"))
    assert added.count(MARK) == 3 and "import" not in added  # is_sm120_supported: imported

    result = analyse(ScanOptions(target=str(copy), flashinfer=kernels, options=REAL_OPTIONS,
                                 archs=standard_archs(), cache_dir=cache, offline=True)).result
    for option, choice in [("--moe-runner-backend", "flashinfer_trtllm"),
                           ("--moe-runner-backend", "flashinfer_mxfp4"),
                           ("--fp4-gemm-backend", "flashinfer_trtllm")]:
        dest = {"--moe-runner-backend": "moe_runner_backend",
                "--fp4-gemm-backend": "fp4_gemm_runner_backend"}[option]
        check = line_of(path, f'if self.{dest} == "{choice}" and is_sm120_supported():')
        verdict = _verdict(result, option, choice, "sm120")
        assert verdict.verdict.value == "blocked", verdict
        deciding = deciding_evidence(verdict)
        assert deciding is not None and (deciding.path, deciding.line) == (ARGS, check + 1)
        for arch in ("sm100", "sm103"):
            assert _verdict(result, option, choice,
                            arch).verdict.value == "supported"


def test_conditions_that_only_block_still_leave_the_choice_excluded() -> None:
    from guardscan.gate.plan import _excluded, _still_excluded
    from guardscan.results import Verdict

    def verdict(arch: str, value: Verdict, *conditions: str) -> BackendVerdict:
        return BackendVerdict("--x", "c", arch, None, value, conditions=conditions)

    blocked_more = verdict("sm120", Verdict.UNSUPPORTED, "blocked with --quantization quark")
    could_run = verdict("sm121", Verdict.UNSUPPORTED, "supported with --quantization y")
    assert _still_excluded(blocked_more) and not _still_excluded(could_run)
    assert _excluded([blocked_more, could_run, verdict("sm90", Verdict.BLOCKED),
                      verdict("sm100", Verdict.SUPPORTED)]) == {"sm120", "sm90"}


def test_a_version_validating_in_module_level_hooks_is_gated_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fields without methods (SGLang 0.5.2x's structs), validated by a hook
    function: the check goes before the hook's first check on the option,
    with the hook's own name for the arguments, and a rescan says blocked."""
    copy = tmp_path / "gate_hook"
    shutil.copytree(fixture("gate_hook"), copy)
    hook = "sglang/srt/arg_groups/moe_hook.py"
    before = (copy / hook).read_text(encoding="utf-8")
    # fp4 has no check anywhere to stand beside: named, exit 1; moe is written
    assert main(_fixture_args(copy, "--arch", "sm120", "--write")) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{hook}: 1 check(s) added\n"
    assert "--fp4-gemm-backend flashinfer_trtllm: no place for a check" in captured.err
    after = (copy / hook).read_text(encoding="utf-8")
    added = "".join(_only_inserted(before, after))
    assert 'if view.moe_runner_backend == "flashinfer_trtllm" and is_sm120_supported():' in added
    check = line_of(copy / hook, 'view.moe_runner_backend == "flashinfer_trtllm" and')
    assert line_of(copy / hook, "view = resolved_view(server_args)") < check < line_of(
        copy / hook, 'if view.moe_runner_backend == "flashinfer_cutlass"')

    result = analyse(ScanOptions(target=str(copy), flashinfer=str(copy / "flashinfer"),
                                 use_cache=False, offline=True, cache_dir=tmp_path / "c")).result
    verdict = _verdict(result, "--moe-runner-backend", "flashinfer_trtllm", "sm120")
    deciding = deciding_evidence(verdict)
    assert verdict.verdict.value == "blocked" and deciding is not None
    assert (deciding.path, deciding.line) == (hook, check + 1)
    assert _verdict(result, "--moe-runner-backend", "flashinfer_trtllm",
                    "sm100").verdict.value == "supported"
