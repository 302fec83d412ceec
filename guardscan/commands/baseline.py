"""commands (baseline): ``guardscan baseline [TARGET] --arch ...`` writes the verdict lock
file; ``guardscan baseline --check`` (the pre-commit hook) scans again with the lock's
settings and fails on a verdict made worse or a new unresolved guard.

The lock's layout and the comparison are ``guardscan.lockfile`` (pure, no
scan); this module runs the scan and reads and writes the file.

Defaults, so the hook needs no arguments: the lock file is ``.guardscan.json``
in the working directory (``--file``); a setting not given on the command line
is taken from the lock file already there; TARGET defaults to the lock's
target, else ``.`` (the checkout you commit to). The kernel library is the
FlashInfer the tree pins (read again at each check), else ``--flashinfer``,
else the installed one, recorded by version so the check pairs the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections import Counter
from pathlib import Path

from guardscan import __version__
from guardscan.commands.common import UsageError, add_common, analyse_args
from guardscan.lockfile import (
    DEFAULT_LOCK,
    Lock,
    LockError,
    Ref,
    Settings,
    compare,
    describe,
    dumps,
    loads,
    lock_from_result,
)
from guardscan.results import ExitCode, ScanNote

__all__ = ["build_parser", "run"]

_TARGET_HELP = (
    "the SGLang tree to record: a checkout (repo root or the sglang package dir), a wheel "
    "or a spec such as sglang==0.5.9 (default: the target the lock file records, else '.')")

_EPILOG = """\
examples:
  guardscan baseline --arch sm120 --option --moe-runner-backend .
  guardscan baseline --check            (what the pre-commit hook runs)
  guardscan baseline                    (re-record with the lock file's settings)

exit codes: 0 recorded, or nothing worse than the lock; 1 --check: a verdict
worse than the lock (supported/unknown -> blocked/unsupported) or a new
unresolved guard; 2 bad usage, an unusable target, no or unreadable lock file.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardscan baseline",
        description="Record the verdicts of a tree in a lock file to review and commit\n"
                    "(.guardscan.json: each option x choice x arch verdict with a fingerprint\n"
                    "of its deciding line, no line numbers). With --check (the pre-commit\n"
                    "hook), scan again with the recorded settings and fail when a verdict\n"
                    "got worse or a new arch guard cannot be resolved.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="compare a new scan with the lock file instead of writing it "
                             "(the pre-commit hook); takes every setting from the lock file")
    parser.add_argument("--file", type=Path, metavar="FILE",
                        help=f"the lock file (default: {DEFAULT_LOCK} in the working "
                             "directory); paths in it are relative to its directory")
    parser.add_argument("--option", action="append", metavar="FLAG",
                        help="only this backend option (e.g. --moe-runner-backend); "
                             "repeatable (default: the lock's, else every --*-backend option)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="--check: one line per changed verdict, also those that fail "
                             "nothing")
    add_common(parser, with_fail_on=False, target_help=_TARGET_HELP)
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_intermixed_args(argv)
    lock_path: Path = args.file or Path(DEFAULT_LOCK)
    if args.check:
        return _check(args, lock_path)
    return _record(args, lock_path)


# -- paths in the lock: relative to its directory -------------------------------------------

def _lock_dir(lock_path: Path) -> Path:
    return lock_path.parent if str(lock_path.parent) else Path(".")


def _ref_of(value: str, lock_path: Path) -> Ref:
    """A target or kernel library as given on the command line, as the lock names it."""
    if Path(value).expanduser().exists():
        absolute = Path(value).expanduser().resolve()
        rel = os.path.relpath(absolute, _lock_dir(lock_path).resolve())
        return Ref("path", Path(rel).as_posix())
    return Ref("spec", value)


def _resolve(ref: Ref, lock_path: Path) -> str | None:
    """What to scan for a ref of the lock (None: the installed package)."""
    if ref.kind == "installed":
        return None
    if ref.kind == "path":
        return os.path.normpath(_lock_dir(lock_path) / ref.value)
    return ref.value


