"""cli (the command line): ``guardscan [TARGET] --arch sm120`` and ``guardscan explain CHOICE ...``.

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
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from guardscan import __version__
from guardscan.acquire import AcquireError
from guardscan.arch import ArchError, local_archs, parse_arch_list, standard_archs
from guardscan.results import BackendVerdict, ExitCode

__all__ = ["build_parser", "main"]

_TARGET_HELP = (
    "what to scan: an SGLang checkout (repo root or the sglang package dir), a wheel "
    "file, or a requirement spec such as sglang==0.5.9 (downloaded once with pip "
    "--no-deps --only-binary=:all:, never built or imported). Default: the installed "
    "sglang, found without importing it.")

_EPILOG = """\
examples:
  guardscan sglang==0.5.9 --arch sm120
  guardscan /path/to/sglang --arch "RTX PRO 6000" --option --moe-runner-backend
  guardscan sglang==0.5.23 --arch B200,H100 --quantization modelopt_fp4 --format json
  guardscan explain flashinfer_trtllm --option --moe-runner-backend --arch sm120 sglang==0.5.9

verdicts:
  blocked      SGLang itself rejects the choice on that arch (a gate raises)
  unsupported  accepted, but a kernel on its path does not run on that arch
  supported    positive evidence it runs there, and nothing blocks
  unknown      no architecture evidence either way (safe to try, no promise)

exit codes: 0 scan done, 1 --fail-on matched, 2 bad usage or unusable target,
3 internal error.
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", default=None, help=_TARGET_HELP)
    parser.add_argument(
        "--arch", action="append", metavar="ARCH",
        help="architecture(s): sm120, sm_120a, 12.0, 120, a GPU name (H100, B200, "
             "'RTX PRO 6000', GB10), or 'all'; repeatable and comma-separated "
             "(default: the local GPU when nvidia-smi shows one, else all = sm80 sm86 sm89 "
             "sm90 sm100 sm103 sm110 sm120 sm121)")
    parser.add_argument(
        "--quantization", metavar="METHOD",
        help="judge choices as they run under this --quantization method of the scanned "
             "SGLang (its gates count, other methods' do not)")
    parser.add_argument("--no-kernels", action="store_true",
                        help="do not read the kernel library (FlashInfer): SGLang-only verdicts")
    parser.add_argument("--flashinfer", metavar="PATH|WHEEL|SPEC",
                        help="kernel library to pair with (default: the version the target "
                             "pins, else the installed flashinfer)")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="cache for downloads and parsed facts (default: "
                             "$GUARDSCAN_CACHE_DIR, $XDG_CACHE_HOME/guardscan or "
                             "~/.cache/guardscan)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the cache of facts, results and "
                             "kernel answers (downloads are still cached)")
    parser.add_argument("--offline", action="store_true",
                        help="never call pip; use cached wheels only")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--fail-on", action="append", metavar="VERDICT",
                        choices=["blocked", "unsupported", "unknown", "supported"],
                        help="exit 1 when any judged choice has this verdict (for pre-flight "
                             "checks and hooks); repeatable")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan",
        description="Which SGLang backend choices run on which NVIDIA GPU architecture, "
                    "answered from source text alone, before any GPU launch. "
                    "Subcommand: 'guardscan explain CHOICE ...' prints one evidence chain.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(parser)
    parser.add_argument("--option", action="append", metavar="FLAG",
                        help="only this backend option (e.g. --moe-runner-backend); "
                             "repeatable (default: every --*-backend option)")
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
    parser.add_argument("--version", action="version", version=f"guardscan {__version__}")
    return parser


def build_explain_parser() -> argparse.ArgumentParser:
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
    _common(parser)
    return parser


class UsageError(Exception):
    pass


