"""Following the option's value: one fixture tree per form (fixtures/flow_<form>/).

Each test checks the verdicts on sm90 sm100 sm120 and that the chain ends at
the deciding line: a hook that sets another option (alias), a registry shared
by twin options and an effective value that falls back to another option, an
instance attribute set under device tests in ``__init__`` and read elsewhere,
a module global set by a setter and mapped by an enum method, and a
module-level table keyed by choices. The value model itself (``ChoiceV``,
``AltV``) is checked through the vocabulary on the same trees.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest
from fixturetree import (
    describe_chain,
    fixture,
    line_of,
    run_analysis,
    run_scan,
    verdict_of,
    verdicts,
)

from guardscan.acquire import acquire
from guardscan.guards import ChoiceV, ConstV, Vocabulary
from guardscan.index import Index
from guardscan.link import option_model
from guardscan.link.model import Finding, FindingKind, Links
from guardscan.link.shared_values import share_links
from guardscan.options import build_catalog
from guardscan.predicate import Context, OptionIs, Predicate, QuantIs, Tri
from guardscan.results import ScanResult

ARCHS = ("sm90", "sm100", "sm120")
WORDS = {"B": "blocked", "S": "supported", "U": "unknown"}


@cache
def scan(name: str, *options: str) -> ScanResult:
    return run_scan(fixture(name), archs=list(ARCHS), option=list(options))


def row(result: ScanResult, option: str, choice: str) -> str:
    table = verdicts(result, option)
    inverse = {v: k for k, v in WORDS.items()}
    return "".join(inverse[table[(choice, arch)]] for arch in ARCHS)


def deciding(result: ScanResult, option: str, choice: str, arch: str) -> tuple[str, int, str]:
    last = verdict_of(result, choice, arch, option).evidence[-1]
    return last.path, last.line, last.role


def at(name: str, rel: str, needle: str) -> tuple[str, int]:
    return rel, line_of(fixture(name) / rel, needle)


def vocabulary(name: str) -> Vocabulary:
    index = Index(acquire(str(fixture(name))), None)
    catalog = build_catalog(index)
    return Vocabulary(index, option_model(catalog.options, catalog.enums, catalog.quantization))


def test_alias_hook_takes_on_the_gates_of_the_option_it_sets() -> None:
    result = scan("flow_alias", "--moe-runner-backend", "--attention-backend")
    assert row(result, "--attention-backend", "fa3") == "BSB"
    # `--moe-runner-backend w` is rewritten into `--attention-backend fa3`
    assert row(result, "--moe-runner-backend", "w") == "BSB"
    assert row(result, "--moe-runner-backend", "x") == "UUU"
    rel = "sglang/srt/arg_groups/hooks.py"
    chain = verdict_of(result, "w", "sm120", "--moe-runner-backend").evidence
    assert (rel, line_of(fixture("flow_alias") / rel, 'attention_backend="fa3"')) in [
        (e.path, e.line) for e in chain], describe_chain(chain)
    assert deciding(result, "--moe-runner-backend", "w", "sm120") == (
        *at("flow_alias", rel, "raise ValueError"), "gate")


def test_twin_options_share_the_registry_and_the_effective_value() -> None:
    result = scan("flow_twins", "--attention-backend", "--prefill-attention-backend")
    rel = "sglang/srt/layers/attention/attention_registry.py"
    for option in ("--attention-backend", "--prefill-attention-backend"):
        # the registered fa3 factory asserts "not SM100"
        assert row(result, option, "fa3") == "SBS", option
        assert deciding(result, option, "fa3", "sm100") == (
            *at("flow_twins", rel, "assert not is_sm100_supported()"), "gate")
        # `prefill if prefill else attention`: the same gate for both options,
        # the split option taken as not given while the base one is judged
        assert row(result, option, "flashinfer") == "BSB", option
        assert deciding(result, option, "flashinfer", "sm90") == (
            *at("flow_twins", rel, 'raise ValueError("flashinfer prefill'), "gate")


def test_instance_attribute_set_in_init_decides_another_method() -> None:
    result = scan("flow_instance_attr", "--moe-runner-backend")
    rel = "sglang/srt/layers/moe/moe_runner/x.py"
    assert row(result, "--moe-runner-backend", "x") == "BSS"
    assert deciding(result, "--moe-runner-backend", "x", "sm90") == (
        *at("flow_instance_attr", rel, "raise NotImplementedError"), "gate")


def test_instance_attribute_reads_as_alternatives() -> None:
    vocab = vocabulary("flow_instance_attr")
    rel = "sglang/srt/layers/moe/moe_runner/x.py"
    pred = vocab.predicate('self.kernel == "sm120"', rel, "XRunner.run", 20).predicate
    text = pred.describe()
    assert "capability major in [12]" in text and "not (" in text, text


def test_setter_global_and_enum_method_give_each_choice_its_value() -> None:
    vocab = vocabulary("flow_choice_values")
    rel = "sglang/srt/layers/quantization/fp8_utils.py"
    value = vocab.value("get_fp8_gemm_backend().library_name()", rel, "fp8_gemm", 40)
    assert isinstance(value, ChoiceV), value
    assert dict(value.table) == {"auto": ConstV("auto"), "cutlass": ConstV("lib_cutlass"),
                                 "z": ConstV("z")}
    pred = vocab.predicate('get_fp8_gemm_backend().library_name() == "lib_cutlass"', rel,
                           "fp8_gemm", 40).predicate
    assert pred == OptionIs("fp8_gemm_backend", frozenset({"cutlass"}))
    result = scan("flow_choice_values", "--fp8-gemm-backend")
    assert row(result, "--fp8-gemm-backend", "cutlass") == "BSB"
    assert row(result, "--fp8-gemm-backend", "z") == "UUU"
    assert deciding(result, "--fp8-gemm-backend", "cutlass", "sm120") == (
        *at("flow_choice_values", rel, "raise RuntimeError"), "gate")


@pytest.mark.parametrize("text", ['"cutlass".removeprefix("cut")', 'f"lib_{x}"'])
def test_string_computations_on_unknown_or_constant_text(text: str) -> None:
    vocab = vocabulary("flow_choice_values")
    value = vocab.value(text, "sglang/srt/layers/quantization/fp8_utils.py", "fp8_gemm", 40)
    if "removeprefix" in text:
        assert value == ConstV("lass")
    else:  # an f-string of a name the tree does not define stays unknown
        assert not isinstance(value, (ConstV, ChoiceV)), value


def test_table_keyed_by_choices_is_code_run_for_each() -> None:
    result = scan("flow_dict_registry", "--attention-backend")
    rel = "sglang/srt/layers/attention/vision.py"
    assert row(result, "--attention-backend", "fa3") == "SSB"
    assert row(result, "--attention-backend", "triton") == "UUU"
    chain = verdict_of(result, "fa3", "sm120", "--attention-backend").evidence
    assert (*at("flow_dict_registry", rel, '"fa3": Fa3Attention'), "link") in [
        (e.path, e.line, e.role) for e in chain], describe_chain(chain)
    assert deciding(result, "--attention-backend", "fa3", "sm120") == (
        *at("flow_dict_registry", rel, 'raise RuntimeError("fa3'), "gate")


def test_function_returned_for_a_choice_is_followed_as_called() -> None:
    """``if backend.is_z(): return _z_linear``: the caller runs what it gets
    back, so the gate in ``_z_linear`` is z's, through the dispatcher."""
    result = scan("flow_returned_function", "--fp8-gemm-backend")
    rel = "sglang/srt/layers/quantization/fp8_utils.py"
    assert row(result, "--fp8-gemm-backend", "z") == "BSB"
    assert deciding(result, "--fp8-gemm-backend", "z", "sm120") == (
        *at("flow_returned_function", rel, "raise RuntimeError"), "gate")
    chain = verdict_of(result, "z", "sm120", "--fp8-gemm-backend").evidence
    assert (rel, line_of(fixture("flow_returned_function") / rel, "return _z_linear")) in [
        (e.path, e.line) for e in chain], describe_chain(chain)
    # the other choices get other functions back: no gate of theirs
    assert row(result, "--fp8-gemm-backend", "cutlass") == "UUU"


