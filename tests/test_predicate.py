"""predicate: truth tables of every atom and connective over the standard
architectures (Kleene three-valued logic), expressions that must stay UNKNOWN,
the simplifying constructors, and property tests against a reference evaluator."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardscan.arch import Arch, parse_arch, standard_archs
from guardscan.predicate import (
    FALSE,
    TRUE,
    And,
    Const,
    Context,
    CudaAtLeast,
    Device,
    Not,
    OptionIs,
    Or,
    Platform,
    Predicate,
    QuantIs,
    Tri,
    Unknown,
    atoms,
    conj,
    disj,
    leaves,
    neg,
    substitute,
)
from guardscan.predicate_dag import residual, value

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
ARCHS = standard_archs()
NAMES = [a.name for a in ARCHS]  # sm80 sm86 sm89 sm90 sm100 sm103 sm110 sm120 sm121


def row(text: str) -> list[Tri]:
    """``"FFFTFFFFF"`` -> one Tri per standard arch."""
    assert len(text) == len(ARCHS), text
    return [{"T": T, "F": F, "U": U}[c] for c in text]


def on_archs(pred: Predicate, **ctx: object) -> list[Tri]:
    return [pred.evaluate(Context(arch=a, **ctx)) for a in ARCHS]  # type: ignore[arg-type]


def show(pred: Predicate, values: list[Tri]) -> str:
    return f"{pred.describe()}: " + " ".join(
        f"{n}={v.value}" for n, v in zip(NAMES, values))


# --------------------------------------------------------------------------
# truth tables: atoms


ATOM_TABLE: list[tuple[Predicate, str]] = [
    #                                                 80 86 89 90 100 103 110 120 121
    (TRUE, "TTTTTTTTT"),
    (FALSE, "FFFFFFFFF"),
    (Device("major", "==", 9), "FFFTFFFFF"),
    (Device("major", "!=", 9), "TTTFTTTTT"),
    (Device("major", ">=", 10), "FFFFTTTTT"),
    (Device("major", "<", 9), "TTTFFFFFF"),
    (Device("major", "in", (10, 12)), "FFFFTTFTT"),
    (Device("major", "not in", (10, 12)), "TTTTFFTFF"),
    (Device("minor", "==", 0), "TFFTTFTTF"),
    (Device("sm", ">=", 100), "FFFFTTTTT"),
    (Device("sm", "==", 89), "FFTFFFFFF"),
    (Device("sm", "<=", 90), "TTTTFFFFF"),
    (Device("sm", "in", (100, 103)), "FFFFTTFFF"),
    (Device("cap", "==", (12, 0)), "FFFFFFFTF"),
    (Device("cap", ">=", (10, 3)), "FFFFFTTTT"),
    (Device("cap", "<", (9, 0)), "TTTFFFFFF"),
    (Device("cap", "in", ((8, 6), (12, 1))), "FTFFFFFFT"),
    (Platform("cuda"), "TTTTTTTTT"),
    (Platform("cuda_alike"), "TTTTTTTTT"),
    (Platform("hip"), "FFFFFFFFF"),
    (Platform("npu"), "FFFFFFFFF"),
    # CUDA >= 12.8 is TRUE only where every toolkit that targets the arch is that new
    (CudaAtLeast((12, 8)), "UUUUTTTTT"),
    (CudaAtLeast((12, 9)), "UUUUUTTUT"),
    (CudaAtLeast((11, 0)), "TTTTTTTTT"),
    (CudaAtLeast((13, 0)), "UUUUUUTUU"),
    (Unknown("env var"), "UUUUUUUUU"),
]


@pytest.mark.parametrize(("pred", "expected"), ATOM_TABLE,
                         ids=[p.describe() for p, _ in ATOM_TABLE])
def test_atom_truth_table(pred: Predicate, expected: str) -> None:
    actual = on_archs(pred)
    assert actual == row(expected), show(pred, actual)


@pytest.mark.parametrize(
    ("pred", "options", "expected"),
    [
        (OptionIs("moe", frozenset({"x"})), {"moe": "x"}, T),
        (OptionIs("moe", frozenset({"x"})), {"moe": "y"}, F),
        (OptionIs("moe", frozenset({"x", "y"})), {"moe": "y"}, T),
        (OptionIs("moe", frozenset({"x"})), {}, U),
        (OptionIs("moe", frozenset({"x"})), {"attn": "x"}, U),
    ],
)
def test_option_is(pred: Predicate, options: dict[str, str], expected: Tri) -> None:
    for arch in [None, *ARCHS]:
        assert pred.evaluate(Context(arch=arch, options=options)) is expected


@pytest.mark.parametrize(
    ("quantization", "expected"),
    [("fp8", T), ("awq", F), ("", F), (None, U)],
)
def test_quant_is(quantization: str | None, expected: Tri) -> None:
    pred = QuantIs(frozenset({"fp8", "modelopt_fp4"}))
    for arch in [None, *ARCHS]:
        assert pred.evaluate(Context(arch=arch, quantization=quantization)) is expected


@pytest.mark.parametrize(
    "pred",
    [Device("major", "==", 9), Device("cap", "==", (12, 0)), Platform("cuda"),
     CudaAtLeast((11, 0))],
)
def test_device_atoms_without_arch_are_unknown(pred: Predicate) -> None:
    assert pred.evaluate(Context()) is U


# --------------------------------------------------------------------------
# truth tables: connectives (Kleene)


KLEENE_AND = {(T, T): T, (T, F): F, (T, U): U, (F, T): F, (F, F): F, (F, U): F,
              (U, T): U, (U, F): F, (U, U): U}
KLEENE_OR = {(T, T): T, (T, F): T, (T, U): T, (F, T): T, (F, F): F, (F, U): U,
             (U, T): T, (U, F): U, (U, U): U}
FIXED = {T: TRUE, F: FALSE, U: Unknown("model config")}


@pytest.mark.parametrize(("a", "b"), list(KLEENE_AND), ids=lambda v: v.value)
def test_and_or_two_valued_inputs(a: Tri, b: Tri) -> None:
    ctx = Context(arch=parse_arch("sm90"))
    assert And((FIXED[a], FIXED[b])).evaluate(ctx) is KLEENE_AND[(a, b)]
    assert Or((FIXED[a], FIXED[b])).evaluate(ctx) is KLEENE_OR[(a, b)]


@pytest.mark.parametrize(("a", "expected"), [(T, F), (F, T), (U, U)], ids=lambda v: v.value)
def test_not(a: Tri, expected: Tri) -> None:
    assert Not(FIXED[a]).evaluate(Context(arch=parse_arch("sm90"))) is expected
    assert ~a is expected


HOPPER = Device("major", "==", 9)
BLACKWELL_DC = Device("major", "==", 10)
SM120 = Device("cap", "==", (12, 0))
CUDA128 = CudaAtLeast((12, 8))
ENV = Unknown("env var")

CONNECTIVE_TABLE: list[tuple[str, Predicate, str]] = [
    #                                                       80 86 89 90 100 103 110 120 121
    ("hopper or blackwell", Or((HOPPER, BLACKWELL_DC)), "FFFTTTFFF"),
    ("hopper and blackwell", And((HOPPER, BLACKWELL_DC)), "FFFFFFFFF"),
    ("not hopper", Not(HOPPER), "TTTFTTTTT"),
    ("sm100 helper", And((BLACKWELL_DC, CUDA128)), "FFFFTTFFF"),
    ("not sm100 helper", Not(And((BLACKWELL_DC, CUDA128))), "TTTTFFTTT"),
    ("sm120 and cuda", And((SM120, CUDA128)), "FFFFFFFTF"),
    ("cuda or hopper", Or((CUDA128, HOPPER)), "UUUTTTTTT"),
    ("cuda and not hopper", And((CUDA128, Not(HOPPER))), "UUUFTTTTT"),
    ("hopper and env", And((HOPPER, ENV)), "FFFUFFFFF"),
    ("hopper or env", Or((HOPPER, ENV)), "UUUTUUUUU"),
    ("not (hopper or env)", Not(Or((HOPPER, ENV))), "UUUFUUUUU"),
    ("empty and", And(()), "TTTTTTTTT"),
    ("empty or", Or(()), "FFFFFFFFF"),
    ("hip or sm120", Or((Platform("hip"), SM120)), "FFFFFFFTF"),
]


@pytest.mark.parametrize(("name", "pred", "expected"), CONNECTIVE_TABLE,
                         ids=[n for n, _, _ in CONNECTIVE_TABLE])
def test_connective_truth_table(name: str, pred: Predicate, expected: str) -> None:
    actual = on_archs(pred)
    assert actual == row(expected), show(pred, actual)


def test_gate_with_option() -> None:
    """``if backend == "x" and not is_sm100_supported(): raise`` as a predicate."""
    gate = And((OptionIs("moe", frozenset({"x"})), Not(And((BLACKWELL_DC, CUDA128)))))
    assert on_archs(gate, options={"moe": "x"}) == row("TTTTFFTTT")
    assert on_archs(gate, options={"moe": "y"}) == row("FFFFFFFFF")
    assert on_archs(gate) == row("UUUUFFUUU")


# --------------------------------------------------------------------------
# must stay UNKNOWN: never silently TRUE or FALSE


STAYS_UNKNOWN: list[tuple[Predicate, Context]] = [
    (Unknown("env var"), Context(arch=parse_arch("sm90"))),
    (Not(Unknown("env var")), Context(arch=parse_arch("sm90"))),
    (CudaAtLeast((12, 8)), Context(arch=parse_arch("sm80"))),
    (CudaAtLeast((12, 8)), Context(arch=parse_arch("sm90"))),
    (CudaAtLeast((12, 9)), Context(arch=parse_arch("sm100"))),
    (CudaAtLeast((12, 9)), Context(arch=parse_arch("sm120"))),
    (CudaAtLeast((13, 0)), Context(arch=parse_arch("sm121"))),
    (Not(CudaAtLeast((12, 8))), Context(arch=parse_arch("sm90"))),
    (CudaAtLeast((12, 8)), Context(arch=Arch(7, 5))),  # no curated toolkit fact
    (OptionIs("moe", frozenset({"x"})), Context(arch=parse_arch("sm90"))),
    (OptionIs("moe", frozenset({"x"})), Context(arch=parse_arch("sm90"),
                                               options={"attention": "x"})),
    (QuantIs(frozenset({"fp8"})), Context(arch=parse_arch("sm90"))),
    (Device("major", "==", 9), Context()),
    (Platform("cuda"), Context()),
    (And((Device("major", "==", 9), Unknown("env"))), Context(arch=parse_arch("sm90"))),
    (Or((Device("major", "==", 9), Unknown("env"))), Context(arch=parse_arch("sm100"))),
    (And((TRUE, CudaAtLeast((12, 8)))), Context(arch=parse_arch("sm89"))),
    (Or((FALSE, OptionIs("moe", frozenset({"x"})))), Context(arch=parse_arch("sm120"))),
]


@pytest.mark.parametrize(("pred", "ctx"), STAYS_UNKNOWN,
                         ids=[f"{p.describe()}@{c.arch}" for p, c in STAYS_UNKNOWN])
def test_stays_unknown(pred: Predicate, ctx: Context) -> None:
    assert pred.evaluate(ctx) is U
    assert neg(pred).evaluate(ctx) is U


# --------------------------------------------------------------------------
# simplifying constructors


A = Device("major", "==", 9)
B = OptionIs("moe", frozenset({"x"}))
C = Unknown("env")


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (conj(), TRUE),
        (conj(A), A),
        (conj(A, TRUE), A),
        (conj(TRUE, TRUE), TRUE),
        (conj(A, FALSE, B), FALSE),
        (conj(A, A), A),
        (conj(A, B), And((A, B))),
        (conj(And((A, B)), C), And((A, B, C))),
        (conj(A, And((B, A))), And((A, B))),
        (conj(Or((A, B)), C), And((Or((A, B)), C))),
        (disj(), FALSE),
        (disj(A), A),
        (disj(A, FALSE), A),
        (disj(A, TRUE, B), TRUE),
        (disj(B, B), B),
        (disj(A, B), Or((A, B))),
        (disj(Or((A, B)), C), Or((A, B, C))),
        (disj(And((A, B)), C), Or((And((A, B)), C))),
        (neg(TRUE), FALSE),
        (neg(FALSE), TRUE),
        (neg(Not(B)), B),
        (neg(neg(B)), B),
        (neg(B), Not(B)),
        (neg(C), Not(C)),
        (neg(Device("major", "==", 9)), Device("major", "!=", 9)),
        (neg(Device("sm", ">=", 100)), Device("sm", "<", 100)),
        (neg(Device("sm", "<=", 90)), Device("sm", ">", 90)),
        (neg(Device("major", "in", (10, 12))), Device("major", "not in", (10, 12))),
        (neg(Device("cap", "not in", ((12, 0),))), Device("cap", "in", ((12, 0),))),
        (neg(And((A, B))), Not(And((A, B)))),
    ],
)
def test_simplification(built: Predicate, expected: Predicate) -> None:
    assert built == expected, f"{built!r} != {expected!r}"


def test_atoms_in_order() -> None:
    assert atoms(And((A, Not(Or((B, C))), A))) == [A, B, C, A]


def test_describe() -> None:
    assert Device("major", "==", 9).describe() == "capability major == 9"
    assert Device("cap", "==", (12, 0)).describe() == "capability == 12.0"
    assert Device("sm", ">=", 100).describe() == "SM (major*10+minor) >= 100"
    assert CudaAtLeast((12, 8)).describe() == "CUDA >= 12.8"
    assert B.describe() == "moe == x"
    assert And((A, Or((B, C)))).describe() == "capability major == 9 and (moe == x or ? env)"
    assert Not(And((A, B))).describe() == "not (capability major == 9 and moe == x)"


# --------------------------------------------------------------------------
# properties: random predicate trees against a reference evaluator


LEAVES: list[Predicate] = [
    TRUE,
    FALSE,
    Device("major", "==", 9),
    Device("major", "in", (10, 12)),
    Device("minor", "!=", 0),
    Device("sm", ">=", 100),
    Device("sm", "<", 89),
    Device("cap", "==", (12, 0)),
    Device("cap", ">", (10, 0)),
    Device("cap", "not in", ((8, 6), (12, 1))),
    CudaAtLeast((12, 8)),
    CudaAtLeast((12, 9)),
    Platform("cuda"),
    Platform("hip"),
    OptionIs("moe", frozenset({"x"})),
    OptionIs("moe", frozenset({"x", "y"})),
    QuantIs(frozenset({"fp8"})),
    Unknown("env"),
    Unknown("model"),
]

predicates: st.SearchStrategy[Predicate] = st.recursive(
    st.sampled_from(LEAVES),
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda xs: And(tuple(xs))),
        st.lists(children, max_size=4).map(lambda xs: Or(tuple(xs))),
        children.map(Not),
    ),
    max_leaves=10,
)

contexts: st.SearchStrategy[Context] = st.builds(
    Context,
    arch=st.one_of(st.none(), st.sampled_from(ARCHS), st.just(Arch(7, 5))),
    options=st.sampled_from([{}, {"moe": "x"}, {"moe": "y"}, {"moe": "z"}, {"attn": "x"}]),
    quantization=st.sampled_from([None, "", "fp8", "awq"]),
)

_MIN_CUDA = {(8, 0): (11, 0), (8, 6): (11, 1), (8, 9): (11, 8), (9, 0): (11, 8),
             (10, 0): (12, 8), (10, 3): (12, 9), (11, 0): (13, 0), (12, 0): (12, 8),
             (12, 1): (12, 9)}
_REF_OPS: dict[str, Callable[[object, object], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,  # type: ignore[operator]
}


def reference(pred: Predicate, ctx: Context) -> str:
    """An independent evaluator: "T", "F" or "U", Kleene via F < U < T."""
    order = "FUT"
    if isinstance(pred, Const):
        return "T" if pred.value else "F"
    if isinstance(pred, Device):
        if ctx.arch is None:
            return "U"
        major, minor = ctx.arch.major, ctx.arch.minor
        measured = {"major": major, "minor": minor, "sm": major * 10 + minor,
                    "cap": (major, minor)}[pred.quantity]
        return "T" if _REF_OPS[pred.op](measured, pred.value) else "F"
    if isinstance(pred, CudaAtLeast):
        if ctx.arch is None:
            return "U"
        least = _MIN_CUDA.get((ctx.arch.major, ctx.arch.minor))
        return "T" if least is not None and least >= pred.version else "U"
    if isinstance(pred, Platform):
        if ctx.arch is None:
            return "U"
        return "T" if pred.name in ("cuda", "cuda_alike") else "F"
    if isinstance(pred, OptionIs):
        if pred.option not in ctx.options:
            return "U"
        return "T" if ctx.options[pred.option] in pred.choices else "F"
    if isinstance(pred, QuantIs):
        if ctx.quantization is None:
            return "U"
        return "T" if ctx.quantization in pred.methods else "F"
    if isinstance(pred, Unknown):
        return "U"
    if isinstance(pred, And):
        return min((reference(p, ctx) for p in pred.items), key=order.index, default="T")
    if isinstance(pred, Or):
        return max((reference(p, ctx) for p in pred.items), key=order.index, default="F")
    if isinstance(pred, Not):
        return {"T": "F", "F": "T", "U": "U"}[reference(pred.item, ctx)]
    raise AssertionError(f"unexpected predicate {pred!r}")


def tri(value: Tri) -> str:
    return {T: "T", F: "F", U: "U"}[value]


@settings(max_examples=100, deadline=None)
@given(predicates, contexts)
def test_matches_reference_evaluator(pred: Predicate, ctx: Context) -> None:
    assert tri(pred.evaluate(ctx)) == reference(pred, ctx), pred.describe()


@settings(max_examples=80, deadline=None)
@given(predicates)
def test_matches_reference_on_every_standard_arch(pred: Predicate) -> None:
    for arch in ARCHS:
        for options in ({}, {"moe": "x"}):
            ctx = Context(arch=arch, options=options, quantization="fp8")
            assert tri(pred.evaluate(ctx)) == reference(pred, ctx), (arch.name, pred.describe())


@settings(max_examples=100, deadline=None)
@given(predicates, contexts)
def test_neg_is_kleene_not(pred: Predicate, ctx: Context) -> None:
    assert neg(pred).evaluate(ctx) is ~pred.evaluate(ctx), pred.describe()


@settings(max_examples=100, deadline=None)
@given(st.lists(predicates, max_size=4), contexts)
def test_conj_disj_agree_with_and_or(items: list[Predicate], ctx: Context) -> None:
    assert conj(*items).evaluate(ctx) is And(tuple(items)).evaluate(ctx)
    assert disj(*items).evaluate(ctx) is Or(tuple(items)).evaluate(ctx)


@settings(max_examples=100, deadline=None)
@given(predicates, contexts)
def test_substitute_identity_preserves_evaluation(pred: Predicate, ctx: Context) -> None:
    assert substitute(pred, lambda atom: None).evaluate(ctx) is pred.evaluate(ctx)
    assert substitute(pred, lambda atom: atom).evaluate(ctx) is pred.evaluate(ctx)


@settings(max_examples=80, deadline=None)
@given(predicates, contexts)
def test_substitute_fixes_atoms(pred: Predicate, ctx: Context) -> None:
    """Replacing each device atom by its value on the context's arch keeps the result."""
    def fixed(atom: Predicate) -> Predicate | None:
        if isinstance(atom, Device) and ctx.arch is not None:
            value = atom.evaluate(ctx)
            return TRUE if value is T else FALSE
        return None
    assert substitute(pred, fixed).evaluate(ctx) is pred.evaluate(ctx)


