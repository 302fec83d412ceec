"""SGLang with the FlashInfer it pins: kernel facts decide what SGLang does not.

The real case this project exists for: sglang 0.5.9 + flashinfer 0.6.3 on an
RTX PRO 6000 (sm120), where `--moe-runner-backend flashinfer_trtllm` died on load.
"""

from __future__ import annotations

import io
import multiprocessing
import os
from pathlib import Path
from typing import Any

from guardscan.cli import main
from guardscan.report.explain import explain
from guardscan.results import BackendVerdict


def _verdict(analysis: Any, flag: str, choice: str, arch: str) -> BackendVerdict:
    for verdict in analysis.result.backends:
        if (verdict.option, verdict.choice, verdict.arch) == (flag, choice, arch):
            return verdict
    raise AssertionError(f"no verdict for {flag} {choice} {arch}")


def _show(verdict: BackendVerdict) -> str:
    lines = [f"{verdict.option} {verdict.choice} {verdict.arch}: {verdict.verdict.value}"]
    lines += [f"  [{e.role}] {e.path}:{e.line} {e.text} -- {e.note}" for e in verdict.evidence]
    return "\n".join(lines)


#: whether the kernel library's questions are answered ahead of a scan with
#: a fresh cache, by a background process (``memo.warm``): two cores and fork
_AHEAD = (os.cpu_count() or 1) >= 2 and "fork" in multiprocessing.get_all_start_methods()

def test_pairing_reads_the_pinned_version(pair_059_063: Any) -> None:
    kernels = pair_059_063.result.kernels
    # FlashInfer, then the compiled packages the release pins (their fatbins read)
    assert [(k.package, k.version) for k in kernels] == [("flashinfer", "0.6.3"),
                                                         ("sgl-kernel", "0.3.21")]


def test_trtllm_moe_is_not_safe_on_sm120(pair_059_063: Any) -> None:
    verdict = _verdict(pair_059_063, "--moe-runner-backend", "flashinfer_trtllm", "sm120")
    assert verdict.verdict.value == "unsupported", _show(verdict)
    assert not verdict.safe_to_try
    last = verdict.evidence[-1]
    assert last.path == "flashinfer/jit/fused_moe.py", _show(verdict)
    assert last.text == "supported_major_versions=[10]", _show(verdict)
    assert last.role == "kernel"
    # the sm120 guard in the runner file is in the chain, as a select
    assert any(e.role == "select" and "is_sm120_supported()" in e.text
               and e.path.endswith("moe_runner/flashinfer_trtllm.py")
               for e in verdict.evidence), _show(verdict)


def test_trtllm_moe_runs_on_sm100(pair_059_063: Any) -> None:
    verdict = _verdict(pair_059_063, "--moe-runner-backend", "flashinfer_trtllm", "sm100")
    assert verdict.verdict.value == "supported", _show(verdict)
    assert verdict.evidence[-1].text == "supported_major_versions=[10]", _show(verdict)


def test_cutlass_moe_is_safe_on_sm120_through_the_sm120_module(pair_059_063: Any) -> None:
    verdict = _verdict(pair_059_063, "--moe-runner-backend", "flashinfer_cutlass", "sm120")
    assert verdict.verdict.value == "supported", _show(verdict)
    assert any("gen_cutlass_fused_moe_sm120_module" in e.text for e in verdict.evidence), \
        _show(verdict)