def _read_lock(lock_path: Path) -> Lock:
    try:
        text = lock_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"no lock file {lock_path}: run `guardscan baseline --arch ARCH [TARGET]` first "
            "(in the repo root), review it and commit it") from None
    except OSError as exc:
        raise UsageError(f"cannot read {lock_path}: {exc.strerror or exc}") from None
    try:
        return loads(text, str(lock_path))
    except LockError as exc:
        raise UsageError(str(exc)) from None


def _scan_args(args: argparse.Namespace, settings: Settings, lock_path: Path,
               target: str | None) -> None:
    """Point ``args`` (as ``analyse_args`` reads them) at ``settings``."""
    args.target = target if target is not None else _resolve(settings.target, lock_path)
    args.arch = list(settings.archs) or None
    args.option_list = list(settings.options) if settings.options is not None else None
    args.quantization = settings.quantization
    args.no_kernels = not settings.kernels
    args.flashinfer = (_resolve(settings.flashinfer, lock_path)
                       if settings.flashinfer is not None else None)


# -- guardscan baseline ---------------------------------------------------------------------

def _record(args: argparse.Namespace, lock_path: Path) -> int:
    previous: Lock | None = None
    if lock_path.exists():
        try:
            previous = loads(lock_path.read_text(encoding="utf-8"), str(lock_path))
        except (LockError, OSError, UnicodeDecodeError) as exc:
            print(f"note: not reusing the settings of {lock_path} ({exc}); recording with "
                  "the command line's", file=sys.stderr)
    before = previous.settings if previous is not None else None

    target = (_ref_of(args.target, lock_path) if args.target is not None
              else before.target if before is not None
              else _ref_of(".", lock_path))
    flashinfer = (_ref_of(args.flashinfer, lock_path) if args.flashinfer is not None
                  else before.flashinfer if before is not None else None)
    kernels = not args.no_kernels and (
        args.flashinfer is not None or before is None or before.kernels)
    wanted = Settings(
        target=target,
        archs=tuple(args.arch) if args.arch else before.archs if before is not None else (),
        options=tuple(args.option) if args.option
        else before.options if before is not None else None,
        quantization=args.quantization if args.quantization is not None
        else before.quantization if before is not None else None,
        kernels=kernels,
        flashinfer=flashinfer if kernels else None,
    )
    no_kernels = bool(args.no_kernels)
    _scan_args(args, wanted, lock_path, None)
    analysis = analyse_args(args)
    result = analysis.result

    # what was paired, and so what the check must pair
    paired, flashinfer_ref, kernels_read = "", wanted.flashinfer, bool(result.kernels)
    if kernels_read:
        if args.flashinfer is not None:
            paired = "--flashinfer"
        elif wanted.flashinfer is not None and previous is not None and previous.kernels:
            paired = previous.kernels[2] or "--flashinfer"
        else:
            from guardscan.acquire.pairing import KERNEL_DIST, kernel_requirement

            pin = kernel_requirement(analysis.tree)
            if pin is not None:
                paired = "pinned"
            else:
                paired = "installed"
                version = result.kernels[0].version
                flashinfer_ref = (Ref("spec", f"{KERNEL_DIST}=={version}") if version
                                  else Ref("installed"))
    settings = Settings(
        target=wanted.target,
        archs=tuple(result.archs),
        options=wanted.options,
        quantization=wanted.quantization,
        kernels=kernels_read,
        flashinfer=flashinfer_ref if kernels_read else None,
    )
    lock = lock_from_result(result, settings, paired)
    text = dumps(lock)
    try:
        old = lock_path.read_text(encoding="utf-8") if lock_path.exists() else None
    except (OSError, UnicodeDecodeError):
        old = None
    if old != text:
        _write(lock_path, text)
    print(_summary(lock, lock_path, analysis.tree.root, result.notes, wanted.kernels,
                   no_kernels, unchanged=old == text))
    return ExitCode.OK


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8", newline="\n")
        os.replace(partial, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None



_PAIRED = {
    "pinned": "the version the tree pins, read again at each check",
    "installed": "the installed flashinfer (the tree pins none), recorded by version so the "
                 "check pairs the same",
    "--flashinfer": "given by --flashinfer",
}


def _summary(lock: Lock, lock_path: Path, root: Path, notes: list[ScanNote],
             wanted_kernels: bool,
             no_kernels: bool, unchanged: bool) -> str:
    package, version = lock.target
    where = Path(os.path.relpath(root / package)).as_posix()
    what = f"{package} {version}" if version else package
    if lock.kernels is not None:
        kpackage, kversion, how = lock.kernels
        kernels = (f"kernels: {kpackage} {kversion or '(unknown version)'}, "
                   f"{_PAIRED.get(how, how)}")
    elif wanted_kernels:
        why = next((n.reason for n in notes if n.topic == "kernels"), "")
        kernels = (f"kernels: no FlashInfer paired ({why}): SGLang-only verdicts; pass "
                   "--flashinfer SPEC to pair one")
    elif no_kernels:
        kernels = "kernels: none, SGLang-only verdicts (--no-kernels)"
    else:
        kernels = ("kernels: none, SGLang-only verdicts, as the lock file records "
                   "(--flashinfer SPEC pairs one)")
    counts = Counter(e.verdict.value for e in lock.entries)
    verdicts = ", ".join(f"{counts[v]} {v}" for v in
                         ("blocked", "unsupported", "supported", "unknown"))
    options = (", ".join(lock.settings.options) if lock.settings.options is not None
               else "every backend option")
    state = "unchanged" if unchanged else "wrote"
    items = [
        kernels,
        (f"{options} on {' '.join(lock.settings.archs)}: {len(lock.entries)} verdicts "
         f"({verdicts}), {len(lock.unresolved)} unresolved guard(s)"),
        (f"review it (git diff {lock_path}) and commit it; the pre-commit hook (guardscan "
         "baseline --check) fails on anything worse"),
    ]
    lines = [f"guardscan: {state} {lock_path}: {what} at {where}"]
    for item in items:
        lines.extend(textwrap.wrap(item, 100, initial_indent="  ", subsequent_indent="    ",
                                   break_on_hyphens=False, break_long_words=False))
    return "\n".join(lines)


# -- guardscan baseline --check -------------------------------------------------------------

def _check(args: argparse.Namespace, lock_path: Path) -> int:
    given = [flag for flag, value in (("--arch", args.arch), ("--option", args.option),
                                      ("--quantization", args.quantization),
                                      ("--flashinfer", args.flashinfer),
                                      ("--no-kernels", args.no_kernels or None))
             if value is not None]
    if given:
        raise UsageError(f"--check takes its settings from {lock_path}, not {given[0]}; to "
                         f"change them, re-record: guardscan baseline {given[0]} ...")
    lock = _read_lock(lock_path)
    _scan_args(args, lock.settings, lock_path, args.target)
    analysis = analyse_args(args)
    result = analysis.result
    comparison = compare(lock, result)
    if comparison.quiet:
        return ExitCode.OK
    tree = analysis.tree

    def where(path: str) -> str:
        if path.split("/", 1)[0] != tree.package:
            return path
        rel = os.path.relpath(tree.root / path)
        return path if rel.startswith("..") else Path(rel).as_posix()

    lines = describe(comparison, str(lock_path), where, verbose=args.verbose)
    if lock.guardscan != __version__:
        lines.insert(0, f"note: {lock_path} was recorded by guardscan {lock.guardscan}, "
                        f"this is {__version__}: a change may be the tool's")
    if lock.kernels is not None and result.kernels and \
            result.kernels[0].version != lock.kernels[1]:
        lines.insert(0, f"note: paired with {result.kernels[0].package} "
                        f"{result.kernels[0].version}; {lock_path} was recorded with "
                        f"{lock.kernels[1]}")
    print("\n".join(lines))
    return ExitCode.FOUND if comparison.failed else ExitCode.OK
