"""The C++ warmer (``memo.warm_cpp``): it reads the JIT sources every
generator names, with the headers they include, into the C++ facts cache;
the kernel stage after it reads no C++ itself and answers the same."""

from __future__ import annotations

import hashlib
import shutil
from multiprocessing import Event
from pathlib import Path

import pytest
from fixturetree import FIXTURES

from guardscan.acquire import acquire
from guardscan.arch import parse_arch
from guardscan.cpp import link
from guardscan.index import Index
from guardscan.kernels.judge import LibraryJudge
from guardscan.memo.warm_cpp import warm_cpp


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "kernels" / "flashinfer"
    shutil.copytree(FIXTURES / "kernels_cpp" / "flashinfer", root)
    # a source no generator names: never read
    (root / "data/csrc/unused.cu").write_text("void unused() {}\n", encoding="utf-8")
    return root


def _cached(cache: Path, root: Path) -> set[str]:
    """The files of ``root`` whose facts ``cache`` holds (keyed as
    ``CppLibrary`` keys them: the path and the bytes)."""
    found = set()
    for path in root.rglob("*"):
        if path.suffix in (".cu", ".cuh", ".h"):
            rel = path.relative_to(root.parent).as_posix()
            key = hashlib.sha256(rel.encode() + b"\0" + path.read_bytes()).hexdigest()
            if (cache / "cpp" / key[:2] / f"{key}.json").is_file():
                found.add(rel)
    return found


def test_it_reads_every_generators_sources_and_their_headers(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    tree = acquire(str(root), "flashinfer")
    cache = tmp_path / "cache"
    assert warm_cpp(Index(tree, cache), Event()) == 6
    assert _cached(cache, root) == {
        "flashinfer/data/csrc/fmha_launcher.cu", "flashinfer/data/csrc/broken.cu",
        "flashinfer/data/csrc/other.cu", "flashinfer/data/csrc/fp4_quant.cu",
        "flashinfer/data/include/flashinfer/runner.cuh",
        "flashinfer/data/include/flashinfer/common.h"}
    assert not list((cache / "cpp").rglob("*.tmp"))


def test_stopped_before_it_starts_it_reads_nothing(tmp_path: Path) -> None:
    tree = acquire(str(_tree(tmp_path)), "flashinfer")
    stop = Event()
    stop.set()
    assert warm_cpp(Index(tree, tmp_path / "cache"), stop) == 0
    assert not (tmp_path / "cache" / "cpp").exists()


def test_without_a_cache_it_does_nothing(tmp_path: Path) -> None:
    tree = acquire(str(_tree(tmp_path)), "flashinfer")
    assert warm_cpp(Index(tree), Event()) == 0


def test_the_kernel_stage_after_it_reads_no_cpp_and_answers_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    tree = acquire(str(root), "flashinfer")
    functions = ("flashinfer.attention.fmha_decode", "flashinfer.attention.plan_only",
                 "flashinfer.attention.sage_quant", "flashinfer.attention.fp4_quantize",
                 "flashinfer.attention.fp4_quantize_ex", "flashinfer.attention.dispatch_by_sm")

    def answers(cache: Path | None) -> list[tuple[str, list[object]]]:
        library = LibraryJudge(Index(tree, cache)).library
        return [(library.support(f, parse_arch(a))[0].value, library.support(f, parse_arch(a))[1])
                for f in functions for a in ("sm90", "sm100", "sm120")]

    reference = answers(None)
    assert {value for value, _ in reference} == {"true", "false", "unknown"}
    cache = tmp_path / "cache"
    warm_cpp(Index(tree, cache), Event())  # in this process, to the end

    def no_reading(rel: str, data: bytes) -> object:
        raise AssertionError(f"{rel} read by the kernel stage")

    monkeypatch.setattr(link, "read_cpp", no_reading)
    assert answers(cache) == reference
