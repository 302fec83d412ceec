"""Which choices an incremental scan judges again when a kernel call changed
(``verdict.dirty``): the choices the call is handed or singles out, as the
judge picks each choice's calls (``verdict.ladder``), and every choice when
the scan's links are not given."""

from __future__ import annotations

import pytest

from guardscan.link import KernelCall, Links
from guardscan.predicate import Const, Context, Not, OptionIs, Predicate, conj, disj
from guardscan.results import OptionInfo
from guardscan.verdict.dirty import dirty_choices
from guardscan.verdict.values import (
    about_choice,
    calling_choices,
    choices_about,
    unset_while_judging,
)

DEST = "moe_runner_backend"
CHOICES = ("auto", "triton", "flashinfer_trtllm", "flashinfer_cutlass")
OPTION = OptionInfo("--moe-runner-backend", DEST, CHOICES, "sglang/srt/server_args.py", 1)


def _is(*choices: str, dest: str = DEST) -> OptionIs:
    return OptionIs(dest, frozenset(choices))


def _call(cond: Predicate, backends: tuple[tuple[str, str], ...] = ()) -> KernelCall:
    return KernelCall(DEST, cond, "flashinfer.fused_moe.trtllm_fp4_block_scale_moe",
                      "sglang/srt/layers/moe/fused_moe.py", 10, backends=backends)


@pytest.mark.parametrize(("cond", "backends", "defaults", "expected"), [
    # handed each choice's own string: those choices, whatever the condition
    (Const(True), (("flashinfer_trtllm", "trtllm"), ("flashinfer_cutlass", "cutlass")), {},
     {"flashinfer_trtllm", "flashinfer_cutlass"}),
    # under a test of one choice: that choice only
    (_is("flashinfer_trtllm"), (), {}, {"flashinfer_trtllm"}),
    (_is("flashinfer_trtllm", "flashinfer_cutlass"), (), {},
     {"flashinfer_trtllm", "flashinfer_cutlass"}),
    # code every choice runs: no choice's own call, so no verdict reads it
    (_is(*CHOICES), (), {}, set()),
    (Const(True), (), {}, set()),
    # a test that names the choice, either way round, singles it out
    (Not(_is("triton")), (), {}, {"triton"}),
    # a test of another option that holds by its default while this one is
    # judged singles the call out for every choice, as the judge reads it
    (_is("deepep", dest="moe_a2a_backend"), (), {"moe_a2a_backend": "deepep"}, set(CHOICES)),
    (_is("deepep", dest="moe_a2a_backend"), (), {"moe_a2a_backend": "none"}, set()),
])
def test_calling_choices(cond: Predicate, backends: tuple[tuple[str, str], ...],
                         defaults: dict[str, str], expected: set[str]) -> None:
    links = Links(defaults={DEST: "auto", **defaults})
    unset = unset_while_judging(links, DEST)
    assert DEST not in unset
    assert calling_choices(_call(cond, backends), DEST, CHOICES, None, unset) == expected


def test_unset_while_judging_leaves_twins_unset() -> None:
    links = Links(defaults={DEST: "auto", "moe_a2a_backend": "none",
                            "speculative_moe_runner_backend": "triton"},
                  unset={DEST: ("speculative_moe_runner_backend",)})
    assert unset_while_judging(links, DEST) == {"moe_a2a_backend": "none",
                                                "speculative_moe_runner_backend": ""}


def test_dirty_choices_of_a_changed_kernel_call() -> None:
    changed = Links(kernel_calls=[_call(_is("flashinfer_trtllm"))])
    links = Links(defaults={DEST: "auto"})
    assert dirty_choices(changed, [OPTION], None, links) == {DEST: {"flashinfer_trtllm"}}
    # without this scan's links, every choice of the option
    assert dirty_choices(changed, [OPTION], None) == {DEST: set(CHOICES)}


@pytest.mark.parametrize("cond", [
    _is("triton"), Not(_is("triton")), Const(True), Const(False),
    conj(_is("triton", "flashinfer_trtllm"), Not(_is("flashinfer_trtllm"))),
    disj(_is("triton"), _is("deepep", dest="moe_a2a_backend")),
])
def test_choices_about_decides_each_choice_as_about_choice(cond: Predicate) -> None:
    """Choices grouped by the condition's tests of the option come out as
    each choice asked on its own."""
    for unset in ({}, {"moe_a2a_backend": "deepep"}, {"moe_a2a_backend": "none"}):
        one_by_one = {c for c in CHOICES if about_choice(cond, Context(
            options={**unset, DEST: c}, quantization=None))}
        assert choices_about(cond, DEST, CHOICES, None, unset) == one_by_one
