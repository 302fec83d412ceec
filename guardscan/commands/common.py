"""commands (common): what every subcommand shares, the target/arch/cache
arguments, the scan run from parsed arguments, progress, ``--fail-on``.

``UsageError`` is bad usage or input: ``cli.main`` prints it as one line and
exits 2 (``ExitCode.USAGE``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from guardscan.arch import ArchError, local_archs, parse_arch_list, standard_archs
from guardscan.results import BackendVerdict, ExitCode
from guardscan.suggest import split_flags

__all__ = [
    "TARGET_HELP",
    "UsageError",
    "add_cache_args",
    "add_common",
    "add_flashinfer",
    "add_reports_args",
    "analyse_args",
    "clear_progress",
    "colour",
    "fail_on",
    "is_terminal",
    "progress",
    "read_field_reports",
    "scan_options",
]

TARGET_HELP = (
    "what to scan: an SGLang checkout (repo root or the sglang package dir), a wheel "
    "file, or a requirement spec such as sglang==0.5.9 (downloaded once with pip "
    "--no-deps --only-binary=:all:, never built or imported). Default: the installed "
    "sglang, found without importing it.")


def add_common(parser: argparse.ArgumentParser, *, with_fail_on: bool = True,
               target_help: str = TARGET_HELP) -> None:
    """The target, arch, kernel and cache arguments; ``with_fail_on=False``
    leaves out ``--fail-on`` for a subcommand whose exit status means
    something else (``baseline --check``), ``target_help`` says what its
    TARGET defaults to."""
    parser.add_argument("target", nargs="?", default=None, help=target_help)
    parser.add_argument(
        "--arch", action="append", metavar="ARCH",
        help="architecture(s): sm120, sm_120a, 12.0, 120, a GPU name (H100, B200, "
             "'RTX PRO 6000', GB10, or as nvidia-smi prints it), or 'all' (guardscan archs "
             "lists them); repeatable and comma-separated "
             "(default: the local GPU when nvidia-smi shows one, else all = sm80 sm86 sm89 "
             "sm90 sm100 sm103 sm110 sm120 sm121)")
    parser.add_argument(
        "--quantization", metavar="METHOD",
        help="judge choices as they run under this --quantization method of the scanned "
             "SGLang (its gates count, other methods' do not)")
    parser.add_argument(
        "--model-config", metavar="FILE",
        help="a model's config.json (read as JSON, never loaded): judge for that model (its "
             "architectures, model_type and, as the scanned SGLang derives it, MLA attention) "
             "instead of the common one; without --quantization, under the method its "
             "quantization_config.quant_method names, as SGLang would")
    parser.add_argument("--no-kernels", action="store_true",
                        help="do not read the kernel library (FlashInfer): SGLang-only verdicts")
    add_flashinfer(parser)
    add_cache_args(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    if not with_fail_on:
        return
    parser.add_argument("--fail-on", action="append", metavar="VERDICT",
                        choices=["blocked", "unsupported", "unknown", "supported"],
                        help="exit 1 when any judged choice has this verdict (for pre-flight "
                             "checks and hooks); repeatable")


def add_flashinfer(parser: argparse.ArgumentParser) -> None:
    """``--flashinfer``: the kernel library to pair the target with."""
    parser.add_argument("--flashinfer", metavar="PATH|WHEEL|SPEC",
                        help="kernel library to pair with (default: the version the target "
                             "pins, else the installed flashinfer)")
    parser.add_argument("--compiled", metavar="all|none|DIST[,DIST]",
                        help="which compiled kernel packages the target pins to read "
                             "(sglang-kernel, sgl-flash-mla, sgl-deep-ep, ...: their fatbins say "
                             "which GPUs their code is built for; default: all; "
                             "--no-kernels reads none)")


def add_cache_args(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir``, ``--no-cache`` and ``--offline``, as every command has them."""
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="cache for downloads and parsed facts (default: "
                             "$GUARDSCAN_CACHE_DIR, $XDG_CACHE_HOME/guardscan or "
                             "~/.cache/guardscan)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the cache of facts, results and "
                             "kernel answers (downloads are still cached)")
    parser.add_argument("--offline", action="store_true",
                        help="never call pip; use cached wheels only")


def add_reports_args(parser: argparse.ArgumentParser) -> None:
    """``--reports FILE`` and ``--no-reports``: the field reports shown beside
    the verdicts (docs/field-reports.md)."""
    parser.add_argument("--reports", action="append", type=Path, default=[], metavar="FILE",
                        help="also read this field-report file (.json, or .toml in the same "
                             "schema) beside guardscan's own and the target checkout's "
                             ".guardscan-reports.toml; repeatable")
    parser.add_argument("--no-reports", action="store_true",
                        help="show no field reports (what people saw running a choice); "
                             "verdicts never depend on them")


