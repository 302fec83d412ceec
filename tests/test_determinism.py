"""Determinism: the same input gives byte-identical output, in every format and
graph format, across runs, with and without the caches (``--no-cache``, a cold
``--cache-dir``, the same one warm), and across ``PYTHONHASHSEED`` values
(fresh interpreters running ``python -m guardscan``).

Formats come from the CLI's ``--format`` choices and graph formats from the
extensions ``write_graph`` accepts, so a new one is covered automatically.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixturetree import FIXTURES, fixture

from guardscan.cli import build_parser, main

#: Small trees with the most to say: evidence chains of every guard role
#: (guards_partial), odd options with diagnostics (options_odd), a
#: quantization note (roles_quant).
TREES = ("guards_partial", "options_odd", "roles_quant")
ARGS = ["--no-kernels", "--offline", "-q"]
MAIN_DIR = Path(__file__).resolve().parent.parent


def formats() -> list[str]:
    for action in build_parser()._actions:
        if "--format" in action.option_strings:
            assert action.choices, "--format has no choices"
            return sorted(action.choices)
    raise AssertionError("no --format option")


def graph_suffixes() -> list[str]:
    import networkx as nx

    from guardscan.graph import write_graph

    with pytest.raises(ValueError) as info:
        write_graph(nx.DiGraph(), "graph.no-such-format")
    suffixes = re.findall(r"\.\w+", str(info.value).rsplit("use", 1)[-1])
    assert len(suffixes) >= 3, f"cannot read the graph formats from: {info.value}"
    return suffixes


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_cache: Path) -> None:
    """An empty $GUARDSCAN_CACHE_DIR for every test (conftest.tmp_cache)."""


def outputs(capsys: pytest.CaptureFixture[str], target: Path, out: Path,
            cache: list[str]) -> dict[str, bytes]:
    """Every format's report and every graph format's file, as bytes."""
    out.mkdir(parents=True, exist_ok=True)
    found: dict[str, bytes] = {}
    for fmt in formats():
        code = main([str(target), "--format", fmt, *ARGS, *cache])
        stdout, err = capsys.readouterr()
        assert code == 0 and err == "", err
        found[fmt] = stdout.encode("utf-8")
    for suffix in graph_suffixes():
        graph = out / f"graph{suffix}"
        code = main([str(target), "--graph", str(graph), "-o", str(out / "report"),
                     *ARGS, *cache])
        assert code == 0, capsys.readouterr().err
        found[f"graph{suffix}"] = graph.read_bytes()
    capsys.readouterr()
    return found


def first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at byte {at}: {a[max(0, at - 80):at + 80]!r}\n  vs {b[max(0, at - 80):at + 80]!r}"


def assert_same(runs: dict[str, dict[str, bytes]]) -> None:
    (first_name, first), *rest = runs.items()
    for name, other in rest:
        assert other.keys() == first.keys()
        for key in first:
            assert other[key] == first[key], (
                f"{key}: {first_name} and {name} differ "
                f"{first_difference(first[key], other[key])}")


@pytest.mark.parametrize("name", TREES)
def test_same_bytes_with_and_without_cache(name: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # A copy: a cache keyed on the tree's path and mtimes sees a fresh tree.
    target = tmp_path / "tree"
    shutil.copytree(fixture(name), target)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    runs = {
        "no-cache": outputs(capsys, target, tmp_path / "a", ["--no-cache"]),
        "no-cache again": outputs(capsys, target, tmp_path / "b", ["--no-cache"]),
        "cold cache": outputs(capsys, target, tmp_path / "c", cache),
        "warm cache": outputs(capsys, target, tmp_path / "d", cache),
        "warm cache again": outputs(capsys, target, tmp_path / "e", cache),
    }
    assert_same(runs)
    assert any((tmp_path / "cache").rglob("*.pickle")), "the cache was not used"


def test_same_bytes_after_touching_files(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A warm cache whose files were touched (same content, new mtime) or
    whose unrelated files changed still gives the same bytes."""
    target = tmp_path / "tree"
    shutil.copytree(fixture("guards_partial"), target)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = outputs(capsys, target, tmp_path / "a", cache)
    for path in sorted(target.rglob("*.py")):
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    (target / "sglang" / "unrelated.py").write_text("def helper():\n    return 1\n")
    after = outputs(capsys, target, tmp_path / "b", cache)
    fresh = outputs(capsys, target, tmp_path / "c", ["--no-cache"])
    assert_same({"before": before, "after touching": after, "no cache": fresh})


