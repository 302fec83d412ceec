"""vocabulary: guard expressions read straight through ``Vocabulary.predicate``
on the guard-form fixture trees (fixtures/guards_*): what the predicate says
(``describe()``), what it gives on each standard arch, and which definitions
it was read from."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pytest
from fixturetree import fixture, fixture_tree, line_of

from guardscan.arch import standard_archs
from guardscan.guards import Resolved, Vocabulary, looks_like_arch_guard
from guardscan.index import Index
from guardscan.predicate import Context, Tri, Unknown, atoms

ARCHS = standard_archs()
NAMES = [a.name for a in ARCHS]
RUNNER = "sglang/srt/layers/moe/runner.py"
COMMON = "sglang/srt/utils/common.py"
UTILS_INIT = "sglang/srt/utils/__init__.py"
CHAR = {Tri.TRUE: "T", Tri.FALSE: "F", Tri.UNKNOWN: "U"}


@cache
def vocabulary(name: str) -> Vocabulary:
    return Vocabulary(Index(fixture_tree(name)))


def resolve(name: str, text: str, rel: str = RUNNER, scope: str = "create_moe_runner",
            line: int | None = None, report: bool = True) -> Resolved:
    """Resolve ``text`` as if written at ``line`` (default: end of the scope's file)."""
    vocab = Vocabulary(Index(fixture_tree(name)))
    at = line if line is not None else len(
        (fixture(name) / rel).read_text(encoding="utf-8").splitlines()) + 1
    return vocab.predicate(text, rel, scope, at, report=report)


def row(resolved: Resolved) -> str:
    return "".join(CHAR[resolved.predicate.evaluate(Context(arch=a))] for a in ARCHS)


@dataclass(frozen=True)
class Case:
    id: str
    fixture: str
    text: str
    describe: str
    row: str  # T/F/U per arch: 80 86 89 90 100 103 110 120 121
    rel: str = RUNNER
    scope: str = "create_moe_runner"
    trail: tuple[tuple[str, str], ...] = ()  # (file, text of a line read to resolve it)


CASES = [
    Case("partial-factory", "guards_partial", "is_blackwell_dc_supported()",
         "platform is cuda_alike and capability major in [10] and CUDA >= 12.8", "FFFFTTFFF",
         trail=((COMMON, "is_blackwell_dc_supported = lru_cache(maxsize=1)("),
                (COMMON, "def _check_cuda_device_version("))),
    Case("partial-cuda-undecided", "guards_partial", "is_sm90_supported()",
         "platform is cuda_alike and capability major in [9] and CUDA >= 12.3", "FFFUFFFFF"),
    Case("partial-negated", "guards_partial", "not is_blackwell_dc_supported()",
         "not (platform is cuda_alike and capability major in [10] and CUDA >= 12.8)",
         "TTTTFFTTT"),
    Case("star-reexport-from-init", "guards_partial", "is_blackwell_dc_supported()",
         "platform is cuda_alike and capability major in [10] and CUDA >= 12.8", "FFFFTTFFF",
         rel=UTILS_INIT, scope="",
         trail=((COMMON, "is_blackwell_dc_supported = lru_cache(maxsize=1)("),)),
    Case("def-capability-tuple", "guards_def_capability", "is_sm120()",
         "platform is cuda_alike and platform is cuda and capability == 12.0", "FFFFFFFTF",
         trail=((COMMON, "def is_sm120():"), (COMMON, "def is_cuda():"))),
    Case("probe-map", "guards_probe_map", "get_platform().is_sm100",
         "capability major == 10", "FFFFTTFFF",
         trail=(("sglang/srt/platforms/__init__.py", '"is_sm100": "is_sm100_supported"'),
                (COMMON, "def is_sm100_supported():"))),
    Case("probe-map-tuple", "guards_probe_map", "get_platform().is_sm90",
         "capability == 9.0", "FFFTFFFFF"),
    Case("probe-map-negated", "guards_probe_map", "not get_platform().is_sm100",
         "capability major != 10", "TTTTFFTTT"),
    Case("module-cached-alias", "guards_alias", "_is_sm120",
         "platform is cuda_alike and capability major in [12] and CUDA >= 12.8", "FFFFFFFTT",
         trail=((RUNNER, "_is_sm120 = is_sm120_supported()"),)),
    Case("imported-alias", "guards_alias", "_sm100()",
         "platform is cuda_alike and capability major in [10] and CUDA >= 12.8", "FFFFTTFFF"),
    Case("star-reexport-alias", "guards_alias", "is_sm120_supported()",
         "platform is cuda_alike and capability major in [12] and CUDA >= 12.8", "FFFFFFFTT",
         rel=UTILS_INIT, scope=""),
    Case("device-sm", "guards_device_sm", "get_device_sm() >= 100",
         "SM (major*10+minor) >= 100", "FFFFTTTTT",
         trail=((COMMON, "def get_device_sm():"),)),
    Case("device-sm-flipped", "guards_device_sm", "90 > get_device_sm()",
         "SM (major*10+minor) < 90", "TTTFFFFFF"),
    Case("device-sm-equal", "guards_device_sm", "get_device_sm() == 121",
         "SM (major*10+minor) == 121", "FFFFFFFFT"),
    Case("device-sm-major", "guards_device_sm", "get_device_sm() // 10 == 12",
         "capability major == 12", "FFFFFFFTT"),
    Case("capability-index-inline", "guards_capability_index",
         "torch.cuda.get_device_capability()[0] == 9", "capability major == 9", "FFFTFFFFF"),
    Case("capability-index-minor", "guards_capability_index",
         "torch.cuda.get_device_capability()[1] >= 3", "capability minor >= 3", "FTTFFTFFF"),
    Case("capability-tuple-range", "guards_capability_index",
         "(10, 0) <= torch.cuda.get_device_capability() < (12, 0)",
         "capability >= 10.0 and capability < 12.0", "FFFFTTTFF"),
    Case("capability-helper", "guards_capability_index", "not is_hopper()",
         "capability major != 9", "TTTFTTTTT",
         trail=((COMMON, "def is_hopper():"),)),
    Case("has-device-capability", "guards_has_capability", "has_device_capability(90)",
         "SM (major*10+minor) >= 90", "FFFTTTTTT",
         trail=((COMMON, "def has_device_capability(capability):"),
                (COMMON, "def get_device_capability():"))),
    Case("has-device-capability-other-arg", "guards_has_capability",
         "has_device_capability(100)", "SM (major*10+minor) >= 100", "FFFFTTTTT"),
    Case("has-device-capability-keyword", "guards_has_capability",
         "has_device_capability(capability=120)", "SM (major*10+minor) >= 120", "FFFFFFFTT"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_predicate(case: Case) -> None:
    resolved = resolve(case.fixture, case.text, case.rel, case.scope)
    described = resolved.predicate.describe()
    assert described == case.describe, f"{case.text!r}: {described!r}"
    assert row(resolved) == case.row, (
        f"{case.text!r} on {' '.join(NAMES)}: expected {case.row}, got {row(resolved)}")
    for rel, needle in case.trail:
        where = (rel, line_of(fixture(case.fixture) / rel, needle))
        assert where in resolved.trail, f"{where} not in trail {resolved.trail}"


def test_unpacked_major_resolves_after_the_assignment_only() -> None:
    path = fixture("guards_unpack") / RUNNER
    assigned = line_of(path, "major, minor = torch.cuda.get_device_capability()")
    tested = line_of(path, "if major != 9:")
    after = resolve("guards_unpack", "major != 9", line=tested)
    assert after.predicate.describe() == "capability major != 9"
    assert row(after) == "TTTFTTTTT"
    assert (RUNNER, assigned) in after.trail
    minor = resolve("guards_unpack", "(major, minor) == (12, 1)", line=tested)
    assert minor.predicate.describe() == "capability == 12.1"
    before = resolve("guards_unpack", "major != 9", line=assigned, report=False)
    assert row(before) == "UUUUUUUUU", before.predicate.describe()


def test_unpacked_name_outside_its_scope_is_unknown() -> None:
    resolved = resolve("guards_unpack", "major != 9", scope="", report=False)
    assert all(isinstance(a, Unknown) for a in atoms(resolved.predicate))


def test_partial_applied_directly_to_lru_cache() -> None:
    resolved = resolve("guards_partial", "is_sm100_supported()")
    assert resolved.predicate.describe() == (
        "platform is cuda_alike and capability major in [10] and CUDA >= 12.8")


def test_star_import_chain_into_common() -> None:
    """``from .common import *`` in utils/__init__: names used through the
    package resolve to common.py's definitions."""
    vocab = vocabulary("guards_partial")
    assert vocab.module_symbol("sglang.srt.utils", "is_blackwell_dc_supported") == \
        vocab.module_symbol("sglang.srt.utils.common", "is_blackwell_dc_supported")
    missing = vocab.module_symbol("sglang.srt.utils", "no_such_helper")
    assert "no_such_helper" in getattr(missing, "reason", "")


def test_unresolvable_guard_is_unknown_with_diagnostic() -> None:
    vocab = Vocabulary(Index(fixture_tree("guards_unresolved")))
    line = line_of(fixture("guards_unresolved") / RUNNER, "some_ext.is_blackwell_gpu()")
    resolved = vocab.predicate("not some_ext.is_blackwell_gpu()", RUNNER, "create_moe_runner",
                               line)
    assert all(isinstance(a, Unknown) for a in atoms(resolved.predicate))
    assert row(resolved) == "UUUUUUUUU"
    assert [(d.path, d.line, d.code) for d in vocab.diagnostics] == [
        (RUNNER, line, "unresolved-guard")]
    # the same place is reported once
    vocab.predicate("not some_ext.is_blackwell_gpu()", RUNNER, "create_moe_runner", line)
    assert len(vocab.diagnostics) == 1


def test_unresolvable_without_arch_words_is_not_reported() -> None:
    vocab = Vocabulary(Index(fixture_tree("guards_unresolved")))
    resolved = vocab.predicate("some_ext.feature_enabled()", RUNNER, "create_moe_runner", 99)
    assert all(isinstance(a, Unknown) for a in atoms(resolved.predicate))
    assert vocab.diagnostics == []


def test_report_false_keeps_quiet() -> None:
    vocab = Vocabulary(Index(fixture_tree("guards_unresolved")))
    vocab.predicate("some_ext.is_blackwell_gpu()", RUNNER, "create_moe_runner", 7,
                    report=False)
    assert vocab.diagnostics == []


@pytest.mark.parametrize(
    ("text", "arch_like"),
    [("is_sm100_supported()", True), ("get_device_sm() >= 90", True),
     ("torch.cuda.get_device_capability()[0] == 9", True), ("is_blackwell()", True),
     ("envs.SGLANG_FOO.get()", False), ("model_config.is_fp8", False)],
)
def test_looks_like_arch_guard(text: str, arch_like: bool) -> None:
    assert looks_like_arch_guard(text) is arch_like


@pytest.mark.parametrize(
    "text",
    ["<except ImportError>", "this is not python (", "os.environ.get('X') == '1'"],
)
def test_non_device_expressions_are_unknown(text: str) -> None:
    resolved = resolve("guards_capability_index", text, report=False)
    assert row(resolved) == "UUUUUUUUU", resolved.predicate.describe()


@pytest.mark.parametrize("argument", ["list((10, 12))", "[10, 12][:2]", "list(range(10, 13, 2))"])
def test_unhashable_constant_arguments_do_not_stop_the_interpreter(tmp_path, argument) -> None:
    """sglang 0.5.20-0.5.22 pass ``list(...)`` values into guard helpers; a memo key
    built from them once raised ``TypeError: unhashable type`` and ended the scan."""
    from fixturetree import make_tree

    from guardscan.acquire import acquire

    root = make_tree(tmp_path, {COMMON: (
        "import torch\n\n"
        "def _check(majors):\n"
        "    return torch.cuda.get_device_capability()[0] in majors\n\n"
        f"def is_x():\n    return _check({argument})\n"
    )})
    vocab = Vocabulary(Index(acquire(str(root))))
    resolved = vocab.predicate("is_x()", COMMON, "", 99)
    expected = "FFFFTTFTT" if "range" not in argument else "U" * 9
    assert row(resolved) == expected, (argument, resolved.predicate.describe())
