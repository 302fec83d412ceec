"""Write guardscan's reports on real releases into a directory, to compare two versions
of guardscan byte for byte (a refactor must not change them).

    python3 scripts/outputs.py OUT_DIR [--pair 0.5.9 --pair 0.5.23] [--quick]
    diff -r OLD_DIR NEW_DIR

For each SGLang release (paired with the FlashInfer it pins), runs the CLI of
the checkout this script lives in, in its own process: JSON and text for every
arch and every backend option without the cache, JSON again with a warm cache
(it must equal the uncached one), and JSON under ``--quantization
modelopt_fp4`` and ``mxfp4``. ``--quick`` keeps only the uncached JSON and
text. Wheels are downloaded once into ``$GUARDSCAN_CACHE_DIR`` (default: a
``guardscan-outputs`` directory in the system's temporary directory).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], out: Path, cache: Path) -> None:
    command = [sys.executable, "-m", "guardscan", *args, "-q", "--cache-dir", str(cache),
               "-o", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    (out.parent / (out.name + ".status")).write_text(
        f"{done.returncode}\n{done.stderr[-2000:]}", encoding="utf-8")
    print(f"{out.name}: exit {done.returncode} in {time.perf_counter() - start:.1f} s",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--pair", action="append", default=None,
                        help="an SGLang version (repeatable; default 0.5.9 and 0.5.23)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    cache = Path(os.environ.get("GUARDSCAN_CACHE_DIR")
                 or Path(tempfile.gettempdir()) / "guardscan-outputs")
    args.out.mkdir(parents=True, exist_ok=True)
    for version in args.pair or ["0.5.9", "0.5.23"]:
        spec = f"sglang=={version}"
        run([spec, "--format", "json", "--no-cache"], args.out / f"{version}.json", cache)
        run([spec, "--no-cache"], args.out / f"{version}.txt", cache)
        if args.quick:
            continue
        run([spec, "--format", "json"], args.out / f"{version}.cold-cache.json", cache)
        run([spec, "--format", "json"], args.out / f"{version}.warm-cache.json", cache)
        for method in ("modelopt_fp4", "mxfp4"):
            run([spec, "--format", "json", "--no-cache", "--quantization", method],
                args.out / f"{version}.{method}.json", cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