# -- shortest form: what people read ------------------------------------------------------------
def _classical(pred: object, assignment: dict[object, bool]) -> bool:
    from guardscan.predicate import And, Not, Or

    if isinstance(pred, And):
        return all(_classical(i, assignment) for i in pred.items)
    if isinstance(pred, Or):
        return any(_classical(i, assignment) for i in pred.items)
    if isinstance(pred, Not):
        return not _classical(pred.item, assignment)
    return assignment[pred]


SHORTEST_CASES = [
    # the dispatch reach of DeepEPMoE as the branch tests build it
    ("disj(A, conj(neg(A), B), conj(neg(A), neg(B), C))", "a2a == mori or a2a == deepep or a2a == asc"),
    ("Not(Not(conj(D, Not(Not(A)))))", "capability major == 10 and a2a == mori"),
    ("conj(A, disj(A, B))", "a2a == mori"),
    ("conj(A, D, disj(conj(A, D), B))", "a2a == mori and capability major == 10"),
    ("conj(A, disj(neg(A), B))", "a2a == mori and a2a == deepep"),
    ("Not(disj(Not(A), Not(B)))", "a2a == mori and a2a == deepep"),
    ("Not(conj(A, B))", "not (a2a == mori and a2a == deepep)"),
]


@pytest.mark.parametrize(("expression", "expected"), SHORTEST_CASES)
def test_describe_prints_the_shortest_equivalent(expression: str, expected: str) -> None:
    import itertools

    from guardscan.predicate import Device, Not, OptionIs, atoms, conj, disj, neg
    from guardscan.predicate_text import shortest

    names = {"A": OptionIs("a2a", frozenset({"mori"})), "B": OptionIs("a2a", frozenset({"deepep"})),
             "C": OptionIs("a2a", frozenset({"asc"})), "D": Device("major", "==", 10),
             "conj": conj, "disj": disj, "neg": neg, "Not": Not}
    pred = eval(expression, {}, names)  # our own test expressions, not scanned code
    assert pred.describe() == expected
    short = shortest(pred)
    leaves = sorted(set(atoms(pred)), key=repr)
    for values in itertools.product([False, True], repeat=len(leaves)):
        assignment = dict(zip(leaves, values))
        assert _classical(short, assignment) == _classical(pred, assignment), assignment


