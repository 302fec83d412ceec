"""The kernels stage: one fixture tree per fact form, then real FlashInfer releases.

Each fixture under ``fixtures/kernels_<form>/flashinfer/`` is a tiny package
written the way FlashInfer writes that form; the tests pin the exact facts
(function, kind, line, predicate) and evaluate them over the standard archs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from guardscan.acquire import SourceTree
from guardscan.arch import Arch, parse_arch, standard_archs
from guardscan.index import Index
from guardscan.kernels import KernelFact, KernelLibrary, build_kernel_library
from guardscan.kernels.judge import LibraryJudge, kernel_judge_for
from guardscan.kernels.support import FAR_FUTURE, deny_list
from guardscan.link import KernelCall
from guardscan.predicate import TRUE, Context, Device, Predicate, Tri, Unknown, conj, disj

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_library(form: str) -> KernelLibrary:
    """The fixture's library, its conditions read as a scan reads them."""
    root = FIXTURES / f"kernels_{form}"
    files = tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")))
    tree = SourceTree(root=root, package="flashinfer", version="0.0.0", files=files,
                      origin=str(root))
    index = Index(tree)
    return build_kernel_library(index)


def facts_of(library: KernelLibrary, function: str, kind: str | None = None) -> list[KernelFact]:
    library.expand(function)
    return [f for f in library.facts.get(function, []) if kind is None or f.kind == kind]


def truth(pred: Predicate) -> dict[str, str]:
    return {a.name: pred.evaluate(Context(arch=a)).value for a in standard_archs()}


def on(archs: str, pred: Predicate) -> None:
    """``pred`` is TRUE exactly on ``archs`` (space separated) among the standard set."""
    expected = {a.name: ("true" if a.name in archs.split() else "false") for a in standard_archs()}
    assert truth(pred) == expected, f"{pred.describe()}: expected {expected}, got {truth(pred)}"


def support(library: KernelLibrary, function: str, arch: str, backend: str | None = None,
            ) -> tuple[Tri, list]:  # type: ignore[type-arg]
    return library.support(function, parse_arch(arch), backend)


SM = "flashinfer"


# -- form 1: @supported_compute_capability ---------------------------------------------------
class TestDecorator:
    lib = fixture_library("decorator")

    @pytest.mark.parametrize("function, line, ccs", [
        ("flashinfer.gemm.mm_fp4", 7, (100, 103, 110, 120, 121)),
        ("flashinfer.gemm.mm_fp8", 12, (90, 100, 103)),  # a module constant
        ("flashinfer.gemm.Runner.run", 18, (120, 121)),  # a method
    ])
    def test_fact(self, function: str, line: int, ccs: tuple[int, ...]) -> None:
        (fact,) = facts_of(self.lib, function, "decorator")
        assert fact.predicate == Device("sm", "in", ccs)
        assert (fact.rel, fact.line) == ("flashinfer/gemm.py", line)
        assert fact.text.startswith("@")

    @pytest.mark.parametrize("function", ["flashinfer.gemm.not_a_fact",
                                          "flashinfer.gemm.computed_list"])
    def test_no_fact(self, function: str) -> None:
        assert facts_of(self.lib, function) == []

    def test_evaluation(self) -> None:
        (fact,) = facts_of(self.lib, "flashinfer.gemm.mm_fp4", "decorator")
        on("sm100 sm103 sm110 sm120 sm121", fact.predicate)

    def test_support_through_export(self) -> None:
        assert support(self.lib, "flashinfer.mm_fp8", "sm90")[0] is Tri.TRUE
        value, chain = support(self.lib, "flashinfer.mm_fp8", "sm120")
        assert value is Tri.FALSE
        assert [(e.path, e.line, e.role) for e in chain] == [("flashinfer/gemm.py", 12, "kernel")]


