"""commands (diff): ``guardscan diff OLD NEW [--arch A]``, the verdicts that changed.

Both targets are scanned as ``guardscan TARGET`` scans them (every backend
option, so the result cache answers and an option only one side has shows as
added or removed), each paired with the FlashInfer it pins unless
``--flashinfer-old`` / ``--flashinfer-new`` say otherwise; ``compare.compare``
then compares the two results and ``report.diff`` prints them.

Exit codes: 0 the diff was printed; 1 ``--fail-on`` matched (a verdict got
worse, a choice was removed, anything changed); 2 bad usage or an unusable
target, naming the side.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from guardscan.acquire import AcquireError
from guardscan.commands.common import (
    TARGET_HELP,
    UsageError,
    add_cache_args,
    clear_progress,
    colour,
    scan_options,
)
from guardscan.results import ExitCode, ScanResult
from guardscan.suggest import option_hint, split_flags

__all__ = ["FAIL_ON", "build_parser", "run"]

#: --fail-on values: what in the diff makes the exit code 1
FAIL_ON = {
    "worse": "a choice safe to try on OLD (supported, unknown) is to avoid on NEW "
             "(blocked, unsupported)",
    "removed": "a choice or option of OLD is gone from NEW",
    "changed": "any difference: a verdict changed, or a choice or option was added or removed",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan diff",
        description="Compare two targets, e.g. two releases: the choice x arch verdicts that\n"
                    "changed, with the deciding line on each side, and the choices and options\n"
                    "added and removed. A cell whose verdict stayed is not a change, however\n"
                    "far its lines moved. Each side pairs with the FlashInfer it pins.",
        epilog="examples:\n"
               "  guardscan diff sglang==0.5.9 sglang==0.5.23 --arch sm120\n"
               "  guardscan diff sglang==0.5.9 ./sglang --arch H100,B200 --format json\n"
               "  guardscan diff sglang==0.5.9 sglang==0.5.9 --arch sm120 \\\n"
               "      --flashinfer-new flashinfer-python==0.7.2   (a FlashInfer upgrade "
               "alone)\n\n"
               "exit codes: 0 printed, 1 --fail-on matched, 2 bad usage or unusable target, "
               "3 internal error.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", metavar="OLD", help="the target to compare from; " + TARGET_HELP
                        .replace("what to scan: ", "").split(". Default:")[0])
    parser.add_argument("new", metavar="NEW", help="the target to compare to (same forms)")
    parser.add_argument(
        "--arch", action="append", metavar="ARCH",
        help="architecture(s), as for the scan: sm120, 12.0, a GPU name, or 'all'; repeatable "
             "and comma-separated (default: the local GPU when nvidia-smi shows one, else all)")
    parser.add_argument("--option", action="append", metavar="FLAG",
                        help="only this backend option (e.g. --moe-runner-backend); repeatable "
                             "and comma-separated (default: every --*-backend option of either "
                             "side)")
    parser.add_argument("--quantization", metavar="METHOD",
                        help="judge both sides under this --quantization method")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text; json: everything, both chains of "
                             "every change, see docs/diff.md)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="text: also the cells whose verdict stayed but whose deciding fact "
                             "changed, the deciding line of each added or removed choice, and "
                             "the choices of added and removed options")
    parser.add_argument("--no-kernels", action="store_true",
                        help="do not read the kernel library on either side: SGLang-only")
    parser.add_argument("--flashinfer-old", metavar="PATH|WHEEL|SPEC",
                        help="kernel library for OLD (default: the version OLD pins)")
    parser.add_argument("--flashinfer-new", metavar="PATH|WHEEL|SPEC",
                        help="kernel library for NEW (default: the version NEW pins)")
    parser.add_argument("--fail-on", action="append", metavar="WHAT", choices=sorted(FAIL_ON),
                        help="exit 1 when the diff has this: " + "; ".join(
                            f"{name}: {what}" for name, what in FAIL_ON.items())
                        + "; repeatable")
    add_cache_args(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser


def _side(args: argparse.Namespace, label: str, target: str,
          flashinfer: str | None) -> tuple[ScanResult, str | None]:
    """One side's scan result (every backend option), its errors naming the side."""
    from guardscan.driver import analyse

    side = argparse.Namespace(**vars(args))
    side.target = target
    side.flashinfer = flashinfer
    side.option_list = None
    opts = scan_options(side)
    inner = opts.progress
    if inner is not None:
        say: Callable[[str], None] = inner
        opts.progress = lambda message: say(f"{label}: {message}")
    try:
        result = analyse(opts).result
    except AcquireError as exc:
        raise UsageError(f"{label} ({target}): {exc}") from None
    finally:
        clear_progress(opts.progress)
    if not result.options:
        what = " ".join(p for p in (result.target.package, result.target.version) if p)
        raise UsageError(f"{label} ({target}): no backend options (--*-backend) found in "
                         f"{what}: not an SGLang source tree?")
    return result, side.arch_source


def run(argv: list[str]) -> int:
    from guardscan.compare import compare
    from guardscan.report.diff import diff_json, render_diff_text

    args = build_parser().parse_intermixed_args(argv)
    old, arch_source = _side(args, "old", args.old, args.flashinfer_old)
    new, _ = _side(args, "new", args.new, args.flashinfer_new)
    flags = split_flags(args.option)
    if flags:
        known = {o.flag for o in old.options} | {o.flag for o in new.options}
        missing = sorted(set(flags) - known)
        if missing:
            raise UsageError(f"{', '.join(missing)} is a backend option of neither side; "
                             f"{option_hint(missing, known)}")
    diff = compare(old, new, flags)
    if args.format == "json":
        json.dump(diff_json(diff), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_diff_text(diff, sys.stdout, verbose=args.verbose, colour=colour(sys.stdout),
                         arch_source=arch_source)
    return _fail_on(args.fail_on, diff.summary())


def _fail_on(wanted: list[str] | None, summary: dict[str, int]) -> int:
    if not wanted:
        return ExitCode.OK
    hits = {
        "worse": summary["worse"] > 0,
        "removed": summary["choices_removed"] + summary["options_removed"] > 0,
        "changed": any(summary[k] for k in ("changed", "choices_added", "choices_removed",
                                            "options_added", "options_removed")),
    }
    return ExitCode.FOUND if any(hits[w] for w in wanted) else ExitCode.OK
