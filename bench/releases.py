"""Scan every SGLang release on the package index, each with the FlashInfer it pins.

    python3 bench/releases.py [--from 0.4.0] [--to VERSION] [--no-pre]
                              [--cache-dir DIR] [--markdown FILE] [--no-cache]

For each release, oldest first, runs the guardscan CLI as a user would
(``guardscan sglang==X --format json``: every backend option, every standard
arch, the FlashInfer version the release pins acquired beside it) in its own
process, and prints one line: the version, the exit status, the wall time, the
FlashInfer version paired with it, the verdict counts and the diagnostics by
kind. A release that ends in an internal error (exit 3) shows its one-line
message, and any of the common configurations (``COMMON``: Triton and ``auto``
MoE, Triton and FlashInfer attention, no all-to-all, ``auto`` FP8 and FP4
GEMMs, FlashInfer and PyTorch sampling on sm80/sm90/sm100/sm120, FA3 attention
on sm90) the scan calls blocked or unsupported. The exit status of this script is 1 when any
release ended in an internal error or called a common configuration unsafe,
0 otherwise: releases pip cannot download as a wheel for this
Python (exit 2) are reported, not counted as failures of guardscan.

The version list comes from ``pip index versions`` (so a configured mirror is
honoured). Not a test: it takes about an hour cold on two cores.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ("blocked", "unsupported", "supported", "unknown")
COMMON_ARCHS = ("sm80", "sm90", "sm100", "sm120")
#: the configurations most deployments run, never to be called unsafe (no
#: quantization), each on the architectures it is run on: (option, choice, archs).
#: A release that does not define the option (the GEMM options before 0.5.9) has
#: nothing to check there
COMMON: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("--moe-runner-backend", "triton", COMMON_ARCHS),
    ("--moe-runner-backend", "auto", COMMON_ARCHS),
    ("--attention-backend", "triton", COMMON_ARCHS),
    ("--attention-backend", "flashinfer", COMMON_ARCHS),
    ("--attention-backend", "fa3", ("sm90",)),  # FlashAttention 3 is Hopper's
    ("--moe-a2a-backend", "none", COMMON_ARCHS),
    ("--fp8-gemm-backend", "auto", COMMON_ARCHS),
    ("--fp4-gemm-backend", "auto", COMMON_ARCHS),
    ("--sampling-backend", "flashinfer", COMMON_ARCHS),
    ("--sampling-backend", "pytorch", COMMON_ARCHS),
)
UNSAFE = ("blocked", "unsupported")


@dataclass(frozen=True)
class Outcome:
    version: str
    status: int
    seconds: float
    flashinfer: str
    verdicts: Counter[str]
    diagnostics: Counter[str]
    message: str
    unsafe_common: tuple[str, ...] = ()  # "choice on arch: verdict" of COMMON called unsafe


def released_versions(package: str, pre: bool) -> list[Version]:
    """Every version the index lists for ``package``, oldest first."""
    command = [sys.executable, "-m", "pip", "index", "versions", package]
    if pre:
        command.append("--pre")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    match = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"releases: pip could not list {package}: "
                         f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    versions = []
    for text in match.group(1).split(","):
        try:
            versions.append(Version(text.strip()))
        except InvalidVersion:
            continue
    return sorted(versions)


def scan_release(version: Version, cache_dir: Path | None, use_cache: bool) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="guardscan-releases-") as scratch:
        output = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "guardscan", f"sglang=={version}", "--format", "json",
                   "-o", str(output), "-q"]
        if cache_dir is not None:
            command += ["--cache-dir", str(cache_dir)]
        if not use_cache:
            command.append("--no-cache")
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        seconds = time.perf_counter() - start
        verdicts: Counter[str] = Counter()
        diagnostics: Counter[str] = Counter()
        flashinfer = "-"
        unsafe: tuple[str, ...] = ()
        if output.is_file():
            data = json.loads(output.read_text(encoding="utf-8"))
            verdicts.update(b["verdict"] for b in data.get("backends", []))
            diagnostics.update(d["code"] for d in data.get("diagnostics", []))
            kernels = data.get("kernels") or []
            flashinfer = ",".join(k.get("version") or "?" for k in kernels) or "none"
            unsafe = unsafe_common(data.get("backends", []))
        lines = done.stderr.strip().splitlines()
        message = lines[-1] if done.returncode != 0 and lines else ""
    return Outcome(str(version), done.returncode, seconds, flashinfer, verdicts, diagnostics,
                   message, unsafe)


def unsafe_common(backends: list[dict[str, str]]) -> tuple[str, ...]:
    """The common configurations a scan's JSON calls unsafe, as "option choice on arch: verdict"."""
    wanted = {(option, choice): archs for option, choice, archs in COMMON}
    return tuple(sorted(
        f"{b['option']} {b['choice']} on {b['arch']}: {b['verdict']}" for b in backends
        if b["arch"] in wanted.get((b["option"], b["choice"]), ())
        and not b.get("quantization") and b["verdict"] in UNSAFE))