# -- form 2: @backend_requirement --------------------------------------------------------------
class TestBackendRequirement:
    lib = fixture_library("backend_requirement")

    def test_union_over_backends(self) -> None:
        (fact,) = facts_of(self.lib, "flashinfer.gemm.mm", "backend-requirement")
        assert fact.predicate == Device("sm", "in", (100, 103, 120, 121))
        assert fact.line == 27 and fact.text == "@backend_requirement("
        assert "trtllm: SM (major*10+minor) in [100, 103]" in fact.note
        checks = {c.backend: c for c in self.lib.backend_checks["flashinfer.gemm.mm"]}
        assert checks["trtllm"].check == "flashinfer.gemm._trtllm_requirement"
        assert checks["trtllm"].line == 29

    def test_common_check_only(self) -> None:
        (fact,) = facts_of(self.lib, "flashinfer.gemm.hopper_kernel", "backend-requirement")
        on("sm90", fact.predicate)

    def test_undeclared_check_is_unknown(self) -> None:
        (fact,) = facts_of(self.lib, "flashinfer.gemm.undeclared", "backend-requirement")
        assert isinstance(fact.predicate, Unknown)
        assert support(self.lib, "flashinfer.gemm.undeclared", "sm100")[0] is Tri.UNKNOWN

    @pytest.mark.parametrize("backend, arch, value, line", [
        (None, "sm120", Tri.TRUE, 9),  # the default backend is "cudnn"
        ("cudnn", "sm120", Tri.TRUE, 9),
        ("trtllm", "sm120", Tri.FALSE, 4),  # ends at _trtllm_requirement's decorator
        ("trtllm", "sm100", Tri.TRUE, 4),
        ("auto", "sm120", Tri.TRUE, 27),  # "auto": the union
        ("auto", "sm90", Tri.FALSE, 27),
        ("nope", "sm100", Tri.FALSE, 27),  # not in the table: BackendSupportedError
    ])
    def test_support_per_backend(self, backend: str | None, arch: str, value: Tri,
                                 line: int) -> None:
        got, chain = support(self.lib, "flashinfer.gemm.mm", arch, backend)
        assert got is value
        assert chain[-1].line == line