def test_environment_variables_are_judged_unset_unless_given() -> None:
    from guardscan.predicate import EnvIs

    flag = EnvIs("SGLANG_USE_X", "in", frozenset({"1", "true"}), "false", "lower")
    assert flag.evaluate(Context()) is Tri.FALSE
    assert flag.evaluate(Context(env={"SGLANG_USE_X": "TRUE"})) is Tri.TRUE
    assert EnvIs("SGLANG_N", "truthy", frozenset(), None).evaluate(Context()) is Tri.FALSE
    assert EnvIs("SGLANG_N", "not in", frozenset({"0"}), None).evaluate(Context()) is Tri.TRUE


def test_a_paired_package_is_installed_and_no_other_is_known() -> None:
    from guardscan.predicate import Installed

    assert Installed("flashinfer").evaluate(Context(installed=frozenset({"flashinfer"}))) \
        is Tri.TRUE
    assert Installed("flashinfer").evaluate(Context()) is Tri.UNKNOWN
    assert neg(Installed("deep_gemm")).evaluate(
        Context(installed=frozenset({"flashinfer"}))) is Tri.UNKNOWN


# --------------------------------------------------------------------------
# the walkers over shared parts (``value``, ``residual``, ``leaves``): the
# linker's conditions share sub-predicates, so each is checked on a predicate
# whose parts appear more than once, against the tree walk and the reference

