"""commands (archs): ``guardscan archs [SPELLING...]``, the architectures ``--arch`` takes.

Without arguments: every architecture guardscan knows (capability, family,
whether it is in the standard set, the first CUDA toolkit that compiles for
it, its GPU names and aliases), then the older ones it names only to say it
does not judge them. With arguments: what each spelling means (``NVIDIA H100
80GB HBM3`` -> sm90), as ``--arch`` reads it.

Exit codes: 0 listed; 2 a spelling that names no known architecture (one
line, with the closest names).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from guardscan.arch import ArchError, known_archs, older_archs, parse_arch
from guardscan.commands.common import UsageError
from guardscan.results import ExitCode

__all__ = ["build_parser", "run"]

#: lines fit this many columns, as the text report's do
WIDTH = 100


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan archs",
        description="The architectures --arch takes: names, capabilities, GPU names and\n"
                    "aliases; or what given spellings mean.",
        epilog="examples:\n"
               "  guardscan archs\n"
               "  guardscan archs 'NVIDIA RTX PRO 6000 Blackwell Server Edition' 12.1 B200\n\n"
               "exit codes: 0 listed, 2 a spelling that names no known architecture.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spellings", nargs="*", metavar="SPELLING",
                        help="architectures or GPU names to resolve, as --arch would "
                             "(e.g. sm_120a, 12.0, 'NVIDIA H100 80GB HBM3')")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text)")
    return parser


def _cuda(version: tuple[int, int] | None) -> str:
    return f"{version[0]}.{version[1]}" if version else "-"


def _listing_json() -> dict[str, object]:
    return {
        "architectures": [{
            "name": info.arch.name, "capability": f"{info.arch.major}.{info.arch.minor}",
            "family": info.family, "standard": info.standard,
            "min_cuda": _cuda(info.min_cuda) if info.min_cuda else None,
            "gpus": list(info.gpus), "aliases": list(info.aliases)} for info in known_archs()],
        "older": [{"name": o.name, "capability": f"{o.capability[0]}.{o.capability[1]}",
                   "family": o.family, "gpus": list(o.gpus)} for o in older_archs()],
    }


def _listing_text() -> list[str]:
    rows = [("arch", "cap", "family", "std", "CUDA", "GPU names (aliases)")]
    for info in known_archs():
        names = ", ".join(info.gpus) + (f" ({', '.join(info.aliases)})" if info.aliases else "")
        rows.append((info.arch.name, f"{info.arch.major}.{info.arch.minor}", info.family,
                     "yes" if info.standard else "-", _cuda(info.min_cuda), names or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    out = []
    for row in rows:
        head = "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  "
        out.extend(textwrap.wrap(row[5], width=WIDTH, initial_indent=head,
                                 subsequent_indent=" " * len(head), break_on_hyphens=False))
    out.append("")
    out.extend(textwrap.wrap("older, not judged: " + "; ".join(
        f"{o.name} {o.family} ({', '.join(o.gpus)})" for o in older_archs()), width=WIDTH,
        subsequent_indent="  ", break_on_hyphens=False))
    out.append("--arch also takes sm_120a, 12.0, 120, compute_120, GPU names as nvidia-smi "
               "prints them")
    out.append("('NVIDIA H100 80GB HBM3'), and all: the standard set (std).")
    return out


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not args.spellings:
        if args.format == "json":
            json.dump(_listing_json(), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write("\n".join(_listing_text()) + "\n")
        return ExitCode.OK
    resolved = []
    for spelling in args.spellings:
        try:
            arch = parse_arch(spelling)
        except ArchError as exc:
            raise UsageError(str(exc)) from None
        info = arch.info
        resolved.append((spelling, arch.name, info.family if info else ""))
    if args.format == "json":
        json.dump([{"spelling": s, "arch": a, "family": f} for s, a, f in resolved],
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        width = max(len(s) for s, _, _ in resolved)
        names = max(len(a) for _, a, _ in resolved)
        for spelling, name, family in resolved:
            sys.stdout.write(f"{spelling.ljust(width)}  {name.ljust(names)}  {family}\n")
    return ExitCode.OK
