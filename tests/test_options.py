"""options: the backend option catalog, read from the tree in whatever form the
version uses. One synthetic fixture tree per recogniser (fixtures/options_*),
exact outputs; then the real SGLang 0.5.9 and 0.5.23 releases."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from guardscan.acquire import SourceTree
from guardscan.index import Index
from guardscan.index.facts import CallFact, FileFacts
from guardscan.names import Names
from guardscan.options import (
    FORMS,
    RECOGNISERS,
    EnumInfo,
    OptionCatalog,
    OptionForm,
    build_catalog,
    recognise_help_platforms,
)
from guardscan.options.forms import choice_extensions
from guardscan.results import OptionInfo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_tree(name: str) -> SourceTree:
    root = FIXTURES / name
    files = tuple(sorted(p.relative_to(root).as_posix() for p in (root / "sglang").rglob("*.py")))
    return SourceTree(root=root, package="sglang", version="0", files=files, origin=str(root))


def catalog_of(name: str, **kwargs: bool) -> OptionCatalog:
    return build_catalog(Index(fixture_tree(name)), **kwargs)


def codes(catalog: OptionCatalog) -> list[tuple[str, int, str]]:
    return [(d.path, d.line, d.code) for d in catalog.diagnostics]


# --------------------------------------------------------------------------
# argparse: constants, spreads, +, imports, extensions


ARGPARSE = "sglang/srt/server_args.py"


def test_argparse_options_exact() -> None:
    catalog = catalog_of("options_argparse")
    assert catalog.options == [
        OptionInfo("--attention-backend", "attention_backend",
                   ("triton", "torch_native", "flashinfer", "plugin_attn", "plugin_attn2"),
                   ARGPARSE, 34, help="Choose the kernels for attention layers.",
                   default='"triton"'),
        OptionInfo("--moe-runner-backend", "moe_runner_backend", ("auto", "triton", "cutlass"),
                   ARGPARSE, 41, help="Choose the runner backend for MoE.", default='"auto"'),
        OptionInfo("--remote-backend", "remote_backend", ("remote_a", "remote_b", "local"),
                   ARGPARSE, 49),
        OptionInfo("--io-backend", "io_backend", ("direct", "kernel"), ARGPARSE, 50,
                   default='"kernel"'),
        OptionInfo("--partial-backend", "partial_backend", ("x",), ARGPARSE, 52),
        OptionInfo("--hicache-storage-backend", "storage", ("file", "mooncake"), ARGPARSE, 56),
        OptionInfo("--local-backend", "local_backend", ("kernel", "direct", "extra"),
                   ARGPARSE, 62),
    ]
    assert catalog.quantization == OptionInfo("--quantization", "quantization", ("fp8", "awq"),
                                              ARGPARSE, 55, default="None")


def test_argparse_diagnostics_and_aliases() -> None:
    catalog = catalog_of("options_argparse")
    assert codes(catalog) == [
        (ARGPARSE, 51, "unresolved-choices"),  # list(Mode): members, not strings
        (ARGPARSE, 52, "partial-choices"),  # ["x"] + runtime_choices()
        (ARGPARSE, 66, "unresolved-flag"),  # f"--{prefix}-backend"
    ]
    assert "--mode-backend" in catalog.diagnostics[0].message
    assert catalog.by_flag("--storage-backend") == catalog.by_dest("storage")
    assert catalog.by_flag("--backend") is None  # "--backend" is not a *-backend flag
    assert catalog.by_flag("--free-backend") is None  # no finite choices
    assert catalog.by_flag("--quantization") is catalog.quantization


def test_extensions_count_only_literal_calls_found_in_the_tree() -> None:
    catalog = catalog_of("options_argparse")
    attention = catalog.by_flag("--attention-backend")
    moe = catalog.by_flag("--moe-runner-backend")
    assert attention is not None and moe is not None
    # add_attention_backend_choices(["plugin_attn"]) and CONST.append("plugin_attn2") count;
    # register(name) passes a variable; add_unused_choices is never called.
    assert attention.choices[-2:] == ("plugin_attn", "plugin_attn2")
    assert moe.choices == ("auto", "triton", "cutlass")


# --------------------------------------------------------------------------
# annotated fields


FIELDS = "sglang/srt/arg_groups/fields/exec_.py"


def test_annotated_fields_exact() -> None:
    catalog = catalog_of("options_fields")
    assert catalog.options == [
        OptionInfo("--fp8-gemm-backend", "fp8_gemm_runner_backend", ("auto", "cutlass", "aiter"),
                   FIELDS, 16,
                   help="FP8 GEMM runner. Options: 'auto', 'cutlass', 'aiter' (ROCm only).",
                   default='"auto"', platforms=(("aiter", "rocm"),)),
        OptionInfo("--moe-runner-backend", "moe_runner_backend",
                   ("auto", "triton", "flashinfer_trtllm", "plugin_moe"), FIELDS, 24,
                   help="Choose the runner backend for MoE.", default='"auto"'),
        OptionInfo("--moe-a2a-backend", "moe_a2a_backend", ("none", "deepep", "flashinfer"),
                   FIELDS, 28, help="Choose the backend for MoE A2A.", default='"none"'),
        OptionInfo("--dsa-topk-backend", "dsa_topk_backend", ("torch", "flashinfer"), FIELDS, 32,
                   help="Top-k.", default="None"),
        OptionInfo("--linear-backend", "linear_backend", ("a", "b"), FIELDS, 33,
                   help="Linear attention.", default="None"),
        # choices= wins over the Literal, as in the tree's arg_utils
        OptionInfo("--override-backend", "override_backend", ("y", "z"), FIELDS, 34,
                   default='"y"'),
    ]
    assert catalog.quantization == OptionInfo(
        "--quantization", "quantization", ("fp8", "modelopt_fp4"), FIELDS, 42,
        help="The quantization method.", default="None")
    assert catalog.diagnostics == []
    # no_cli=True, free strings and plain (unannotated) fields give no option
    for dest in ("sampling_backend", "free_backend", "plain_backend", "enable_thing"):
        assert catalog.by_dest(dest) is None


def test_cli_name_rule_is_read_from_the_tree() -> None:
    catalog = catalog_of("options_cli_rule")
    # the tree's rule is f"--srt-{name.replace('_', '-')}", not argparse's
    assert [(o.flag, o.dest, o.choices) for o in catalog.options] == [
        ("--srt-moe-runner-backend", "moe_runner_backend", ("auto", "triton")),
    ]


# --------------------------------------------------------------------------
# enums and predicates


def test_enum_predicates_and_links() -> None:
    catalog = catalog_of("options_enum")
    rel = "sglang/srt/layers/moe_utils.py"
    moe_values = ("auto", "triton", "flashinfer_trtllm", "flashinfer_cutlass", "cutlass",
                  "internal")
    assert catalog.enums == [
        EnumInfo(
            "sglang.srt.layers.moe_utils.MoeRunnerBackend", rel, 20,
            tuple((name, value) for name, value in zip(
                ("AUTO", "TRITON", "FLASHINFER_TRTLLM", "FLASHINFER_CUTLASS", "CUTLASS",
                 "INTERNAL"), moe_values)),
            predicates=(
                ("is_auto", frozenset({"auto"})),  # from the mixin base
                ("is_cutlass_any", frozenset({"cutlass", "flashinfer_cutlass"})),
                ("is_triton", frozenset({"triton"})),
                ("is_flashinfer_trtllm", frozenset({"flashinfer_trtllm"})),
                ("is_flashinfer", frozenset({"flashinfer_trtllm", "flashinfer_cutlass"})),
                ("is_not_auto", frozenset(moe_values) - {"auto"}),
                ("is_fast", frozenset({"flashinfer_trtllm", "flashinfer_cutlass"})),
                ("is_plain", frozenset({"triton", "cutlass", "internal"})),
                ("is_listed", frozenset({"triton", "cutlass"})),
                # is_dynamic (run-time set), describe (branches), parse
                # (classmethod) are not predicates it can read
            ),
            option_dests=("moe_runner_backend", "speculative_moe_runner_backend"),
        ),
        EnumInfo(
            "sglang.srt.layers.moe_utils.Fp4Backend", rel, 62,
            (("AUTO", "auto"), ("FLASHINFER_CUTLASS", "flashinfer_cutlass"),
             ("FLASHINFER_CUDNN", "flashinfer_cudnn")),
            predicates=(("is_cudnn", frozenset({"flashinfer_cudnn"})),),
            option_dests=("fp4_gemm_backend",),
        ),
        # an IntEnum is no string enum; an unrelated string enum links nowhere
        EnumInfo("sglang.srt.layers.moe_utils.Unrelated", rel, 75, (("X", "x"), ("Y", "y"))),
    ]
    assert [e.name for e in catalog.enums_for("moe_runner_backend")] == ["MoeRunnerBackend"]


# --------------------------------------------------------------------------
# platform labels


def test_choice_list_comments_and_help_claims() -> None:
    catalog = catalog_of("options_comments")
    platforms = {o.flag: o.platforms for o in catalog.options}
    assert platforms == {
        # "# Common" / "# NVIDIA specific" clear the label; a long note ends the section
        "--attention-backend": (("aiter", "rocm"), ("wave", "rocm"),
                                ("intel_amx", "non-cuda"), ("ascend", "non-cuda")),
        # 'cutlass' (SM120 only) names no platform; 'auto' (... CUDA ...) names CUDA
        "--fp8-gemm-backend": (("aiter", "rocm"), ("xpu_gemm", "xpu")),
        # a trailing comment naming CUDA overrides the "# Ascend" section
        "--npu-backend": (("ascend_a", "npu"),),
    }
    assert catalog.quantization is not None
    # "# for NPU" and "# NPU only" claim; "# AMD Quark quantizer" does not
    assert catalog.quantization.platforms == (("modelslim", "npu"), ("w4a8", "npu"))


def test_labels_shared_across_options_examples() -> None:
    import doctest

    from guardscan.options import shared_labels

    result = doctest.testmod(shared_labels)
    assert result.attempted > 0 and result.failed == 0


def test_all_backends_false_drops_non_cuda_choices() -> None:
    catalog = catalog_of("options_comments", all_backends=False)
    attention = catalog.by_flag("--attention-backend")
    assert attention is not None
    assert attention.choices == ("triton", "torch_native", "fa3", "flashinfer",
                                 "flex_attention")
    assert attention.platforms == ()


HELP_VALID = [
    ("'aiter' (ROCm only)", ("aiter",), [("aiter", "rocm")]),
    ('"ascend" (NPU specific)', ("ascend",), [("ascend", "npu")]),
    ("'xpu' (Intel XPU only)", ("xpu",), [("xpu", "xpu")]),
    ("'aiter' (for AMD GPUs)", ("aiter",), [("aiter", "rocm")]),
    ("'amx' (CPU only), 'aiter' (AMD only)", ("amx", "aiter"), [("amx", "cpu"),
                                                                ("aiter", "rocm")]),
]
HELP_INVALID = [
    ("'auto' (default; DeepGEMM on CUDA, aiter on ROCm)", ("auto",)),
    ("'flashinfer_deepgemm' (Hopper SM90 only)", ("flashinfer_deepgemm",)),
    ("'aiter' (also runs on AMD)", ("aiter",)),  # no "only" / "specific" / "for" claim
    ("'aiter' (ROCm only)", ("other",)),  # not a choice of this option
    ("aiter, ROCm only", ("aiter",)),
]


@pytest.mark.parametrize(("text", "choices", "expected"), HELP_VALID)
def test_help_platforms_valid(text: str, choices: tuple[str, ...],
                              expected: list[tuple[str, str]]) -> None:
    assert recognise_help_platforms(text, choices) == expected


@pytest.mark.parametrize(("text", "choices"), HELP_INVALID)
def test_help_platforms_invalid(text: str, choices: tuple[str, ...]) -> None:
    assert recognise_help_platforms(text, choices) == []


# --------------------------------------------------------------------------
# odd code: diagnostics, never a crash


def test_odd_code_gives_diagnostics_not_errors() -> None:
    catalog = catalog_of("options_odd")
    rel = "sglang/srt/server_args.py"
    assert [(o.flag, o.choices) for o in catalog.options] == [
        ("--grown-backend", ("a", "b", "c", "d")),  # rebinding, +=, conditional spread
        ("--dict-backend", ("k1", "k2")),
        ("--comp-backend", ("one", "two")),  # [m.value for m in Weird]
    ]
    assert codes(catalog) == [
        ("sglang/srt/broken.py", 2, "unreadable-file"),
        (rel, 16, "unresolved-choices"),  # CYCLE_A = CYCLE_B = CYCLE_A
        (rel, 17, "unresolved-choices"),  # a bare string
        (rel, 19, "unresolved-choices"),  # imported from outside the tree
        (rel, 20, "unresolved-choices"),  # a parameter
        (rel, 24, "unresolved-choices"),  # computed at run time
        (rel, 26, "unresolved-choices"),  # nested lists
    ]
    weird = catalog.enums[0]
    assert weird.members == (("ONE", "one"), ("TWO", "two"))
    assert weird.predicates == ()  # recursion, unknown member, chained compare


def test_a_choice_extension_that_raises_leaves_the_other_choices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault while reading one extension call is an internal-error
    diagnostic at that call; the other extensions and options stand."""
    original = choice_extensions._extension_of_call

    def faulty(names: Names, facts: FileFacts, call: CallFact, *args: Any,
               **kwargs: Any) -> Any:
        if call.func == "add_attention_backend_choices":
            raise RuntimeError("injected")
        return original(names, facts, call, *args, **kwargs)

    monkeypatch.setattr(choice_extensions, "_extension_of_call", faulty)
    catalog = catalog_of("options_argparse")
    attention = catalog.by_flag("--attention-backend")
    assert attention is not None
    assert attention.choices == ("triton", "torch_native", "flashinfer", "plugin_attn2")
    errors = [d for d in catalog.diagnostics if d.code == "internal-error"]
    # both calls of the helper: the literal one and the one with a variable
    assert [(d.path, d.line) for d in errors] == [("sglang/srt/plugins.py", 4),
                                                  ("sglang/srt/plugins.py", 9)]
    assert "RuntimeError" in errors[0].message
    assert len(catalog.options) == 7