def shared_use(pred: Predicate, other: Predicate) -> Predicate:
    """``pred`` used three times, one object, beside ``other``."""
    return Or((And((pred, other)), Not(pred), And((other, pred))))


@settings(max_examples=100, deadline=None)
@given(predicates, predicates, contexts)
def test_value_walks_shared_parts_as_the_tree_does(pred: Predicate, other: Predicate,
                                                  ctx: Context) -> None:
    dag = shared_use(pred, other)
    assert tri(value(dag, ctx)) == reference(dag, ctx) == tri(dag.evaluate(ctx))


@settings(max_examples=100, deadline=None)
@given(predicates, predicates, contexts, st.sampled_from([None, "", "fp8", "awq"]),
       st.sampled_from(["x", "y", "z"]))
def test_a_residual_answers_each_alternative_as_the_whole_does(
        pred: Predicate, other: Predicate, ctx: Context, method: str | None,
        choice: str) -> None:
    """Folded for everything but the method tests (or the ``moe`` option's), the
    residual gives, under any other method (any other ``moe`` value), what the
    whole predicate gives."""
    dag = shared_use(pred, other)
    methods = residual(dag, ctx, lambda a: isinstance(a, QuantIs))
    other_method = Context(arch=ctx.arch, options=ctx.options, quantization=method)
    assert tri(value(methods, other_method)) == reference(dag, other_method)
    options = residual(dag, ctx, lambda a: isinstance(a, OptionIs) and a.option == "moe")
    other_choice = Context(arch=ctx.arch, options={**ctx.options, "moe": choice},
                           quantization=ctx.quantization)
    assert tri(value(options, other_choice)) == reference(dag, other_choice)


