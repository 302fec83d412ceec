"""What the pre-commit hook costs on a fork's tree, in one run.

    python3 bench/precommit.py [--target sglang==0.5.23] [--arch all] [--no-kernels]

Lays the target's tree out as a fork of SGLang does (``python/sglang`` and a
``python/pyproject.toml`` pinning the FlashInfer the release pins), records
``guardscan baseline`` with an empty cache, then times ``guardscan baseline
--check`` as the hook runs it, each in its own process, timed from outside:

- **no change**: nothing edited (the hook after a commit that touches no code
  the scan reads);
- **guard edit**: the capability list of ``is_sm100_supported`` in
  ``sglang/srt/utils/common.py`` edited in place (``[10]`` to ``[12]``), the
  edit ``bench/bench.py`` times for a plain scan; the check fails, as it
  should;
- **new gate**: that edit undone, and one line added to
  ``create_flashinfer_backend`` of ``attention_registry.py`` that asserts the
  GPU is not SM120, a commit gating a choice away from an arch.

The wheels are copied from your guardscan cache when it has them (else pip
downloads them); everything else is written under a temporary directory. Not
a test: speed is never asserted in the test suite.
"""

from __future__ import annotations

import argparse
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

GATE = "def create_flashinfer_backend(runner):\n"


def _guardscan(fork: Path, cache: Path, *argv: str) -> tuple[float, int, str]:
    env = {**os.environ, "GUARDSCAN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "guardscan", "baseline", *argv], cwd=fork,
                          env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.returncode, done.stdout + done.stderr


def _seed(spec: str, cache: Path) -> None:
    from guardscan.acquire import default_cache_dir, spec_wheel_dir

    mine = spec_wheel_dir(spec, default_cache_dir())
    if mine.is_dir():
        shutil.copytree(mine, spec_wheel_dir(spec, cache), dirs_exist_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="sglang==0.5.23")
    parser.add_argument("--arch", default="all")
    parser.add_argument("--no-kernels", action="store_true")
    args = parser.parse_args()

    from guardscan.acquire import acquire, default_cache_dir
    from guardscan.acquire.pairing import kernel_requirement

    tree = acquire(args.target, cache_dir=default_cache_dir())
    pin = kernel_requirement(tree)
    with tempfile.TemporaryDirectory(prefix="guardscan-precommit-bench-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        fork = work / "fork"
        shutil.copytree(tree.root / tree.package, fork / "python" / tree.package)
        if pin is not None:
            (fork / "python" / "pyproject.toml").write_text(
                f'[project]\nname = "sglang"\nversion = "{tree.version}"\n'
                f'dependencies = ["{pin}"]\n')
            _seed(pin, cache)
        record = ["--arch", args.arch, "-q"] + (["--no-kernels"] if args.no_kernels else [])
        baseline_s, code, out = _guardscan(fork, cache, *record)
        if code != 0:
            raise SystemExit(f"bench: guardscan baseline exited {code}: {out}")
        print(out.strip())
        runs: dict[str, tuple[float, int, str]] = {}
        runs["first check (result stored by the baseline)"] = _guardscan(fork, cache, "--check")
        runs["no change"] = _guardscan(fork, cache, "--check")
        common = fork / "python" / tree.package / "srt" / "utils" / "common.py"
        text = common.read_text(encoding="utf-8")
        at = text.find("\nis_sm100_supported = ")
        edited = text[:at] + text[at:].replace("device_capability_majors=[10]",
                                               "device_capability_majors=[12]", 1)
        if at < 0 or edited == text:
            raise SystemExit(f"bench: no is_sm100_supported guard to edit in {common}")
        common.write_text(edited, encoding="utf-8")
        runs["guard edit (is_sm100_supported [10] -> [12])"] = _guardscan(fork, cache, "--check")
        common.write_text(text, encoding="utf-8")
        registry = fork / "python" / tree.package / "srt/layers/attention/attention_registry.py"
        source = registry.read_text(encoding="utf-8")
        if GATE not in source:
            raise SystemExit(f"bench: no create_flashinfer_backend to gate in {registry}")
        registry.write_text(source.replace(GATE, GATE + (
            "    import torch\n\n"
            '    assert torch.cuda.get_device_capability()[0] != 12, "not on SM120"\n')))
        runs["new gate (one line in attention_registry.py)"] = _guardscan(fork, cache, "--check")
        runs["again, nothing more changed"] = _guardscan(fork, cache, "--check")
    print(f"\n{args.target} ({tree.version}), --arch {args.arch}, "
          f"{'SGLang-only' if args.no_kernels else f'kernels: {pin}'}; "
          f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{'baseline (empty cache)':48} {baseline_s:6.2f} s")
    for name, (seconds, code, out) in runs.items():
        first = out.strip().splitlines()[0] if out.strip() else ""
        count = sum(1 for line in out.splitlines() if " -> " in line and ": " in line)
        print(f"{name:48} {seconds:6.2f} s  exit {code}"
              + (f", {count} line(s) worse; first: {first[:90]}" if code else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