def test_fp4_cudnn_gemm_is_safe_on_sm120(pair_059_063: Any) -> None:
    # The cuDNN FP4 GEMM ran on this GPU. SGLang hands the choice to FlashInfer
    # as a computed ``backend=`` string (``removeprefix("flashinfer_")``): the
    # call is judged against mm_fp4's "cudnn" requirement, which lists sm120.
    verdict = _verdict(pair_059_063, "--fp4-gemm-backend", "flashinfer_cudnn", "sm120")
    assert verdict.verdict.value == "supported", _show(verdict)
    assert "backend= carries" in verdict.evidence[1].note, _show(verdict)
    assert verdict.evidence[-1].text.startswith("@supported_compute_capability("), _show(verdict)
    assert "120" in verdict.evidence[-1].text, _show(verdict)
    # the same call, with the string the trtllm choice hands over, excludes it
    trtllm = _verdict(pair_059_063, "--fp4-gemm-backend", "flashinfer_trtllm", "sm120")
    assert trtllm.verdict.value == "unsupported", _show(trtllm)
    assert trtllm.evidence[-1].text == "@supported_compute_capability([100, 103])", _show(trtllm)


def test_explain_ends_at_the_jit_spec(pair_059_063: Any) -> None:
    out = io.StringIO()
    shown = explain(pair_059_063.result, "flashinfer_trtllm", "--moe-runner-backend", out)
    assert {b.choice for b in shown} == {"flashinfer_trtllm"}
    text = out.getvalue()
    section = text.split("on sm120:")[1].split("\n--")[0]
    hops = [line for line in section.splitlines() if line.strip()[:1].isdigit()]
    assert hops[-1].rstrip().endswith("flashinfer/jit/fused_moe.py:238  "
                                      "supported_major_versions=[10]"), section
    assert "=> deciding fact: a JIT build spec" in section and "strong:" in section


def test_0523_pair_scans_with_kernel_evidence(pair_0523_072: Any) -> None:
    assert [(k.package, k.version) for k in pair_0523_072.result.kernels] == [
        ("flashinfer", "0.7.2"), ("sglang-kernel", "0.4.10"), ("sgl-flash-mla", "1.0.0"),
        ("sgl-deep-gemm", "0.2.3.post2"), ("sgl-deep-ep", "0.1.2.post1")]
    kernel_lines = [e for b in pair_0523_072.result.backends for e in b.evidence
                    if e.role == "kernel"]
    assert kernel_lines, "no kernel evidence at all on the 0.5.23 + 0.7.2 pair"
    assert all(e.path.startswith("flashinfer/") for e in kernel_lines)
    # SGLang's own gates still decide where they exist
    verdict = _verdict(pair_0523_072, "--moe-runner-backend", "hpc_ops", "sm120")
    assert verdict.verdict.value == "blocked", _show(verdict)


def test_0523_trtllm_moe_on_sm120_ends_at_the_cubin_list(pair_0523_072: Any) -> None:
    """FlashInfer 0.7.2 compiles the trtllm-gen MoE module for majors [10, 12]
    (jit/fused_moe.py:386) but ships it cubins for BLACKWELL_CUBIN_ARCHS only
    (jit/trtllm_gen_metainfo.py:48, used at jit/fused_moe.py:381)."""
    verdict = _verdict(pair_0523_072, "--moe-runner-backend", "flashinfer_trtllm", "sm120")
    assert verdict.verdict.value == "unsupported", _show(verdict)
    last = verdict.evidence[-1]
    assert (last.path, last.line) == ("flashinfer/jit/fused_moe.py", 381), _show(verdict)
    assert "precompiled cubins" in last.note and "Sm100a/Sm100f/Sm103a" in last.note
    verdict = _verdict(pair_0523_072, "--moe-runner-backend", "flashinfer_trtllm", "sm100")
    assert verdict.verdict.value == "supported", _show(verdict)


