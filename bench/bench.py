"""Benchmark guardscan on a real release against two baselines, in one run.

    python3 bench/bench.py [--target sglang==0.5.23] [--no-kernels] [--json FILE]

Scans the target and the FlashInfer it pins, with the guardscan CLI as a user
runs it (``--format json``, every backend option, every standard arch), each
in its own process, timed from outside: cold (empty cache), warm (nothing
changed), one file changed three times (a comment appended to the file that
defines the capability guards, then a function appended to it: changes no
read of the scan can see, so the stored result stands after that file is
parsed; then the capability list of one guard edited in place: the scan reads
it, so everything is analysed again, from cached facts), and the largest
resident set of any of those processes or their parsing workers. Then, on the
same files, two baselines: ``ast.parse`` of every file in the scope, and
``grep -rn`` of the guard tokens; then the ratios against the targets. Not a
test: speed is never asserted in the test suite.
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
import time
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
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{elapsed} {peak} {done.returncode} {len(done.stdout)}")
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
print(f"{time.perf_counter() - start} {len(files)}")
"""


def _run(code: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True, env=env)
    return out.stdout.split()


def _scan(target: str, kernels: str | None, cache: Path) -> tuple[float, float, int, int]:
    """One CLI run: wall seconds, peak MB, facts in the cache (the files the
    scan parsed, and kernel-library files parsed in the background), files in
    the scope."""
    args = [target, "--format", "json", "--cache-dir", str(cache), "--offline", "--quiet"]
    args += ["--flashinfer", kernels] if kernels else ["--no-kernels"]
    elapsed, peak, code, size = _run(_SCAN, *args)
    if code != "0" or size == "0":
        raise SystemExit(f"bench: guardscan exited {code} on {target}")
    parsed = len(list((cache / "facts").rglob("*.pickle")))
    files = sum(1 for root in filter(None, [target, kernels])
                for _ in Path(root).rglob("*.py"))
    return float(elapsed), float(peak), parsed, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="sglang==0.5.23")
    parser.add_argument("--no-kernels", action="store_true",
                        help="SGLang only (default: also the FlashInfer the target pins)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

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
        if kernel_tree is not None:
            # the paired FlashInfer, read from the bench's own cache copy
            kernel_copy = work / "kernels"
            shutil.copytree(kernel_tree.root, kernel_copy)
            scope.append(kernel_copy / kernel_tree.package)

        def scan(cache: Path) -> tuple[float, float, int, int]:
            return _scan(target, str(scope[1]) if len(scope) > 1 else None, cache)

        cache = work / "cache"
        cold, peak, parsed, files = scan(cache)
        warm, warm_peak, _, _ = scan(cache)
        changed_file = copy / tree.package / "srt" / "utils" / "common.py"
        if not changed_file.exists():
            changed_file = next((copy / tree.package).rglob("*.py"))
        # 1. a comment: no fact of the file changes
        with changed_file.open("a") as handle:
            handle.write("\n# guardscan bench: one changed line\n")
        comment, comment_peak, _, _ = scan(cache)
        # 2. code: a new function, which nothing looks up
        with changed_file.open("a") as handle:
            handle.write("\n\ndef _guardscan_bench_changed():\n    return None\n")
        code, code_peak, _, _ = scan(cache)
        # 3. a guard's meaning: what the scan read changed, so it runs again
        text = changed_file.read_text(encoding="utf-8")
        guard = text.find("\nis_sm100_supported = ")
        edited = text[:guard] + text[guard:].replace(
            "device_capability_majors=[10]", "device_capability_majors=[12]", 1)
        if guard < 0 or edited == text:
            raise SystemExit(f"bench: no is_sm100_supported guard to edit in {changed_file}")
        changed_file.write_text(edited, encoding="utf-8")
        guard_s, guard_peak, _, _ = scan(cache)
        ast_time, ast_files = _run(_AST, *map(str, scope))
        start = time.perf_counter()
        subprocess.run(["grep", "-rn", "-e", "\\|".join(GUARD_TOKENS), *map(str, scope)],
                       capture_output=True, check=False)
        grep_time = time.perf_counter() - start
    ast_s = float(ast_time)
    results = {
        "target": args.target,
        "version": tree.version,
        "kernels": f"{kernel_tree.package} {kernel_tree.version}" if kernel_tree else "none",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "files_in_scope": files,
        "facts_cached_after_cold": parsed,
        "cold_s": round(cold, 2),
        "warm_s": round(warm, 2),
        "one_file_changed_comment_s": round(comment, 2),
        "one_file_changed_code_s": round(code, 2),
        "one_file_changed_guard_s": round(guard_s, 2),
        "peak_mb": round(max(peak, warm_peak, comment_peak, code_peak, guard_peak), 1),
        "baseline_ast_parse_all_s": round(ast_s, 2),
        "baseline_ast_files": int(ast_files),
        "baseline_grep_s": round(grep_time, 2),
        "cold_vs_ast": round(cold / ast_s, 2),
        "warm_vs_cold": round(warm / cold, 3),
        "one_file_comment_vs_cold": round(comment / cold, 3),
        "one_file_code_vs_cold": round(code / cold, 3),
        "one_file_guard_vs_cold": round(guard_s / cold, 3),
    }
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key.ljust(width)}  {value}")
    targets = {"cold_vs_ast": 1.0, "warm_vs_cold": 0.05, "one_file_comment_vs_cold": 0.10,
               "one_file_code_vs_cold": 0.10, "one_file_guard_vs_cold": 0.10}
    for key, limit in targets.items():
        print(f"target {key} <= {limit}: {'met' if results[key] <= limit else 'NOT met'}")
    print(f"target peak_mb <= 500: {'met' if results['peak_mb'] <= 500 else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
