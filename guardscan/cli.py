"""cli (the command line): ``guardscan [TARGET] --arch sm120``, and the subcommands of
``guardscan.commands`` (``explain``, ``check``, ``baseline``, ``diff``, ``gate``,
``reports``).

Exit codes (``results.ExitCode``): 0 the scan ran; 1 ``--fail-on`` matched a
verdict; 2 bad usage or an unusable target (one line on stderr); 3 an internal
error (one line; set GUARDSCAN_DEBUG=1 for the traceback).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import traceback
from pathlib import Path

from guardscan import __version__
from guardscan.acquire import AcquireError
from guardscan.commands import SUBCOMMANDS, load
from guardscan.commands.common import (
    UsageError,
    add_common,
    add_reports_args,
    analyse_args,
    colour,
    fail_on,
    read_field_reports,
    write_whole,
)
from guardscan.results import ExitCode

__all__ = ["build_explain_parser", "build_parser", "main"]

_EPILOG = """\
examples:
  guardscan sglang==0.5.9 --arch sm120
  guardscan /path/to/sglang --arch "RTX PRO 6000" --option --moe-runner-backend
  guardscan sglang==0.5.23 --arch B200,H100 --quantization modelopt_fp4 --format json
  guardscan explain flashinfer_trtllm --option --moe-runner-backend --arch sm120 sglang==0.5.9
  guardscan check --arch sm120 sglang==0.5.9 -- sglang serve --model-path m \\
      --moe-runner-backend flashinfer_trtllm
  guardscan diff sglang==0.5.9 sglang==0.5.23 --arch sm120
  guardscan baseline --arch sm120 .          (then: guardscan baseline --check .)
  guardscan gate --arch sm120 sglang==0.5.9  (--write edits the tree)
  guardscan reports --arch sm120 sglang==0.5.9   (what the field saw, with links)

subcommands (guardscan SUBCOMMAND --help for each):
{subcommands}

verdicts:
  blocked      SGLang itself rejects the choice on that arch (a gate raises)
  unsupported  accepted, but a kernel on its path does not run on that arch
  supported    positive evidence it runs there, and nothing blocks
  unknown      no architecture evidence either way (safe to try, no promise)

field reports (what people saw running a choice, with the thread) show beside
the verdicts, never deciding them: guardscan's own, --reports FILE, and a target
checkout's .guardscan-reports.toml (docs/field-reports.md).

exit codes: 0 scan done, 1 --fail-on matched, 2 bad usage, an unusable target
or a bad report file, 3 internal error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan",
        description="Which SGLang backend choices run on which NVIDIA GPU architecture, "
                    "answered from source text alone, before any GPU launch. "
                    "Subcommands: " + ", ".join(SUBCOMMANDS) + " (listed below).",
        epilog=_EPILOG.format(subcommands="\n".join(
            f"  {name:<9}{summary}" for name, (_, summary) in SUBCOMMANDS.items())),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(parser)
    parser.add_argument("--option", action="append", metavar="FLAG",
                        help="only this backend option (e.g. --moe-runner-backend); "
                             "repeatable and comma-separated (default: every --*-backend "
                             "option)")
    parser.add_argument("--format", default="text",
                        choices=["text", "json", "sarif", "markdown"],
                        help="output format (default: text)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="text: the full table, every choice on every architecture, "
                             "and every note")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write the report here instead of stdout")
    parser.add_argument("--graph", type=Path, metavar="FILE",
                        help="also write the support graph (.json node-link, .graphml, .dot)")
    add_reports_args(parser)
    parser.add_argument("--version", action="version", version=f"guardscan {__version__}")
    return parser


def _run_scan(argv: list[str]) -> int:
    from guardscan.field import attach_reports
    from guardscan.report import render

    args = build_parser().parse_intermixed_args(argv)
    args.option_list = args.option
    read_field_reports(args)  # a bad report file fails before the scan
    analysis = analyse_args(args, full=args.graph is not None)
    # beside the verdicts, never deciding them; after the scan and its caches
    result = attach_reports(analysis.result, read_field_reports(args, analysis.tree.root))
    if args.graph:
        # Before the report: a graph file name write_graph refuses is a usage
        # error, and should not leave a report behind as if all went well.
        from guardscan.graph import build_graph, write_graph

        try:
            write_graph(build_graph(analysis), args.graph)
        except ValueError as exc:  # an extension write_graph has no writer for
            raise UsageError(f"--graph: {exc}") from None
        except OSError as exc:
            raise UsageError(f"cannot write {args.graph}: {exc.strerror or exc}") from None
    options = {"verbose": args.verbose, "arch_source": args.arch_source}
    if args.output:
        write_whole(args.output, lambda stream: render(result, stream, args.format, options))
    else:
        options["color"] = colour(sys.stdout)
        render(result, sys.stdout, args.format, options)
    return fail_on(args.fail_on, result.backends)


def build_explain_parser() -> argparse.ArgumentParser:
    """``guardscan explain --help`` (kept here for callers of the old name)."""
    return load("explain").build_parser()  # type: ignore[no-any-return]


def _glue_option_values(argv: list[str]) -> list[str]:
    """Let ``--option --moe-runner-backend`` through: argparse would read the value
    as a flag of its own. Nothing after ``--`` is touched (``check`` takes a
    launch command there)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            return out + argv[i:]
        if argv[i] == "--option" and i + 1 < len(argv):
            out.append(f"--option={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _one_line(message: str) -> str:
    """An error is one line, even when it quotes a path or spec holding a line end."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def _misspelt_subcommand(word: str) -> str | None:
    """An error line for a first word that is neither a subcommand nor a
    target but close to a subcommand (``guardscan expalin``), else None. A
    path or spec that exists, or looks like one, is a target."""
    from guardscan.suggest import closest, did_you_mean

    if word.startswith("-") or any(c in word for c in "/\\=<>~.@:") or Path(word).exists():
        return None
    near = closest(word, SUBCOMMANDS)
    if not near:
        return None
    return (f"unknown command {word!r}: {did_you_mean(near)} (a target is a checkout, a "
            "wheel or a spec such as sglang==0.5.9)")


def main(argv: list[str] | None = None) -> int:
    argv = _glue_option_values(list(sys.argv[1:] if argv is None else argv))
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return int(load(argv[0]).run(argv[1:]))
        misspelt = _misspelt_subcommand(argv[0]) if argv else None
        if misspelt is not None:
            raise UsageError(misspelt)
        return _run_scan(argv)
    except (AcquireError, UsageError) as exc:
        print(f"guardscan: error: {_one_line(str(exc))}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("guardscan: interrupted", file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as exc:  # noqa: BLE001 - a bug in guardscan, never the user's input
        if os.environ.get("GUARDSCAN_DEBUG"):
            traceback.print_exc()
        print(f"guardscan: internal error: {type(exc).__name__}: {exc} "
              "(set GUARDSCAN_DEBUG=1 for the traceback)", file=sys.stderr)
        return ExitCode.INTERNAL


def entry() -> None:
    """The console script and ``python -m guardscan``: ``main``, then a quick exit.

    The collector stays off for the whole run (see ``scan._collector_paused``),
    and the process ends without tearing down the scan's millions of objects
    one by one: measured on sglang 0.5.23, that teardown took about 5 s after a
    45 s cold scan. Output is flushed first.
    """
    gc.disable()
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: nothing more to say
        pass
    os._exit(int(code))