def run_seeds(target: Path, out: Path, seeds: list[str]) -> dict[str, dict[str, bytes]]:
    """Each seed in fresh interpreters (``python -m guardscan``), all at once."""
    jobs: dict[tuple[str, str], tuple[subprocess.Popen[bytes], Path | None]] = {}
    suffixes = graph_suffixes()
    for seed in seeds:
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(MAIN_DIR),
                                                           os.environ.get("PYTHONPATH")])),
               "GUARDSCAN_CACHE_DIR": str(out / f"cache-{seed}")}
        for number, fmt in enumerate(formats()):
            argv = [sys.executable, "-m", "guardscan", str(target), "--format", fmt,
                    "--no-cache", *ARGS]
            graph = None
            if number < len(suffixes):  # a graph rides along with a report
                graph = out / f"{seed}-graph{suffixes[number]}"
                argv += ["--graph", str(graph)]
            jobs[(seed, fmt)] = (subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                                  stderr=subprocess.PIPE), graph)
        for suffix in suffixes[len(formats()):]:
            graph = out / f"{seed}-graph{suffix}"
            argv = [sys.executable, "-m", "guardscan", str(target), "--graph", str(graph),
                    "-o", os.devnull, "--no-cache", *ARGS]
            jobs[(seed, f"graph{suffix}")] = (subprocess.Popen(
                argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE), graph)
    runs: dict[str, dict[str, bytes]] = {seed: {} for seed in seeds}
    for (seed, key), (process, graph) in jobs.items():
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0 and stderr == b"", (seed, key, stderr.decode())
        if not key.startswith("graph"):
            runs[seed][key] = stdout
        if graph is not None:
            runs[seed][f"graph{graph.suffix}"] = graph.read_bytes()
    return runs


def test_same_bytes_across_hash_seeds(tmp_path: Path) -> None:
    """Set and dict-of-set iteration order depends on PYTHONHASHSEED; none of
    it may reach the output."""
    target = tmp_path / "tree"
    shutil.copytree(fixture("guards_partial"), target)
    runs = run_seeds(target, tmp_path, ["0", "1", "random"])
    assert set(runs["0"]) == {*formats(), *(f"graph{s}" for s in graph_suffixes())}
    assert_same(runs)


def test_same_bytes_across_hash_seeds_with_diagnostics_and_kernels(tmp_path: Path) -> None:
    """Diagnostics (options_odd) and kernel facts (a FlashInfer-shaped tree)
    across two more seeds."""
    odd = tmp_path / "odd"
    shutil.copytree(fixture("options_odd"), odd)
    kernels = tmp_path / "flashinfer"
    shutil.copytree(FIXTURES / "kernels_decorator", kernels)
    commands = {
        "diagnostics": [str(odd), "--no-kernels"],
        "kernels": [str(fixture("roles_gate")), "--flashinfer", str(kernels)],
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(MAIN_DIR), os.environ.get("PYTHONPATH")]))}
    jobs = {(seed, name): subprocess.Popen(
        [sys.executable, "-m", "guardscan", *argv, "--format", "json", "--no-cache",
         "--offline", "-q"], env={**env, "PYTHONHASHSEED": seed},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for seed in ("0", "12345") for name, argv in commands.items()}
    results = {key: job.communicate(timeout=120) for key, job in jobs.items()}
    for key, (_, err) in results.items():
        assert err == b"", (key, err.decode())
    assert b'"code": "' in results[("0", "diagnostics")][0]
    assert b'"package": "flashinfer"' in results[("0", "kernels")][0]
    for name in commands:
        assert results[("0", name)] == results[("12345", name)], name