def read_field_reports(args: argparse.Namespace, root: Path | None = None):  # type: ignore[no-untyped-def]
    """The field reports a command shows: none with ``--no-reports``; else
    guardscan's own, the ``--reports`` files, and, with ``root`` (the scanned
    package's root), a target checkout's own file. A bad file is a UsageError."""
    from guardscan.field import FieldReportError, checkout_roots, load_reports

    if getattr(args, "no_reports", False):
        return ()
    roots = checkout_roots(args.target, root) if root is not None else []
    try:
        return load_reports(args.reports, roots)
    except FieldReportError as exc:
        raise UsageError(f"field reports: {exc}") from None


class UsageError(Exception):
    pass


def is_terminal(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a terminal; False for None (pythonw), a closed
    stream, or a stand-in without ``isatty``."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def progress(quiet: bool, stream: IO[str] | None):  # type: ignore[no-untyped-def]
    """Progress on a terminal only, rewritten in place; silent in pipes and files,
    so stderr carries nothing but errors for scripts and CI logs."""
    if quiet or stream is None or not is_terminal(stream):
        return None

    def say(message: str) -> None:
        try:
            stream.write(f"\rguardscan: {message}...\033[K")
            stream.flush()
        except (OSError, ValueError):  # a closed terminal must not fail the scan
            pass

    return say


def scan_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from guardscan.driver import ScanOptions

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
        quantization=_quantization(args),
        model_config=Path(args.model_config) if getattr(args, "model_config", None) else None,
        options=split_flags(getattr(args, "option_list", None)),
        kernels=not args.no_kernels,
        flashinfer=args.flashinfer,
        compiled=getattr(args, "compiled", None),
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        offline=args.offline,
        progress=progress(args.quiet, sys.stderr),
    )


def _quantization(args: argparse.Namespace) -> str | None:
    """``--quantization``, else the method ``--model-config`` names (said on
    stderr); a config file that can't be read is a usage error."""
    given: str | None = args.quantization
    path = getattr(args, "model_config", None)
    if not path:
        return given
    from guardscan.checkpoint_config import read_config

    if not Path(path).is_file():
        raise UsageError(f"--model-config {path}: no such file")
    config = read_config(Path(path))
    if config.problem is not None:
        raise UsageError(f"--model-config {path}: {config.problem}")
    if given is not None:
        return given
    if not args.quiet:
        print(f"guardscan: {config.note(config.method, None)}", file=sys.stderr)
    return config.method


def analyse_args(args: argparse.Namespace, *, full: bool = False):  # type: ignore[no-untyped-def]
    """The scan, with its progress line cleared however it ends, refusing a
    target with nothing to judge (not SGLang, or its options unreadable)."""
    from guardscan.driver import analyse

    opts = scan_options(args)
    opts.full = full
    try:
        analysis = analyse(opts)
    finally:
        clear_progress(opts.progress)
    result = analysis.result
    if not result.options:
        failed = [d for d in result.diagnostics if d.code.startswith("file-")]
        why = (f"; {len(failed)} file(s) could not be read, first {failed[0].path}: "
               f"{failed[0].message}" if failed else "")
        what = " ".join(part for part in (result.target.package, result.target.version) if part)
        raise UsageError(f"no backend options (--*-backend) found in {what} at "
                         f"{result.target.path}: not an SGLang source tree?{why}")
    return analysis


def colour(stream: IO[str]) -> bool:
    """Colour for a terminal only, and never when NO_COLOR is set (no-color.org)."""
    return is_terminal(stream) and not os.environ.get("NO_COLOR")


def fail_on(wanted: list[str] | None, verdicts: Iterable[BackendVerdict]) -> int:
    if wanted and any(b.verdict.value in set(wanted) for b in verdicts):
        return ExitCode.FOUND
    return ExitCode.OK


def clear_progress(progress: object) -> None:
    if progress is not None:
        try:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def write_whole(path: Path, write: Callable[[IO[str]], None]) -> None:
    """Call ``write`` with a stream into ``path``, through a temporary file
    beside it that is moved into place once whole: output that fails midway
    (an internal error) leaves no partial file, and an earlier one at
    ``path`` stays as it was. The text streams to the file (never held
    whole). A path that is not a regular file (``/dev/stdout``, a pipe) is
    written as it is. An unwritable place is a ``UsageError``."""
    if path.exists() and not path.is_file():
        try:
            with path.open("w", encoding="utf-8") as stream:
                write(stream)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            write(stream)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