def test_mode_option_holds_its_default_and_says_what_another_value_does() -> None:
    """``--gemm-mode`` is no backend option (not judged, not reported), but
    a gate tests it: at its default ``auto`` the gate raises for z off SM100,
    and the verdict says that ``--gemm-mode precise`` would not."""
    result = scan("flow_mode_option", "--fp8-gemm-backend")
    rel = "sglang/srt/layers/quantization/fp8_utils.py"
    assert "--gemm-mode" not in {o.flag for o in result.options}
    assert row(result, "--fp8-gemm-backend", "z") == "BSB"
    assert deciding(result, "--fp8-gemm-backend", "z", "sm120") == (
        *at("flow_mode_option", rel, "raise RuntimeError"), "gate")
    assert verdict_of(result, "z", "sm120", "--fp8-gemm-backend").conditions == (
        "not blocked with --gemm-mode precise",)
    assert row(result, "--fp8-gemm-backend", "cutlass") == "UUU"


def test_mode_option_is_read_from_its_definition() -> None:
    index = Index(acquire(str(fixture("flow_mode_option"))), None)
    catalog = build_catalog(index)
    assert [(m.flag, m.choices, m.default) for m in catalog.modes] == [
        ("--gemm-mode", ("precise", "fast", "auto"), "'auto'")]
    assert "--gemm-mode" not in {o.flag for o in catalog.options}


