"""commands (cache): ``guardscan cache [clean] [KIND ...] [--older-than DAYS]``, what the
cache holds and removing it.

Without ``clean``: per kind (``memo.disk.KINDS``), how many entries, how many
bytes and how old the oldest is, with the size limit. ``clean`` removes every
entry of the kinds named (all kinds when none is), or only those not used for
``--older-than`` days. Every entry can be rebuilt, so cleaning never changes a
report, only what the next scan costs (docs/cache.md).

Exit codes: 0 done (also for an empty or missing cache); 2 bad usage (an
unknown kind, a negative or non-numeric ``--older-than``, a bad
``$GUARDSCAN_CACHE_LIMIT``), one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import IO

from guardscan.acquire.model import cache_root
from guardscan.commands.common import UsageError
from guardscan.memo.disk import KINDS, Entry, LimitError, entries, limit, remove
from guardscan.results import ExitCode

__all__ = ["build_parser", "human_size", "run"]

_EPILOG = """\
kinds: wheels (pip downloads), trees (extracted wheels), facts (parsed files),
results (stored scans and their records), kernels (the kernel library's answers),
binaries (compiled packages' fatbin facts).

examples:
  guardscan cache                      what is in the cache, per kind
  guardscan cache clean                remove everything
  guardscan cache clean trees facts    remove the extracted trees and parsed facts
  guardscan cache clean --older-than 30

The size limit is $GUARDSCAN_CACHE_LIMIT (500M, 4G; 0 for none), else 4G: after a
scan writes, the entries used longest ago are removed until the cache is under it.

exit codes: 0 done, 2 bad usage, 3 internal error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan cache",
        usage="guardscan cache [clean] [KIND ...] [--older-than DAYS] [--dry-run] "
              "[--format {text,json}] [--cache-dir DIR]",
        description="Show what guardscan's cache holds, per kind, or remove it (clean).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("words", nargs="*", metavar="[clean] [KIND ...]",
                        help="'clean' to remove entries; KIND: only these kinds "
                             f"({', '.join(KINDS)}; default: all)")
    parser.add_argument("--older-than", type=float, metavar="DAYS",
                        help="only entries not used for this many days")
    parser.add_argument("--dry-run", action="store_true",
                        help="clean: say what would be removed, remove nothing")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text)")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="the cache (default: $GUARDSCAN_CACHE_DIR, "
                             "$XDG_CACHE_HOME/guardscan or ~/.cache/guardscan)")
    return parser


def human_size(size: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; bytes below 1 KiB as ``"512 B"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop returns at GiB


def _days(seconds: float) -> str:
    count, unit = (seconds / 86400, "day") if seconds >= 86400 else (seconds / 3600, "hour")
    return f"{count:.0f} {unit}" + ("" if round(count) == 1 else "s")


def _display(cache: Path) -> str:
    home = Path.home()
    try:
        return "~/" + cache.resolve().relative_to(home.resolve()).as_posix()
    except ValueError:
        return str(cache)


def _summary(found: list[Entry], kinds: tuple[str, ...], now: float) -> list[dict[str, object]]:
    rows = []
    for kind in kinds:
        mine = [e for e in found if e.kind == kind]
        rows.append({"kind": kind, "entries": len(mine), "bytes": sum(e.size for e in mine),
                     "oldest_days": round((now - min(e.used for e in mine)) / 86400, 2)
                     if mine else None})
    return rows


def _render_summary(cache: Path, rows: list[dict[str, object]], cap: int,
                    stream: IO[str]) -> None:
    total = sum(int(str(r["bytes"])) for r in rows)
    cap_text = human_size(cap) if cap else "none"
    stream.write(f"cache: {_display(cache)}  (limit {cap_text}, $GUARDSCAN_CACHE_LIMIT)\n")
    stream.write(f"{'kind':<10}{'entries':>9}{'size':>12}  oldest\n")
    for row in rows:
        oldest = row["oldest_days"]
        age = _days(float(str(oldest)) * 86400) if oldest is not None else "-"
        stream.write(f"{row['kind']!s:<10}{row['entries']!s:>9}"
                     f"{human_size(int(str(row['bytes']))):>12}  {age}\n")
    stream.write(f"{'total':<10}{'':>9}{human_size(total):>12}\n")


def _parse(argv: list[str]) -> tuple[argparse.Namespace, bool, tuple[str, ...]]:
    args = build_parser().parse_args(argv)
    words = list(args.words)
    clean = bool(words) and words[0] == "clean"
    if clean:
        words = words[1:]
    unknown = [w for w in words if w not in KINDS]
    if unknown:
        raise UsageError(f"not a kind of cache entry: {', '.join(unknown)}; kinds: "
                         f"{', '.join(KINDS)} (and 'clean' first to remove)")
    if args.older_than is not None and not args.older_than >= 0:
        raise UsageError(f"--older-than: not a number of days: {args.older_than}")
    if args.dry_run and not clean:
        raise UsageError("--dry-run goes with clean")
    kinds = tuple(k for k in KINDS if k in words) or KINDS
    return args, clean, kinds


def run(argv: list[str]) -> int:
    args, clean, kinds = _parse(argv)
    try:
        cap = limit()
    except LimitError as exc:
        raise UsageError(f"$GUARDSCAN_CACHE_LIMIT: {exc}") from None
    cache = cache_root(args.cache_dir)
    now = time.time()
    found = entries(cache, kinds)
    if args.older_than is not None:
        found = [e for e in found if now - e.used >= args.older_than * 86400]
    if not clean:
        rows = _summary(found, kinds, now)
        if args.format == "json":
            json.dump({"cache": str(cache), "limit_bytes": cap, "kinds": rows}, sys.stdout,
                      indent=2)
            sys.stdout.write("\n")
        else:
            _render_summary(cache, rows, cap, sys.stdout)
        return ExitCode.OK
    removed = found if args.dry_run else [e for e in found if remove(e)]
    verb = "would remove" if args.dry_run else "removed"
    if args.format == "json":
        json.dump({"cache": str(cache), "dry_run": args.dry_run,
                   "removed": _summary(removed, kinds, now)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return ExitCode.OK
    for row in _summary(removed, kinds, now):
        if row["entries"]:
            sys.stdout.write(f"{verb} {row['entries']} {row['kind']} entries, "
                             f"{human_size(int(str(row['bytes'])))}\n")
    total = sum(e.size for e in removed)
    sys.stdout.write(f"{verb} {human_size(total)} from {_display(cache)}\n")
    return ExitCode.OK