# -- form 3: JIT specs ----------------------------------------------------------------------------
class TestJitSpec:
    lib = fixture_library("jit_spec")
    M = "flashinfer.jit.modules"

    def test_supported_major_versions_line(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.gen_trtllm_module", "jit-spec")
        assert fact.predicate == Device("major", "in", (10,))
        assert (fact.line, fact.text) == (13, "supported_major_versions=[10]")
        # the evidence names the tier: a JIT spec says what compiles only
        chain = support(self.lib, f"{self.M}.gen_trtllm_module", "sm100")[1]
        assert "tier c: what may compile, not which kernels exist" in chain[-1].note

    @pytest.mark.parametrize("function, archs", [
        ("gen_sm100_module", "sm100"),  # sm100a flags from jit/core.py
        ("gen_hopper_module", "sm90"),
        ("gen_family_module", "sm100 sm120 sm121"),  # 120f (family) or 100a
        ("gen_literal_module", "sm103"),  # a -gencode flag written in place
    ])
    def test_gencode(self, function: str, archs: str) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.{function}", "jit-spec")
        on(archs, fact.predicate)

    def test_conditional_spec_is_unknown_where_it_matters(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.gen_conditional_module", "jit-spec")
        values = truth(fact.predicate)
        assert values["sm100"] == "true" and values["sm120"] == "unknown"

    def test_none_is_not_a_fact(self) -> None:
        assert facts_of(self.lib, f"{self.M}.gen_any_module") == []


# -- form 4: dispatch -----------------------------------------------------------------------------
class TestDispatch:
    lib = fixture_library("dispatch")
    M = "flashinfer.moe"

    def test_chain_dispatch_fact(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.get_moe_module", "dispatch")
        on("sm100 sm110 sm120 sm121", fact.predicate)
        assert fact.text == 'raise ValueError(f"Invalid backend: {backend}")'
        assert "unknown-key" not in fact.note
        arms = [(b.predicate, b.callees) for b in self.lib.branches[f"{self.M}.get_moe_module"]]
        assert arms == [
            (Device("sm", "in", (120, 121)), ("flashinfer.jit.moe.gen_moe_sm120_module",)),
            (Device("sm", "in", (100, 110)), ("flashinfer.jit.moe.gen_moe_sm100_module",)),
        ]

    @pytest.mark.parametrize("arch, value, last_line", [
        ("sm120", Tri.TRUE, 10),  # the sm120 branch, its JIT spec: majors [12]
        ("sm100", Tri.TRUE, 14),
        ("sm90", Tri.FALSE, 16),  # the dispatch raises
        ("sm103", Tri.FALSE, 16),
    ])
    def test_support_follows_the_branch(self, arch: str, value: Tri, last_line: int) -> None:
        got, chain = support(self.lib, f"{self.M}.moe", arch)
        assert got is value
        assert chain[0].line == 23  # moe -> get_moe_module
        assert chain[-1].line == last_line
        if arch == "sm120":
            assert "gen_moe_sm120_module" in chain[1].note and "select" in chain[1].note

    def test_table_dispatch(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.get_quant_module", "dispatch")
        on("sm90 sm120", fact.predicate)
        assert support(self.lib, f"{self.M}.quant", "sm90")[0] is Tri.TRUE
        got, chain = support(self.lib, f"{self.M}.quant", "sm120")
        assert got is Tri.TRUE and chain[1].line == 29  # the "120": entry
        assert support(self.lib, f"{self.M}.quant", "sm100")[0] is Tri.FALSE

    def test_int_keyed_dispatch(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.get_gemm_module", "dispatch")
        on("sm100 sm103 sm110 sm120 sm121", fact.predicate)
        assert support(self.lib, f"{self.M}.gemm", "sm121")[0] is Tri.TRUE
        assert support(self.lib, f"{self.M}.gemm", "sm90")[0] is Tri.FALSE

    def test_unknown_key_reads_literals_as_sm(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.by_name", "dispatch")
        assert "unknown-key" in fact.note
        on("sm120", fact.predicate)

    def test_select_without_raise_is_a_union(self) -> None:
        function = f"{self.M}.pick"
        assert facts_of(self.lib, function) == []
        assert support(self.lib, function, "sm120")[0] is Tri.TRUE
        assert support(self.lib, function, "sm100")[0] is Tri.TRUE
        got, chain = support(self.lib, function, "sm90")  # the else branch: majors [10, 11]
        assert got is Tri.FALSE and chain[-1].line == 14
        edge = self.lib.graph.edges[function, "flashinfer.jit.moe.gen_moe_sm120_module"]
        assert edge["select"] is True and edge["path_text"] == "cap[0] == 12"


# -- form 5: explicit checks ----------------------------------------------------------------------
class TestCheck:
    lib = fixture_library("check")
    M = "flashinfer.ops"

    def test_raise_under_capability(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.needs_blackwell", "check")
        assert fact.predicate == Device("major", ">=", 10)
        assert (fact.line, fact.text) == (6, "if major < 10:")

    def test_helper_read_from_its_definition(self) -> None:
        """``is_sm100a_supported(x.device)``: the interpreter reads the
        helper's body, as it reads SGLang's."""
        (fact,) = facts_of(self.lib, f"{self.M}.needs_sm100a", "check")
        on("sm100", fact.predicate)
        assert support(self.lib, f"{self.M}.needs_sm100a", "sm103")[0] is Tri.FALSE

    def test_mixed_condition_stays_unknown(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.fp8_on_hopper_only", "check")
        values = truth(fact.predicate)
        assert values["sm90"] == "true" and values["sm100"] == "unknown"
        # TRUE there is not positive evidence: the condition is not decided
        assert support(self.lib, f"{self.M}.fp8_on_hopper_only", "sm90")[0] is Tri.UNKNOWN
        assert support(self.lib, f"{self.M}.fp8_on_hopper_only", "sm100")[0] is Tri.UNKNOWN

    def test_assert(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.asserted", "check")
        on("sm100 sm103 sm110", fact.predicate)

    def test_raise_after_early_return(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.early_return", "check")
        on("sm90 sm100 sm103 sm110 sm120 sm121", fact.predicate)

    @pytest.mark.parametrize("function", ["in_handler", "not_about_device"])
    def test_not_a_check(self, function: str) -> None:
        assert facts_of(self.lib, f"{self.M}.{function}") == []

    def test_device_properties_read_by_the_guard_forms(self) -> None:
        """``props.major != 12`` (FlashInfer's SM12x checks): the device-properties
        guard form reads it, in the kernel library as in SGLang."""
        (fact,) = facts_of(self.lib, f"{self.M}.needs_sm12x", "check")
        assert (fact.line, fact.text) == (55, "if props.major != 12:")
        on("sm120 sm121", fact.predicate)
        assert support(self.lib, f"{self.M}.needs_sm12x", "sm100")[0] is Tri.FALSE

    def test_arch_text_read_by_the_guard_forms(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.not_on_hopper", "check")
        assert fact.predicate == Device("sm", "!=", 90)
        assert support(self.lib, f"{self.M}.not_on_hopper", "sm90")[0] is Tri.FALSE



class TestDenyList:
    """A passing raising check is positive evidence only when it is an allow-list:
    one that also lets a far-future arch (capability 42.0) through rejects the
    archs it lists and says nothing about the others."""

    lib = fixture_library("check")
    M = "flashinfer.ops"

    def test_deny_list_is_a_doubt_not_support(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.not_on_sm110", "check")
        assert (fact.line, fact.text) == (72, "if major == 11 and minor == 0:")
        assert deny_list(fact, Context(arch=Arch(9, 0)))
        value, chain = support(self.lib, f"{self.M}.not_on_sm110", "sm90")
        assert value is Tri.UNKNOWN
        # a doubt: the chain names the check and says why it does not decide
        assert chain[-1].line == 72 and "says nothing about sm90" in chain[-1].note
        # what it lists, it does reject
        assert support(self.lib, f"{self.M}.not_on_sm110", "sm110")[0] is Tri.FALSE

    def test_lower_bound_is_a_deny_list(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.needs_blackwell", "check")
        assert deny_list(fact, Context(arch=Arch(10, 0)))
        assert support(self.lib, f"{self.M}.needs_blackwell", "sm100")[0] is Tri.UNKNOWN
        assert support(self.lib, f"{self.M}.needs_blackwell", "sm90")[0] is Tri.FALSE

    def test_allow_list_is_evidence(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.only_sm100_or_sm103", "check")
        assert not deny_list(fact, Context(arch=Arch(10, 3)))
        on("sm100 sm103", fact.predicate)
        value, chain = support(self.lib, f"{self.M}.only_sm100_or_sm103", "sm103")
        assert value is Tri.TRUE and chain[-1].line == 79
        assert "tier a: explicit raising check" in chain[-1].note
        assert support(self.lib, f"{self.M}.only_sm100_or_sm103", "sm120")[0] is Tri.FALSE

    def test_far_future_is_no_real_arch(self) -> None:
        assert FAR_FUTURE not in standard_archs()


# -- form 8: precompiled artifacts (cubin architecture lists) --------------------------------
class TestArtifacts:
    lib = fixture_library("artifacts")
    M = "flashinfer.jit.modules"

    def test_the_lists_are_found(self) -> None:
        lists = self.lib.cubin_lists
        assert sorted(lists) == ["flashinfer.jit.metainfo.BLACKWELL_CUBIN_ARCHS",
                                 "flashinfer.jit.metainfo.RUBIN_CUBIN_ARCHS",
                                 "flashinfer.jit.modules.HOPPER_CUBINS"]
        blackwell = lists["flashinfer.jit.metainfo.BLACKWELL_CUBIN_ARCHS"]
        assert blackwell.archs == ("Sm100a", "Sm100f", "Sm103a") and blackwell.line == 6
        on("sm100 sm103", blackwell.predicate)

    def test_alternatives_in_one_argument_are_a_union(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.gen_moe_module", "artifacts")
        assert (fact.line, fact.text) == (
            16, "RUBIN_CUBIN_ARCHS if enable_rubin else BLACKWELL_CUBIN_ARCHS,")
        assert fact.predicate.evaluate(Context(arch=Arch(10, 7))) is Tri.TRUE
        on("sm100 sm103", fact.predicate)
        assert "Sm100a/Sm100f/Sm103a" in fact.note and "Sm107a" in fact.note

    def test_cubins_bound_the_jit_spec(self) -> None:
        """The JIT spec compiles for major 12; the cubins exist for sm10x only."""
        value, chain = support(self.lib, "flashinfer.moe_fp4", "sm120")
        assert value is Tri.FALSE
        last = chain[-1]
        assert (last.path, last.line) == ("flashinfer/jit/modules.py", 16)
        assert "tier b: precompiled cubins" in last.note
        assert "disagrees with flashinfer/jit/modules.py:20" in last.note
        value, chain = support(self.lib, "flashinfer.moe_fp4", "sm100")
        assert value is Tri.TRUE and chain[-1].line == 16  # the stronger fact decides

    def test_without_cubins_the_jit_spec_decides(self) -> None:
        value, chain = support(self.lib, "flashinfer.moe_jit_only", "sm120")
        assert value is Tri.TRUE and chain[-1].text == "supported_major_versions=[10, 12],"

    def test_a_list_that_names_no_arch_gives_no_fact(self) -> None:
        assert facts_of(self.lib, f"{self.M}.gen_dtype_module", "artifacts") == []
        assert support(self.lib, "flashinfer.moe_with_unread_list", "sm120") == (Tri.UNKNOWN, [])

    def test_conditional_use_holds_only_where_it_is_made(self) -> None:
        (fact,) = facts_of(self.lib, f"{self.M}.gen_hopper_gemm_module", "artifacts")
        assert fact.predicate.evaluate(Context(arch=Arch(12, 0))) is Tri.UNKNOWN
        assert fact.predicate.evaluate(Context(arch=Arch(9, 0))) is Tri.TRUE


# -- form 6: re-exports ---------------------------------------------------------------------------
class TestExports:
    lib = fixture_library("exports")

    @pytest.mark.parametrize("public, definition", [
        ("flashinfer.cutlass_fused_moe", "flashinfer.fused_moe.core.cutlass_fused_moe"),
        ("flashinfer.fused_moe.cutlass_fused_moe", "flashinfer.fused_moe.core.cutlass_fused_moe"),
        ("flashinfer.fused_moe.MoERunner", "flashinfer.fused_moe.core.MoERunner"),
        ("flashinfer.fp4_quantize", "flashinfer.quant.fp4_quantize"),
        ("flashinfer.quantize_alias", "flashinfer.quant.fp4_quantize"),  # via `quantize = ...`
        ("flashinfer.public_fn", "flashinfer.star_mod.public_fn"),  # star import
        ("flashinfer.fast_op", "flashinfer.optional.fast_op"),  # under contextlib.suppress
    ])
    def test_export(self, public: str, definition: str) -> None:
        assert self.lib.exports[public] == definition
        assert self.lib.resolve(public) == definition

    def test_module_paths_and_misses(self) -> None:
        assert self.lib.resolve("flashinfer.gemm.mm_fp4") == "flashinfer.gemm.mm_fp4"
        assert self.lib.resolve("flashinfer.quant.fp4_quantize") == "flashinfer.quant.fp4_quantize"
        assert self.lib.resolve("flashinfer.does_not_exist") is None
        assert self.lib.resolve("flashinfer._private_fn") is None
        assert "flashinfer.does_not_exist" not in self.lib.exports


# -- form 7: call graph ---------------------------------------------------------------------------
class TestCallGraph:
    lib = fixture_library("callgraph")
    M = "flashinfer.core"

    def edges(self, function: str) -> dict[str, dict[str, object]]:
        self.lib.expand(function)
        return {v: d for _, v, d in self.lib.graph.out_edges(function, data=True)}

    def test_closure_and_class_body(self) -> None:
        out = self.edges(f"{self.M}.get_sm100_module")
        assert out["flashinfer.jit.spec.gen_sm100_module"]["kind"] == "call"
        assert out[f"{self.M}.make_config"]["line"] == 20  # runs in the class body
        assert out[f"{self.M}.get_sm100_module.MoERunner.forward"]["kind"] == "defines"

    @pytest.mark.parametrize("function, callee", [
        ("via_module_attribute", "flashinfer.jit.spec.gen_portable_module"),
        ("via_local_import", "flashinfer.jit.spec.gen_sm100_module"),
        ("make_wrapper", "flashinfer.core.Wrapper.__init__"),
        ("get_sm100_module.MoERunner.forward", "flashinfer.core.get_sm100_module.MoERunner.helper"),
    ])
    def test_resolved(self, function: str, callee: str) -> None:
        assert callee in self.edges(f"{self.M}.{function}")

    def test_unresolved_is_listed_not_guessed(self) -> None:
        self.lib.expand(f"{self.M}.calls_missing")
        missing = {(caller.rpartition(".")[2], callee) for caller, callee, _, _ in
                   self.lib.unresolved}
        assert ("calls_missing", "missing_function") in missing
        assert ("helper", "undefined_helper") in missing
        assert not any(callee.startswith("torch") for _, callee in missing)

    def test_chain_to_the_jit_spec(self) -> None:
        value, chain = support(self.lib, f"{self.M}.entry", "sm120")
        assert value is Tri.FALSE
        assert [(e.path, e.line) for e in chain] == [
            ("flashinfer/core.py", 36), ("flashinfer/core.py", 17), ("flashinfer/jit/spec.py", 11)]
        assert chain[-1].text == "return ctx.get_nvcc_flags_list(supported_major_versions=[10])"
        assert all(e.role == "kernel" for e in chain)
        assert support(self.lib, f"{self.M}.entry", "sm100")[0] is Tri.TRUE

    def test_cycles_terminate(self) -> None:
        assert support(self.lib, f"{self.M}.cycle_a", "sm120")[0] in (Tri.UNKNOWN, Tri.FALSE)
        assert support(self.lib, f"{self.M}.cycle_b", "sm100")[0] is Tri.TRUE

    def test_backend_keyed_lambdas(self) -> None:
        mm = f"{self.M}.mm"
        assert support(self.lib, mm, "sm120", backend="cudnn")[0] is Tri.TRUE
        assert support(self.lib, mm, "sm120", backend="trtllm")[0] is Tri.FALSE
        # "auto": either could run; the trtllm exclusion is a caveat, not a verdict,
        # and the cudnn branch alone is no positive evidence
        result = self.lib.outcome(mm, parse_arch("sm120"))
        assert result.value is Tri.UNKNOWN and not result.chain
        assert result.caveats[0][-1].text.endswith("supported_major_versions=[10])")

    def test_declaration_outranks_what_compiles(self) -> None:
        # the decorator lists sm103; the JIT spec only compiles sm_100a: the more
        # specific declaration decides, and the chain says they disagree
        value, chain = support(self.lib, f"{self.M}.declared_wider_than_compiled", "sm103")
        assert value is Tri.TRUE
        assert chain[-1].text == "@supported_compute_capability([100, 103])"
        assert "disagrees with flashinfer/jit/spec.py:22" in chain[-1].note

    def test_a_raising_check_is_never_outranked(self) -> None:
        value, chain = support(self.lib, f"{self.M}.declared_but_checked", "sm120")
        assert value is Tri.FALSE
        assert chain[-1].text == "if major == 12:"
        assert "disagrees with" in chain[-1].note

    def test_class_support_uses_init(self) -> None:
        assert support(self.lib, f"{self.M}.Wrapper", "sm120")[0] is Tri.FALSE


# -- predicates used above ------------------------------------------------------------------------
def test_gencode_predicates() -> None:
    from guardscan.kernels.jit_spec import gencode_predicate

    assert gencode_predicate("-gencode=arch=compute_100a,code=sm_100a") == Device(
        "cap", "==", (10, 0))
    assert gencode_predicate("compute_120f") == Device("major", "==", 12)
    assert gencode_predicate("compute_103f") == conj(Device("major", "==", 10),
                                                     Device("minor", ">=", 3))
    assert gencode_predicate("compute_90a compute_100a") == disj(
        Device("cap", "==", (9, 0)), Device("cap", "==", (10, 0)))
    assert gencode_predicate("compute_{major}{minor}") is None


# -- real releases ------------------------------------------------------------------------------
def _read_as_a_scan_reads(tree: SourceTree) -> KernelLibrary:
    """The library, as the judge builds it."""
    return build_kernel_library(Index(tree))


@pytest.fixture(scope="module")
def fi063(flashinfer_063: SourceTree) -> KernelLibrary:
    return _read_as_a_scan_reads(flashinfer_063)


@pytest.fixture(scope="module")
def fi072(flashinfer_072: SourceTree) -> KernelLibrary:
    return _read_as_a_scan_reads(flashinfer_072)


SM120 = Arch(12, 0)
SM100 = Arch(10, 0)
TRTLLM_MOE = ["trtllm_fp4_block_scale_moe", "trtllm_fp8_block_scale_moe",
              "trtllm_fp8_per_tensor_scale_moe", "trtllm_bf16_moe"]


@pytest.mark.parametrize("entry", TRTLLM_MOE)
def test_063_trtllm_moe_not_on_sm120(fi063: KernelLibrary, entry: str) -> None:
    # trtllm_bf16_moe is not re-exported by flashinfer/__init__.py in 0.6.3
    assert fi063.resolve(f"flashinfer.fused_moe.{entry}") == f"flashinfer.fused_moe.core.{entry}"
    value, chain = fi063.support(f"flashinfer.fused_moe.{entry}", SM120)
    assert value is Tri.FALSE
    last = chain[-1]
    assert (last.path, last.text) == ("flashinfer/jit/fused_moe.py", "supported_major_versions=[10]")
    assert any("get_trtllm_moe_sm100_module" in e.note for e in chain)
    assert fi063.support(f"flashinfer.fused_moe.{entry}", SM100)[0] is Tri.TRUE


def test_063_cutlass_moe_dispatches_to_sm120(fi063: KernelLibrary) -> None:
    function = fi063.resolve("flashinfer.fused_moe.cutlass_fused_moe")
    assert function == "flashinfer.fused_moe.core.cutlass_fused_moe"
    value, chain = fi063.support(function, SM120)
    assert value is not Tri.FALSE
    assert any("gen_cutlass_fused_moe_sm120_module" in e.note for e in chain)
    assert chain[-1].text == "supported_major_versions=[12]"
    (dispatch,) = [f for f in fi063.facts["flashinfer.fused_moe.core.get_cutlass_fused_moe_module"]
                   if f.kind == "dispatch"]
    assert "unknown-key" not in dispatch.note
    assert dispatch.predicate.evaluate(Context(arch=Arch(8, 0))) is Tri.FALSE


def test_063_cudnn_fp4_gemm_on_sm120(fi063: KernelLibrary) -> None:
    assert fi063.resolve("flashinfer.mm_fp4") == "flashinfer.gemm.gemm_base.mm_fp4"
    value, chain = fi063.support("flashinfer.mm_fp4", SM120, backend="cudnn")
    assert value is Tri.TRUE
    assert chain[-1].text == "@supported_compute_capability([100, 103, 110, 120, 121])"
    assert fi063.support("flashinfer.mm_fp4", SM120, backend="trtllm")[0] is Tri.FALSE


def test_063_fp4_quantize_per_arch_table(fi063: KernelLibrary) -> None:
    value, chain = fi063.support("flashinfer.fp4_quantize", SM120)
    assert value is Tri.TRUE
    assert any("gen_fp4_quantization_sm120_module" in e.note for e in chain)
    assert fi063.support("flashinfer.fp4_quantize", Arch(8, 0))[0] is Tri.FALSE


def test_063_fact_inventory(fi063: KernelLibrary) -> None:
    counts = fi063.counts()
    assert counts["decorator"] >= 20 and counts["backend-requirement"] >= 10
    assert counts["jit-spec"] >= 30


def test_072_trtllm_moe_cubins_bound_the_jit_spec(fi072: KernelLibrary) -> None:
    """0.7.2 compiles the trtllm-gen MoE module with ``supported_major_versions=
    [10, 12]`` (jit/fused_moe.py:386) but filters its kernel manifest to
    ``BLACKWELL_CUBIN_ARCHS = ("Sm100a", "Sm100f", "Sm103a")``
    (jit/trtllm_gen_metainfo.py:48), at jit/fused_moe.py:381: no kernel on sm120."""
    value, chain = fi072.support("flashinfer.trtllm_fp4_block_scale_moe", SM120)
    assert value is Tri.FALSE
    last = chain[-1]
    assert (last.path, last.line) == ("flashinfer/jit/fused_moe.py", 381)
    assert last.text == "RUBIN_CUBIN_ARCHS if enable_rubin else BLACKWELL_CUBIN_ARCHS,"
    assert "Sm100a/Sm100f/Sm103a (BLACKWELL_CUBIN_ARCHS, flashinfer/jit/trtllm_gen_metainfo.py:48)" \
        in last.note
    # (the JIT spec admits sm120, but its generator fetches the kernels at
    # run time: it decides nothing there, and the cubin list decides)
    value, chain = fi072.support("flashinfer.trtllm_fp4_block_scale_moe", SM100)
    assert value is Tri.TRUE and chain[-1].line == 381
    assert fi072.support("flashinfer.trtllm_fp4_block_scale_moe", Arch(9, 0))[0] is Tri.FALSE
    assert fi072.support("flashinfer.trtllm_fp4_block_scale_moe", Arch(11, 0))[0] is Tri.FALSE


def test_063_cute_dsl_masked_gemm_check_is_a_deny_list(fi063: KernelLibrary) -> None:
    """``if major == 11 and minor == 0: raise`` (cute_dsl/blockscaled_gemm.py:3018)
    rejects SM110 and says nothing about sm90: a doubt, not support."""
    function = "flashinfer.cute_dsl.blockscaled_gemm.grouped_gemm_nt_masked"
    value, chain = fi063.support(function, Arch(9, 0))
    assert value is Tri.UNKNOWN
    assert (chain[-1].line, chain[-1].text) == (3018, "if major == 11 and minor == 0:")
    assert "says nothing about sm90" in chain[-1].note
    assert fi063.support(function, Arch(11, 0))[0] is Tri.FALSE


@pytest.mark.parametrize(("tree", "backend", "arch", "expected", "decorator"), [
    # flashinfer/gemm/gemm_base.py, read by hand: the requirement table of mm_fp4
    # and each check's @supported_compute_capability
    ("063", "trtllm", SM120, Tri.FALSE, "@supported_compute_capability([100, 103])"),
    ("063", "trtllm", SM100, Tri.TRUE, "@supported_compute_capability([100, 103])"),
    ("063", "cudnn", SM120, Tri.TRUE, "@supported_compute_capability([100, 103, 110, 120, 121])"),
    ("063", "cutlass", SM120, Tri.TRUE,
     "@supported_compute_capability([100, 103, 110, 120, 121])"),
    ("072", "trtllm", SM120, Tri.FALSE, "@supported_compute_capability([100, 103, 107])"),
    ("072", "trtllm", SM100, Tri.TRUE, "@supported_compute_capability([100, 103, 107])"),
    ("072", "cudnn", SM120, Tri.TRUE,
     "@supported_compute_capability([100, 103, 107, 110, 120, 121])"),
    ("072", "cutlass", SM100, Tri.TRUE,
     "@supported_compute_capability([100, 103, 107, 110, 120, 121])"),
])
def test_backend_string_narrows_mm_fp4(flashinfer_063: SourceTree, flashinfer_072: SourceTree,
                                       tree: str, backend: str, arch: Arch, expected: Tri,
                                       decorator: str) -> None:
    """A call with ``backend=`` is judged against that key of ``@backend_requirement``,
    as the judge answers the link stage's ``KernelCall``."""
    judge = _judges(flashinfer_063 if tree == "063" else flashinfer_072)
    call = KernelCall("fp4_gemm_runner_backend", TRUE, "flashinfer.gemm.mm_fp4",
                      "sglang/srt/layers/quantization/fp4_utils.py", 1, backend=backend)
    value, chain = judge.support(call, arch)
    assert value is expected, [e.note for e in chain]
    assert chain[-1].path == "flashinfer/gemm/gemm_base.py" and chain[-1].text == decorator
    assert any(f'"{backend}":' in e.text for e in chain)


_JUDGES: dict[str, LibraryJudge] = {}


def _judges(tree: SourceTree) -> LibraryJudge:
    if tree.version not in _JUDGES:
        _JUDGES[tree.version or ""] = kernel_judge_for(Index(tree))
    return _JUDGES[tree.version or ""]


def test_063_shuffle_helper_is_decided_by_a_public_building_block(
        flashinfer_063: SourceTree) -> None:
    """``shuffle_matrix_sf_a`` ends in ``return block_scale_interleave(w_shuffled)``
    (fp4_quantization.py:802): its support is that public function's."""
    judge = _judges(flashinfer_063)
    shuffle = KernelCall("x", TRUE, "flashinfer.shuffle_matrix_sf_a", "s.py", 1)
    assert judge.support(shuffle, SM120)[0] is Tri.TRUE
    assert judge.delegate(shuffle, SM120) == "flashinfer.fp4_quantization.block_scale_interleave"
    for own in ("flashinfer.fp4_quantize", "flashinfer.fused_moe.trtllm_fp4_block_scale_moe"):
        kernel = KernelCall("x", TRUE, own, "s.py", 1)
        assert judge.support(kernel, SM100)[0] is Tri.TRUE
        assert judge.delegate(kernel, SM100) is None, own


def test_072_cutlass_moe_and_cudnn_gemm(fi072: KernelLibrary) -> None:
    value, chain = fi072.support("flashinfer.cutlass_fused_moe", SM120)
    assert value is not Tri.FALSE
    assert any("gen_cutlass_fused_moe_sm120_module" in e.note for e in chain)
    assert fi072.support("flashinfer.mm_fp4", SM120, backend="cudnn")[0] is Tri.TRUE


def test_072_device_properties_check(fi072: KernelLibrary) -> None:
    """``props = torch.cuda.get_device_properties(device)``; ``if props.major != 12:
    raise``: read by the device-properties guard form (the kernel reader alone
    missed it)."""
    function = "flashinfer.mla._sparse_mla_sm120.cake_dsv41_mixed._device_facts"
    (fact,) = facts_of(fi072, function, "check")
    assert fact.text == "if props.major != 12:"
    on("sm120 sm121", fact.predicate)


def test_072_trtllm_fp4_moe_not_on_sm120(flashinfer_072: SourceTree) -> None:
    """A library built from scratch answers the seed case (how long it takes
    is measured in bench/, never here)."""
    library = build_kernel_library(Index(flashinfer_072))
    assert library.support("flashinfer.trtllm_fp4_block_scale_moe", SM120)[0] is Tri.FALSE