def test_an_environment_variable_is_unset_and_the_verdict_says_what_setting_it_does() -> None:
    """``get_bool_env_var("SGLANG_Z_FALLBACK")`` reads ``os.getenv(name,
    default)`` with its arguments bound: unset it is ``"false"``, so the gate
    raises for z off SM100, and setting the variable would not."""
    result = scan("flow_env_default", "--fp8-gemm-backend")
    rel = "sglang/srt/layers/quantization/fp8_utils.py"
    assert row(result, "--fp8-gemm-backend", "z") == "BSB"
    assert deciding(result, "--fp8-gemm-backend", "z", "sm120") == (
        *at("flow_env_default", rel, "raise RuntimeError"), "gate")
    assert verdict_of(result, "z", "sm120", "--fp8-gemm-backend").conditions == (
        "not blocked with SGLANG_Z_FALLBACK=1",)
    assert row(result, "--fp8-gemm-backend", "cutlass") == "UUU"


def test_call_through_a_conditionally_imported_module_fails_where_it_is_not_imported() -> None:
    result = scan("flow_unbound_import", "--moe-runner-backend")
    rel = "sglang/srt/layers/gemm_wrapper/entrypoint.py"
    # ENABLE_JIT_GEMM is false on sm120: `jit_gemm` is never bound there; that
    # the import's test lets the others through binds a name, it is no support
    assert row(result, "--moe-runner-backend", "x") == "UUB"
    assert deciding(result, "--moe-runner-backend", "x", "sm120") == (
        *at("flow_unbound_import", rel, "jit_gemm.m_grouped_gemm"), "gate")
    # a use behind the import's own test never fails
    assert row(result, "--moe-runner-backend", "y") == "UUU"


def test_a_choice_is_judged_with_the_options_it_requires_given() -> None:
    result = run_scan(fixture("flow_companions"), archs=["sm80", "sm90", "sm120"],
                      option=["--moe-runner-backend"])
    table = verdicts(result, "--moe-runner-backend")
    # the hook's "requires --enable-lora" / "--lora-backend v2" block no arch:
    # the arch is decided by `cls._admit` (a classmethod called through cls);
    # with --lora-backend v2 given, the csgmv-only Hopper check does not apply
    assert [table[("lora_x", a)] for a in ("sm80", "sm90", "sm120")] == [
        "blocked", "supported", "blocked"]
    runner = "sglang/srt/lora/moe/runner.py"
    last = verdict_of(result, "lora_x", "sm80", "--moe-runner-backend").evidence[-1]
    assert (last.path, last.line) == at("flow_companions", runner, "raise NotImplementedError")
    for arch in ("sm80", "sm90", "sm120"):
        judged = verdict_of(result, "lora_y", arch, "--moe-runner-backend")
        assert judged.conditions == ("needs --enable-lora", "needs --lora-backend v2")
    # a choice the hook does not test needs nothing
    assert verdict_of(result, "triton", "sm90", "--moe-runner-backend").conditions == ()


