"""commands (matrix): ``guardscan matrix TARGET... | --releases RANGE --arch A,B``, one page of verdicts.

Every target is scanned as ``guardscan TARGET`` scans it (every backend option,
each paired with the FlashInfer it pins), on a process pool (``--jobs``), each
result cached; ``--releases ">=0.5.19"`` adds every release of ``--package``
(sglang) the package index lists in that range, oldest first. The page holds
one table per release and the history of each choice across them.

Exit codes: 0 written; 2 bad usage, or a target that could not be scanned
(the report is still written with the others, and one line on stderr names
each target left out); 3 internal error.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from guardscan.commands.common import (
    UsageError,
    add_cache_args,
    add_flashinfer,
    clear_progress,
    progress,
    scan_options,
    write_whole,
)
from guardscan.results import ExitCode

__all__ = ["build_parser", "run"]

_EXTENSIONS = {".html": "html", ".htm": "html", ".md": "markdown", ".json": "json"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan matrix",
        description="A support matrix: every backend choice of each target on each\n"
                    "architecture, one table per release, and the history of each choice\n"
                    "across the releases with the deciding line on each side of a change.\n"
                    "--format html writes one self-contained page (no network, opens from\n"
                    "file://).",
        epilog="examples:\n"
               "  guardscan matrix --releases '>=0.5.19' --arch sm90,sm100,sm120 -o m.html\n"
               "  guardscan matrix sglang==0.5.20 sglang==0.5.23 --arch sm120 --format "
               "markdown\n"
               "  guardscan matrix ./sglang sglang==0.5.23 --arch H100,B200 -o m.json\n\n"
               "exit codes: 0 written, 2 bad usage or a target not scanned (the others are "
               "written), 3 internal error.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help="checkouts, wheels or specs such as sglang==0.5.23, in the order "
                             "the history reads them")
    parser.add_argument("--releases", metavar="RANGE",
                        help="every release of --package in this version range on the package "
                             "index (pip index versions), oldest first, e.g. '>=0.5.19'")
    parser.add_argument("--package", default="sglang",
                        help="the distribution --releases lists (default: sglang)")
    parser.add_argument(
        "--arch", action="append", metavar="ARCH",
        help="architecture(s), the columns: sm120, 12.0, a GPU name, or 'all'; repeatable and "
             "comma-separated (default: the local GPU when nvidia-smi shows one, else all)")
    parser.add_argument("--quantization", metavar="METHOD",
                        help="judge every target under this --quantization method")
    parser.add_argument("--no-kernels", action="store_true",
                        help="do not read the kernel library: SGLang-only verdicts")
    add_flashinfer(parser)
    parser.add_argument("--format", choices=["html", "markdown", "json"],
                        help="output format (default: from -o's extension, .html, .md or "
                             ".json; else markdown)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write the report here instead of stdout")
    parser.add_argument("-j", "--jobs", type=int, metavar="N",
                        help="targets scanned at once (default: one per core, at most 4)")
    add_cache_args(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser


def _fitted(say: Callable[[str], None]) -> Callable[[str], None]:
    """``say`` with each message cut to fit one terminal line (a wrapped
    line could not be rewritten in place)."""
    room = max(40, shutil.get_terminal_size((100, 24)).columns - len("guardscan: matrix: ...") - 1)

    def fitted(message: str) -> None:
        say("matrix: " + (message if len(message) <= room else message[:room - 1] + "~"))

    return fitted


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    if args.output is not None:
        return _EXTENSIONS.get(args.output.suffix.lower(), "markdown")
    return "markdown"


def run(argv: list[str]) -> int:
    from guardscan.acquire import AcquireError
    from guardscan.matrix import build_matrix, release_specs, scan_targets

    args = build_parser().parse_intermixed_args(argv)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    if not args.targets and not args.releases:
        raise UsageError("nothing to scan: give targets (sglang==0.5.20 sglang==0.5.23, a "
                         "checkout) or --releases RANGE")
    fmt = _format(args)
    args.target = None
    base = scan_options(args)
    say = progress(args.quiet, sys.stderr)
    try:
        targets: list[str] = []
        if args.releases:
            if say is not None:
                say(f"listing {args.package} releases {args.releases}")
            targets = release_specs(args.package, args.releases, cache_dir=args.cache_dir,
                                    offline=args.offline)
        targets += [t for t in args.targets if t not in targets]
        scanned = scan_targets(targets, base, jobs=args.jobs,
                               progress=_fitted(say) if say else None)
    except AcquireError as exc:
        raise UsageError(str(exc)) from None
    finally:
        clear_progress(say)
    matrix = build_matrix([(s.target, s.result) for s in scanned if s.result is not None],
                          [(s.target, s.error) for s in scanned if s.result is None])
    _write(matrix, fmt, args.output)
    if matrix.failed:
        print("guardscan: error: not scanned: " + "; ".join(
            f"{target}: {error}" for target, error in matrix.failed), file=sys.stderr)
        return ExitCode.USAGE
    return ExitCode.OK


def _write(matrix: object, fmt: str, output: Path | None) -> None:
    from guardscan.matrix import Matrix, render_matrix

    assert isinstance(matrix, Matrix)
    if output is None:
        render_matrix(matrix, sys.stdout, fmt)
        return
    write_whole(output, lambda stream: render_matrix(matrix, stream, fmt))