@settings(max_examples=100, deadline=None)
@given(predicates, predicates)
def test_leaves_are_the_atoms_first_met_first(pred: Predicate, other: Predicate) -> None:
    dag = shared_use(pred, other)
    assert list(dict.fromkeys(leaves(dag))) == list(dict.fromkeys(atoms(dag)))
    assert len(leaves(dag)) <= len(atoms(dag))


def _true_somehow(pred: Predicate, ctx: Context) -> bool:
    """Whether some assignment of TRUE/FALSE to each undecided leaf
    *occurrence* (each one free, however often an atom occurs) makes ``pred``
    TRUE: every assignment is tried."""
    occurrences: list[int] = []

    def count(p: Predicate) -> None:
        if isinstance(p, (And, Or)):
            for item in p.items:
                count(item)
        elif isinstance(p, Not):
            count(p.item)
        elif p.evaluate(ctx) is Tri.UNKNOWN:
            occurrences.append(1)

    count(pred)

    def truth(p: Predicate, bits: list[bool]) -> bool:
        if isinstance(p, (And, Or)):
            # every item is read (each takes its own bits), then combined
            parts = [truth(item, bits) for item in p.items]
            return all(parts) if isinstance(p, And) else any(parts)
        if isinstance(p, Not):
            return not truth(p.item, bits)
        known = p.evaluate(ctx)
        return bits.pop(0) if known is Tri.UNKNOWN else known is Tri.TRUE

    for number in range(2 ** len(occurrences)):
        bits = [bool(number >> i & 1) for i in range(len(occurrences))]
        if truth(pred, bits):
            return True
    return False


@given(predicates, contexts)
def test_possible_is_true_for_some_assignment_of_the_undecided_occurrences(
        pred: Predicate, ctx: Context) -> None:
    from guardscan.verdict.values import possible

    assert possible(pred, ctx) == _true_somehow(pred, ctx)