def test_a_deprecated_alias_in_a_table_is_judged_as_what_it_becomes() -> None:
    result = run_scan(fixture("flow_alias_table"), archs=["sm80", "sm90", "sm120"],
                      option=["--attention-backend"])
    table = verdicts(result, "--attention-backend")
    for arch, expected in (("sm80", "blocked"), ("sm90", "supported"), ("sm120", "blocked")):
        assert table[("old_fa3", arch)] == table[("fa3", arch)] == expected
    chain = verdict_of(result, "old_fa3", "sm80", "--attention-backend").evidence
    hook = at("flow_alias_table", "sglang/srt/arg_groups/serving_hook.py", "aliases = {")
    assert hook in [(e.path, e.line) for e in chain]
    assert (chain[-1].path, chain[-1].line) == at(
        "flow_alias_table", "sglang/srt/server_args.py", "raise ValueError")



def test_a_refusal_on_the_way_to_a_device_gate_blocks_every_arch() -> None:
    """A decode-only backend's assert before its Blackwell test (as sglang
    0.5.23's ``_cutedsl_prefill_backend_fill``): read with the device gate
    after it, it refuses the prefill choice on every arch
    (``link.before_device_gate``); the alias table's later rewrite of the
    prefill result sends ``old_mla`` there to ``triton`` instead."""
    name = "flow_refusal_before_gate"
    result = run_scan(fixture(name), archs=["sm80", "sm90", "sm100"],
                      option=["--attention-backend", "--prefill-attention-backend"])
    attention = verdicts(result, "--attention-backend")
    prefill = verdicts(result, "--prefill-attention-backend")
    for choice in ("mla_dec", "old_mla"):
        assert [attention[(choice, a)] for a in ("sm80", "sm90", "sm100")] == [
            "blocked", "blocked", "supported"]
    assert [prefill[("mla_dec", a)] for a in ("sm80", "sm90", "sm100")] == ["blocked"] * 3
    hook = "sglang/srt/arg_groups/overrides.py"
    last = verdict_of(result, "mla_dec", "sm100", "--prefill-attention-backend").evidence[-1]
    assert (last.path, last.line) == at(name, hook, "assert view.prefill")
    # old_mla as the prefill backend runs as triton, which nothing decides
    assert [prefill[("old_mla", a)] for a in ("sm80", "sm90", "sm100")] == ["unknown"] * 3
    chain = verdict_of(result, "old_mla", "sm90", "--prefill-attention-backend").evidence
    rewrite = at(name, "sglang/srt/arg_groups/serving_hook.py",
                 'renamed["prefill_attention_backend"] = "triton"')
    assert rewrite in [(e.path, e.line) for e in chain]



def test_a_gate_in_a_function_called_only_under_a_test_holds_only_there() -> None:
    """fixtures/flow_caller_reach (``link/caller_reach.py``): the hook calls
    one validator on every launch and the other only for a model with Mamba
    state (as sglang 0.5.23's ``validate_mamba_extra_buffer``), both past
    an early return for a dummy model, which does not count. The first's
    SM90 check blocks ``quick`` elsewhere; the second's SM100 check is a
    caveat for ``fast``, which the model decides, not a block."""
    name = "flow_caller_reach"
    option = "--linear-attn-backend"
    result = run_scan(fixture(name), archs=["sm80", "sm90", "sm100"], option=[option])
    table = verdicts(result, option)
    assert [table[("quick", a)] for a in ("sm80", "sm90", "sm100")] == [
        "blocked", "supported", "blocked"]
    assert [table[("fast", a)] for a in ("sm80", "sm90", "sm100")] == ["unknown"] * 3
    caveat = verdict_of(result, "fast", "sm90", option).evidence
    hook = at(name, "sglang/srt/arg_groups/model_hook.py", "validate_extra_buffer(server_args)")
    assert hook in [(e.path, e.line) for e in caveat]


@cache
def scan_quantized(name: str, option: str, quantization: str | None) -> ScanResult:
    return run_scan(fixture(name), archs=list(ARCHS), option=[option], quantization=quantization)