def test_0523_fp8_cutedsl_on_sm120_takes_no_support_from_an_import_guard(
        pair_0523_072: Any) -> None:
    """``resolve_mxfp8_dense_gemm_backend`` raises unless ``is_blackwell and
    flashinfer and mm_mxfp8.is_backend_supported('cute-dsl', sm)``
    (fp8_utils.py:848); ``mm_mxfp8`` is bound only where ``is_blackwell`` holds
    (fp8_utils.py:582). That the name is bound on sm120 is no support: the
    FlashInfer test, which guardscan leaves undecided, still could raise."""
    verdict = _verdict(pair_0523_072, "--fp8-gemm-backend", "flashinfer_cutedsl", "sm120")
    assert verdict.verdict.value == "unknown", _show(verdict)
    assert not [e for e in verdict.evidence if e.status == "decides"], _show(verdict)
    assert any((e.path, e.line) == ("sglang/srt/layers/quantization/fp8_utils.py", 855)
               and "could raise" in e.note for e in verdict.evidence), _show(verdict)
    # where the import's test fails, the call meets an unbound name
    verdict = _verdict(pair_0523_072, "--fp8-gemm-backend", "flashinfer_cutedsl", "sm90")
    assert verdict.verdict.value == "blocked", _show(verdict)


def test_059_fp4_trtllm_is_not_supported_through_the_shuffle_helper(pair_059_063: Any) -> None:
    """0.5.9 calls only ``shuffle_matrix_a`` / ``shuffle_matrix_sf_a`` under
    ``is_flashinfer_trtllm()`` (modelopt_quant.py:1236); the TRUE of the latter
    is ``block_scale_interleave``'s (fp4_quantization.py:802), a helper."""
    verdict = _verdict(pair_059_063, "--fp4-gemm-backend", "flashinfer_trtllm", "sm120")
    assert verdict.verdict.value == "unsupported", _show(verdict)
    # decided by the GEMM itself (mm_fp4's "trtllm" requirement), not the helper
    assert "_trtllm_gemm_fp4_requirement" in verdict.evidence[-2].note, _show(verdict)
    # where the helper itself has no kernel, it does exclude the choice
    verdict = _verdict(pair_059_063, "--fp4-gemm-backend", "flashinfer_trtllm", "sm80")
    assert verdict.verdict.value == "unsupported", _show(verdict)


def test_059_cutedsl_moe_is_not_supported_on_sm90(pair_059_063: Any) -> None:
    """The masked GEMM's only fact is ``if major == 11 and minor == 0: raise``
    (cute_dsl/blockscaled_gemm.py:3018): it rejects SM110, says nothing of sm90;
    the fp4 quantize helpers that run there are not support for the choice."""
    verdict = _verdict(pair_059_063, "--moe-runner-backend", "flashinfer_cutedsl", "sm90")
    # source says unsupported: the masked GEMM is Sm100BlockScaledPersistentDenseGemmKernel,
    # built on tcgen05 MMA (Blackwell only): see
    # flashinfer/cute_dsl/blockscaled_gemm.py:42, :465; no line of it names an arch
    assert verdict.verdict.value == "unknown", _show(verdict)
    assert any(e.line == 3018 and "says nothing about sm90" in e.note
               for e in verdict.evidence), _show(verdict)
    # the masked GEMM that rejects SM110 runs only in ModelOpt FP4's
    # apply_without_routing_weights, which DeepEP's layer calls: under the
    # methods that run it (link/named.py), it is no longer required for every
    # launch, so sm110 is not called unsupported on its strength (it was)
    verdict = _verdict(pair_059_063, "--moe-runner-backend", "flashinfer_cutedsl", "sm110")
    assert verdict.verdict.value == "unknown", _show(verdict)
    assert any(e.line == 3018 and "decides nothing" in e.note
               for e in verdict.evidence), _show(verdict)


def test_cli_explain_and_graph(tmp_path: Path, capsys: Any, pair_059_063: Any) -> None:
    from realtrees import shared_cache_dir

    graph = tmp_path / "support.json"
    code = main(["sglang==0.5.9", "--arch", "sm120", "--option", "--moe-runner-backend",
                 "--cache-dir", str(shared_cache_dir()), "--graph", str(graph), "-q"])
    assert code == 0
    out = capsys.readouterr().out
    assert "flashinfer_trtllm" in out and "unsupported" in out
    assert graph.exists() and '"nodes"' in graph.read_text()
    code = main(["explain", "flashinfer_trtllm", "--option", "--moe-runner-backend",
                 "--arch", "RTX PRO 6000", "sglang==0.5.9",
                 "--cache-dir", str(shared_cache_dir()), "-q"])
    assert code == 0
    out = capsys.readouterr().out
    assert "unsupported (safe to try: no)" in out
    assert "flashinfer/jit/fused_moe.py:238" in out