# --------------------------------------------------------------------------
# the form registry: one list drives the catalog and the docs


def test_every_form_serves_one_step_and_is_documented() -> None:
    assert [form.name for form in FORMS] == [
        "argparse calls", "annotated fields", "choice-list extensions", "string enums"]
    for form in FORMS:
        assert form.recognisers, form.name
        for recogniser in form.recognisers:
            assert recogniser in RECOGNISERS, (form.name, recogniser.__name__)


def test_recognisers_in_pipeline_order() -> None:
    assert [r.__name__ for r in RECOGNISERS] == [
        "recognise_argparse_option", "recognise_annotated_field", "recognise_cli_name_rule",
        "recognise_choice_expression", "recognise_choice_extensions",
        "recognise_comment_platforms", "recognise_help_platforms", "share_platform_labels",
        "recognise_enum", "recognise_enum_predicate", "link_enums",
    ]


@pytest.mark.parametrize("finders", [{}, {"find_definitions": list, "find_enums": list}])
def test_a_form_serves_exactly_one_step(finders: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one step"):
        OptionForm("broken", (), **finders)


# --------------------------------------------------------------------------
# docs: every recogniser documents itself with the same headings


@pytest.mark.parametrize("recogniser", RECOGNISERS, ids=lambda r: r.__name__)
def test_recogniser_docstrings(recogniser: Callable[..., object]) -> None:
    doc = inspect.getdoc(recogniser) or ""
    for heading in ("What it recognises:", "Why it matters:", "Known limits:", "Example:"):
        assert heading in doc, f"{recogniser.__name__} lacks {heading!r}"


# --------------------------------------------------------------------------
# real releases

EXPECTED_059 = {
    "--moe-runner-backend": (
        "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
        "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass",
    ),
    "--moe-a2a-backend": ("none", "deepep", "mooncake", "mori", "ascend_fuseep", "flashinfer"),
    "--fp4-gemm-backend": ("auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"),
    "--fp8-gemm-backend": (
        "auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_deepgemm", "cutlass", "triton",
        "aiter",
    ),
    "--attention-backend": (
        "triton", "torch_native", "flex_attention", "nsa", "cutlass_mla", "fa3", "fa4",
        "flashinfer", "flashmla", "trtllm_mla", "trtllm_mha", "dual_chunk_flash_attn",
        "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
    ),
}

EXPECTED_0523 = {
    "--moe-runner-backend": (
        "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
        "experimental_sgl_trtllm", "flashinfer_trtllm_routed", "flashinfer_cutlass",
        "flashinfer_mxfp4", "flashinfer_cutedsl", "flashinfer_megamoe", "cutlass", "aiter",
        "marlin", "humming", "experimental_sgl_marlin", "lora_cutedsl", "lora_triton",
        "lora_marlin", "hpc_ops", "megamoe", "intel_xpu",
    ),
    "--moe-a2a-backend": (
        "none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "megamoe",
        "deepep_v2", "pplx", "ascend_tp", "flashinfer_megamoe",
    ),
    "--fp4-gemm-backend": (
        "auto", "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass",
        "flashinfer_trtllm", "marlin",
    ),
    "--fp8-gemm-backend": (
        "auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_deepgemm",
        "flashinfer_cutedsl", "cutlass", "triton", "aiter",
    ),
    "--attention-backend": (
        "triton", "torch_native", "flex_attention", "dsa", "nsa", "qsa", "dsv4", "compressed",
        "fa3", "fa4", "flashinfer", "llada2_cfg_flashinfer", "flashmla", "trtllm_mla",
        "cutedsl_mla", "tokenspeed_mla", "trtllm_mha", "hpc_ops", "minicpm_flashattn",
        "minicpm_flashinfer", "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
    ),
}

ATTENTION_PLATFORMS = (("aiter", "rocm"), ("wave", "rocm"), ("intel_amx", "non-cuda"),
                       ("ascend", "non-cuda"), ("intel_xpu", "non-cuda"))


@pytest.fixture(scope="module")
def catalog_059(sglang_059: SourceTree) -> tuple[OptionCatalog, Index]:
    index = Index(sglang_059)
    return build_catalog(index), index


@pytest.fixture(scope="module")
def catalog_0523(sglang_0523: SourceTree) -> tuple[OptionCatalog, Index]:
    index = Index(sglang_0523)
    return build_catalog(index), index


@pytest.mark.parametrize("flag", sorted(EXPECTED_059))
def test_059_core_options(catalog_059: tuple[OptionCatalog, Index], flag: str) -> None:
    option = catalog_059[0].by_flag(flag)
    assert option is not None
    assert option.choices == EXPECTED_059[flag]
    assert option.path == "sglang/srt/server_args.py"


@pytest.mark.parametrize("flag", sorted(EXPECTED_0523))
def test_0523_core_options(catalog_0523: tuple[OptionCatalog, Index], flag: str) -> None:
    option = catalog_0523[0].by_flag(flag)
    assert option is not None
    assert option.choices == EXPECTED_0523[flag]
    assert option.path.startswith("sglang/srt/arg_groups/fields/")


def test_059_details(catalog_059: tuple[OptionCatalog, Index]) -> None:
    catalog = catalog_059[0]
    fp8 = catalog.by_flag("--fp8-gemm-backend")
    assert fp8 is not None
    assert (fp8.dest, fp8.default, fp8.line) == ("fp8_gemm_runner_backend", '"auto"', 3885)
    assert fp8.platforms == (("aiter", "rocm"),)  # help: 'aiter' (ROCm only)
    attention = catalog.by_flag("--attention-backend")
    assert attention is not None and attention.platforms == ATTENTION_PLATFORMS
    assert catalog.quantization is not None
    assert len(catalog.quantization.choices) == 23
    assert ("modelslim", "npu") in catalog.quantization.platforms
    assert catalog.diagnostics == []
    enums = {e.name: e for e in catalog.enums}
    assert enums["MoeRunnerBackend"].option_dests == ("speculative_moe_runner_backend",
                                                      "moe_runner_backend")
    assert enums["MoeA2ABackend"].option_dests == ("speculative_moe_a2a_backend",
                                                   "moe_a2a_backend")
    assert enums["Fp8GemmRunnerBackend"].option_dests == ("fp8_gemm_runner_backend",)
    assert enums["Fp4GemmRunnerBackend"].option_dests == ("fp4_gemm_runner_backend",)
    assert enums["MoeRunnerBackend"].predicate("is_flashinfer_trtllm") == {"flashinfer_trtllm"}


def test_0523_details(catalog_0523: tuple[OptionCatalog, Index]) -> None:
    catalog = catalog_0523[0]
    moe = catalog.by_flag("--moe-runner-backend")
    a2a = catalog.by_flag("--moe-a2a-backend")
    assert moe is not None and a2a is not None
    assert "hpc_ops" in moe.choices
    assert "flashinfer_megamoe" in a2a.choices
    # the MoE enum labels nothing; the attention list says aiter is AMD's, intel_xpu another's
    assert moe.platforms == (("aiter", "rocm"), ("intel_xpu", "non-cuda"))
    assert (moe.dest, moe.default, moe.path, moe.line) == (
        "moe_runner_backend", '"auto"', "sglang/srt/arg_groups/fields/exec_.py", 884)
    attention = catalog.by_flag("--attention-backend")
    assert attention is not None and attention.platforms == ATTENTION_PLATFORMS
    # no_cli field, registered by hand in server_args.py with a local set
    sampling = catalog.by_flag("--sampling-backend")
    assert sampling is not None and sampling.path == "sglang/srt/server_args.py"
    assert sampling.choices == ("flashinfer", "pytorch", "ascend", "intel_xpu", "token_oracle")
    assert sampling.platforms == (("ascend", "non-cuda"), ("intel_xpu", "non-cuda"))
    assert catalog.quantization is not None
    assert catalog.quantization.path == "sglang/srt/arg_groups/fields/model.py"
    assert len(catalog.quantization.choices) == 31
    assert catalog.diagnostics == []
    enums = {e.name: e for e in catalog.enums}
    runner = enums["MoeRunnerBackend"]  # predicates live on a mixin base class
    assert runner.predicate("is_hpc_ops") == {"hpc_ops"}
    assert runner.predicate("is_flashinfer_trtllm") == {"flashinfer_trtllm",
                                                        "experimental_sgl_trtllm"}
    assert runner.option_dests == ("moe_runner_backend", "speculative_moe_runner_backend")
    assert enums["MoeA2ABackend"].option_dests == ("moe_a2a_backend",
                                                   "speculative_moe_a2a_backend")
    assert enums["MoeA2ABackend"].predicate("is_flashinfer_megamoe") == {"flashinfer_megamoe"}
    assert enums["Fp4GemmRunnerBackend"].predicate("is_flashinfer") == {
        "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass", "flashinfer_trtllm"}
    assert enums["Fp8GemmRunnerBackend"].option_dests == ("fp8_gemm_runner_backend",)


def test_0523_touches_few_files(sglang_0523: SourceTree) -> None:
    index = Index(sglang_0523)
    start = time.perf_counter()
    build_catalog(index)
    elapsed = time.perf_counter() - start
    parsed = [rel for rel, outcome in index.outcomes.items() if outcome.facts is not None]
    assert len(parsed) < 60, parsed
    assert len(sglang_0523.files) > 4000
    print(f"build_catalog(0.5.23): {elapsed:.2f}s, {len(parsed)} files parsed")