@pytest.mark.parametrize(("quantization", "choice", "expected"), [
    # fp8: use_mxfp8 is False, so the block-FP8 dispatch runs: its cutlass
    # branch needs SM100 and it has no branch for cutedsl on any arch
    ("fp8", "cutlass", "BSB"),
    ("fp8", "cutedsl", "BBB"),
    ("fp8", "auto", "UUU"),
    # mxfp8 shares the config class; the checkpoint says MXFP8
    ("mxfp8", "cutedsl", "BSS"),
    ("mxfp8", "cutlass", "UUU"),
    # w4's config has no use_mxfp8: getattr's default
    ("w4", "cutedsl", "BBB"),
    ("w4", "cutlass", "BSB"),
])
def test_method_config_attribute_follows_the_config_class(quantization: str, choice: str,
                                                          expected: str) -> None:
    result = scan_quantized("flow_method_config", "--fp8-gemm-backend", quantization)
    assert row(result, "--fp8-gemm-backend", choice) == expected


def test_method_config_chain_ends_at_the_rejection() -> None:
    result = scan_quantized("flow_method_config", "--fp8-gemm-backend", "fp8")
    rel = "sglang/srt/layers/quantization/fp8_utils.py"
    assert deciding(result, "--fp8-gemm-backend", "cutedsl", "sm100") == (
        *at("flow_method_config", rel, "raise ValueError"), "gate")


def test_method_config_values_through_the_vocabulary() -> None:
    vocab = vocabulary("flow_method_config")
    rel = "sglang/srt/layers/quantization/fp8.py"
    init = "Fp8LinearMethod.__init__"
    line = line_of(fixture("flow_method_config") / rel, "if self.use_mxfp8:")
    fp8, mxfp8 = frozenset({"fp8"}), frozenset({"mxfp8"})
    # the checkpoint's quant_method is the --quantization value; a part of it
    # is a test of the choices that contain it
    assert vocab.predicate('"mxfp8" in quant_method', rel, "Fp8Config.from_config",
                           line_of(fixture("flow_method_config") / rel, "return cls(")
                           ).predicate == QuantIs(mxfp8)
    pred = vocab.predicate("self.use_mxfp8", rel, init, line).predicate
    for method, expected in ((fp8, Tri.FALSE), (mxfp8, Tri.TRUE), (frozenset({"w4"}), Tri.FALSE)):
        assert pred.evaluate(Context(quantization=next(iter(method)))) is expected, method
    # without --quantization the checkpoint decides
    assert pred.evaluate(Context()) is Tri.UNKNOWN


def test_a_parameter_is_what_its_call_sites_bind() -> None:
    name = "flow_call_site_param"
    result = scan(name, "--fp8-gemm-backend")
    utils = "sglang/srt/layers/quantization/fp8_utils.py"
    # `layout == "sparse"` in block_gemm holds only where a caller passes
    # "sparse": the call under `self.layout == "sparse"`, set for z alone
    assert row(result, "--fp8-gemm-backend", "z") == "BSB"
    assert deciding(result, "--fp8-gemm-backend", "z", "sm120") == (
        *at(name, utils, 'raise RuntimeError("the sparse layout'), "gate")
    chain = [(e.path, e.line) for e in verdict_of(result, "z", "sm120",
                                                  "--fp8-gemm-backend").evidence]
    site = at(name, "sglang/srt/layers/quantization/fp8.py", "return block_gemm(x, self.layout)")
    assert site in chain, chain
    # scaled_mm is also used as a value (HANDLERS): its callers may not be
    # all seen, so its layout stays unknown and the gate decides nothing
    assert row(result, "--fp8-gemm-backend", "cutlass") == "UUU"
    assert row(result, "--fp8-gemm-backend", "auto") == "UUU"


