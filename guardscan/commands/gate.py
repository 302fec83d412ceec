"""commands (gate): ``guardscan gate --arch ARCH [--option FLAG ...] [--write] [TARGET]``.

Scans the target on every standard architecture and ARCH (a guard must be
shown false wherever a choice runs), plans a fail-fast check for each choice
``unsupported`` on ARCH (``guardscan.gate``), and prints the edit as a unified
diff, or with ``--write`` makes it (a checkout only).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from guardscan.commands.common import (
    TARGET_HELP,
    UsageError,
    add_cache_args,
    add_flashinfer,
    analyse_args,
)
from guardscan.results import ExitCode

if TYPE_CHECKING:
    from guardscan.arch import Arch
    from guardscan.driver import Analysis

__all__ = ["build_parser", "run"]

#: libcst is one of guardscan's dependencies: without it the install is broken
INSTALL_HINT = "guardscan gate needs libcst (a dependency of guardscan, missing here): " \
    "pip install libcst"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan gate",
        description="Propose fail-fast checks for a fork: for each backend choice that is "
                    "unsupported on ARCH (a kernel excludes it, SGLang accepts it), a check in "
                    "the version's own server-argument validation that raises at start-up, "
                    "written with a guard function the tree defines. Prints a unified diff; "
                    "--write edits the files (libcst: formatting and comments kept).",
        epilog="Exit codes: 0 every unsupported choice has a check (diff printed or written), "
               "or nothing to gate; 1 some unsupported choice could not be gated (why on "
               "stderr; the others are still printed or written); 2 bad usage or target; "
               "3 internal error.")
    parser.add_argument("target", nargs="?", default=None, help=TARGET_HELP)
    parser.add_argument("--arch", required=True, metavar="ARCH",
                        help="the one architecture to gate for: sm120, 12.0, a GPU name "
                             "('RTX PRO 6000', B200, GB10), ...")
    parser.add_argument("--option", action="append", metavar="FLAG", dest="option_list",
                        help="only these options (repeatable; default: every backend option)")
    parser.add_argument("--write", action="store_true",
                        help="edit the files in place (TARGET must be a checkout directory)")
    add_flashinfer(parser)
    add_cache_args(parser)
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress and no summary on stderr")
    return parser


def _libcst() -> ModuleType:
    try:
        import libcst
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return libcst


def _writable(target: str | None) -> None:
    """``--write`` edits a checkout only: a spec or wheel lives in the download
    cache, and the installed package is not the user's source."""
    if target is not None and Path(target).expanduser().is_dir():
        return
    what = "the installed sglang" if target is None else target
    raise UsageError(f"--write edits a checkout directory only, not {what}: copy or extract "
                     "the tree (or point at a checkout), then run gate --write on that path")


def run(argv: list[str]) -> int:
    from guardscan.arch import ArchError, parse_arch_list, standard_archs

    args = build_parser().parse_intermixed_args(argv)
    _libcst()
    if args.write:
        _writable(args.target)
    try:
        targets = parse_arch_list([args.arch])
    except ArchError as exc:
        raise UsageError(str(exc)) from None
    if len(targets) != 1:
        raise UsageError(f"--arch {args.arch}: gate takes one architecture, not "
                         f"{len(targets)}")
    arch = targets[0]
    judged = standard_archs()
    if arch not in judged:
        judged = sorted([*judged, arch])
    args.arch = [a.name for a in judged]
    args.quantization = None
    args.no_kernels = False
    analysis = analyse_args(args)
    return _gate(args, analysis, arch, judged)


def _gate(args: argparse.Namespace, analysis: Analysis, arch: Arch, judged: list[Arch]) -> int:
    from guardscan.gate import plan_gates
    from guardscan.guards import Vocabulary
    from guardscan.index import Index

    tree = analysis.tree
    result = analysis.result
    cache_dir = None if args.no_cache else (args.cache_dir or _default_cache())
    index = Index(tree, cache_dir)
    plan = plan_gates(result, arch, index, Vocabulary(index), judged)
    what = " ".join(p for p in (result.target.package, result.target.version) if p)
    if result.kernels:
        kernel = result.kernels[0]
        what += f" with {kernel.package} {kernel.version or ''}".rstrip()
    for skipped in plan.not_gated:
        print(f"guardscan gate: not gated: {skipped.option} {skipped.choice}: {skipped.reason}",
              file=sys.stderr)
    if not plan.checks:
        if not plan.not_gated:
            print(f"nothing to gate: no choice is unsupported on {arch.name} ({what})")
        return ExitCode.FOUND if plan.not_gated else ExitCode.OK
    from guardscan.gate.write import apply_checks

    edits: list[tuple[str, str, str]] = []
    for rel in plan.files:
        path = tree.path_of(rel)
        with open(path, encoding="utf-8", newline="") as handle:
            before = handle.read()
        try:
            after = apply_checks(before, [c for c in plan.checks if c.placement.rel == rel])
        except ValueError as exc:
            raise UsageError(f"{rel}: {exc}") from None
        edits.append((rel, before, after))
    if args.write:
        for rel, _, after in edits:
            with open(tree.path_of(rel), "w", encoding="utf-8", newline="") as handle:
                handle.write(after)
            print(f"{rel}: {sum(c.placement.rel == rel for c in plan.checks)} check(s) added")
    else:
        for rel, before, after in edits:
            sys.stdout.writelines(difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True),
                f"a/{rel}", f"b/{rel}"))
    if not args.quiet:
        done = "written" if args.write else "proposed"
        print(f"guardscan gate: {len(plan.checks)} check(s) {done} for {arch.name} in {what}"
              + ("" if args.write else "; --write on a checkout applies them"), file=sys.stderr)
    return ExitCode.FOUND if plan.not_gated else ExitCode.OK


def _default_cache() -> Path:
    from guardscan.acquire import default_cache_dir

    return default_cache_dir()
