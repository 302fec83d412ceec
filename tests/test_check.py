"""``guardscan check [--arch A] [TARGET] -- <launch command>``: the command line,
on the fixture tree ``fixtures/preflight_launch`` and on sglang 0.5.9 with the
FlashInfer it pins (0.6.3)."""

from __future__ import annotations

import json

import pytest
import realtrees
from fixturetree import fixture, line_of

import guardscan.gpu
from guardscan.cli import main
from guardscan.results import ExitCode

TREE = str(fixture("preflight_launch"))
GATE = "sglang/srt/layers/moe/runner.py:" + str(line_of(
    fixture("preflight_launch") / "sglang/srt/layers/moe/runner.py",
    'raise ValueError("moe runner backend flashinfer_trtllm'))


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def fixture_check(capsys: pytest.CaptureFixture[str], *launch: str,
                  arch: str = "sm120") -> tuple[int, str, str]:
    return check(capsys, "--arch", arch, "--no-kernels", "--no-cache", TREE, "--", *launch)


def test_a_rejected_choice_exits_1_with_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = fixture_check(capsys, "python", "-m", "sglang.launch_server",
                                   "--model-path", "m", "--tp", "8",
                                   "--moe-runner-backend", "flashinfer_trtllm")
    assert (code, err) == (ExitCode.FOUND, "")
    lines = out.splitlines()
    assert lines[0] == "guardscan check: sglang, on sm120 (RTX PRO 6000, RTX 5090, ...)"
    row = next(line for line in lines if line.startswith("  --moe-runner-backend"))
    assert row.split()[:3] == ["--moe-runner-backend", "flashinfer_trtllm", "blocked"]
    assert row.endswith(f"at {GATE}")
    assert "  ignored (not backend options): --model-path --tp" in lines
    assert lines[-2] == "not ok: 1 problem on sm120"
    assert lines[-1] == ("why: guardscan explain flashinfer_trtllm --option "
                         f"--moe-runner-backend --arch sm120 {TREE}")


def test_flag_equals_value_and_sglang_serve(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fixture_check(capsys, "sglang", "serve", "--model-path=m",
                                 "--moe-runner-backend=flashinfer_trtllm", arch="sm100")
    assert code == ExitCode.OK
    assert "--moe-runner-backend flashinfer_trtllm  supported" in out
    # fa3, the attention default, is rejected off SM90: a warning, not a failure
    assert out.splitlines()[-1] == ("ok: every backend choice given is safe to try on sm100 "
                                    "(1 default to look at above)")


def test_auto_shows_what_it_becomes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fixture_check(capsys, "sglang", "serve", "--moe-runner-backend", "auto",
                                 "--fp8-gemm-backend", "auto", "--attention-backend",
                                 "triton")
    assert code == ExitCode.OK
    # auto becomes triton here, as the fallback for every arch but SM100: no
    # claim of support, so unknown
    assert "--moe-runner-backend auto -> triton  unknown" in out
    fp8 = next(line for line in out.splitlines() if "--fp8-gemm-backend" in line)
    assert fp8.split()[:3] == ["--fp8-gemm-backend", "auto", "unknown"]
    assert "auto can become cutlass (unknown) or z (unknown)" in fp8


def test_an_unsafe_default_gets_a_line_and_no_failure(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fixture_check(capsys, "sglang", "serve", "--model-path", "m")
    assert code == ExitCode.OK
    assert "--attention-backend fa3 (default, not given)  blocked" in out
    assert out.splitlines()[-1].endswith("(1 default to look at above)")


def test_misspelt_choice_and_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fixture_check(capsys, "sglang", "serve",
                                 "--moe-runner-backend", "flashinfer_cutlas",
                                 "--fp8-gemm-backnd", "z")
    assert code == ExitCode.FOUND
    lines = out.splitlines()
    choice = next(line for line in lines if "flashinfer_cutlas " in line)
    assert "not a choice" in choice and "did you mean flashinfer_cutlass" in choice
    option = next(line for line in lines if "--fp8-gemm-backnd" in line)
    assert "no such option" in option and "did you mean --fp8-gemm-backend" in option
    assert lines[-1] == "not ok: 2 problems on sm120"


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--arch", "sm120", "--no-kernels", "--no-cache",
                         "--format", "json", TREE, "--", "--moe-runner-backend", "triton")
    data = json.loads(out)
    assert code == ExitCode.OK and data["ok"] is True
    assert [(c["option"], c["verdict"]) for c in data["checks"] if c["given"]] == [
        ("--moe-runner-backend", "unknown")]


@pytest.mark.parametrize(("argv", "message"), [
    (["--arch", "sm120", TREE, "sglang", "serve"], "no launch command: put it after --"),
    (["--arch", "sm120", TREE, "--"], "nothing after --"),
    (["--arch", "sm12", TREE, "--", "sglang", "serve"],
     "--arch sm12: not a known architecture 'sm12': did you mean sm120 or sm121?"),
    (["--arch", "sm120", "/nonexistent/tree", "--", "sglang", "serve"],
     "no such file or directory"),
])
def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str],
                                           argv: list[str], message: str) -> None:
    code, out, err = check(capsys, *argv)
    assert (code, out) == (ExitCode.USAGE, "")
    assert err.count("\n") == 1 and err.startswith("guardscan: error: ")
    assert message in err


def test_arch_auto_without_a_gpu_exits_2(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guardscan.gpu, "NVML_LIBRARY", "libguardscan-tests-no-nvml.so.1")
    for argv in (["--arch", "auto", TREE], [TREE]):  # auto is the default
        code, out, err = check(capsys, *argv, "--", "sglang", "serve")
        assert (code, out) == (ExitCode.USAGE, "")
        assert err == ("guardscan: error: --arch auto: no local GPU found (no NVML "
                       "(libguardscan-tests-no-nvml.so.1); no nvidia-smi); pass --arch sm120 "
                       "or a GPU name\n")


