"""The cubin package a release pins (``guardscan.kernels.cubins``): the reader on
crafted wheels under ``fixtures/cubins/``, hostile ones included, and the facts it
gives a fixture kernel library (``fixtures/kernels_cubins/``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from guardscan.acquire import SourceTree
from guardscan.arch import parse_arch
from guardscan.index import Index
from guardscan.kernels import build_kernel_library
from guardscan.kernels.cubins import (
    CubinPackage,
    CubinSource,
    cubin_source,
    read_cubin_wheel,
)
from guardscan.results import Diagnostic

ROOT = Path(__file__).resolve().parent.parent
WHEELS = ROOT / "fixtures" / "cubins"
GOOD = WHEELS / "flashinfer_cubin-0.0.1-py3-none-any.whl"
BMM = "flashinfer_cubin/cubins/aaaa/batched_gemm-1-2/include/flashinferMetaInfo.h"


def _package(path: Path = GOOD) -> CubinPackage:
    read = read_cubin_wheel(path, "0" * 64)
    assert isinstance(read, CubinPackage), read
    return read


def test_fixtures_are_what_the_script_writes() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_cubin_fixtures.py"),
                           "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_reads_names_and_the_kernel_table() -> None:
    package = _package()
    assert package.version == "0.0.1"
    assert {d.path: d.tags for d in package.dirs} == {
        "aaaa/batched_gemm-1-2": (("Sm100f", 2), ("Sm103a", 1)),
        "bbbb/fmha/trtllm-gen": (("Sm100a", 1),),
        "cccc/deep-gemm": (("", 1),),
    }
    [table] = package.tables
    assert (table.member, table.tags, table.line) == (BMM, (("Sm100f", 1), ("Sm103a", 1)), 4)
    assert package.failures == ()
    # the JSON the cache keeps reads back as the same package
    assert CubinPackage.from_json(package.to_json()) == package


@pytest.mark.parametrize(("wheel", "failures"), [
    ("unsafe_members.whl", (("unsafe-member", "../escape.cubin"),
                            ("unsafe-member", "/absolute/x_sm120a.cubin"))),
    ("size_claim.whl", (("size-claim", BMM),)),
])
def test_hostile_members_are_one_failure_each(wheel: str, failures: tuple[tuple[str, str], ...],
                                              tmp_path: Path) -> None:
    package = _package(WHEELS / wheel)
    assert package.failures == failures
    # an unsafe name never becomes a path, nor its arch a tag
    assert all("Sm120a" not in dict(d.tags) for d in package.dirs)
    assert {d.path for d in package.dirs} == {"aaaa/batched_gemm-1-2", "bbbb/fmha/trtllm-gen",
                                              "cccc/deep-gemm"}


def test_truncated_wheel_is_one_diagnostic() -> None:
    read = read_cubin_wheel(WHEELS / "truncated.whl")
    assert isinstance(read, Diagnostic)
    assert (read.path, read.code) == ("truncated.whl", "cubin-package-failed")


def _tree(requires: tuple[str, ...]) -> SourceTree:
    return SourceTree(root=Path("."), package="sglang", version="9.9", files=(),
                      origin="example", requires=requires)


def test_no_pin_decides_nothing_and_says_why(tmp_path: Path) -> None:
    source = cubin_source(_tree(("flashinfer_python==0.7.2",)), None, tmp_path)
    assert (source.package, source.reason, source.diagnostics) == (
        None, "sglang 9.9 pins no flashinfer-cubin", ())


def test_a_pin_that_cannot_be_had_is_one_diagnostic(tmp_path: Path) -> None:
    source = cubin_source(_tree(("flashinfer_cubin==0.0.1",)), None, tmp_path, offline=True)
    assert source.package is None
    assert [d.code for d in source.diagnostics] == ["cubin-package-failed"]


def test_pinned_wheel_is_read_once_and_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    wheel_dir = cache / "wheels" / "flashinfer-cubin==0.0.1"
    wheel_dir.mkdir(parents=True)
    (wheel_dir / GOOD.name).write_bytes(GOOD.read_bytes())
    tree = _tree(("flashinfer_cubin==0.0.1",))
    first = cubin_source(tree, None, cache, offline=True)
    assert first.package is not None and first.diagnostics == ()
    cached = sorted(p.relative_to(cache).as_posix() for p in (cache / "cubins").rglob("*.json"))
    assert cached == [f"cubins/{first.package.sha256}.json"]
    assert cubin_source(tree, None, cache, offline=True) == first
    # nothing is written outside the cache
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def _library(source: CubinSource):  # type: ignore[no-untyped-def]
    root = ROOT / "fixtures" / "kernels_cubins"
    files = tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")))
    tree = SourceTree(root=root, package="flashinfer", version="0.0.0", files=files,
                      origin=str(root))
    return build_kernel_library(Index(tree), cubins=source)


def _verdicts(library, function: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {a: library.support(function, parse_arch(a))[0].value
            for a in ("sm90", "sm100", "sm103", "sm110", "sm120")}


def test_pinned_package_decides_the_fetching_module() -> None:
    library = _library(CubinSource(_package()))
    function = "flashinfer.fused_moe.trtllm_fp4_moe"
    assert _verdicts(library, function) == {"sm90": "false", "sm100": "true", "sm103": "true",
                                            "sm110": "false", "sm120": "false"}
    _, chain = library.support(function, parse_arch("sm120"))
    last = chain[-1]
    assert (last.path, last.line, last.kind, last.tier) == (BMM, 4, "artifacts", "b")
    assert "ArtifactPath.TRTLLM_GEN_BMM" in last.note and "Sm100f (2), Sm103a (1)" in last.note
    # untagged cubins (DeepGEMM's hashed names) decide nothing
    assert set(_verdicts(library, "flashinfer.fused_moe.deep_gemm_run").values()) == {"unknown"}


def test_without_a_package_the_download_is_named_and_nothing_decided() -> None:
    library = _library(CubinSource(None, "sglang 9.9 pins no flashinfer-cubin"))
    function = "flashinfer.fused_moe.trtllm_fp4_moe"
    assert _verdicts(library, function) == {"sm90": "false", "sm100": "unknown",
                                            "sm103": "unknown", "sm110": "false",
                                            "sm120": "unknown"}
    _, chain = library.support(function, parse_arch("sm120"))
    assert chain[-1].kind == "jit-spec"
    assert ("ArtifactPath.TRTLLM_GEN_BMM = 'aaaa/batched_gemm-1-2/' (flashinfer/artifacts.py:7) "
            "is downloaded at run time (sglang 9.9 pins no flashinfer-cubin)") in chain[-1].note


def test_no_source_is_the_library_as_before() -> None:
    library = _library(None)  # type: ignore[arg-type]
    assert _verdicts(library, "flashinfer.fused_moe.trtllm_fp4_moe")["sm120"] == "unknown"
