"""How a choice's kernel-library calls decide its verdict (``verdict.rules.kernels``).

A stand-in kernel judge answers each call by its target, so each case pins one
rule: required calls vs alternatives vs undecided ones, helpers that can
exclude but never support, doubts, arch-neutral calls.
"""

from __future__ import annotations

from guardscan.arch import Arch
from guardscan.link import KernelCall
from guardscan.predicate import Context, Device, OptionIs, Predicate, Tri, Unknown, conj
from guardscan.results import Evidence
from guardscan.verdict import KernelJudge
from guardscan.verdict.rules.kernels import judge_kernels, kernel_helpers

DEST = "moe_runner_backend"
EVERY = frozenset({"mine", "other", "third"})
SM120 = Arch(12, 0)
CTX = Context(arch=SM120, options={DEST: "mine"})
MINE = OptionIs(DEST, frozenset({"mine"}))
CONFIG = Unknown("model.config.use_fp4")


def fact(name: str, note: str = "") -> list[Evidence]:
    return [Evidence(f"flashinfer/{name}.py", 7, "kernel", f"fact of {name}", note or name)]


class Judge(KernelJudge):
    """Answers by target: ``answers[target] = (support, chain)``; ``delegates``
    names the public building block that decides a TRUE."""

    def __init__(self, answers: dict[str, tuple[Tri, list[Evidence]]],
                 delegates: dict[str, str] | None = None,
                 loadable: frozenset[str] = frozenset()) -> None:
        self.answers = answers
        self.delegates = delegates or {}
        #: targets that reach compiled code the arch can load
        self.runs = loadable

    def covers(self, call: KernelCall) -> bool:
        return call.target.startswith("flashinfer.")

    def support(self, call: KernelCall, arch: Arch) -> tuple[Tri, list[Evidence]]:
        return self.answers[call.target]

    def delegate(self, call: KernelCall, arch: Arch) -> str | None:
        return self.delegates.get(call.target)

    def loadable(self, call: KernelCall, arch: Arch) -> bool:
        return call.target in self.runs


def call(target: str, condition: Predicate = MINE, owned: bool = True) -> KernelCall:
    return KernelCall(DEST, condition, f"flashinfer.{target}", "sglang/moe.py", 1, owned=owned)


TRUE = (Tri.TRUE, fact("runs"))
FALSE = (Tri.FALSE, fact("excluded"))
DOUBT = (Tri.UNKNOWN, fact("doubt"))
NEUTRAL = (Tri.UNKNOWN, [])


def decide(calls: list[KernelCall], judge: Judge,
           helpers: frozenset[tuple[str, str | None, str, int]] = frozenset(),
           ) -> tuple[str, list[Evidence]]:
    outcome = judge_kernels(None, calls, judge, CTX, SM120, EVERY,  # type: ignore[arg-type]
                            helpers=helpers)
    if outcome.excluding:
        return "unsupported", list(outcome.excluding)
    if outcome.positive:
        return "supported", list(outcome.positive)
    return ("mixed" if outcome.caveats else "nothing"), list(outcome.caveats)


def test_a_required_call_that_excludes_decides() -> None:
    """Reach TRUE: made whatever the model. One exclusion is enough, whatever
    the other calls say (a union would have called it a mix)."""
    verdict, evidence = decide([call("kernel"), call("quantize")],
                               Judge({"flashinfer.kernel": TRUE, "flashinfer.quantize": FALSE}))
    assert verdict == "unsupported"
    assert evidence[-1].path == "flashinfer/excluded.py"


def test_every_required_call_admits_for_supported() -> None:
    verdict, evidence = decide([call("kernel"), call("quantize")],
                               Judge({"flashinfer.kernel": TRUE, "flashinfer.quantize": TRUE}))
    assert verdict == "supported" and evidence[-1].path == "flashinfer/runs.py"


def test_an_alternative_not_taken_does_not_count() -> None:
    """``if major == 10: trtllm(...) else: cutlass(...)``: on sm120 only the
    branch taken counts."""
    sm10x = conj(MINE, Device("major", "==", 10))
    verdict, _ = decide([call("trtllm", sm10x), call("cutlass")],
                        Judge({"flashinfer.trtllm": FALSE, "flashinfer.cutlass": TRUE}))
    assert verdict == "supported"


def test_undecided_exclusion_is_a_caveat() -> None:
    verdict, evidence = decide([call("fp4_moe", conj(MINE, CONFIG)), call("bf16_moe")],
                               Judge({"flashinfer.fp4_moe": FALSE, "flashinfer.bf16_moe": TRUE}))
    assert verdict == "mixed"
    assert "decides nothing" in evidence[-1].note


def test_every_call_excluded_is_unsupported() -> None:
    """Undecided calls alike: whatever runs fails."""
    verdict, _ = decide([call("fp4_moe", conj(MINE, CONFIG)),
                         call("fp8_moe", conj(MINE, Unknown("fp8")))],
                        Judge({"flashinfer.fp4_moe": FALSE, "flashinfer.fp8_moe": FALSE}))
    assert verdict == "unsupported"


