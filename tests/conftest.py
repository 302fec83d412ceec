"""Shared fixtures: real releases (downloaded once, cached across runs, see
``realtrees.shared_cache_dir``), a throwaway cache directory, and a suite that
never writes to the user's own guardscan cache nor sees the machine's GPU."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import realtrees

from guardscan.acquire import SourceTree
from guardscan.verdict import split as split_module

# Tests using these fixtures read real release wheels; they get the `real`
# marker automatically so `pytest -m "not real"` stays fast and offline.
_REAL_FIXTURES = frozenset({"sglang_059", "sglang_0523", "flashinfer_063", "flashinfer_072",
                            "analysis_059", "analysis_0523", "pair_059_063", "pair_0523_072"})


@pytest.fixture(autouse=True, scope="session")
def _no_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Code under test that falls back on the default cache
    ($GUARDSCAN_CACHE_DIR, $XDG_CACHE_HOME/guardscan, ~/.cache/guardscan) gets
    a directory of this session's instead of the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUARDSCAN_CACHE_DIR", str(tmp_path_factory.mktemp("default-cache")))
        # the shared test cache holds every release the suite reads (more than
        # the default size limit): no scan of the suite evicts what another
        # test, or a parallel worker, is reading (tests of the limit set it)
        patch.setenv("GUARDSCAN_CACHE_LIMIT", "0")
        yield


@pytest.fixture(autouse=True)
def _no_local_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --arch, the command line asks nvidia-smi for the local GPU; the
    suite's answers must not depend on the machine it runs on."""
    import guardscan.arch

    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", "guardscan-tests-no-nvidia-smi")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--exhaustive", action="store_true",
                     help="also run the tests marked exhaustive (every case of a matrix "
                          "whose fixed sample runs by default)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _REAL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real)
    # an option, not `-m "not exhaustive"` in addopts: a `-m` given on the
    # command line (`-m "not real"`) would replace that one and bring them back.
    # `releases` (a scan of many releases) is asked for by naming it in -m.
    markexpr = config.getoption("markexpr") or ""
    left_out = {"releases"} - ({"releases"} if "releases" in markexpr else set())
    if not (config.getoption("--exhaustive") or "exhaustive" in markexpr):
        left_out.add("exhaustive")
    dropped = [item for item in items
               if any(item.get_closest_marker(name) for name in left_out)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture(scope="session")
def sglang_059() -> SourceTree:
    return realtrees.sglang_tree("0.5.9")


@pytest.fixture(scope="session")
def sglang_0523() -> SourceTree:
    return realtrees.sglang_tree("0.5.23")


@pytest.fixture(scope="session")
def flashinfer_063() -> SourceTree:
    return realtrees.flashinfer_tree("0.6.3")


@pytest.fixture(scope="session")
def flashinfer_072() -> SourceTree:
    return realtrees.flashinfer_tree("0.7.2")


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache dir, also set as ``$GUARDSCAN_CACHE_DIR`` so code that
    uses the default cache never touches the user's."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("GUARDSCAN_CACHE_DIR", str(cache))
    return cache


def _analyse(version: str, quantization: str | None = None, kernels: bool = False):  # type: ignore[no-untyped-def]
    from guardscan.driver import ScanOptions, analyse

    with realtrees.one_at_a_time("analyse", version, quantization, kernels):
        return analyse(ScanOptions(
            target=f"sglang=={version}", kernels=kernels, quantization=quantization,
            cache_dir=realtrees.shared_cache_dir(), offline=False))


@pytest.fixture(scope="session")
def analysis_059(sglang_059: SourceTree):  # type: ignore[no-untyped-def]
    """sglang 0.5.9, every backend option, every standard arch, SGLang-only."""
    return _analyse("0.5.9")


@pytest.fixture(scope="session")
def analysis_0523(sglang_0523: SourceTree):  # type: ignore[no-untyped-def]
    """sglang 0.5.23, every backend option, every standard arch, SGLang-only."""
    return _analyse("0.5.23")


@pytest.fixture(scope="session")
def analysis_059_modelopt_fp4(sglang_059: SourceTree):  # type: ignore[no-untyped-def]
    return _analyse("0.5.9", quantization="modelopt_fp4")


@pytest.fixture(scope="session")
def analysis_0523_modelopt_fp4(sglang_0523: SourceTree):  # type: ignore[no-untyped-def]
    return _analyse("0.5.23", quantization="modelopt_fp4")


@pytest.fixture(scope="session")
def pair_059_063(sglang_059: SourceTree, flashinfer_063: SourceTree):  # type: ignore[no-untyped-def]
    """sglang 0.5.9 with the FlashInfer it pins (0.6.3), kernel facts on."""
    from guardscan.driver import ScanOptions, analyse

    with realtrees.one_at_a_time("pair", "0.5.9", "0.6.3"):
        return analyse(ScanOptions(
            target="sglang==0.5.9", flashinfer="flashinfer-python==0.6.3",
            options=["--moe-runner-backend", "--fp4-gemm-backend", "--fp8-gemm-backend",
                     "--moe-a2a-backend", "--attention-backend"],
            cache_dir=realtrees.shared_cache_dir()))


@pytest.fixture(scope="session")
def pair_0523_072(sglang_0523: SourceTree, flashinfer_072: SourceTree):  # type: ignore[no-untyped-def]
    """sglang 0.5.23 with the FlashInfer it pins (0.7.2), kernel facts on."""
    from guardscan.driver import ScanOptions, analyse

    with realtrees.one_at_a_time("pair", "0.5.23", "0.7.2"):
        return analyse(ScanOptions(
            target="sglang==0.5.23", flashinfer="flashinfer-python==0.7.2",
            options=["--moe-runner-backend", "--fp4-gemm-backend", "--fp8-gemm-backend",
                     "--moe-a2a-backend"],
            cache_dir=realtrees.shared_cache_dir()))


@pytest.fixture
def judged_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The options this process judged itself (``split._serial``): with the
    split working, none."""
    here, seen = os.getpid(), []  # type: ignore[var-annotated]
    serial = split_module._serial

    def recorded(options: Any, *rest: Any) -> Any:
        if os.getpid() == here:
            seen.extend(o.flag for o in options)
        return serial(options, *rest)

    monkeypatch.setattr(split_module, "_serial", recorded)
    return seen
