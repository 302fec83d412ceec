"""Benchmark guardscan on a real release against two baselines measured in the same run.

    python3 bench/bench.py [--target sglang==0.5.23] [--no-kernels] [--compiled all|none] [--json FILE]
    python3 bench/bench.py --releases [--from 0.5.0] [--jobs N] [--json FILE]

Scans the target and the FlashInfer it pins, with the guardscan CLI as a user
runs it (``--format json``, every backend option, every standard arch), each
in its own process, timed from outside: cold (empty cache), warm (nothing
changed), a narrower question right after (``explain`` of one choice, and the
scan narrowed with ``--option``), other questions on the same tree (another
``--quantization``; one arch; that arch with another method), one file
changed three times (a comment
appended to the file that defines the capability guards, then a function
appended to it: changes no read of the scan can see; then the capability list
of one guard edited in place: the scan reads it, so it runs again from cached
facts), and the largest resident set of any of those processes or their
parsing workers. Before and after the scans, on the same files, the two
baselines: ``ast.parse`` of every file in the scope, and ``grep -rlE`` of the
guard tokens; each is taken as the mean of its two runs.

Every figure is printed as wall seconds, CPU seconds (user and system, the
parsing workers and background parser included) and a ratio to each baseline,
wall to wall and CPU to CPU. Then each goal of issue 22, met or not, judged on
the CPU ratio: on a shared machine the wall ratios move with the load.

``--releases``: every SGLang release on the index from ``--from`` up (each
with the FlashInfer it pins), scanned cold and then warm, ``--jobs`` at a time
on a process pool (default: half the cores), one line each. Not a test: speed
is never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

GUARD_TOKENS = ["is_sm1", "is_sm9", "get_device_capability", "device_sm", "is_blackwell",
                "is_hopper", "supported_compute_capability", "supported_major_versions"]

#: Runs the guardscan CLI as a user would and reports its wall time and the
#: largest resident set of it or of any process it started (parsing workers).
_SCAN = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "guardscan", *sys.argv[1:]],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{elapsed} {usage.ru_maxrss / 1024} {done.returncode} {len(done.stdout)} "
      f"{usage.ru_utime + usage.ru_stime}")
"""

_AST = """
import ast, sys, time, warnings
from pathlib import Path
files = sorted(p for root in sys.argv[1:] for p in Path(root).rglob("*.py"))
start = time.perf_counter()
for path in files:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, RecursionError):
        pass
print(f"{time.perf_counter() - start} {len(files)} {time.process_time()}")
"""

#: ``grep -rlE`` of the guard tokens, timed like a scan
_GREP = """
import resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(["grep", "-rlE", sys.argv[1], *sys.argv[2:]], capture_output=True, check=False)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{time.perf_counter() - start} {usage.ru_utime + usage.ru_stime}")
"""


def _run(code: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True, env=env)
    return out.stdout.split()


@dataclass
class Figure:
    """One timed run: wall and CPU seconds, peak resident MB."""

    wall: float
    cpu: float
    peak: float = 0.0


def _scan(args: list[str], cache: Path, offline: bool = True) -> Figure:
    """One CLI run of ``guardscan ARGS`` on ``cache``."""
    out = _run(_SCAN, *args, "--format", "json", "--cache-dir", str(cache), "--quiet",
               *(["--offline"] if offline else []))
    elapsed, peak, code, size, cpu = out
    if code not in ("0", "1") or size == "0":
        raise SystemExit(f"bench: guardscan exited {code} on {' '.join(args)}")
    return Figure(float(elapsed), float(cpu), float(peak))


def _baselines(scope: list[Path]) -> tuple[Figure, Figure, int]:
    ast_wall, files, ast_cpu = _run(_AST, *map(str, scope))
    grep_wall, grep_cpu = _run(_GREP, "|".join(GUARD_TOKENS), *map(str, scope))
    return (Figure(float(ast_wall), float(ast_cpu)), Figure(float(grep_wall), float(grep_cpu)),
            int(files))


def _mean(a: Figure, b: Figure) -> Figure:
    return Figure((a.wall + b.wall) / 2, (a.cpu + b.cpu) / 2)


#: issue 22's goals: figure -> (baseline, at most this many times it)
GOALS = {"cold": ("ast", 0.5), "warm": ("grep", 1.0), "explain_after_full": ("grep", 1.5),
         "option_after_full": ("grep", 1.5), "comment_edit": ("grep", 1.5),
         "function_edit": ("grep", 1.5), "guard_edit": ("grep", 1.5)}
PEAK_GOAL_MB = 300


