"""What SGLang's call passes decides FlashInfer's own branches (fixtures/flow_kernel_arguments/).

The fixture's MLA decode API resolves ``backend="auto"`` itself (``xqa`` off
major 10 unless ``sparse_top_k > 0``) and its ``xqa`` branch raises when a
``counter_buffer`` is given; the choice ``mla_gen`` passes no ``backend=``
and, through a ``**`` dict built on ``self.backend``, a counter buffer, as
SGLang 0.5.19's ``trtllm_mla`` does with FlashInfer 0.6.18.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import pytest
from fixturetree import fixture, line_of, verdict_of, verdicts
from hypothesis import given
from hypothesis import strategies as st

from guardscan.acquire import SourceTree, acquire
from guardscan.arch import parse_arch_list
from guardscan.driver import ScanOptions, analyse
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.kernels import build_kernel_library
from guardscan.kernels.arguments import (
    DEFAULT,
    GIVEN,
    NONE,
    argument_option,
    read_argument_test,
)
from guardscan.link.context import LinkContext
from guardscan.link.kernel_args import call_arguments
from guardscan.link.regions import RegisteredRegions
from guardscan.options import build_catalog
from guardscan.predicate import Context, Tri
from guardscan.results import ScanResult

NAME = "flow_kernel_arguments"
DECODE = "flashinfer/decode.py"
OPTION = "--attention-backend"


@cache
def scan() -> ScanResult:
    tree = fixture(NAME)
    with tempfile.TemporaryDirectory(prefix="guardscan-test-cache-") as cache_dir:
        return analyse(ScanOptions(
            target=str(tree), flashinfer=str(tree), options=[OPTION],
            archs=parse_arch_list(["sm80,sm90,sm100,sm120"]), use_cache=False, offline=True,
            cache_dir=Path(cache_dir))).result


def at(needle: str) -> int:
    return line_of(fixture(NAME) / DECODE, needle)


def test_the_verdicts_follow_what_each_choice_passes() -> None:
    table = verdicts(scan(), OPTION)
    assert {arch: table[("mla_gen", arch)] for arch in ("sm80", "sm90", "sm100", "sm120")} == {
        # auto becomes xqa off major 10: a decorator for 12.x and the counter check
        "sm80": "unsupported", "sm90": "unsupported",
        # auto stays auto on major 10: which backend runs is left open
        "sm100": "unknown",
        "sm120": "unsupported"}
    # an explicit backend: the branches after the resolution follow it
    assert {arch: table[("mla_dsl", arch)] for arch in ("sm80", "sm90", "sm100", "sm120")} == {
        "sm80": "unsupported", "sm90": "supported", "sm100": "supported", "sm120": "supported"}
    # ``self.backend`` comes from the runner: the ``**`` dict is not read
    assert {table[("mla_open", arch)] for arch in ("sm80", "sm90", "sm100", "sm120")} == {
        "unknown"}


def test_the_chain_names_the_pick_and_ends_at_the_argument_check() -> None:
    chain = verdict_of(scan(), "mla_gen", "sm120", OPTION).evidence
    assert (chain[-2].path, chain[-2].line) == (DECODE, at('backend = "xqa"'))
    assert "backend='auto' picks: mla_decode -> xqa" in chain[-2].note
    assert (chain[-1].path, chain[-1].line, chain[-1].kind) == (
        DECODE, at("if counter_buffer is not None:"), "argument-check")
    assert "counter_buffer (argument)" in chain[-1].note


def test_an_undecided_argument_never_decides() -> None:
    # ``sparse_top_k > 0`` with the default 0 is false; given, it is open
    arguments = {"sparse_top_k": "0", "buf": "None", "seq": ""}
    test = read_argument_test("sparse_top_k > 0", arguments)
    assert test is not None
    option = argument_option("sparse_top_k")
    assert test.evaluate(Context(options={option: DEFAULT})) is Tri.FALSE
    assert test.evaluate(Context(options={option: GIVEN})) is Tri.UNKNOWN
    assert test.evaluate(Context()) is Tri.UNKNOWN
    # a parameter not in ``arguments`` (reassigned in the body), or an
    # ``is`` test of something but None, is not an argument test
    assert read_argument_test("other > 0", arguments) is None
    assert read_argument_test("buf is buf", arguments) is None


@given(st.sampled_from([GIVEN, NONE, DEFAULT]), st.sampled_from(["None", "1", ""]))
def test_is_none_reads_each_state(state: str, default: str) -> None:
    test = read_argument_test("buf is None", {"buf": default})
    assert test is not None
    value = test.evaluate(Context(options={argument_option("buf"): state}))
    expected = {GIVEN: Tri.FALSE, NONE: Tri.TRUE,
                DEFAULT: Tri.TRUE if default == "None" else Tri.FALSE}[state]
    assert value is expected
    negated = read_argument_test("buf is not None", {"buf": default})
    assert negated is not None
    assert negated.evaluate(Context(options={argument_option("buf"): state})) is (
        Tri.TRUE if expected is Tri.FALSE else Tri.FALSE)


@pytest.mark.parametrize(("text", "default", "state", "expected"), [
    ("flag", "False", DEFAULT, Tri.FALSE),
    ("flag", "True", DEFAULT, Tri.TRUE),
    ("flag", "False", NONE, Tri.FALSE),
    ("flag", "False", GIVEN, Tri.UNKNOWN),
    ("mode == 'x'", "'x'", DEFAULT, Tri.TRUE),
    ("mode == 'x'", "'y'", DEFAULT, Tri.FALSE),
    ("mode in ('x', 'z')", "'z'", DEFAULT, Tri.TRUE),
    ("mode == 'x'", "'y'", GIVEN, Tri.UNKNOWN),
])
def test_truth_and_comparisons_with_the_default(text: str, default: str, state: str,
                                                expected: Tri) -> None:
    name = text.split()[0]
    test = read_argument_test(text, {name: default})
    assert test is not None
    assert test.evaluate(Context(options={argument_option(name): state})) is expected


def _arguments_of(module: str, choice: str) -> tuple[tuple[str, str], ...] | None:
    index = Index(acquire(str(fixture(NAME))))
    catalog = build_catalog(index)
    ctx = LinkContext.of(index, Vocabulary(index), catalog.options, None)
    facts = index.view(f"sglang/srt/layers/attention/{module}.py")
    assert facts is not None
    (call,) = [c for c in facts.calls if c.func == "flashinfer.decode.mla_decode"]
    return call_arguments(ctx, facts, call, RegisteredRegions(ctx, None),  # type: ignore[arg-type]
                          ("attention_backend", choice))


def test_the_arguments_a_call_passes_through_a_dict_built_on_self() -> None:
    # the registered factory builds the class without ``backend=``: its
    # default decides the dict, and the annotated buffer is never None
    assert _arguments_of("mla_gen_backend", "mla_gen") == (
        ("query", "passed"), ("seq_lens", "passed"), ("counter_buffer", "given"))
    # an explicit literal
    assert _arguments_of("mla_dsl_backend", "mla_dsl") == (
        ("query", "passed"), ("seq_lens", "passed"), ("backend", "given"))
    # ``self.backend`` from the runner: the dict cannot be read
    assert _arguments_of("mla_open_backend", "mla_open") is None


def test_only_a_function_that_reads_its_arguments_is_asked_with_them() -> None:
    root = fixture(NAME)
    files = tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("flashinfer/*.py")))
    library = build_kernel_library(Index(SourceTree(root, "flashinfer", "0.0.0", files,
                                                    str(root))))
    # its checks and its ``auto`` read them; a leaf kernel reads none
    assert library.reads_arguments("flashinfer.decode.mla_decode") is True
    assert library.reads_arguments("flashinfer.decode._gen_decode") is False