def test_arch_auto_with_a_gpu(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    from test_preflight import FakeNVML

    monkeypatch.setattr(guardscan.gpu, "_load_nvml", lambda: FakeNVML([(10, 0)]))
    code, out, _ = check(capsys, "--no-kernels", "--no-cache", TREE, "--",
                         "--moe-runner-backend", "flashinfer_trtllm")
    assert code == ExitCode.OK
    assert out.splitlines()[0].endswith("on sm100 (B200, GB200, ...) (the local GPU)")


def test_several_archs_name_the_arch_on_each_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fixture_check(capsys, "--moe-runner-backend", "flashinfer_trtllm",
                                 arch="sm100,sm120")
    assert code == ExitCode.FOUND
    rows = [line.split()[2:4] for line in out.splitlines()
            if line.startswith("  --moe-runner-backend")]
    assert rows == [["supported", "on"], ["blocked", "on"]]
    assert "supported on sm100" in out and "blocked on sm120" in out


def test_help_without_dashdash(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage: guardscan check [--arch ARCH]")


def test_launch_after_dashdash_is_not_touched_by_the_cli(
        capsys: pytest.CaptureFixture[str]) -> None:
    """cli.main glues ``--option FLAG`` into one argument, but not after ``--``."""
    code, out, _ = fixture_check(capsys, "--option", "--moe-runner-backend", "triton")
    assert code == ExitCode.OK
    assert "--moe-runner-backend triton  unknown" in out
    assert "ignored (not backend options): --option" in out


# -- the real tree -------------------------------------------------------------------------
DONE_WHEN = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "8",
             "--quantization", "modelopt_fp4", "--moe-runner-backend", "flashinfer_trtllm",
             "--fp4-gemm-backend", "flashinfer_cudnn"]


@pytest.mark.real
def test_sglang_059_on_sm120(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's command: flashinfer_trtllm's MoE module is compiled for SM10x
    only; cuDNN's FP4 GEMM declares SM120."""
    cache = str(realtrees.shared_cache_dir())
    code, out, err = check(capsys, "--arch", "sm120", "--cache-dir", cache, "sglang==0.5.9",
                           "--", *DONE_WHEN)
    assert (code, err) == (ExitCode.FOUND, "")
    lines = out.splitlines()
    assert lines[0] == ("guardscan check: sglang 0.5.9 with flashinfer 0.6.3, sgl-kernel 0.3.21, "
                        "on sm120 (RTX PRO 6000, RTX 5090, ...), --quantization modelopt_fp4")
    moe, field, fp4 = lines[1], lines[2], lines[3]
    assert moe.split()[:3] == ["--moe-runner-backend", "flashinfer_trtllm", "unsupported"]
    assert "jit-spec (tier c): capability major in [10]" in moe
    assert moe.endswith("at flashinfer/jit/fused_moe.py:238")
    # the field saw it too: a crash report on sm120 for this release, with its thread
    assert field.startswith("    field: crash reported on sm120 (sglang >=0.5.5,<=0.5.20, with "
                            "modelopt_fp4): FlashInfer's TRT-LLM-gen fused MoE ")
    assert field.endswith(", https://github.com/flashinfer-ai/flashinfer/issues/2045")
    assert fp4.split()[:3] == ["--fp4-gemm-backend", "flashinfer_cudnn", "supported"]
    assert "decorator (tier a)" in fp4 and "120" in fp4
    assert lines[-3:-1] == ["not ok: 2 problems on sm120",
                            ("field: a crash or wrong-output report holds for this arch and "
                             "release (--field-warn-only: warn only)")]

    # the same scan answers a misspelt choice, with the close match
    code, out, _ = check(capsys, "--arch", "sm120", "--cache-dir", cache, "sglang==0.5.9",
                         "--", *DONE_WHEN[:-4], "--moe-runner-backend", "flashinfer_cutlas")
    assert code == ExitCode.FOUND
    row = next(line for line in out.splitlines() if "flashinfer_cutlas " in line)
    assert "did you mean flashinfer_cutlass" in row


@pytest.mark.real
def test_sglang_0523_on_sm120_says_only_what_was_given(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 23: what the user gave, what auto becomes, what to avoid; no internal
    notes (a default's auto the source does not resolve, defaults not written as
    choices) unless --verbose."""
    cache = str(realtrees.shared_cache_dir())
    launch = ["--", "python", "-m", "sglang.launch_server", "--model-path", "m",
              "--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend",
              "flashinfer_cudnn"]
    code, out, err = check(capsys, "--arch", "sm120", "--cache-dir", cache, "sglang==0.5.23",
                           *launch)
    lines = out.splitlines()
    assert (code, err) == (ExitCode.OK, "")
    assert [line.split()[:3] for line in lines[1:3]] == [
        ["--moe-runner-backend", "flashinfer_cutlass", "supported"],
        ["--fp4-gemm-backend", "flashinfer_cudnn", "supported"]]
    assert lines[3:] == ["  ignored (not backend options): --model-path",
                         "ok: every backend choice given is safe to try on sm120"]
    code, out, _ = check(capsys, "--arch", "sm120", "--cache-dir", cache, "sglang==0.5.23",
                         "--verbose", *launch)
    verbose = out.splitlines()
    assert code == ExitCode.OK
    assert len(verbose) > len(lines)
    assert sum(line.startswith("  note: ") for line in verbose) == 3
    assert any(line.startswith("  not given: the other ") for line in verbose)