def _release_scan(job: tuple[str, str]) -> str:
    """One release, cold then warm, on a cache of its own under ``job[1]`` (the
    cold scan downloads the wheels)."""
    spec, root = job
    cache = Path(root) / spec.replace("==", "-")
    line = f"{spec:<18}"
    for label in ("cold", "warm"):
        try:
            figure = _scan([spec], cache, offline=label == "warm")
        except SystemExit as exc:
            return f"{line}  {exc}"
        line += f"  {label} {figure.wall:6.1f} s wall {figure.cpu:6.1f} s CPU {figure.peak:5.0f} MB"
    return line


def releases(start: str, jobs: int, json_out: Path | None) -> int:
    """``--releases``: each release from ``start`` up, cold and warm, on a pool."""
    from concurrent.futures import ProcessPoolExecutor

    from guardscan.acquire import default_cache_dir

    versions = _index_versions("sglang", start)
    if not versions:
        raise SystemExit(f"bench: no sglang release from {start} on the index")
    cache = default_cache_dir() / "bench-releases"
    lines: list[str] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(_release_scan, [(f"sglang=={v}", str(cache)) for v in versions]):
            print(line, flush=True)
            lines.append(line)
    if json_out:
        json_out.write_text(json.dumps({"releases": lines}, indent=2) + "\n")
    return 0


def _index_versions(name: str, start: str) -> list[str]:
    """The versions ``pip index versions`` lists, from ``start`` up, oldest first."""
    from packaging.version import InvalidVersion, Version

    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "--pre", name],
                          capture_output=True, text=True, check=False)
    found = []
    for line in done.stdout.splitlines():
        if line.startswith("Available versions:"):
            for text in line.split(":", 1)[1].split(","):
                try:
                    version = Version(text.strip())
                except InvalidVersion:
                    continue
                if version >= Version(start):
                    found.append(version)
    return [str(v) for v in sorted(found)]


def _seed_compiled(tree: object, select: str, cache: Path) -> list[str]:
    """Place the compiled wheels the target pins (downloaded once into the
    default cache) in the bench's cache; their specs."""
    from guardscan.acquire import SourceTree, default_cache_dir
    from guardscan.binaries.pinned import compiled_source, selected_dists

    assert isinstance(tree, SourceTree)
    dists = selected_dists(select)
    if not dists:
        return []
    source = compiled_source(tree, default_cache_dir(), dists=dists)
    for package in source.packages:
        place = cache / "wheels" / package.wheel.parent.name / package.wheel.name
        place.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(package.wheel, place)
        except OSError:
            shutil.copyfile(package.wheel, place)
    return [p.spec for p in source.packages]


