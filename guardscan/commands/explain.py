"""commands (explain): ``guardscan explain CHOICE [--option FLAG] --arch ARCH [TARGET]``."""

from __future__ import annotations

import argparse
import sys

from guardscan.commands.common import UsageError, add_common, analyse_args, fail_on

__all__ = ["build_parser", "run"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan explain",
        description="Print the evidence chain for one choice on one architecture, one hop "
                    "per line with path:line, from the option to the deciding fact.")
    parser.add_argument("choice", help="the backend choice, e.g. flashinfer_trtllm")
    parser.add_argument("--option", metavar="FLAG",
                        help="the option it belongs to (needed when several options offer "
                             "the same choice)")
    parser.add_argument("--format", default="text", choices=["text", "json"],
                        help="output format (default: text; json: the scan's verdict entries "
                             "with a 'deciding' object, see docs/json.md)")
    add_common(parser)
    return parser


def run(argv: list[str]) -> int:
    from guardscan.report.explain import ExplainError, explain

    args = build_parser().parse_intermixed_args(argv)
    args.option_list = [args.option] if args.option else None
    analysis = analyse_args(args)
    try:
        shown = explain(analysis.result, args.choice, args.option, sys.stdout, args.format)
    except ExplainError as exc:
        raise UsageError(str(exc)) from None
    return fail_on(args.fail_on, shown)
