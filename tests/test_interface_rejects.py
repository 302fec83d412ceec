"""A quantization method's implementation of an interface's abstract method
(``FusedMoEMethodBase.apply``) runs on every launch under the method: its
refusal of a runner, on every arch, blocks that runner there
(fixtures/quant_interface_rejects, shaped like sglang 0.5.18-0.5.23's
``ModelOptNvFp4FusedMoEMethod.apply`` ending in ``raise
NotImplementedError("Unsupported moe_runner_backend for NVFP4 MoE")``). An
optional hook a base class gives a default for, and a method nothing calls,
refuse nothing; a choice that needs a companion option (LoRA, which replaces
the MoE core) gets a caveat, and a choice a hook rewrites is judged by the
value it becomes."""

from __future__ import annotations

from functools import cache

from fixturetree import fixture, run_scan

from guardscan.results import ScanResult

ARCHS = ["sm90", "sm100", "sm120"]
MOE = "--moe-runner-backend"
NVFP4 = "sglang/srt/layers/quantization/nvfp4.py"


@cache
def scan(quantization: str | None) -> ScanResult:
    return run_scan(fixture("quant_interface_rejects"), archs=ARCHS, option=MOE,
                    quantization=quantization)


def row(result: ScanResult, choice: str) -> str:
    by_arch = {b.arch: b.verdict.value[0].upper() for b in result.backends
               if b.option == MOE and b.choice == choice}
    return "".join(by_arch[a] for a in ARCHS)


def test_a_runner_the_methods_apply_refuses_is_blocked_on_every_arch() -> None:
    result = scan("nvfp4")
    assert row(result, "triton") == "BBB"
    verdict = next(b for b in result.backends
                   if (b.option, b.choice, b.arch) == (MOE, "triton", "sm120"))
    assert [(e.path, e.line, e.role) for e in verdict.evidence[1:]] == [
        (NVFP4, 19, "link"), (NVFP4, 25, "gate")]
    assert "implements FusedMoEMethodBase.apply()" in verdict.evidence[1].note


def test_runners_apply_has_a_branch_for_are_not_refused_by_it() -> None:
    # marlin and cutlass: apply returns for them; the base class's optional
    # get_moe_quant_info (every runner but triton) and debug_apply (nothing
    # calls it) refuse nothing
    result = scan("nvfp4")
    assert row(result, "marlin") == "UUU"
    assert row(result, "cutlass") == "BUU"  # the constructor's Blackwell-or-Marlin gate


def test_a_choice_that_needs_a_companion_gets_a_caveat_not_a_block() -> None:
    result = scan("nvfp4")
    assert row(result, "lora_marlin") == "BUU"
    verdict = next(b for b in result.backends
                   if (b.option, b.choice, b.arch) == (MOE, "lora_marlin", "sm120"))
    assert "needs --enable-lora" in verdict.conditions
    assert any(e.line == 25 and e.status == "caveat" for e in verdict.evidence)


def test_a_choice_a_hook_rewrites_is_judged_by_what_it_becomes() -> None:
    # megamoe becomes auto (with --moe-a2a-backend megamoe) before the model
    # is built: apply sees auto, which it does not refuse outright
    assert row(scan("nvfp4"), "megamoe") == "BUU"


def test_without_the_method_nothing_is_refused() -> None:
    result = scan(None)
    assert row(result, "triton") == "UUU"
    triton = next(b for b in result.backends
                  if (b.option, b.choice, b.arch) == (MOE, "triton", "sm100"))
    assert "blocked with --quantization nvfp4" in triton.conditions
    # under the method lora_marlin only gets a caveat: no "blocked with" either
    lora = next(b for b in result.backends
                if (b.option, b.choice, b.arch) == (MOE, "lora_marlin", "sm100"))
    assert lora.conditions == ("needs --enable-lora",)


SPEC = "--speculative-moe-runner-backend"
RUNNER = "sglang/srt/layers/moe/runner.py"


def test_the_draft_models_runner_meets_the_refusal_read_through_the_shared_getter() -> None:
    """fixtures/flow_shared_default (shaped like sglang 0.5.23's
    ``ModelOptNvFp4FusedMoEMethod.apply``): apply reads the runner through
    ``get_moe_runner_backend()``, where the draft model's value stands in
    while the draft model is built (``link/shared_values.py``). Its refusal
    holds for every value but the ones it has a branch for, and for
    ``auto`` only once resolved at run time; that test of the default is
    read where the refusal's own tests are, so it is the draft option's
    too: ``--speculative-moe-runner-backend triton`` is blocked under the
    method like the main option's, not left undecided by the main option's
    ``auto``. The constructor hands the value it reads to ``MoeRunner``, read
    with that argument (``link/bound_gates.py``): its refusal of cutlass is
    the draft option's too."""
    options = [MOE, SPEC]
    result = run_scan(fixture("flow_shared_default"), archs=ARCHS, option=options,
                      quantization="nvfp4")
    for option in options:
        rows = {choice: "".join(
            next(b.verdict.value[0].upper() for b in result.backends
                 if (b.option, b.choice, b.arch) == (option, choice, arch)) for arch in ARCHS)
            for choice in ("auto", "triton", "marlin", "cutlass")}
        assert rows == {"auto": "UUU", "triton": "BBB", "marlin": "UUU", "cutlass": "BBB"}, option
        for choice, where in (("triton", NVFP4), ("cutlass", RUNNER)):
            blocked = next(b for b in result.backends
                           if (b.option, b.choice, b.arch) == (option, choice, "sm100"))
            assert (blocked.evidence[-1].path, blocked.evidence[-1].role) == (where, "gate")
    plain = run_scan(fixture("flow_shared_default"), archs=ARCHS, option=options)
    for option in options:
        triton = next(b for b in plain.backends
                      if (b.option, b.choice, b.arch) == (option, "triton", "sm90"))
        assert (triton.verdict.value, triton.conditions) == (
            "unknown", ("blocked with --quantization nvfp4",))
