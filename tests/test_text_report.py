"""The human-facing reports on hand-built results: the text summary (try, avoid,
markers, auto, folding, order, width, colour), the verbose table, explain's hop
order, the Markdown legend, and no local path in any format."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest
import realtrees
from test_report import (
    DEFINITION,
    GATE,
    GUARD,
    KERNEL_CALL,
    KERNEL_FACT,
    OPTION,
    decided,
    small_result,
)

from guardscan.evidence import FactKind, args_of
from guardscan.report import render
from guardscan.report import text as text_report
from guardscan.report.answer import answers, arch_sort_key
from guardscan.report.explain import ordered_hops
from guardscan.results import (
    CHECKPOINT_ONLY,
    BackendVerdict,
    Evidence,
    OptionInfo,
    PackageRef,
    ScanNote,
    ScanResult,
    Verdict,
)

ROOT = Path(__file__).resolve().parent.parent
LOCAL = "/cache/trees"  # where small_result's packages "live"

MODULE = Evidence("sglang/srt/layers/moe/runner_x.py", 1, "link", "import torch",
                  "module named for x")
CALL = Evidence("sglang/srt/layers/moe/runner_x.py", 40, "link", "run_x(a)", "run_x")
DEFAULT = Evidence("sglang/srt/server_args.py", 900, "default",
                   'self.moe_runner_backend = "cutlass"',
                   "--moe-runner-backend auto resolves to cutlass when capability major == 12")


def text(result: ScanResult, **options: object) -> str:
    stream = io.StringIO()
    render(result, stream, "text", dict(options))
    return stream.getvalue()


def with_more(result: ScanResult) -> ScanResult:
    """small_result plus an option with nothing decided and a default line."""
    quiet = "--grammar-backend"
    result.options.append(OptionInfo(quiet, "grammar_backend", ("xgrammar", "none"),
                                     "sglang/srt/server_args.py", 10, default='"xgrammar"'))
    result.backends += [BackendVerdict(quiet, c, a, None, Verdict.UNKNOWN, (DEFINITION,))
                        for c in ("xgrammar", "none") for a in ("sm90", "sm120")]
    result.backends = [
        BackendVerdict(b.option, b.choice, b.arch, b.quantization, b.verdict,
                       (*b.evidence, DEFAULT), b.platform, b.conditions)
        if (b.choice, b.arch) == ("cutlass", "sm120") else b for b in result.backends]
    result.archs = ["sm120", "sm90"]  # as an API caller may give them
    return result


def test_summary_says_what_to_try_and_avoid_per_arch() -> None:
    out = text(with_more(small_result()))
    lines = out.splitlines()
    assert lines[0] == "guardscan 0.1.0: sglang 0.5.9 with flashinfer 0.6.3, on sm90 sm120"
    block = out.split(f"\n{OPTION}  (default: auto)\n", 1)[1].split("\n\n", 1)[0]
    assert block.splitlines() == [
        "  sm90:",
        "    try    auto (unknown)",
        "    avoid  flashinfer_trtllm (blocked): sglang/srt/server_args.py:1201",
        ("    avoid  cutlass (unsupported): decorator: SM in [100, 103], "
         "flashinfer/fused_moe/core.py:40"),
        "  sm120: auto can become cutlass",
        "    try    cutlass (supported); auto (unknown)",
        "    avoid  flashinfer_trtllm* (blocked): sglang/srt/server_args.py:1201",
        "    *      flashinfer_trtllm: blocked with --quantization fp8",
    ]


def test_options_with_nothing_decided_fold_into_one_line() -> None:
    out = text(with_more(small_result()))
    assert "\n--grammar-backend" not in out
    assert ("nothing known on any of these archs, every choice unknown (safe to try, no "
            "promise): --grammar-backend") in " ".join(out.split())


def test_summary_lines_fit_100_columns_and_carry_no_local_path() -> None:
    result = with_more(small_result())
    long_note = ("--quantization w8a8_fp8 is rejected on sm90, sm120 whatever the backend "
                 "(sglang/srt/layers/quantization/w8a8_fp8.py:40; use --quantization w8a8_fp8 "
                 "to judge choices under it)")
    result.notes.append(ScanNote("quantization", long_note, method="w8a8_fp8"))
    for options in ({}, {"verbose": True}):
        out = text(result, **options)
        assert all(len(line) <= 100 for line in out.splitlines()), out
        assert LOCAL not in out


def test_method_notes_are_summarised_unless_verbose() -> None:
    result = small_result()
    result.notes = [ScanNote("quantization",
                             "--quantization w8a8_fp8 is rejected on sm90, sm120 whatever the "
                             "backend (x.py:1; use --quantization w8a8_fp8 to judge choices "
                             "under it)", method="w8a8_fp8"),
                    ScanNote("kernels", "kernel facts not available in this build")]
    out = " ".join(text(result).split())
    assert ("note: --quantization w8a8_fp8 rejected on some of these archs whatever the "
            "backend (--verbose: where)") in out
    assert "note: kernel facts not available in this build" in out
    assert "is rejected on sm90, sm120" in " ".join(text(result, verbose=True).split())


def test_a_method_only_a_checkpoint_names_is_summarised_as_checkpoints() -> None:
    """A method no ``--quantization`` flag offers (the loader takes it from
    the checkpoint) is not offered as a flag in the one-line summary."""
    result = small_result()
    result.notes = [ScanNote("quantization", "--quantization w8a8_fp8 is rejected on sm90 "
                             "whatever the backend (x.py:1; use --quantization w8a8_fp8 to "
                             "judge choices under it)", method="w8a8_fp8"),
                    ScanNote("quantization", "a m3_nvfp4 checkpoint is rejected on sm90 "
                             "whatever the backend (y.py:2)", method="m3_nvfp4",
                             reason=CHECKPOINT_ONLY)]
    out = " ".join(text(result).split())
    assert ("note: --quantization w8a8_fp8, m3_nvfp4 checkpoints rejected on some of these "
            "archs whatever the backend (--verbose: where)") in out
    result.notes = result.notes[1:]
    out = " ".join(text(result).split())
    assert "note: m3_nvfp4 checkpoints rejected on some of these archs" in out
    assert "--quantization m3_nvfp4" not in out


def test_verbose_is_the_full_table_in_numeric_arch_order() -> None:
    result = small_result()
    result.archs = ["sm120", "sm90"]
    out = text(result, verbose=True)
    lines = out.splitlines()
    header = lines.index(OPTION)
    assert lines[header + 1].split() == ["choice", "sm90", "sm120"]
    assert lines[header + 3].split() == ["flashinfer_trtllm", "blocked", "blocked*"]


def test_colour_only_when_asked() -> None:
    assert "\033[" not in text(small_result())
    coloured = text(small_result(), color=True)
    assert "\033[31mblocked\033[0m" in coloured
    assert coloured.replace("\033[31m", "").replace("\033[33m", "").replace(
        "\033[32m", "").replace("\033[1m", "").replace("\033[0m", "") == text(small_result())


def test_cli_colour_respects_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from guardscan.commands.common import colour as _colour

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert _colour(Terminal()) is True
    assert _colour(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert _colour(Terminal()) is False


def test_options_most_decided_first() -> None:
    result = with_more(small_result())
    half = "--fp4-gemm-backend"
    result.backends += [BackendVerdict(half, c, a, None, v, (DEFINITION,))
                        for c, v in (("a", Verdict.SUPPORTED), ("b", Verdict.UNKNOWN),
                                     ("c", Verdict.UNKNOWN), ("d", Verdict.UNKNOWN))
                        for a in ("sm90", "sm120")]
    decided, nothing = answers(result)
    assert [a.option for a in decided] == [OPTION, half]
    assert nothing == ["--grammar-backend"]


def test_arch_order_is_numeric() -> None:
    assert sorted(["sm120", "sm80", "sm100", "sm90"], key=arch_sort_key) == [
        "sm80", "sm90", "sm100", "sm120"]


def test_explain_hops_enter_a_module_before_its_lines() -> None:
    gate = Evidence("sglang/srt/layers/moe/runner_x.py", 44, "gate", "raise X",
                    "raises on sm90: ...")
    caveat = Evidence("sglang/srt/y.py", 3, "gate", "assert y", "could raise on sm90 ...")
    verdict = BackendVerdict(OPTION, "x", "sm90", None, Verdict.BLOCKED,
                             (DEFINITION, CALL, gate, caveat, MODULE))
    assert ordered_hops(verdict) == [DEFINITION, MODULE, CALL, gate, caveat]
    registration = Evidence("sglang/srt/layers/moe/runner_x.py", 30, "link",
                            '@register("x")', "registered for x")
    verdict = BackendVerdict(OPTION, "x", "sm90", None, Verdict.BLOCKED,
                             (DEFINITION, CALL, gate, registration))
    assert ordered_hops(verdict) == [DEFINITION, registration, CALL, gate]


# -- no local path in any format; Markdown's legend ------------------------------------------
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "markdown"])
def test_no_format_carries_a_local_path(fmt: str) -> None:
    stream = io.StringIO()
    render(small_result(), stream, fmt, {"verbose": False})
    assert LOCAL not in stream.getvalue()


def test_json_package_paths_are_relative() -> None:
    stream = io.StringIO()
    render(small_result(), stream, "json")
    data = json.loads(stream.getvalue())
    assert data["target"]["path"] == "sglang"
    assert [k["path"] for k in data["kernels"]] == ["flashinfer"]


def test_markdown_carries_a_legend_and_explains_each_star() -> None:
    stream = io.StringIO()
    render(small_result(), stream, "markdown")
    out = stream.getvalue()
    legend = out.split("## Verdicts", 1)[0]
    for word in ("**blocked**", "**unsupported**", "| supported |", "| unknown |", "\\*"):
        assert word in legend
    assert "- \\* `flashinfer_trtllm` on sm120: blocked with --quantization fp8" in out


def test_result_without_kernels_or_version() -> None:
    result = ScanResult(guardscan="0.1.0", target=PackageRef("sglang", None, "/x/sglang"))
    out = text(result)
    assert out.startswith("guardscan 0.1.0: sglang (version unknown), on no architecture")
    assert "No backend options judged." in out


# -- the suite's own cache and the generated docs ----------------------------------------------
def test_shared_test_cache_honours_the_environment(tmp_path: Path) -> None:
    home = Path.home()
    assert realtrees.shared_cache_dir({}) == home / ".cache" / "guardscan-tests"
    assert realtrees.shared_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "guardscan-tests")
    assert realtrees.shared_cache_dir({"XDG_CACHE_HOME": "/x",
                                       "GUARDSCAN_CACHE_DIR": str(tmp_path)}) == (
        tmp_path / "tests")
    assert realtrees.shared_cache_dir({"GUARDSCAN_CACHE_DIR": "/x",
                                       "GUARDSCAN_TEST_CACHE": str(tmp_path)}) == tmp_path


def test_generated_pages_do_not_talk_about_themselves() -> None:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    gen_docs = importlib.util.module_from_spec(spec)
    # registered before it runs: its dataclasses look their module up by name
    sys.modules.setdefault("gen_docs", gen_docs)
    spec.loader.exec_module(gen_docs)
    page = "docs/verdicts.md"
    assert gen_docs.about_itself(
        "Rules, in order (each documented in docs/verdicts.md, generated from here):",
        page) == "Rules, in order:"
    assert gen_docs.about_itself("drives docs/verdicts.md;", page) == "drives this page;"
    for name in ("verdicts.md", "guard-forms.md"):
        body = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert f"docs/{name}" not in body and "generated from here" not in body


def test_a_caveat_every_choice_shares_is_said_once() -> None:
    """Issue 23: a gate on every choice's path that could still raise (a model's own
    quantization file) is one line for the option, not one per choice; the choices
    that may still raise share one line, with the place when there is one (else
    ``guardscan explain`` gives each), and keep their stars."""
    from guardscan.evidence import FactKind, Status, args_of

    def could_raise(path: str, line: int) -> Evidence:
        return Evidence.of(path, line, "gate", "raise ValueError(...)", FactKind.GATE,
                           args_of(effect="could-raise", arch="sm120", undecided="model"),
                           Status.CAVEAT)

    shared = could_raise("sglang/srt/layers/quantization/model_x.py", 139)
    own = could_raise("sglang/srt/layers/moe/cutlass_moe.py", 149)
    flag = "--moe-runner-backend"
    result = ScanResult("0.1.0", PackageRef("sglang", "0.5.23", "/x/sglang"), archs=["sm120"],
                        options=[OptionInfo(flag, "moe_runner_backend",
                                            ("triton", "cutlass", "marlin"),
                                            "sglang/srt/server_args.py", 5, default='"auto"')])
    result.backends = [
        BackendVerdict(flag, "triton", "sm120", None, Verdict.UNKNOWN, (shared,)),
        BackendVerdict(flag, "cutlass", "sm120", None, Verdict.UNKNOWN, (shared, own)),
        BackendVerdict(flag, "marlin", "sm120", None, Verdict.UNKNOWN, (shared,)),
    ]
    lines = text(result).splitlines()
    start = lines.index(f"{flag}  (default: auto)")
    assert lines[start + 1:start + 4] == [
        "  try    triton, cutlass*, marlin (unknown)",
        "  *      every choice: may still raise (where: guardscan explain)",
        "",
    ]
    # one choice of three without it: still said once, naming the exception
    result.backends[0] = BackendVerdict(flag, "triton", "sm120", None, Verdict.UNKNOWN, ())
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      every choice but triton: may still raise (where: guardscan explain)"]
    # two of three without it: the one carrier, with its places where they fit
    result.backends[2] = BackendVerdict(flag, "marlin", "sm120", None, Verdict.UNKNOWN, ())
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      cutlass: may still raise (where: guardscan explain)",
    ]
    result.backends[1] = BackendVerdict(flag, "cutlass", "sm120", None, Verdict.UNKNOWN, (own,))
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      cutlass: may still raise: sglang/srt/layers/moe/cutlass_moe.py:149",
    ]
    # a group, and the one choice it leaves out with a caveat of its own: apart
    result.backends = [
        BackendVerdict(flag, "triton", "sm120", None, Verdict.UNKNOWN, (shared,)),
        BackendVerdict(flag, "cutlass", "sm120", None, Verdict.UNKNOWN, (shared,)),
        BackendVerdict(flag, "marlin", "sm120", None, Verdict.UNKNOWN, (own,)),
    ]
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      every choice but marlin; marlin: may still raise (where: guardscan explain)",
    ]


def test_choices_whose_names_do_not_fit_are_the_other_marked_ones() -> None:
    """When the choices that may still raise, each for its own place, are
    every marked choice that no line above names, and naming them would wrap,
    the line says "the other choices marked *" (the try line's stars name them)."""
    from guardscan.evidence import FactKind, Status, args_of

    def could_raise(path: str, line: int) -> Evidence:
        return Evidence.of(path, line, "gate", "raise ValueError(...)", FactKind.GATE,
                           args_of(effect="could-raise", arch="sm120", undecided="model"),
                           Status.CAVEAT)

    flag = "--moe-runner-backend"
    names = ("experimental_runner_alpha", "experimental_runner_beta",
             "experimental_runner_gamma", "experimental_runner_delta", "triton")
    result = ScanResult("0.1.0", PackageRef("sglang", "0.5.23", "/x/sglang"), archs=["sm120"],
                        options=[OptionInfo(flag, "moe_runner_backend", names,
                                            "sglang/srt/server_args.py", 5, default='"auto"')])
    result.backends = [
        BackendVerdict(flag, name, "sm120", None, Verdict.UNKNOWN,
                       (could_raise(f"sglang/srt/layers/moe/{name}.py", 10 + i),))
        for i, name in enumerate(names[:4])]
    result.backends.append(BackendVerdict(flag, "triton", "sm120", None, Verdict.UNKNOWN, ()))
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      the other choices marked *: may still raise (where: guardscan explain)"]
    # one of them: named (its place does not fit: explain shows it)
    result.backends[1:4] = [
        BackendVerdict(flag, name, "sm120", None, Verdict.UNKNOWN, ()) for name in names[1:4]]
    lines = text(result).splitlines()
    assert [line for line in lines if line.startswith("  *")] == [
        "  *      experimental_runner_alpha: may still raise (where: guardscan explain)"]


def test_the_founding_question_fits_on_a_screen() -> None:
    """Issue 23: the sm120 report of sglang 0.5.23 under ``--quantization
    modelopt_fp4`` fits on a screen, leads with the MoE runner and the FP4
    GEMM answers (either first), and repeats no line. Read from its block in docs/cli.md, which
    ``test_docs`` holds equal to what guardscan prints now. (60 lines when
    issue 23 closed; the MoE runners NVFP4's ``apply`` refuses, and ``pplx``
    whose runner becomes ``deep_gemm``, added two ``avoid`` lines; what an MLA
    model does to the attention choices, three marker lines; the MiniCPM
    backends, blocked without a ``minicpm_sala`` model, one more; the attention
        backends built on FlashInfer's classes, each blocked with
        ``SGLANG_IS_FLASHINFER_AVAILABLE=0`` once inherited constructors were
        followed, one more: that condition now names nine choices; the
        draft model's all-to-all backend, once it shared the gates of the
        code it runs (``ascend_tp`` has no dispatcher there), a block of
        five lines of its own; the runners ``MoeRunner`` finds no fused
        function for (``experimental_sgl_trtllm``, ``flashinfer_megamoe``),
        an ``avoid`` block and two marker lines for the ways around it; the
        draft model's MoE runner, once it met the refusals the main one meets
        and so differed from it only where ``megamoe`` is refused (by the
        NVFP4 method, not by the hook that rewrites the main option's), one
        line where it is said to be like the main one; the prefill attention
        option, once its ``cutedsl_mla`` was refused by the decode-only
        assert and its ``tokenspeed_mla`` ran as ``trtllm_mla``, three lines
        that name those two beside it.)"""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    command = "guardscan sglang==0.5.23 --arch sm120 --quantization modelopt_fp4"
    begin = page.index(f"<!-- begin: output {command} -->")
    block = page[begin:page.index("<!-- end: output -->", begin)]
    body = block.split("```console\n", 1)[1].rsplit("```", 1)[0]
    lines = [line for line in body.splitlines() if not line.startswith("$ ")
             and not line.startswith("    --")]
    assert len(lines) <= 79, len(lines)
    options = [line.split()[0] for line in lines if line.startswith("--")]
    # the two answers the question is about come first (in the order of how
    # many choices the kernel library decides in each)
    assert set(options[:2]) == {"--moe-runner-backend", "--fp4-gemm-backend"}, options
    # within an option's block, no line said twice (a wrapped list's last word,
    # such as "(unknown)", is no line of its own)
    for option_block in "\n".join(lines).split("\n\n"):
        said = [line.strip() for line in option_block.splitlines()
                if len(line.strip()) > len("(unsupported)")]
        assert len(said) == len(set(said)), option_block


def test_an_option_decided_like_one_above_is_named_with_where_it_is_decided_elsewhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One arch, the kernel library read: an option whose choices to avoid
    (and supported ones) are among another's is not shown in a block of its
    own but said to be like that one; a choice it avoids with another verdict
    or at another deciding line is named with them, so the report
    says nothing less (the draft model's ``megamoe``, refused by the NVFP4
    method where the main option's is refused by the hook that rewrites it)."""
    spec = "--speculative-moe-runner-backend"
    hook = Evidence.of("sglang/srt/arg_groups/mega_moe_hook.py", 43, "gate",
                       'raise ValueError("megamoe")', FactKind.GATE,
                       args_of(effect="raises", arch="sm120", condition="megamoe"))
    result = small_result()
    result.archs = ["sm120"]
    result.options = [*result.options, OptionInfo(
        spec, "speculative_moe_runner_backend", ("cutlass", "flashinfer_trtllm", "megamoe"),
        DEFINITION.path, DEFINITION.line + 1)]
    result.options[0] = OptionInfo(OPTION, "moe_runner_backend",
                                   ("auto", "flashinfer_trtllm", "cutlass", "megamoe"),
                                   DEFINITION.path, DEFINITION.line, default="auto")
    result.backends = [b for b in result.backends if b.arch == "sm120"] + [
        decided(OPTION, "megamoe", "sm120", Verdict.BLOCKED, (DEFINITION, hook)),
        decided(spec, "cutlass", "sm120", Verdict.SUPPORTED,
                (DEFINITION, KERNEL_CALL, KERNEL_FACT)),
        decided(spec, "flashinfer_trtllm", "sm120", Verdict.BLOCKED, (DEFINITION, GUARD, GATE)),
        decided(spec, "megamoe", "sm120", Verdict.BLOCKED, (DEFINITION, GUARD, GATE)),
    ]
    out = text(result)
    assert f"\n{spec}  " not in out  # no block of its own
    said = " ".join(out.split("answered within an option above: ", 1)[1].split())
    assert said.startswith(f"{spec} (like {OPTION}; megamoe blocked at "
                           "sglang/srt/server_args.py:1201)"), said
    # more such choices than a line holds: a block of its own
    monkeypatch.setattr(text_report, "MAX_ELSEWHERE", 0)
    assert f"\n{spec}  " in text(result)
    monkeypatch.undo()
    # decided where the one above decides it: nothing more to say
    result.backends[-1] = decided(spec, "megamoe", "sm120", Verdict.BLOCKED, (DEFINITION, hook))
    said = " ".join(text(result).split("answered within an option above: ", 1)[1].split())
    assert said.startswith(f"{spec} (like {OPTION})"), said
    # another verdict for a choice: named with it (``tokenspeed_mla``, which
    # the prefill option's later rewrite sends to another backend)
    result.backends[-1] = decided(spec, "megamoe", "sm120", Verdict.UNSUPPORTED,
                                  (DEFINITION, GUARD, GATE))
    said = " ".join(text(result).split("answered within an option above: ", 1)[1].split())
    assert said.startswith(f"{spec} (like {OPTION}; megamoe unsupported at "
                           "sglang/srt/server_args.py:1201)"), said
    # a choice the option above does not avoid: a block of its own
    result.backends[-1] = decided(spec, "megamoe", "sm120", Verdict.SUPPORTED,
                                  (DEFINITION, KERNEL_CALL, KERNEL_FACT))
    assert f"\n{spec}  " in text(result)