def test_compiled_code_the_arch_can_load_is_another_way_out() -> None:
    """sglang 0.5.23's DSA backend on sm90: its FlashInfer calls exclude sm90
    (each under a test left undecided), but a call into a compiled package
    whose library holds sm90 code may run instead: not "whatever runs fails"."""
    calls = [call("trtllm_ragged", conj(MINE, CONFIG)),
             call("flash_mla_decode", conj(MINE, Unknown("dsa_impl == 'flashmla_kv'")))]
    answers = {"flashinfer.trtllm_ragged": FALSE, "flashinfer.flash_mla_decode": NEUTRAL}
    verdict, evidence = decide(calls, Judge(answers, loadable=frozenset(
        {"flashinfer.flash_mla_decode"})))
    assert verdict == "mixed"
    assert "decides nothing" in evidence[-1].note
    # with no code for the arch there (arch-neutral: no fact at all), it still fails
    assert decide(calls, Judge(answers))[0] == "unsupported"
    # a required excluding call decides whatever else may run
    required = [call("trtllm_ragged"), calls[1]]
    assert decide(required, Judge(answers, loadable=frozenset(
        {"flashinfer.flash_mla_decode"})))[0] == "unsupported"


def test_shared_code_counts_only_where_it_is_reached() -> None:
    """Not owned: shared code under an option test, counted only with reach TRUE."""
    verdict, _ = decide([call("kernel"), call("other", conj(MINE, CONFIG), owned=False)],
                        Judge({"flashinfer.kernel": TRUE, "flashinfer.other": FALSE}))
    assert verdict == "supported"


def test_a_helper_never_supports_on_its_own() -> None:
    shuffle = call("shuffle")
    helpers = frozenset({(shuffle.target, None, shuffle.rel, shuffle.line)})
    verdict, evidence = decide([shuffle], Judge({"flashinfer.shuffle": TRUE}), helpers)
    assert verdict == "mixed"
    assert "a helper on the path" in evidence[-1].note
    # ...but it may exclude
    verdict, _ = decide([shuffle], Judge({"flashinfer.shuffle": FALSE}), helpers)
    assert verdict == "unsupported"


def test_a_delegated_answer_is_a_helper() -> None:
    """TRUE decided inside another public function of the library (the
    building block other APIs share): not support for the choice."""
    judge = Judge({"flashinfer.shuffle_sf": TRUE},
                  {"flashinfer.shuffle_sf": "flashinfer.fp4.block_scale_interleave"})
    verdict, evidence = decide([call("shuffle_sf")], judge)
    assert verdict == "mixed"
    assert "decided in flashinfer.fp4.block_scale_interleave" in evidence[-1].note


def test_a_helper_with_the_kernels_excluded_is_unsupported() -> None:
    """The helper runs, the choice's kernels do not: whatever runs fails."""
    judge = Judge({"flashinfer.quantize": TRUE, "flashinfer.moe": FALSE},
                  {"flashinfer.quantize": "flashinfer.fp4.get_module"})
    verdict, evidence = decide([call("quantize"), call("moe", conj(MINE, CONFIG))], judge)
    assert verdict == "unsupported" and evidence[-1].path == "flashinfer/excluded.py"


def test_a_helper_beside_a_real_kernel_leaves_it_supported() -> None:
    judge = Judge({"flashinfer.quantize": TRUE, "flashinfer.moe": (Tri.TRUE, fact("moe"))},
                  {"flashinfer.quantize": "flashinfer.fp4.get_module"})
    verdict, evidence = decide([call("moe"), call("quantize")], judge)
    assert verdict == "supported"
    assert evidence[-1].path == "flashinfer/moe.py"  # the choice's own kernel last


def test_a_doubt_blocks_supported_and_all_excluded() -> None:
    """Arch-restricted code whose facts do not decide (a deny-list check)."""
    verdict, evidence = decide([call("gemm"), call("quantize")],
                               Judge({"flashinfer.gemm": DOUBT, "flashinfer.quantize": TRUE}))
    assert verdict == "mixed" and any(e.path == "flashinfer/doubt.py" for e in evidence)
    verdict, _ = decide([call("gemm", conj(MINE, CONFIG)), call("moe", conj(MINE, CONFIG))],
                        Judge({"flashinfer.gemm": DOUBT, "flashinfer.moe": FALSE}))
    assert verdict == "mixed"


def test_arch_neutral_calls_do_not_count() -> None:
    verdict, _ = decide([call("layout"), call("kernel")],
                        Judge({"flashinfer.layout": NEUTRAL, "flashinfer.kernel": TRUE}))
    assert verdict == "supported"
    assert decide([call("layout")], Judge({"flashinfer.layout": NEUTRAL}))[0] == "nothing"


def test_code_other_choices_run_makes_helpers() -> None:
    shared = call("shuffle", OptionIs(DEST, frozenset({"mine", "other"})))
    own = call("kernel")
    helpers = kernel_helpers([shared, own], DEST, "mine", EVERY, None)
    assert helpers == {(shared.target, None, shared.rel, shared.line)}
    # the same target at a call site of its own is the choice's own call
    assert kernel_helpers([own], DEST, "mine", EVERY, None) == frozenset()