def test_once_every_use_is_a_call_the_parameter_is_bound(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(fixture("flow_call_site_param"), tree)
    utils = tree / "sglang/srt/layers/quantization/fp8_utils.py"
    utils.write_text(utils.read_text().replace("HANDLERS = [scaled_mm]\n", ""))
    result = run_scan(tree, archs=list(ARCHS), option=["--fp8-gemm-backend"])
    # without the table, every use of scaled_mm is a call: cutlass passes "sparse"
    assert row(result, "--fp8-gemm-backend", "cutlass") == "BSB"
    assert row(result, "--fp8-gemm-backend", "auto") == "UUU"


def test_gates_that_each_hold_on_one_branch_together_block() -> None:
    """fixtures/flow_every_path (``verdict/every_path.py``): the x runner's
    four branches each call the wrapper's never-imported package off SM90 /
    SM100; one gate at a time depends on the branch, together they hold on
    every path but an empty batch's."""
    name = "flow_every_path"
    result = scan(name, "--moe-runner-backend", "--moe-a2a-backend")
    wrapper = "sglang/srt/layers/gemm_wrapper/entrypoint.py"
    assert row(result, "--moe-runner-backend", "x") == "UUB"
    judged = verdict_of(result, "x", "sm120", "--moe-runner-backend")
    escape = "not blocked when all_tokens == 0 or m == 0 (no rows to compute)"
    assert judged.conditions == (escape,)
    gates = {(e.path, e.line) for e in judged.evidence if e.role == "gate"}
    assert gates == {at(name, wrapper, f"jit_gemm.m_grouped_{kind}(")
                     for kind in ("fp8_contig", "bf16_contig", "fp8_masked", "bf16_masked")}
    # y's contiguous branch runs a Triton kernel: not every path fails
    assert row(result, "--moe-runner-backend", "y") == "UUU"
    assert verdict_of(result, "y", "sm120", "--moe-runner-backend").conditions == ()
    # --moe-a2a-backend p resolves the runner's default (auto) to x
    assert row(result, "--moe-a2a-backend", "p") == "UUB"
    chain = verdict_of(result, "p", "sm120", "--moe-a2a-backend").evidence
    hook = "sglang/srt/arg_groups/moe_hook.py"
    assert at(name, hook, 'moe_runner_backend="x"') in [(e.path, e.line) for e in chain], \
        describe_chain(chain)
    assert row(result, "--moe-a2a-backend", "none") == "UUU"


def test_a_named_modules_public_function_runs_where_its_callers_call_it() -> None:
    """fixtures/flow_named_callers: ``x_moe.py`` is named for x, but its one
    function is called only from the fused function registered for
    ``--moe-a2a-backend deepep``; the v2 wrapper the method builds is reached
    past a lazy initialiser's early exit (``getattr(layer, "_x_wrapper",
    None) is not None``), under the method's own properties."""
    analysis = run_analysis(fixture("flow_named_callers"), archs=["sm100"],
                            option=["--moe-runner-backend"])
    assert analysis.links is not None
    calls: dict[str, list[Predicate]] = {}
    for call in analysis.links.kernel_calls:
        if call.option == "moe_runner_backend" and call.target.startswith("flashinfer."):
            calls.setdefault(call.target, []).append(call.condition)
    assert set(calls) == {"flashinfer.grouped_gemm_masked", "flashinfer.XMoEWrapper"}
    plain = Context(options={"moe_runner_backend": "x", "moe_a2a_backend": "none"})
    deepep = Context(options={"moe_runner_backend": "x", "moe_a2a_backend": "deepep"})
    # found both in the module named for x and below the registered function
    for masked in calls["flashinfer.grouped_gemm_masked"]:
        assert (masked.evaluate(plain), masked.evaluate(deepep)) == (Tri.FALSE, Tri.TRUE)
    # the wrapper: built unless the v1 path runs (``self._is_x_v1``, a property)
    assert {(c.evaluate(plain), c.evaluate(deepep)) for c in calls["flashinfer.XMoEWrapper"]
            } == {(Tri.TRUE, Tri.FALSE)}


def test_a_choice_whose_code_calls_into_another_platforms_package_is_that_platforms() -> None:
    result = scan("flow_platform_code", "--moe-a2a-backend")
    option = "--moe-a2a-backend"
    assert row(result, option, "fuseep") == "UUU"
    for arch in ARCHS:
        assert verdict_of(result, "fuseep", arch, option).platform == "npu"
        # the NPU runner calls NPU code for every backend: it labels none of them
        assert verdict_of(result, "deepep", arch, option).platform is None
        assert verdict_of(result, "none", arch, option).platform is None
    assert deciding(result, option, "fuseep", "sm120")[:2] == at(
        "flow_platform_code", "sglang/srt/hardware_backend/npu/fuseep.py", "def forward_fuseep")
    assert deciding(result, option, "fuseep", "sm120")[2] == "platform"


def test_a_class_without_its_own_constructor_runs_its_bases() -> None:
    """``XRunner()`` runs ``BaseRunner.__init__``, whose ``super().__init__()``
    runs ``RootRunner.__init__``: the check there decides, as a step of the
    same construction (no extra call away from the choice's code)."""
    result = scan("flow_constructors", "--moe-runner-backend")
    rel = "sglang/srt/layers/moe/moe_runner/x.py"
    assert row(result, "--moe-runner-backend", "x") == "BSB"
    assert deciding(result, "--moe-runner-backend", "x", "sm120") == (
        *at("flow_constructors", rel, "raise NotImplementedError"), "gate")


def test_a_checkpoint_test_that_leaves_the_way_to_a_gate_is_its_condition() -> None:
    """fixtures/flow_checkpoint_escape (``verdict/escapes.py``): block FP8
    with 128-wide blocks reads the backend and refuses cutlass off SM100;
    another block size goes to Triton first. The common checkpoint's
    verdict, with the way around it as a condition."""
    name = "flow_checkpoint_escape"
    result = scan_quantized(name, "--fp8-gemm-backend", "fp8")
    assert row(result, "--fp8-gemm-backend", "cutlass") == "BSB"
    escape = "not blocked when weight_block_size is not None and weight_block_size[1] != 128"
    for arch in ("sm90", "sm120"):
        assert verdict_of(result, "cutlass", arch, "--fp8-gemm-backend").conditions == (escape,)
    assert verdict_of(result, "cutlass", "sm100", "--fp8-gemm-backend").conditions == ()
    assert deciding(result, "--fp8-gemm-backend", "cutlass", "sm90") == (
        *at(name, "sglang/srt/layers/quantization/fp8_utils.py", "raise RuntimeError"), "gate")
    assert row(result, "--fp8-gemm-backend", "cutedsl") == "UUU"
    # without --quantization the method is the checkpoint's: no way is taken
    plain = scan_quantized(name, "--fp8-gemm-backend", None)
    assert row(plain, "--fp8-gemm-backend", "cutlass") == "BSB"
    assert verdict_of(plain, "cutlass", "sm90", "--fp8-gemm-backend").conditions == ()


def test_a_value_stored_where_another_options_is_read_shares_its_tests(tmp_path: Path) -> None:
    """fixtures/flow_shared_values (``link/shared_values.py``): the draft
    model's all-to-all backend is put where the main one is read while the
    draft model is built, so DeepEP's SM90 gate holds for either option's
    ``deepep``; without that context manager the draft option's value is
    never read there."""
    name = "flow_shared_values"
    options = ("--moe-a2a-backend", "--speculative-moe-a2a-backend")
    result = scan(name, *options)
    dispatcher = "sglang/srt/layers/moe/dispatcher.py"
    for option in options:
        assert row(result, option, "deepep") == "UBB", option
        assert deciding(result, option, "deepep", "sm120") == (
            *at(name, dispatcher, 'raise RuntimeError("DeepEP needs SM90")'), "gate")
        assert row(result, option, "pplx") == "UUU", option
        assert row(result, option, "none") == "UUU", option
    tree = tmp_path / "tree"
    shutil.copytree(fixture(name), tree)
    utils = tree / "sglang/srt/layers/moe/utils.py"
    utils.write_text(utils.read_text().replace(
        "MOE_A2A_BACKEND = get_speculative_moe_a2a_backend()", "MOE_A2A_BACKEND = None"))
    alone = run_scan(tree, archs=list(ARCHS), option=list(options))
    assert row(alone, "--moe-a2a-backend", "deepep") == "UBB"
    assert row(alone, "--speculative-moe-a2a-backend", "deepep") == "UUU"



def test_a_copied_gate_names_the_option_that_stands_in_beside_it() -> None:
    """A gate read with a call's arguments names the values of other options
    with which it may not raise (``not blocked with --moe-a2a-backend
    megamoe``). Its copy for the draft model's runner names the draft
    model's all-to-all option where that one's value is stored in the same
    module as the draft runner's (both stand in while the draft model is
    built, sglang 0.5.23's ``layers/moe/utils.py``), and the main one's
    where it is stored elsewhere."""
    gate = Finding(FindingKind.GATE, "sglang/srt/layers/moe/runner.py", 17,
                   OptionIs("moe_runner_backend", frozenset({"cutlass"}),
                            ("speculative_moe_runner_backend",)),
                   option="moe_runner_backend", target=("moe_a2a_backend=megamoe",))
    choices = {"speculative_moe_runner_backend": ("cutlass", "triton"),
               "speculative_moe_a2a_backend": ("none", "megamoe")}
    for a2a_at, named in (("utils.py", "speculative_moe_a2a_backend"),
                          ("other.py", "moe_a2a_backend")):
        links = Links(findings=[gate])
        share_links(links, {
            "moe_runner_backend": (("speculative_moe_runner_backend", "utils.py", 40),),
            "moe_a2a_backend": (("speculative_moe_a2a_backend", a2a_at, 60),)}, choices)
        copy = links.findings[-1]
        assert copy.option == "speculative_moe_runner_backend"
        assert copy.target == (f"{named}=megamoe",)
        assert gate.target == ("moe_a2a_backend=megamoe",)


def test_a_followed_call_is_read_with_the_arguments_it_passes(tmp_path: Path) -> None:
    """fixtures/flow_bound_call (``link/bound_gates.py``, ``guards/registries.py``):
    the MoE method hands the option's value to ``MoeRunner``, which raises
    when the backend has no runner core and no fused function is registered
    for it. ``experimental`` counts as TRT-LLM (no core) and its fused
    function is registered only by a module imported under
    ``SGLANG_EXPERIMENTAL`` (or for DeepEP): blocked on every arch, with
    those ways around it as conditions. ``trtllm`` and ``triton`` are
    registered: no gate."""
    name = "flow_bound_call"
    option = "--moe-runner-backend"
    result = scan(name, option)
    runner = "sglang/srt/layers/moe/runner/runner.py"
    assert row(result, option, "experimental") == "BBB"
    for arch in ARCHS:
        assert verdict_of(result, "experimental", arch, option).conditions == (
            "not blocked with --moe-a2a-backend deepep", "not blocked with SGLANG_EXPERIMENTAL=1")
    assert deciding(result, option, "experimental", "sm90") == (
        *at(name, runner, 'raise NotImplementedError(f"{runner_backend} needs'), "gate")
    chain = verdict_of(result, "experimental", "sm90", option).evidence
    assert (*at(name, "sglang/srt/layers/moe/method.py", "MoeRunner(backend, config)"),
            "link") in [(e.path, e.line, e.role) for e in chain], describe_chain(chain)
    for choice in ("trtllm", "triton", "auto"):
        assert row(result, option, choice) == "UUU", choice
    # registered whenever its module is loaded: nothing stops it
    tree = tmp_path / "tree"
    shutil.copytree(fixture(name), tree)
    trtllm = tree / "sglang/srt/layers/moe/runner/trtllm.py"
    trtllm.write_text(trtllm.read_text().replace("if _SGLANG_EXPERIMENTAL:", "if True:"))
    loaded = run_scan(tree, archs=list(ARCHS), option=[option])
    assert row(loaded, option, "experimental") == "UUU"
    # with LoRA the runner never looks a fused function up
    trtllm.write_text(trtllm.read_text().replace("if True:", "if _SGLANG_EXPERIMENTAL:"))
    method = tree / "sglang/srt/layers/moe/method.py"
    method.write_text(method.read_text().replace(
        "MoeRunner(backend, config)", "MoeRunner(backend, config, lora_enabled=True)"))
    lora = run_scan(tree, archs=list(ARCHS), option=[option])
    assert row(lora, option, "experimental") == "UUU"
