"""Guard ROLES end to end: the same kind of guard means different things by
where it stands. One fixture tree per role (fixtures/roles_<role>/): gate,
select, import, default, doc, a registry region, an enum-predicate region and
a quantization gate. Each test checks the verdict on every standard arch and
the role the evidence chain gives the guard."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fixturetree import (
    describe_chain,
    fixture,
    line_of,
    make_tree,
    run_analysis,
    run_scan,
    verdict_of,
    verdicts,
)

from guardscan.results import ScanResult

ARCHS = ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"]
WORDS = {"B": "blocked", "S": "supported", "U": "unknown"}
MOE = "--moe-runner-backend"
SERVER_ARGS = "sglang/srt/server_args.py"
COMMON = "sglang/srt/utils/common.py"


@cache
def scan(name: str, option: str = MOE, quantization: str | None = None) -> ScanResult:
    return run_scan(fixture(name), option=option, quantization=quantization)


def row_of(result: ScanResult, choice: str) -> str:
    table = verdicts(result)
    inverse = {v: k for k, v in WORDS.items()}
    return "".join(inverse[table[(choice, arch)]] for arch in ARCHS)


def check_row(result: ScanResult, choice: str, expected: str) -> None:
    actual = row_of(result, choice)
    assert actual == expected, (
        f"{choice} on {' '.join(ARCHS)}\nexpected {expected}\nactual   {actual}")


def chain(result: ScanResult, choice: str, arch: str) -> list[tuple[str, int, str]]:
    return [(e.path, e.line, e.role) for e in verdict_of(result, choice, arch).evidence]


def at(name: str, rel: str, needle: str) -> tuple[str, int]:
    return rel, line_of(fixture(name) / rel, needle)


# --------------------------------------------------------------------------
# gate: `if backend == "x" and not pred: raise`


def test_gate_blocks_off_sm100_and_admits_sm100() -> None:
    result = scan("roles_gate")
    check_row(result, "x", "BBBBSSBBB")
    for other in ("auto", "triton", "y", "w"):
        check_row(result, other, "UUUUUUUUU")
    runner = "sglang/srt/layers/moe/runner.py"
    raise_site = at("roles_gate", runner, "raise ValueError")
    guard_site = at("roles_gate", runner, "not is_sm100_supported()")
    for arch in ("sm90", "sm100"):
        links = chain(result, "x", arch)
        assert (*raise_site, "gate") in links, describe_chain(verdict_of(result, "x", arch).evidence)
        assert (*guard_site, "guard") in links
        assert (*at("roles_gate", COMMON, "is_sm100_supported = lru_cache"), "guard") in links
    assert verdict_of(result, "x", "sm90").evidence[-1].note.startswith("raises on sm90")
    assert verdict_of(result, "x", "sm100").evidence[-1].note.startswith("admits sm100")
    assert not verdict_of(result, "x", "sm90").safe_to_try
    assert verdict_of(result, "x", "sm100").safe_to_try


# --------------------------------------------------------------------------
# select: `if pred: from a import f else: from b import f` in the choice's module


SELECT_MODULE = "sglang/srt/layers/moe/moe_runner/mychoice.py"


def test_select_is_no_support_claim() -> None:
    result = scan("roles_select")
    check_row(result, "mychoice", "UUUUUUUUU")
    guard = at("roles_select", SELECT_MODULE, "if is_sm120_supported():")
    for arch in ARCHS:
        verdict = verdict_of(result, "mychoice", arch)
        assert verdict.verdict.value == "unknown"
        assert (*guard, "select") in chain(result, "mychoice", arch), describe_chain(
            verdict.evidence)
    sm120 = verdict_of(result, "mychoice", "sm120")
    select = next(e for e in sm120.evidence if e.role == "select")
    assert "not a support claim" in select.note and "true on sm120" in select.note
    link = next(e for e in sm120.evidence if e.path == SELECT_MODULE and e.role == "link")
    assert "module named for mychoice" in link.note


def test_select_binding_in_both_branches_is_not_an_import_gate() -> None:
    result = scan("roles_select")
    for arch in ARCHS:
        assert "import" not in [r for _, _, r in chain(result, "mychoice", arch)]


# --------------------------------------------------------------------------
# import: a name bound only under a module-level guard, used unconditionally


IMPORT_MODULE = "sglang/srt/layers/moe/moe_runner/x.py"


def test_import_guard_blocks_off_sm100() -> None:
    result = scan("roles_import")
    check_row(result, "x", "BBBBUUBBB")
    use = at("roles_import", IMPORT_MODULE, "return trtllm_fp4_block_scale_moe(")
    bound = at("roles_import", IMPORT_MODULE, "from flashinfer.fused_moe import")
    guard = at("roles_import", IMPORT_MODULE, "if is_sm100_supported():")
    links = chain(result, "x", "sm90")
    shown = describe_chain(verdict_of(result, "x", "sm90").evidence)
    assert (*use, "import") in links, shown
    assert (*guard, "guard") in links, shown
    assert bound in [(p, ln) for p, ln, _ in links], shown
    note = next(e.note for e in verdict_of(result, "x", "sm90").evidence if e.role == "import")
    assert note.startswith("name missing on sm90")


def test_import_guard_is_not_also_a_select() -> None:
    result = scan("roles_import")
    for arch in ("sm90", "sm100"):
        assert "select" not in [r for _, _, r in chain(result, "x", arch)], describe_chain(
            verdict_of(result, "x", arch).evidence)


# --------------------------------------------------------------------------
# default: auto resolves to the choice under a device condition


def test_default_is_support_evidence() -> None:
    result = scan("roles_default")
    check_row(result, "x", "UUUUSSUUU")
    # the else branch: auto resolves to triton wherever is_sm100_supported() is
    # false, a far-future arch included: shown, but no claim of support
    check_row(result, "triton", "UUUUUUUUU")
    fallback = next(e for e in verdict_of(result, "triton", "sm90").evidence
                    if e.role == "default")
    assert (fallback.path, fallback.line) == at(
        "roles_default", SERVER_ARGS, 'self.moe_runner_backend = "triton"')
    assert "not a support claim" in fallback.note
    check_row(result, "auto", "UUUUUUUUU")
    assign = at("roles_default", SERVER_ARGS, 'self.moe_runner_backend = "x"')
    guard = at("roles_default", SERVER_ARGS, "if is_sm100_supported():")
    links = chain(result, "x", "sm100")
    assert (*assign, "default") in links, describe_chain(verdict_of(result, "x", "sm100").evidence)
    assert (*guard, "guard") in links
    note = next(e.note for e in verdict_of(result, "x", "sm100").evidence if e.role == "default")
    assert "auto resolves to x" in note
    assert [r for _, _, r in chain(result, "x", "sm90")] == ["link"]


# --------------------------------------------------------------------------
# doc: help text claims are weak evidence, never a verdict


def test_doc_claims_never_decide() -> None:
    result = scan("roles_doc")
    check_row(result, "x", "UUUUUUUUU")  # 'x' (Hopper SM90 only): no code says so
    check_row(result, "w", "UUUUUUUUU")  # 'w' (SM80+)
    check_row(result, "y", "BBBBSSBBB")  # the code's gate decides, the doc agrees
    option_line = line_of(fixture("roles_doc") / SERVER_ARGS, '"--moe-runner-backend"') - 1
    for arch in ARCHS:
        docs = [e for e in verdict_of(result, "x", arch).evidence if e.role == "doc"]
        assert len(docs) == 1, arch
        assert (docs[0].path, docs[0].line) == (SERVER_ARGS, option_line)
        assert "Hopper SM90 only" in docs[0].text
        expected = "names sm90" if arch == "sm90" else f"excludes {arch}"
        assert expected in docs[0].note and "weak evidence" in docs[0].note
    y_docs = [e for e in verdict_of(result, "y", "sm100").evidence if e.role == "doc"]
    assert len(y_docs) == 1 and "names sm100" in y_docs[0].note
    # 'SM80+' names every standard arch but claims no exclusivity
    assert all("names" in e.note for arch in ARCHS
               for e in verdict_of(result, "w", arch).evidence if e.role == "doc")


# --------------------------------------------------------------------------
# registry region: @register_attention_backend("fa3") def create(...): assert ...


REGISTRY = "sglang/srt/layers/attention/attention_registry.py"


def test_registry_region_gate() -> None:
    result = scan("roles_registry", "--attention-backend")
    check_row(result, "fa3", "BBBSBBBBB")
    check_row(result, "triton", "UUUUUUUUU")
    check_row(result, "flashinfer", "UUUUUUUUU")
    registered = at("roles_registry", REGISTRY, '@register_attention_backend("fa3")')
    assertion = at("roles_registry", REGISTRY, "assert torch.cuda.get_device_capability()[0]")
    for arch in ("sm100", "sm90"):
        links = chain(result, "fa3", arch)
        assert (*registered, "link") in links, describe_chain(
            verdict_of(result, "fa3", arch).evidence)
        assert (*assertion, "gate") in links
    assert verdict_of(result, "fa3", "sm100").evidence[-1].note.startswith("raises on sm100")


# --------------------------------------------------------------------------
# enum-predicate region: `if runner_backend.is_x(): ... raise` through an annotation


ENUM_RUNNER = "sglang/srt/layers/moe/moe_runner/runner.py"


def test_enum_predicate_region_gate() -> None:
    result = scan("roles_enum")
    check_row(result, "x", "BBBBSSBBB")
    for other in ("auto", "triton", "y", "w"):
        check_row(result, other, "UUUUUUUUU")
    raise_site = at("roles_enum", ENUM_RUNNER, "raise NotImplementedError")
    links = chain(result, "x", "sm90")
    assert (*raise_site, "gate") in links, describe_chain(verdict_of(result, "x", "sm90").evidence)
    note = verdict_of(result, "x", "sm90").evidence[-1].note
    assert "moe_runner_backend == x" in note


# --------------------------------------------------------------------------
# quantization gate: the loader's `capability < quant_config.get_min_capability()`


LOADER = "sglang/srt/model_loader/loader.py"


def test_quantization_gate_blocks_every_choice_below_min_capability() -> None:
    result = scan("roles_quant", MOE, "myq")
    check = at("roles_quant", LOADER, "if capability < quant_config.get_min_capability()")
    minimum = at("roles_quant", "sglang/srt/layers/quantization/myq.py", "return 100")
    for choice in ("auto", "triton", "x", "y", "w"):
        check_row(result, choice, "BBBBUUUUU")
        links = chain(result, choice, "sm90")
        assert (*check, "gate") in links
        assert minimum in [(p, ln) for p, ln, _ in links]
    assert all(b.quantization == "myq" for b in result.backends)


def test_quantization_gate_needs_the_method() -> None:
    check_row(scan("roles_quant"), "x", "UUUUUUUUU")  # no --quantization: not blocked
    fp8 = scan("roles_quant", MOE, "fp8")  # fp8's minimum is 80: nothing standard is below
    for choice in ("auto", "triton", "x", "y", "w"):
        check_row(fp8, choice, "UUUUUUUUU")


def test_quantization_gate_nested_like_sglang(tmp_path: Path) -> None:
    """The loader as SGLang writes it: under ``model_config.quantization is not
    None``, a non-NPU check and ``major is not None`` tests."""
    base = fixture("roles_quant")
    files = {p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
             for p in base.rglob("*.py")}
    files[LOADER] = '''\
import torch

from sglang.srt.layers.quantization import get_quantization_config
from sglang.srt.utils import is_npu

_is_npu = is_npu()


def _get_quantization_config(model_config):
    if model_config.quantization is not None:
        quant_config = get_quantization_config(model_config.quantization)()
        if quant_config is None:
            return None
        if not _is_npu:
            major, minor = torch.cuda.get_device_capability()
            if major is not None and minor is not None:
                assert 0 <= minor < 10
                capability = major * 10 + minor
                if capability < quant_config.get_min_capability():
                    raise ValueError("quantization method not supported on this GPU")
        return quant_config
    return None
'''
    files[COMMON] += '''

def is_npu():
    return hasattr(torch, "npu") and torch.npu.is_available()
'''
    root = make_tree(tmp_path, files, server_args=False)
    result = run_analysis(root, option=MOE, quantization="myq").result
    check_row(result, "x", "BBBBUUUUU")
    result = run_analysis(root, option=MOE).result
    check_row(result, "x", "UUUUUUUUU")


def test_quantization_method_of_another_runtime_is_not_taken(tmp_path: Path) -> None:
    """A second runtime in the same wheel (sglang/multimodal_gen beside sglang/srt,
    as in sglang 0.5.12 and 0.5.13) maps the same method to its own, same-named
    config class with another minimum. The option's runtime adds its entry with
    ``TABLE.update({...})``: that entry is the one the loader's check reads."""
    base = fixture("roles_quant")
    files = {p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
             for p in base.rglob("*.py")}
    quant = "sglang/srt/layers/quantization/__init__.py"
    files[quant] = files[quant].replace('    "myq": MyConfig,\n', "") + \
        '\n\nif True:\n    QUANTIZATION_METHODS.update(\n        {\n            "myq": MyConfig,\n' \
        '        }\n    )\n'
    files["sglang/multimodal_gen/runtime/layers/quantization/__init__.py"] = (
        "from sglang.multimodal_gen.runtime.layers.quantization.myq import MyConfig\n\n"
        'METHODS = {"myq": MyConfig}\n')
    files["sglang/multimodal_gen/runtime/layers/quantization/myq.py"] = (
        "class MyConfig:\n    @classmethod\n    def get_min_capability(cls) -> int:\n"
        "        return 121  # another runtime, another meaning\n")
    root = make_tree(tmp_path, files, server_args=False)
    result = run_analysis(root, option=MOE, quantization="myq").result
    check_row(result, "x", "BBBBUUUUU")  # srt's MyConfig: 100, not 121
    links = chain(result, "x", "sm90")
    assert ("sglang/srt/layers/quantization/myq.py", 9) in [(p, ln) for p, ln, _ in links]
    assert not any(p.startswith("sglang/multimodal_gen") for p, _, _ in links)