def _is_terminal(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a terminal; False for None (pythonw), a closed
    stream, or a stand-in without ``isatty``."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _progress(quiet: bool, stream: IO[str] | None):  # type: ignore[no-untyped-def]
    """Progress on a terminal only, rewritten in place; silent in pipes and files,
    so stderr carries nothing but errors for scripts and CI logs."""
    if quiet or stream is None or not _is_terminal(stream):
        return None

    def say(message: str) -> None:
        try:
            stream.write(f"\rguardscan: {message}...\033[K")
            stream.flush()
        except (OSError, ValueError):  # a closed terminal must not fail the scan
            pass

    return say


def _scan_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from guardscan.scan import ScanOptions

    args.arch_source = None
    if args.arch:
        try:
            archs = parse_arch_list(args.arch)
        except ArchError as exc:
            raise UsageError(str(exc)) from None
    else:
        archs, how = local_archs()
        if archs:
            args.arch_source = how
        else:
            archs = standard_archs()
            args.arch_source = f"no --arch, {how}: every standard arch"
    return ScanOptions(
        target=args.target,
        archs=archs,
        quantization=args.quantization,
        options=getattr(args, "option_list", None),
        kernels=not args.no_kernels,
        flashinfer=args.flashinfer,
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        offline=args.offline,
        progress=_progress(args.quiet, sys.stderr),
    )


def _analyse(args: argparse.Namespace, *, full: bool = False):  # type: ignore[no-untyped-def]
    """The scan, with its progress line cleared however it ends, refusing a
    target with nothing to judge (not SGLang, or its options unreadable)."""
    from guardscan.scan import analyse

    opts = _scan_options(args)
    opts.full = full
    try:
        analysis = analyse(opts)
    finally:
        _clear_progress(opts.progress)
    result = analysis.result
    if not result.options:
        failed = [d for d in result.diagnostics if d.code.startswith("file-")]
        why = (f"; {len(failed)} file(s) could not be read, first {failed[0].path}: "
               f"{failed[0].message}" if failed else "")
        what = " ".join(part for part in (result.target.package, result.target.version) if part)
        raise UsageError(f"no backend options (--*-backend) found in {what} at "
                         f"{result.target.path}: not an SGLang source tree?{why}")
    return analysis


def _run_scan(argv: list[str]) -> int:
    from guardscan.report import render

    args = build_parser().parse_intermixed_args(argv)
    args.option_list = args.option
    analysis = _analyse(args, full=args.graph is not None)
    result = analysis.result
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
        try:
            with args.output.open("w", encoding="utf-8") as stream:
                render(result, stream, args.format, options)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        options["color"] = _colour(sys.stdout)
        render(result, sys.stdout, args.format, options)
    return _fail_on(args.fail_on, result.backends)


def _colour(stream: IO[str]) -> bool:
    """Colour for a terminal only, and never when NO_COLOR is set (no-color.org)."""
    return _is_terminal(stream) and not os.environ.get("NO_COLOR")


def _fail_on(wanted: list[str] | None, verdicts: Iterable[BackendVerdict]) -> int:
    if wanted and any(b.verdict.value in set(wanted) for b in verdicts):
        return ExitCode.FOUND
    return ExitCode.OK


def _run_explain(argv: list[str]) -> int:
    from guardscan.report.explain import ExplainError, explain

    args = build_explain_parser().parse_intermixed_args(argv)
    args.option_list = [args.option] if args.option else None
    analysis = _analyse(args)
    try:
        shown = explain(analysis.result, args.choice, args.option, sys.stdout, args.format)
    except ExplainError as exc:
        raise UsageError(str(exc)) from None
    return _fail_on(args.fail_on, shown)


def _clear_progress(progress: object) -> None:
    if progress is not None:
        try:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def _glue_option_values(argv: list[str]) -> list[str]:
    """Let ``--option --moe-runner-backend`` through: argparse would read the value
    as a flag of its own."""
    out: list[str] = []
    i = 0
    while i < len(argv):
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


def main(argv: list[str] | None = None) -> int:
    argv = _glue_option_values(list(sys.argv[1:] if argv is None else argv))
    try:
        if argv and argv[0] == "explain":
            return _run_explain(argv[1:])
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