def test_kernel_answers_are_replayed_exactly(sglang_059: Any, flashinfer_063: Any,
                                             tmp_path: Path) -> None:
    """The kernel-library answer cache gives the verdicts a scan without it gives:
    after a scan that asked other questions first (the replay), when every
    answer is stored (the library is then never read), and from a corrupt file."""
    from guardscan.arch import parse_arch
    from guardscan.driver import ScanOptions, analyse

    options = ["--moe-runner-backend", "--fp4-gemm-backend", "--fp8-gemm-backend"]

    def run(cache: Path | None, archs: list[str] | None = None) -> Any:
        return analyse(ScanOptions(target=str(sglang_059.root / "sglang"),
                                   flashinfer=str(flashinfer_063.root / "flashinfer"),
                                   options=options, cache_dir=cache,
                                   use_cache=cache is not None, offline=True, full=True,
                                   **({"archs": [parse_arch(a) for a in archs]} if archs else {})))

    reference = run(None).result.to_json()
    cache = tmp_path / "cache"
    # fewer questions are stored, for two archs: a sequence of their own (a
    # narrowed --option scan judges every option now: the archs narrow it)
    run(cache, ["sm90", "sm120"])
    first = run(cache)
    assert first.result.to_json() == reference
    # nothing stored for every arch: the background process answers ahead of
    # the scan where it can run (``memo.warm``), else the scan reads the library
    assert (first.kernel_judge._library is None) == _AHEAD
    stored = run(cache)
    assert stored.result.to_json() == reference
    assert stored.kernel_judge._library is None  # every answer came from the cache
    older, newer = sorted((cache / "kernels").glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    assert len(list((cache / "kernels").glob("*.pickle"))) == 2  # one sequence per set of archs
    # a sequence that asked other questions first: replayed up to where it
    # differs, then the library is read and the questions so far asked again
    newer.write_bytes(older.read_bytes())
    replayed = run(cache)
    assert replayed.result.to_json() == reference
    assert replayed.kernel_judge._library is not None
    newer.write_bytes(b"not a pickle")
    assert run(cache).result.to_json() == reference


def test_one_arch_after_every_arch_reads_no_kernel_library(sglang_059: Any, flashinfer_063: Any,
                                                           tmp_path: Path) -> None:
    """``--arch sm120`` after a scan of every arch: the kernel library's
    answers are that scan's own for sm120 (the library is never read), and
    the verdicts and diagnostics are those of a scan of sm120 alone without
    the cache."""
    from guardscan.arch import parse_arch
    from guardscan.driver import ScanOptions, analyse

    def run(cache: Path | None, archs: list[str] | None = None) -> Any:
        return analyse(ScanOptions(target=str(sglang_059.root / "sglang"),
                                   flashinfer=str(flashinfer_063.root / "flashinfer"),
                                   options=["--moe-runner-backend", "--fp4-gemm-backend"],
                                   cache_dir=cache, use_cache=cache is not None, offline=True,
                                   full=True,
                                   **({"archs": [parse_arch(a) for a in archs]} if archs else {})))

    reference = run(None, ["sm120"]).result.to_json()
    cache = tmp_path / "cache"
    # (answered ahead by the background process where it runs, ``memo.warm``)
    assert (run(cache).kernel_judge._library is None) == _AHEAD
    one = run(cache, ["sm120"])
    assert one.result.to_json() == reference
    assert one.kernel_judge._library is None
