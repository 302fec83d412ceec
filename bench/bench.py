"""Benchmark guardscan on a real release against two baselines, in one run.

    python3 bench/bench.py [--target sglang==0.5.23] [--kernels] [--repeat 1]

Prints: cold scan (empty cache), warm scan (nothing changed), one-file-changed
scan, peak memory of the scan process; and, on the same files, ``ast.parse`` of
every file in the scanned package, and ``grep -rn`` of the guard tokens; then the
ratios. Each measurement runs in its own process. Not a test: speed is never
asserted in the test suite.
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

_SCAN = """
import resource, sys, time
from guardscan.scan import ScanOptions, analyse
from pathlib import Path
start = time.perf_counter()
analysis = analyse(ScanOptions(target=sys.argv[1], kernels=sys.argv[2] == "1",
                               cache_dir=Path(sys.argv[3]), offline=True))
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
parsed = len(analysis.index.outcomes) if analysis.index is not None else 0
print(f"{elapsed} {peak} {parsed} {len(analysis.tree.files)} {len(analysis.result.backends)}")
"""

_AST = """
import ast, sys, time, warnings
from pathlib import Path
root = Path(sys.argv[1])
files = sorted(root.rglob("*.py"))
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


def _scan(target: str, kernels: bool, cache: Path) -> tuple[float, float, int, int]:
    elapsed, peak, parsed, files, _ = _run(_SCAN, target, "1" if kernels else "0", str(cache))
    return float(elapsed), float(peak), int(parsed), int(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="sglang==0.5.23")
    parser.add_argument("--kernels", action="store_true",
                        help="also read the paired FlashInfer (default: SGLang only)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    from guardscan.acquire import acquire, default_cache_dir

    tree = acquire(args.target, cache_dir=default_cache_dir())
    package_dir = tree.root / tree.package
    with tempfile.TemporaryDirectory(prefix="guardscan-bench-") as tmp:
        work = Path(tmp)
        # a private copy of the tree, so one file can be changed
        copy = work / "tree"
        shutil.copytree(tree.root, copy)
        target = str(copy / tree.package)
        cache = work / "cache"
        # the copy must not re-download: pin acquisition to the copy on disk
        cold, peak, parsed, files = _scan(target, args.kernels, cache)
        warm, warm_peak, _, _ = _scan(target, args.kernels, cache)
        changed_file = copy / tree.package / "srt" / "utils" / "common.py"
        if not changed_file.exists():
            changed_file = next((copy / tree.package).rglob("*.py"))
        with changed_file.open("a") as handle:
            handle.write("\n# guardscan bench: one changed line\n")
        one, one_peak, _, _ = _scan(target, args.kernels, cache)
        ast_time, ast_files = _run(_AST, str(package_dir))
        start = time.perf_counter()
        subprocess.run(["grep", "-rn", "-e", "\\|".join(GUARD_TOKENS), str(package_dir)],
                       capture_output=True, check=False)
        grep_time = time.perf_counter() - start
    ast_s = float(ast_time)
    results = {
        "target": args.target,
        "version": tree.version,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "files_in_package": files,
        "files_parsed_cold": parsed,
        "cold_s": round(cold, 2),
        "warm_s": round(warm, 2),
        "one_file_changed_s": round(one, 2),
        "peak_mb": round(max(peak, warm_peak, one_peak), 1),
        "baseline_ast_parse_all_s": round(ast_s, 2),
        "baseline_grep_s": round(grep_time, 2),
        "cold_vs_ast": round(cold / ast_s, 2),
        "warm_vs_cold": round(warm / cold, 3),
        "one_file_vs_cold": round(one / cold, 3),
    }
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key.ljust(width)}  {value}")
    targets = {"cold_vs_ast": 1.0, "warm_vs_cold": 0.05, "one_file_vs_cold": 0.10}
    for key, limit in targets.items():
        print(f"target {key} <= {limit}: {'met' if results[key] <= limit else 'NOT met'}")
    print(f"target peak_mb <= 500: {'met' if results['peak_mb'] <= 500 else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