def _counts(counter: Counter[str]) -> str:
    return " ".join(f"{key}={counter[key]}" for key in sorted(counter)) or "-"


def line_of(outcome: Outcome) -> str:
    verdicts = " ".join(f"{v[:3]}={outcome.verdicts[v]}" for v in VERDICTS)
    text = (f"{outcome.version:<14} exit={outcome.status} {outcome.seconds:6.1f}s "
            f"flashinfer={outcome.flashinfer:<8} {verdicts}  {_counts(outcome.diagnostics)}")
    if outcome.unsafe_common:
        text += "  COMMON CALLED UNSAFE: " + "; ".join(outcome.unsafe_common)
    return f"{text}  {outcome.message}" if outcome.message else text


def markdown(outcomes: list[Outcome]) -> str:
    rows = [("| sglang | exit | time (s) | flashinfer | blocked | unsupported | supported "
            "| unknown | diagnostics |"), "|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        counts = " | ".join(str(o.verdicts[v]) for v in VERDICTS)
        note = _counts(o.diagnostics) + (f"; {o.message}" if o.message else "")
        rows.append(f"| {o.version} | {o.status} | {o.seconds:.1f} | {o.flashinfer} | {counts} "
                    f"| {note} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="start", default="0.4.0", type=Version,
                        help="the oldest release to scan (default: 0.4.0)")
    parser.add_argument("--to", dest="stop", default=None, type=Version,
                        help="the newest release to scan (default: the newest listed)")
    parser.add_argument("--no-pre", action="store_true", help="skip pre-releases (rc)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="guardscan's cache (default: guardscan's own default)")
    parser.add_argument("--no-cache", action="store_true",
                        help="pass --no-cache to every scan (wheels are still reused)")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="also write the table as Markdown to this file")
    args = parser.parse_args(argv)
    versions = [v for v in released_versions("sglang", pre=not args.no_pre)
                if v >= args.start and (args.stop is None or v <= args.stop)]
    print(f"# {len(versions)} releases of sglang, {versions[0]} to {versions[-1]}", flush=True)
    outcomes = []
    for version in versions:
        outcome = scan_release(version, args.cache_dir, not args.no_cache)
        outcomes.append(outcome)
        print(line_of(outcome), flush=True)
    statuses = Counter(o.status for o in outcomes)
    total = sum(o.seconds for o in outcomes)
    unsafe = [o.version for o in outcomes if o.unsafe_common]
    print(f"# exit statuses: {_counts(Counter({str(k): n for k, n in statuses.items()}))}; "
          f"{total / 60:.1f} min in all", flush=True)
    print(f"# common configurations ({sum(len(archs) for *_, archs in COMMON)} cells, on "
          f"{', '.join(COMMON_ARCHS)}) called unsafe: "
          f"{', '.join(unsafe) if unsafe else 'none'}", flush=True)
    if args.markdown is not None:
        args.markdown.write_text(markdown(outcomes), encoding="utf-8")
    return 1 if statuses.get(3) or unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
