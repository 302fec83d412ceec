"""messages (shared by every stage): each diagnostic code with its message template.

A stage reports a diagnostic as a code and its arguments (``diagnostic(rel,
line, "unresolved-guard", text=..., reason=...)``); the prose lives here, once,
so that tests assert on codes and arguments and the SARIF rules can describe
every code (the way pyflakes keeps its ``messages.py``).
"""

from __future__ import annotations

import traceback
from pathlib import Path

from guardscan.results import Diagnostic

__all__ = ["MESSAGES", "diagnostic", "internal_error", "scanned_line"]

#: Diagnostic codes and their message templates; arguments travel as data.
MESSAGES: dict[str, str] = {
    # options: the option catalog
    "unresolved-choices": "choices of {flag} not resolved: {reason}",
    "partial-choices": "choices of {flag} only partly resolved ({count} found): {reason}",
    "unresolved-flag": "option name not a literal in `{text}`",
    "duplicate-option": "{flag} is defined again here; keeping the definition at {kept}",
    "unreadable-definition": "could not read `{text}`: {reason}",
    "unreadable-file": "a file that may define options was not analysed: {reason}",
    "cli-name-rule": "field-to-flag rule `{name}` in {module} not understood; "
                     "assuming '--' + name with '_' -> '-'",
    # guards: what a guard expression tests
    "unresolved-guard": "cannot resolve guard `{text}`: {reason}",
    # kernels: the kernel library's facts
    "unresolved-kernel": "`{target}` is not defined in {library}",
    "cubin-package-failed": "{wheel}: {reason}; its cubins decide nothing",
    "compiled-package-failed": "{wheel}: {reason}; its libraries decide nothing",
    "cpp-parse-failed": "C++ not read: {reason}; its checks decide nothing",
    # index: files
    "file-failed": "{reason}",
    "file-skipped": "{reason}",
    # any stage: a fault inside guardscan, confined to one unit of work
    "internal-error": "guardscan failed on {unit}: {error} (at {where}); "
                      "the rest of the scan stands",
}


def diagnostic(rel: str, line: int, code: str, **args: object) -> Diagnostic:
    """The diagnostic ``code`` at ``rel:line``, its message made from ``args``."""
    return Diagnostic(rel, line, code, MESSAGES[code].format(**args),
                      tuple(sorted((k, str(v)) for k, v in args.items())))


def scanned_line(rel: str, exc: BaseException) -> int:
    """The line of ``rel`` that the innermost step of guardscan was reading when
    ``exc`` was raised, where a step says so (a local ``line``, or a fact with a
    ``line``, beside ``rel``); 0 when none does."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        local = frame.f_locals
        if local.get("rel") != rel:
            continue
        for name in ("line", "call", "fact", "assign", "ret", "cond"):
            value = local.get(name)
            found = value if name == "line" else getattr(value, "line", None)
            if isinstance(found, int) and not isinstance(found, bool) and 0 < found < 10**8:
                return found
    return 0


def internal_error(rel: str, line: int, unit: str, exc: BaseException) -> Diagnostic:
    """An exception raised inside one unit of work (a guard's meaning, a link
    unit, a kernel question), as a diagnostic: where in the scanned tree, which
    unit, the exception and the innermost guardscan line it came from."""
    where = "?"
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = Path(frame.filename)
        if "guardscan" in path.parts:
            where = f"{'/'.join(path.parts[path.parts.index('guardscan'):])}:{frame.lineno}"
            break
    error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return diagnostic(rel, line, "internal-error", unit=unit, error=error, where=where)