def _write_pins(copy: Path, tree: object) -> None:
    """A ``pyproject.toml`` beside the copied package with the wheel's version
    and requirements: the copy is then scanned as the checkout a fork's hook
    scans, pins included (a bare package directory carries none)."""
    from guardscan.acquire import SourceTree

    assert isinstance(tree, SourceTree)
    dependencies = ", ".join(json.dumps(r) for r in tree.requires)
    (copy / "pyproject.toml").write_text(
        f"[project]\nname = {json.dumps(tree.package)}\nversion = {json.dumps(tree.version)}\n"
        f"dependencies = [{dependencies}]\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="sglang==0.5.23")
    parser.add_argument("--no-kernels", action="store_true",
                        help="SGLang only (default: also the FlashInfer the target pins)")
    parser.add_argument("--compiled", default="all", metavar="all|none|DIST[,DIST]",
                        help="compiled packages the target pins to read in every scan "
                             "(default: all; their wheels are placed in the bench's cache "
                             "beforehand, so cold reads their fatbins but downloads nothing)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--releases", action="store_true",
                        help="time cold and warm scans of every release from --from up")
    parser.add_argument("--from", dest="start", default="0.5.0", metavar="VERSION")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args()
    if args.releases:
        return releases(args.start, args.jobs, args.json)

    from guardscan.acquire import acquire, acquire_kernels, default_cache_dir

    tree = acquire(args.target, cache_dir=default_cache_dir())
    kernel_tree = acquire_kernels(tree, None, cache_dir=default_cache_dir()) \
        if not args.no_kernels else None
    with tempfile.TemporaryDirectory(prefix="guardscan-bench-") as tmp:
        work = Path(tmp)
        # a private copy of the tree, so one file can be changed
        copy = work / "tree"
        shutil.copytree(tree.root, copy)
        target = str(copy / tree.package)
        scope = [Path(target)]
        kernel_args = ["--no-kernels"]
        if kernel_tree is not None:
            # the paired FlashInfer, read from the bench's own cache copy
            kernel_copy = work / "kernels"
            shutil.copytree(kernel_tree.root, kernel_copy)
            scope.append(kernel_copy / kernel_tree.package)
            kernel_args = ["--flashinfer", str(scope[1])]
        ast_before, grep_before, files = _baselines(scope)
        cache = work / "cache"
        compiled = _seed_compiled(tree, args.compiled, cache) if kernel_tree is not None else []
        if compiled:
            _write_pins(copy, tree)
        kernel_args += ["--compiled", args.compiled if compiled else "none"]
        figures: dict[str, Figure] = {}

        def scan(name: str, *extra: str) -> None:
            figures[name] = _scan([*extra, target, *kernel_args], cache)

        scan("cold")
        parsed = len(list((cache / "facts").rglob("*.pickle")))
        scan("warm")
        scan("explain_after_full", "explain", "flashinfer_trtllm", "--option",
             "--moe-runner-backend")
        scan("option_after_full", "--option", "--moe-runner-backend")
        # another question on the same tree: links from the full scan's
        # records (memo.results: the family); one arch asks its own kernel
        # questions once, then replays them
        scan("method_after_full", "--quantization", "fp8")
        scan("one_arch_after_full", "--arch", "sm120")
        scan("one_arch_and_method_after", "--arch", "sm120", "--quantization", "modelopt_fp4")
        changed_file = copy / tree.package / "srt" / "utils" / "common.py"
        if not changed_file.exists():
            changed_file = next((copy / tree.package).rglob("*.py"))
        # 1. a comment: no fact of the file changes
        with changed_file.open("a") as handle:
            handle.write("\n# guardscan bench: one changed line\n")
        scan("comment_edit")
        # 2. code: a new function, which nothing looks up
        with changed_file.open("a") as handle:
            handle.write("\n\ndef _guardscan_bench_changed():\n    return None\n")
        scan("function_edit")
        # 3. a guard's meaning: what the scan read changed, so it runs again
        text = changed_file.read_text(encoding="utf-8")
        guard = text.find("\nis_sm100_supported = ")
        edited = text[:guard] + text[guard:].replace(
            "device_capability_majors=[10]", "device_capability_majors=[12]", 1)
        if guard < 0 or edited == text:
            raise SystemExit(f"bench: no is_sm100_supported guard to edit in {changed_file}")
        changed_file.write_text(edited, encoding="utf-8")
        scan("guard_edit")
        ast_after, grep_after, _ = _baselines(scope)
    base = {"ast": _mean(ast_before, ast_after), "grep": _mean(grep_before, grep_after)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results: dict[str, object] = {
        "target": args.target,
        "version": tree.version,
        "kernels": f"{kernel_tree.package} {kernel_tree.version}" if kernel_tree else "none",
        "compiled": compiled,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}, load average {load:.1f} at the end",
        "files_in_scope": files,
        "facts_cached_after_cold": parsed,
        "baselines": {name: {"wall_s": round(f.wall, 2), "cpu_s": round(f.cpu, 2)}
                      for name, f in base.items()},
        "figures": {name: {"wall_s": round(f.wall, 2), "cpu_s": round(f.cpu, 2),
                           "peak_mb": round(f.peak, 1),
                           **{f"wall_vs_{b}": round(f.wall / base[b].wall, 2) for b in base},
                           **{f"cpu_vs_{b}": round(f.cpu / base[b].cpu, 2) for b in base}}
                    for name, f in figures.items()},
        "peak_mb": round(max(f.peak for f in figures.values()), 1),
    }
    _print(results, base, figures)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _print(results: dict[str, object], base: dict[str, Figure],
           figures: dict[str, Figure]) -> None:
    for key in ("target", "version", "kernels", "compiled", "machine", "files_in_scope",
                "facts_cached_after_cold"):
        print(f"{key:<24}{results[key]}")
    for name, figure in base.items():
        print(f"baseline {name:<15}{figure.wall:8.2f} s wall {figure.cpu:8.2f} s CPU")
    print(f"{'':<24}{'wall s':>8}{'CPU s':>8}{'MB':>7}{'wall/ast':>10}{'wall/grep':>10}"
          f"{'CPU/ast':>9}{'CPU/grep':>10}")
    for name, f in figures.items():
        print(f"{name:<24}{f.wall:8.2f}{f.cpu:8.2f}{f.peak:7.0f}"
              f"{f.wall / base['ast'].wall:10.2f}{f.wall / base['grep'].wall:10.2f}"
              f"{f.cpu / base['ast'].cpu:9.2f}{f.cpu / base['grep'].cpu:10.2f}")
    # judged on CPU: on a shared machine a waiting process's wall time grows with
    # the load (grep's most of all), its CPU time much less
    for name, (against, limit) in GOALS.items():
        f = figures[name]
        wall, cpu = f.wall / base[against].wall, f.cpu / base[against].cpu
        verdict = "met" if cpu <= limit else "NOT met"
        print(f"goal {name} <= {limit}x {against}: {cpu:.2f}x CPU ({wall:.2f}x wall), {verdict}")
    peak = float(str(results["peak_mb"]))
    print(f"goal peak <= {PEAK_GOAL_MB} MB: {peak:.0f} MB, "
          f"{'met' if peak <= PEAK_GOAL_MB else 'NOT met'}")


if __name__ == "__main__":
    raise SystemExit(main())
