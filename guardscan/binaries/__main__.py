"""``python -m guardscan.binaries TARGET...``: each library's SASS and PTX targets, for people and docs.

A target is a wheel (its ``.so`` members are read from the zip, facts cached
per wheel sha256), a library or fatbin file (headers read in place), or a
pinned spec such as ``sglang-kernel==0.4.10`` (downloaded into the cache
first). ``--member GLOB`` picks members of a wheel; ``--json`` prints the
facts as JSON. Exit status (``guardscan.results.ExitCode``): OK when every
library was read, USAGE when a target or a library could not be.

Example::

    $ python -m guardscan.binaries sglang-kernel==0.4.10 --member '*flashmla*'
    sglang_kernel-0.4.10-cp310-abi3-manylinux2014_x86_64.whl
      sgl_kernel/flashmla_ops.abi3.so: SASS sm_90a sm_100f sm_103a; PTX none (171 entries)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from guardscan.acquire import AcquireError
from guardscan.acquire.spec import parse_spec
from guardscan.binaries.driver import read_file, read_wheel
from guardscan.binaries.model import LibraryFacts, LibraryOutcome
from guardscan.binaries.packages import download_compiled
from guardscan.results import ExitCode


def _line(outcome: LibraryOutcome) -> str:
    if not isinstance(outcome, LibraryFacts):
        return f"  {outcome.path}: not read: {outcome.reason}"
    if not outcome.fatbin_sections:
        return f"  {outcome.path}: no fatbin (host code only)"
    sass = " ".join(outcome.sass_targets) or "none"
    ptx = " ".join(outcome.ptx_targets) or "none"
    loadable = sum(e.loadable for e in outcome.entries)
    extra = f", compressed: {'/'.join(outcome.compressions)}" if outcome.compressions else ""
    text = f"  {outcome.path}: SASS {sass}; PTX {ptx} ({loadable} entries{extra})"
    if outcome.relocatable_targets:
        text += (f"\n    relocatable (-rdc, not loaded; {len(outcome.entries) - loadable} "
                 f"entries): {' '.join(outcome.relocatable_targets)}")
    return text


def _resolve(target: str, cache_dir: Path | None, offline: bool) -> Path:
    path = Path(target)
    if path.exists():
        return path
    if parse_spec(target) is None:
        raise AcquireError(f"no such file, and not a requirement spec: {target}")
    return download_compiled(target, cache_dir, offline=offline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m guardscan.binaries",
        description="Which GPU architectures a compiled package's libraries hold "
                    "code for (read from their fatbins; nothing is loaded).")
    parser.add_argument("targets", nargs="+", metavar="WHEEL_OR_SO_OR_SPEC")
    parser.add_argument("--member", action="append", metavar="GLOB",
                        help="only the wheel members matching GLOB (repeatable)")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--offline", action="store_true",
                        help="use cached wheels only; never download")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    args = parser.parse_args(argv)
    status = ExitCode.OK
    report: list[dict[str, object]] = []
    for target in args.targets:
        try:
            path = _resolve(target, args.cache_dir, args.offline)
        except AcquireError as exc:
            print(f"guardscan.binaries: {exc}", file=sys.stderr)
            status = ExitCode.USAGE
            continue
        if path.suffix == ".whl":
            wheel = read_wheel(path, args.cache_dir, args.member)
            outcomes = wheel.libraries
            report.append({"target": target, "wheel": wheel.wheel, "sha256": wheel.sha256,
                           "libraries": [o.to_json() for o in outcomes]})
            title = wheel.wheel
        else:
            outcomes = (read_file(path),)
            report.append({"target": target, "libraries": [o.to_json() for o in outcomes]})
            title = str(path)
        if any(not isinstance(o, LibraryFacts) for o in outcomes):
            status = ExitCode.USAGE
        if not args.json:
            print(title)
            for outcome in outcomes:
                print(_line(outcome))
            if not outcomes:
                print("  no shared libraries")
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
